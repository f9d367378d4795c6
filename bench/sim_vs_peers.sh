#!/usr/bin/env bash
# schedlab's simulator beside ns-2, ns-3 and ns.py on the identical scenario: the ns-2
# harness's network (bench/peers/ns2/bottleneck.tcl; as a schedlab scenario
# bench/scenarios/ns2_bottleneck.py) — N flows, each from its own source over a 1 Gbit/s, 1 ms
# access link into a 10 Mbit/s, 1 ms bottleneck with DRR (quantum 1500 B), Poisson arrivals of
# 1000-byte packets at 95 % load — for N = 10 and 1,000. ns-3 runs the same network with
# FqCoDel (CoDel off), its nearest to DRR; ns.py models the bottleneck only (a trace replay).
# Writes a markdown table into docs/performance.md between <!-- sim-vs-peers:begin --> and
# <!-- sim-vs-peers:end --> (appended if absent); the rest of the file is left alone.
#
# usage: bench/sim_vs_peers.sh
# env:   FLOWS="10 1000"       numbers of flows
#        SIM_PACKETS=4000000 NS2_PACKETS=10000000 NS3_PACKETS=200000 NSPY_PACKETS=200000
#        (ns-2 builds 1,000 source nodes in about 35 s of CPU: its run must be long enough
#        for the difference between the run and the set-up to dominate their noise)
#        PEERS="ns2 ns3 nspy"  which peers to run
#        REPS=1                runs per simulator and N (the table shows medians)
#        OUT=docs/performance.md
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${OUT:-docs/performance.md}
peers=${PEERS:-ns2 ns3 nspy}
flow_counts=${FLOWS:-10 1000}

work=$(mktemp -d /tmp/schedlab-sim-vs-peers.XXXXXX)
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$work/runs.csv"
for n in $flow_counts; do
    echo "# $n flows: schedlab (bench/sim_ns2_scenario.sh)" >&2
    N=$n bash bench/sim_ns2_scenario.sh "${SIM_PACKETS:-4000000}" | tee -a "$work/runs.csv"
    for peer in $peers; do
        case $peer in
            ns2) packets=${NS2_PACKETS:-10000000} ;;
            ns3) packets=${NS3_PACKETS:-200000} ;;
            nspy) packets=${NSPY_PACKETS:-200000} ;;
            *) echo "error: PEERS: unknown peer '$peer' (ns2, ns3, nspy)" >&2; exit 2 ;;
        esac
        echo "# $n flows: bench/peers/$peer/run.sh $packets" >&2
        N=$n bash "bench/peers/$peer/run.sh" "$packets" | tee -a "$work/runs.csv"
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$work/runs.csv" "$out" "$load_before" "$load_after" "$(git rev-parse --short HEAD)" <<'PY'
import csv
import datetime
import os
import statistics
import sys

runs_csv, out, load_before, load_after, commit = sys.argv[1:]
FIELDS = ["peer", "scheduler", "flows", "packets", "wall_s", "setup_s", "cpu_s", "setup_cpu_s",
          "packets_per_s", "packets_per_cpu_s", "events_per_s", "peak_rss_mb"]
runs = {}
for row in csv.reader(open(runs_csv)):
    if len(row) != len(FIELDS):
        sys.exit(f"error: unexpected line from a run script: {row}")
    r = dict(zip(FIELDS, row))
    runs.setdefault((int(r["flows"]), r["peer"]), []).append(r)

NAMES = {"schedlab": "schedlab-sim", "ns2": "ns-2.35 (Debian `ns2`)",
         "ns3": "ns-3.37 (Debian `libns3-dev`)", "nspy": "ns.py 0.5.0 (PyPI `ns-py`)"}
SCHED = {"drr": "`drr`", "DRR": "`Queue/DRR`", "fqcodel-noaqm": "`FqCoDelQueueDisc`, CoDel off",
         "DRRServer": "`DRRServer`"}


def med(rs, key):
    """Median of a column over runs; None when no run has a value (see lib.sh, emit)."""
    values = [float(r[key]) for r in rs if r[key] != ""]
    return statistics.median(values) if values else None


def rate(x):
    return f"{x:,.0f}" if x else "–"


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "CPU model unknown"


lines = [
    "<!-- sim-vs-peers:begin -->",
    "## Simulator vs peers",
    "",
    "Written by `bench/sim_vs_peers.sh` (do not edit by hand; rerun the script). The identical "
    "scenario: N flows, each from its own source over a 1 Gbit/s, 1 ms access link into a "
    "10 Mbit/s, 1 ms bottleneck with DRR (quantum 1500 B), Poisson arrivals of 1000-byte "
    "packets at 95 % load, nothing dropped, no packet trace (ns-2 `bench/peers/ns2/bottleneck.tcl`, "
    "schedlab `bench/scenarios/ns2_bottleneck.py`, ns-3 `bench/peers/ns3/bottleneck.cc` with "
    "FqCoDel and CoDel off; ns.py replays a pre-generated trace into the bottleneck alone). "
    "Every simulator's set-up (start-up, building the topology, routing, reading the trace) is "
    "timed by a run of 1 ms of traffic and left out: packets/s = packets / (wall − set-up); "
    "CPU ns/packet = (user + system CPU − the set-up's) / packets, which does not count waiting "
    "for a core. Ratios are schedlab / peer in packets per second (wall and CPU).",
    "",
    f"Measured {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} on "
    f"{os.cpu_count()} CPUs ({cpu_model()}), commit `{commit}`; load average before / after: "
    f"{load_before} / {load_after}. The machine is shared: wall-clock figures depend on the load, "
    "CPU figures much less.",
    "",
    "| flows | simulator | scheduler | runs | packets | set-up s | packets/s | CPU ns/packet "
    "| peak RSS MB | schedlab / peer (wall) | schedlab / peer (CPU) |",
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
]
for flows in sorted({f for f, _ in runs}):
    ours = runs.get((flows, "schedlab"))
    for peer in ["schedlab", "ns2", "ns3", "nspy"]:
        rs = runs.get((flows, peer))
        if not rs:
            continue
        pps, cpps = med(rs, "packets_per_s"), med(rs, "packets_per_cpu_s")
        our_pps = med(ours, "packets_per_s") if ours else None
        our_cpps = med(ours, "packets_per_cpu_s") if ours else None
        ratio_wall = f"{our_pps / pps:.1f}×" if our_pps and pps else "–"
        ratio_cpu = f"{our_cpps / cpps:.1f}×" if our_cpps and cpps else "–"
        lines.append(
            f"| {flows:,} | {NAMES[peer]} | {SCHED.get(rs[0]['scheduler'], rs[0]['scheduler'])} "
            f"| {len(rs)} | {med(rs, 'packets'):,.0f} | {med(rs, 'setup_s'):.2f} | {rate(pps)} "
            f"| {rate(1e9 / cpps if cpps else None)} | {med(rs, 'peak_rss_mb'):.1f} | {ratio_wall} "
            f"| {ratio_cpu} |")
lines += [
    "",
    "Events per packet differ by model (schedlab about 5 here: arrival, two transmission ends, "
    "two propagations, of which it handles 3 as events: the access link's transmission end and "
    "the delivery are computed, see \"Session 6: fewer events per packet\"; ns-2 and ns-3 more, "
    "with their agents and protocol layers), so the table "
    "compares packets, not events. See `bench/peers/README.md` for what each peer run measures "
    "and how the peers' semantics differ from schedlab's.",
    "<!-- sim-vs-peers:end -->",
]
block = "\n".join(lines) + "\n"

begin, end = "<!-- sim-vs-peers:begin -->", "<!-- sim-vs-peers:end -->"
doc = open(out).read() if os.path.exists(out) else "# Performance\n"
i, j = doc.find(begin), doc.find(end)
if i >= 0 and j > i:
    rest = doc[j + len(end):]
    doc = doc[:i] + block + (rest[1:] if rest.startswith("\n") else rest)
elif i >= 0 or j >= 0:
    sys.exit(f"error: {out} has only one of the {begin} / {end} markers; fix it by hand")
else:
    doc = doc.rstrip("\n") + "\n\n" + block
with open(out + ".partial", "w") as fh:
    fh.write(doc)
os.replace(out + ".partial", out)
print(block)
print(f"wrote the Simulator vs peers section of {out}", file=sys.stderr)
PY
