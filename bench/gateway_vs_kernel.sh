#!/usr/bin/env bash
# schedlab gateway beside the kernel on the same namespace testbed (src -veth- gw -veth- dst):
# highest loss-free packets/s for 64- and 1,500-byte IP packets and the one-way delay at low
# load, for (a) kernel forwarding (a bridge, no qdisc), (b) the kernel's HTB at the gateway's
# link rate, (c) `schedlab gateway` with fifo, drr and wf2q_plus. Writes the "Gateway" section
# of docs/performance.md: the block between <!-- gateway:begin --> and <!-- gateway:end --> is
# replaced (appended if absent); the rest of the file is left alone.
#
# usage: bench/gateway_vs_kernel.sh          (root; about 10 minutes)
# env:   SECONDS_PER_RUN=1 START_PPS=20000 MAX_PPS=1280000 STEPS=4
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
    "Loss-free rate: offered rate doubled until a run lost a datagram, then bisected; the figure is "
    "the rate gen achieved in the best loss-free run (gen, which sends what is due with one "
    "`sendmmsg`, can itself be the limit). Delay: one-way, send → receive on the shared monotonic clock, 1,000 packets/s of "
    "64 B. The gateway paces at an emulated link of "
    f"{result['link_rate']} (never the limit here). Ratios are against kernel forwarding.",
    "",
    f"Measured {time.strftime('%Y-%m-%d %H:%M')} on 2 CPUs, commit {commit}; load average "
    f"before/after: {load_before} / {load_after}. **The machine was shared with other builds: "
    "the numbers are indicative only.**",
    "",
    "| path | loss-free pps, 64 B | loss-free pps, 1,500 B | ratio 64 B | delay median µs | delay p99 µs | added median µs |",
    "|---|---:|---:|---:|---:|---:|---:|",
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
    lines.append(
        f"| {name} | {row['loss_free_pps_64']:,} | {row['loss_free_pps_1500']:,} | {fmt(ratio, '.2f')} | "
        f"{fmt(low['delay_median_us'], '.0f')} | {fmt(low['delay_p99_us'], '.0f')} | {fmt(added, '+.0f')} |"
    )
lines += ["", "Raw trials: rerun the script; `bench/gateway_vs_kernel.py` prints them as JSON.", "<!-- gateway:end -->"]
block = "\n".join(lines)
text = out.read_text() if out.exists() else ""
pattern = re.compile(r"<!-- gateway:begin -->.*?<!-- gateway:end -->", re.S)
text = pattern.sub(block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
out.write_text(text)
print(block)
PY
