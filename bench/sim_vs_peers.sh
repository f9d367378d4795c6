#!/usr/bin/env bash
# schedlab's simulator side by side with ns-2, ns-3 and ns.py on the common scenario (one
# bottleneck, 10 Poisson flows at 95 % load, DRR or the nearest each peer has), written as a
# markdown table into docs/performance.md, section "Simulator vs peers": the block between
# <!-- sim-vs-peers:begin --> and <!-- sim-vs-peers:end --> is replaced (appended if absent);
# the rest of the file is left alone.
#
# usage: bench/sim_vs_peers.sh
# env:   SIM_PACKETS=10000000   packets for schedlab (bench/sim_throughput.sh drr SIM_PACKETS)
#        NS2_PACKETS=10000000 NS3_PACKETS=1000000 NSPY_PACKETS=1000000
#        PEERS="ns2 ns3 nspy"   which peers to run
#        REPS=1                 runs per peer (bench/peers/*/run.sh); the table shows medians
#        OUT=docs/performance.md
# Needs bench/sim_throughput.sh (branch `sim`); fails with a message when it is absent.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${OUT:-docs/performance.md}
peers=${PEERS:-ns2 ns3 nspy}
sim_packets=${SIM_PACKETS:-10000000}

if [ ! -x bench/sim_throughput.sh ] && [ ! -f bench/sim_throughput.sh ]; then
    cat >&2 <<'MSG'
error: bench/sim_throughput.sh is missing, so schedlab's simulator cannot be measured.
It comes with the simulator (crate schedlab-sim, branch `sim`): merge that branch (or run
this script from a checkout that has it). Nothing was written.
MSG
    exit 2
fi

work=$(mktemp -d /tmp/schedlab-sim-vs-peers.XXXXXX)
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

echo "# schedlab: bench/sim_throughput.sh drr $sim_packets" >&2
if ! bash bench/sim_throughput.sh drr "$sim_packets" >"$work/sim.txt" 2>&1; then
    cat "$work/sim.txt" >&2
    echo "error: bench/sim_throughput.sh failed (output above)" >&2
    exit 1
fi
cat "$work/sim.txt" >&2

: >"$work/peers.csv"
for peer in $peers; do
    case $peer in
        ns2) n=${NS2_PACKETS:-10000000} ;;
        ns3) n=${NS3_PACKETS:-1000000} ;;
        nspy) n=${NSPY_PACKETS:-1000000} ;;
        *) echo "error: unknown peer '$peer' (ns2, ns3, nspy)" >&2; exit 2 ;;
    esac
    echo "# $peer: bench/peers/$peer/run.sh $n" >&2
    bash "bench/peers/$peer/run.sh" "$n" | tee -a "$work/peers.csv"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$work/sim.txt" "$work/peers.csv" "$out" "$load_before" "$load_after" \
    "$(git rev-parse --short HEAD)" <<'PY'
import csv, datetime, os, re, statistics, sys

sim_txt, peers_csv, out, load_before, load_after, commit = sys.argv[1:]
text = open(sim_txt).read()


def grab(pattern, what):
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"error: cannot find {what} in the output of bench/sim_throughput.sh "
                 f"(pattern {pattern!r}); its output was:\n{text}")
    return m.group(1)


def clock(s):
    v = 0.0
    for part in s.split(":"):
        v = v * 60 + float(part)
    return v


sim = {
    "packets": int(grab(r"\bpackets[ =:]+(\d+)", "the packet count")),
    "wall": clock(grab(r"Elapsed \(wall clock\)[^\n]*: ([\d:.]+)", "/usr/bin/time's wall time")),
    "rss": int(grab(r"Maximum resident set size \(kbytes\): (\d+)", "/usr/bin/time's peak RSS")) / 1024,
    "loop_pps": float(grab(r"packets_per_s[ =:]+([\d.e+]+)", "packets_per_s")),
    "loop_eps": float(grab(r"events_per_s[ =:]+([\d.e+]+)", "events_per_s")),
}
sim["events"] = int(grab(r"\bevents[ =:]+(\d+)", "the event count"))
sim["pps"] = sim["packets"] / sim["wall"]
sim["eps"] = sim["events"] / sim["wall"]

runs = {}
for row in csv.reader(open(peers_csv)):
    if not row or row[0].startswith("#") or row[0] == "peer":
        continue
    peer, sched, packets, wall, pps, eps, rss = row
    runs.setdefault((peer, sched), []).append(
        (int(packets), float(wall), float(pps), float(eps) if eps else None, float(rss)))

NAMES = {"ns2": "ns-2.35 (Debian `ns2`)", "ns3": "ns-3.37 (Debian `libns3-dev`)",
         "nspy": "ns.py 0.5.0 (PyPI `ns-py`, CPython 3.11)"}
SCHED = {"DRR": "`Queue/DRR`, quantum 1500 B", "fqcodel-noaqm": "`FqCoDelQueueDisc`, CoDel off (DRR++-like)",
         "DRRServer": "`DRRServer`, quantum 1500 B"}


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU model unknown"


def num(x, digits=0):
    return f"{x:,.{digits}f}"


lines = [
    "<!-- sim-vs-peers:begin -->",
    "## Simulator vs peers",
    "",
    "Written by `bench/sim_vs_peers.sh` (do not edit by hand; rerun the script). "
    "Scenario: one bottleneck, 10 Poisson flows, offered load 0.95, DRR or the nearest "
    "discipline the peer has, no packet trace. packets/s = delivered packets / wall time of the "
    "whole process (`/usr/bin/time -v`: start-up, simulation, output); peak memory = maximum RSS. "
    "Ratios are schedlab / peer: a packets/s ratio above 1 means schedlab simulates faster; a "
    "memory ratio below 1 means schedlab uses less. With several runs per peer (`REPS`) each "
    "column is the median over the runs. See `bench/peers/README.md` for what each "
    "peer run measures and how the peers' semantics differ from schedlab's.",
    "",
    f"Measured {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} CPUs "
    f"({cpu_model()}), "
    f"commit {commit}; load average before/after: {load_before} / {load_after}. "
    "**The machine was shared with other developers: the numbers are indicative** "
    "(single runs on this VM vary by ±30 %).",
    "",
    "| simulator | scheduler | runs | packets | wall s | packets/s | events/s | peak RSS MB "
    "| packets/s ratio schedlab/peer | memory ratio schedlab/peer |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    f"| schedlab-sim (`bench/sim_throughput.sh`) | `drr` | 1 | {num(sim['packets'])} | {sim['wall']:.2f} "
    f"| {num(sim['pps'])} | {num(sim['eps'])} | {sim['rss']:.1f} | 1 | 1 |",
]
for (peer, sched), rs in runs.items():
    med = lambda i: statistics.median(r[i] for r in rs)
    eps = [r[3] for r in rs if r[3] is not None]
    lines.append(
        f"| {NAMES.get(peer, peer)} | {SCHED.get(sched, sched)} | {len(rs)} | {num(med(0))} | {med(1):.2f} "
        f"| {num(med(2))} | {num(statistics.median(eps)) if eps else 'n/a'} | {med(4):.1f} "
        f"| {sim['pps'] / med(2):.2f} | {sim['rss'] / med(4):.2f} |")
lines += [
    "",
    f"schedlab's simulation loop alone (its own clock): {num(sim['loop_pps'])} packets/s, "
    f"{num(sim['loop_eps'])} events/s. Scenario details per simulator: schedlab 80 Mbit/s, "
    "packet sizes exponential with mean 1000 B (`bench/sim_throughput.sh`); ns-2, ns-3 and ns.py "
    "10 Mbit/s, 1000-byte packets (ns-2 and ns-3 add 1 Gbit/s access links and one source node "
    "per flow; ns.py replays a pre-generated trace, whose generation is not timed). "
    "schedlab's sources feed the bottleneck directly (no access links, no protocol stack). "
    "Events per packet differ by model — schedlab about 2 (arrival, end of transmission), ns-2 "
    "about 5 (no event counter; counted from its code path), ns-3 about 6; ns.py/SimPy reports "
    "none — so events/s are not comparable across rows.",
    "<!-- sim-vs-peers:end -->",
]
block = "\n".join(lines) + "\n"

begin, end = "<!-- sim-vs-peers:begin -->", "<!-- sim-vs-peers:end -->"
if os.path.exists(out):
    doc = open(out).read()
    i, j = doc.find(begin), doc.find(end)
    if i >= 0 and j > i:
        rest = doc[j + len(end):]
        doc = doc[:i] + block + (rest[1:] if rest.startswith("\n") else rest)
    elif i >= 0 or j >= 0:
        sys.exit(f"error: {out} has only one of the {begin} / {end} markers; fix it by hand")
    else:
        doc = doc.rstrip("\n") + "\n\n" + block
else:
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    doc = "# Performance\n\n" + block
with open(out + ".partial", "w") as fh:
    fh.write(doc)
os.replace(out + ".partial", out)
print(block)
print(f"wrote the Simulator vs peers section of {out}", file=sys.stderr)
PY
