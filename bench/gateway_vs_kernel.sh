#!/usr/bin/env bash
# schedlab gateway beside the kernel on the same namespace testbed (src -veth- gw -veth- dst):
# highest loss-free packets/s for 64- and 1,500-byte IP packets and the one-way delay at low
# load, for (a) kernel forwarding (a bridge, no qdisc), (b) the kernel's HTB at the gateway's
# link rate, (c) `schedlab gateway` with fifo, drr and wf2q_plus. Writes the "Gateway" section
# of docs/performance.md: the block between <!-- gateway:begin --> and <!-- gateway:end --> is
# replaced (appended if absent); the rest of the file is left alone.
#
# usage: bench/gateway_vs_kernel.sh          (root; about 15 minutes)
# env:   SECONDS_PER_RUN=1 START_PPS=20000 MAX_PPS=1280000 STEPS=4 TRIALS=3
#        RAW=FILE (keep the raw trials as JSON)
#        PATHS="kernel htb gateway-fifo gateway-drr gateway-wf2q_plus"
#        OUT=docs/performance.md
set -euo pipefail
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
"$py" bench/gateway_vs_kernel.py >"$work/result.json"
if [ -n "${RAW:-}" ]; then cp "$work/result.json" "$RAW"; fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
"$py" - "$work/result.json" "$out" "$load_before" "$load_after" "$(git rev-parse --short HEAD)" <<'PY'
import json, re, sys, time
from pathlib import Path

result = json.loads(Path(sys.argv[1]).read_text())
out, load_before, load_after, commit = Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = {r["path"]: r for r in result["paths"]}
base = rows.get("kernel")
names = {
    "kernel": "kernel forwarding (bridge, no qdisc)",
    "htb": f"kernel HTB at {result['link_rate']}, pfifo 1000",
}
lines = [
    "<!-- gateway:begin -->",
    "## Gateway",
    "",
    "Written by `bench/gateway_vs_kernel.sh` (do not edit by hand; rerun the script). Testbed: "
    "`src —veth— gw —veth— dst` namespaces (`schedlab.testbed`); traffic: `schedlab gen` → "
    f"`schedlab sink`, {result['flows']} CBR flows; each run {result['seconds_per_run']:g} s. "
    "Loss-free rate: offered rate doubled until a rate lost datagrams, then bisected; every rate "
    f"gets up to {result['trials']} runs and counts as loss-free when one of them is (one preemption "
    "of the gateway or the sink on a shared machine loses packets at any rate); the figure is the "
    "rate gen achieved in the best loss-free run (gen, which sends what is due with one "
    "`sendmmsg`, and the sink share the 2 CPUs and can themselves be the limit). Delay: one-way, "
    "send → receive on the shared monotonic clock, 1,000 packets/s of 64 B, the median over "
    f"{result['trials']} runs of each run's median (p99). The gateway paces at an emulated link of "
    f"{result['link_rate']} (never the limit here). Ratios are against kernel forwarding. "
    "Gateway CPU: user + system time of the gateway process per packet forwarded in its best "
    "loss-free 64 B run (it spins up to 30 µs before each deadline, which is included).",
    "",
    f"Measured {time.strftime('%Y-%m-%d %H:%M')} UTC on 2 CPUs, commit {commit}; load average "
    f"before/after: {load_before} / {load_after}."
    + (
        " **The machine was shared with other builds (load above 2 on 2 CPUs): the numbers are "
        "indicative only.**"
        if max(float(load_before.split()[0]), float(load_after.split()[0])) > 2
        else ""
    ),
    "",
    "| path | loss-free pps, 64 B | loss-free pps, 1,500 B | ratio 64 B | delay median µs | delay p99 µs | added median µs | gateway CPU µs/packet | load (1 min) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
]
for path, row in rows.items():
    name = names.get(path, f"`schedlab gateway`, {path.removeprefix('gateway-')}")
    low = row["low_load"]
    ratio = row["loss_free_pps_64"] / base["loss_free_pps_64"] if base and base["loss_free_pps_64"] else None
    added = (
        low["delay_median_us"] - base["low_load"]["delay_median_us"]
        if base and low["delay_median_us"] is not None and base["low_load"]["delay_median_us"] is not None
        else None
    )
    fmt = lambda v, spec: "n/a" if v is None else format(v, spec)
    cpu = (row.get("best_trial_64") or {}).get("gateway_cpu_us_per_packet")
    load = row["load_average"]
    lines.append(
        f"| {name} | {row['loss_free_pps_64']:,} | {row['loss_free_pps_1500']:,} | {fmt(ratio, '.2f')} | "
        f"{fmt(low['delay_median_us'], '.0f')} | {fmt(low['delay_p99_us'], '.0f')} | {fmt(added, '+.0f')} | "
        f"{fmt(cpu, '.2f') if path.startswith('gateway') else '–'} | {load[0][0]:.1f}–{load[1][0]:.1f} |"
    )
where = []
for path, row in rows.items():
    if not path.startswith("gateway"):
        continue
    lossy = [t for t in row["trials_64"] if t["received"] < t["sent"]]
    if lossy:
        ring = sum(t["lost_in_ring"] for t in lossy)
        dropped = sum(t["dropped_by_gateway"] for t in lossy)
        after = sum(t["lost_after_gateway"] for t in lossy)
        where.append(f"{path.removeprefix('gateway-')}: {ring:,} in its receive ring, {dropped:,} by it, {after:,} after it")
if where:
    lines += [
        "",
        "Where the lossy 64 B runs lost their datagrams (gateway paths; ring = the gateway process was "
        "not running when its 2,048-slot receive ring filled): " + "; ".join(where) + ".",
    ]
lines += ["", "Raw trials: rerun the script; `bench/gateway_vs_kernel.py` prints them as JSON.", "<!-- gateway:end -->"]
block = "\n".join(lines)
text = out.read_text() if out.exists() else ""
pattern = re.compile(r"<!-- gateway:begin -->.*?<!-- gateway:end -->", re.S)
text = pattern.sub(block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
out.write_text(text)
print(block)
PY
