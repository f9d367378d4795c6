#!/usr/bin/env bash
# schedlab gateway beside the kernel on the same namespace testbed (src -veth- gw -veth- dst):
# highest loss-free packets/s for 64- and 1,500-byte IP packets and the one-way delay at low
# load, for (a) kernel forwarding (a bridge, no qdisc), (b) the kernel's HTB at the gateway's
# link rate, (c) `schedlab gateway` with fifo, drr and wf2q_plus. Writes the "Gateway" section
# of docs/performance.md: the block between <!-- gateway:begin --> and <!-- gateway:end --> is
# replaced (appended if absent); the rest of the file is left alone.
#
# usage: bench/gateway_vs_kernel.sh [--quick]   (root)
#   full (default; about 15 minutes): every path, 64- and 1,500-byte packets, 3 trials per rate
#   --quick (under 12 minutes): the speed target of issue 9 — kernel forwarding, the gateway
#        with fifo, drr, and drr with a 2 ms busy-poll window; 64-byte packets only, 2 trials
#        per rate, doubling from 100,000 packets/s, 3 bisection steps; the low-load latency
# env:   MODE=full|quick (as --quick) and overrides of the mode's settings:
#        SECONDS_PER_RUN=1 START_PPS=20000 MAX_PPS=1280000 STEPS=4 TRIALS=3 SIZES="64 1500"
#        PATHS="kernel htb gateway-fifo gateway-drr gateway-wf2q_plus" (gateway-KIND:DURATION
#        runs the gateway with --busy-poll DURATION)
#        RAW=FILE (keep the raw trials as JSON)
#        OUT=docs/performance.md
set -euo pipefail
case "${1:-}" in
    --quick) export MODE=quick ;;
    --full) export MODE=full ;;
    "") ;;
    *) echo "error: unknown argument ${1}: expected --quick or --full" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${OUT:-docs/performance.md}
if [ "$(id -u)" != 0 ]; then
    echo "error: bench/gateway_vs_kernel.sh needs root (it creates network namespaces)" >&2
    exit 2
fi
py=${PYTHON:-.venv/bin/python}
work=$(mktemp -d /tmp/schedlab-gateway-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
"$py" bench/gateway_vs_kernel.py >"$work/result.json"
minutes=$(( ($(date +%s) - started + 59) / 60 ))
if [ -n "${RAW:-}" ]; then cp "$work/result.json" "$RAW"; fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
"$py" - "$work/result.json" "$out" "$load_before" "$load_after" "$(git rev-parse --short HEAD)" "$minutes" <<'PY'
import json, re, sys, time
from pathlib import Path

result = json.loads(Path(sys.argv[1]).read_text())
out, load_before, load_after, commit, minutes = Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rows = {r["path"]: r for r in result["paths"]}
base = rows.get("kernel")
sizes = result["sizes"]
mode = result["mode"]
names = {
    "kernel": "kernel forwarding (bridge, no qdisc)",
    "htb": f"kernel HTB at {result['link_rate']}, pfifo 1000",
}


def name_of(path):
    if path in names:
        return names[path]
    kind, _, busy = path.removeprefix("gateway-").partition(":")
    return f"`schedlab gateway`, {kind}" + (f", `--busy-poll {busy}`" if busy else "")


def fmt(value, spec):
    return "n/a" if value is None else format(value, spec)


def added(row, key):
    low, kernel = row[key]["delay_median_us"], base[key]["delay_median_us"] if base else None
    return None if low is None or kernel is None else low - kernel


mode_text = {
    "quick": "**quick mode** (`--quick`: 64-byte packets only, up to {trials} per rate, doubling from {start:,} packets/s, {steps} bisection steps)",
    "full": "**full mode** (up to {trials} per rate, doubling from {start:,} packets/s, {steps} bisection steps)",
}[mode].format(
    trials=f"{result['trials']} run" + ("s" if result["trials"] != 1 else ""),
    start=result["start_pps"],
    steps=result["steps"],
)
loaded = max(float(load_before.split()[0]), float(load_after.split()[0])) > 2
lines = [
    "<!-- gateway:begin -->",
    "## Gateway",
    "",
    "Written by `bench/gateway_vs_kernel.sh` (do not edit by hand; rerun the script: `--quick` answers the "
    "speed target of issue 9 in under 12 minutes, the default full mode takes about 15). Testbed: "
    "`src —veth— gw —veth— dst` namespaces (`schedlab.testbed`); traffic: `schedlab gen` → "
    f"`schedlab sink`, {result['flows']} CBR flows; each run {result['seconds_per_run']:g} s. "
    "Loss-free rate: offered rate doubled until a rate lost datagrams, then bisected; every rate "
    f"gets up to {result['trials']} runs and counts as loss-free when one of them is (one preemption "
    "of the gateway or the sink on a shared machine loses packets at any rate); the figure is the "
    "rate gen achieved in the best loss-free run (gen and the sink share the 2 CPUs with the gateway "
    "and can themselves be the limit). Delay: one-way, send → receive on the shared monotonic clock, "
    "1,000 packets/s of 64 B for 2 s, the median over 3 runs of each run's median (p99): as one CBR "
    "flow (every packet finds the path idle; the target's figure) and as 4 flows of 250 packets/s "
    "due at the same instants (bursts of 4: on the kernel path gen's send call for each packet "
    "forwards it to the sink before the next packet is stamped, which hides a burst's queueing there "
    "and not on the gateway's). Busy-poll: the gateway's window (`--busy-poll`, see docs/gateway.md); "
    "its CPU at 1,000 packets/s is the share of one core it used during the one-flow runs. The gateway "
    f"paces at an emulated link of {result['link_rate']} (never the limit here). Ratios are against "
    "kernel forwarding. Gateway CPU per packet: user + system time of the gateway process per packet "
    "forwarded in its best loss-free 64 B run; about half of it is the sink namespace's receive path, "
    "which `sendmmsg` on the egress veth runs in the gateway's context.",
    "",
    f"Measured {time.strftime('%Y-%m-%d %H:%M')} UTC on 2 CPUs, commit {commit}, {mode_text}, "
    f"{minutes} minutes; load average before/after: {load_before} / {load_after}."
    + (
        " **The machine was shared with other builds (load above 2 on 2 CPUs): the numbers are "
        "indicative only.**"
        if loaded
        else ""
    ),
    "",
]
header = ["path", "busy-poll"]
header += [f"loss-free pps, {size:,} B" for size in sizes]
header += ["ratio 64 B"] if 64 in sizes else []
header += [
    "delay median µs",
    "delay p99 µs",
    "added median µs",
    "gateway CPU at 1,000 pps",
    "bursts of 4: median µs",
    "bursts of 4: added µs",
    "gateway CPU µs/packet",
    "load (1 min)",
]
lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
for path, row in rows.items():
    gateway = path.startswith("gateway")
    busy = row.get("busy_poll_s")
    busy = "–" if not gateway else "off" if not busy else f"{busy * 1e3:g} ms" if busy >= 1e-3 else f"{busy * 1e6:g} µs"
    cells = [name_of(path), busy]
    cells += [f"{row[f'loss_free_pps_{size}']:,}" for size in sizes]
    if 64 in sizes:
        ratio = row["loss_free_pps_64"] / base["loss_free_pps_64"] if base and base["loss_free_pps_64"] else None
        cells.append(fmt(ratio, ".2f"))
    low, bursts = row["low_load"], row["low_load_bursts"]
    share = low["gateway_cpu_share"]
    cpu = (row.get("best_trial_64") or {}).get("gateway_cpu_us_per_packet")
    load = row["load_average"]
    cells += [
        fmt(low["delay_median_us"], ".0f"),
        fmt(low["delay_p99_us"], ".0f"),
        fmt(added(row, "low_load"), "+.0f"),
        f"{share:.0%}" if gateway and share is not None else "–",
        fmt(bursts["delay_median_us"], ".0f"),
        fmt(added(row, "low_load_bursts"), "+.0f"),
        fmt(cpu, ".2f") if gateway else "–",
        f"{load[0][0]:.1f}–{load[1][0]:.1f}",
    ]
    lines.append("| " + " | ".join(cells) + " |")
where = []
for path, row in rows.items():
    if not path.startswith("gateway"):
        continue
    lossy = [t for t in row.get("trials_64", []) if t["received"] < t["sent"]]
    if lossy:
        ring = sum(t["lost_in_ring"] for t in lossy)
        dropped = sum(t["dropped_by_gateway"] for t in lossy)
        after = sum(t["lost_after_gateway"] for t in lossy)
        where.append(f"{name_of(path)}: {ring:,} in its receive ring, {dropped:,} by it, {after:,} after it")
if where:
    lines += [
        "",
        "Where the lossy 64 B runs lost their datagrams (gateway paths; ring = the gateway process was "
        "not running when its receive ring filled): " + "; ".join(where) + ".",
    ]
lines += ["", "Raw trials: rerun the script with `RAW=FILE`; `bench/gateway_vs_kernel.py` prints them as JSON.", "<!-- gateway:end -->"]
block = "\n".join(lines)
text = out.read_text() if out.exists() else ""
pattern = re.compile(r"<!-- gateway:begin -->.*?<!-- gateway:end -->", re.S)
text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
out.write_text(text)
print(block)
PY
