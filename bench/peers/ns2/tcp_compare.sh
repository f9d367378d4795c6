#!/usr/bin/env bash
# TCP in schedlab's simulator against ns-2 on the same dumbbell (tcp_dumbbell.tcl beside this
# script): NewReno against Agent/TCP/Newreno and SACK against Agent/TCP/Sack1; per-flow goodput
# and retransmissions, and the wall time of both on the same number of flows. Ends with a check
# that each flow's mean goodput over the phases agrees within TOLERANCE (exit 1 if not).
#
# usage: bench/peers/ns2/tcp_compare.sh [OUT.csv]        (default: stdout)
# env:   DURATION=120 (s simulated), WARMUP=10, RATE=10 (Mbit/s), BUFFER=50 (packets, ns-2's
#        queue-limit), PHASES=24 (runs per case, phase = 0..PHASES-1: flow i starts at
#        i·phase·0.1387 s and its access delay gets an offset of frac(phase·c_i) bottleneck
#        packet times, c_i irrational, so that drop-tail phase effects average out),
#        VARIANTS="newreno sack", TOLERANCE=0.25
# Why offsets: a deterministic drop-tail dumbbell locks into a phase pattern set by the path
# delays modulo the bottleneck's packet time (832 µs). Start times do not change that pattern;
# moving an access delay by a fraction of a packet time does, and moves the long-RTT flow's
# goodput between about 0.1 and 2.8 Mbit/s in both simulators (docs/validation.md). The check
# compares means over the offsets.
# Cases: four flows with equal RTTs (access delays 10 ms), two flows with RTTs of about 32 and
# 232 ms (access delays 5 and 105 ms). Both simulators: 1000-byte segments plus 40 header bytes
# (1040 on the wire, as ns-2 sends them), initial window 2, minimum RTO 200 ms, initial RTO 3 s,
# unlimited advertised window, an ACK per segment over the reverse links, DropTail FIFO of
# BUFFER packets at the bottleneck. Goodput counts payload bytes.
# stdout: case,variant,phase,flow,simulator,goodput_bps,retransmissions,timeouts,wall_s,packets
# stderr: the check, one line per case × variant × flow.
# The schedlab scenario comes from tcp_dumbbell_scenario.py (shared with bench/tcp_vs_ns2.py).
# Installs `ns2` if missing (Debian); builds schedlab's run_scenario example.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

duration=${DURATION:-120}
warmup=${WARMUP:-10}
rate=${RATE:-10}
buffer=${BUFFER:-50}
phases=${PHASES:-24}
variants=${VARIANTS:-newreno sack}
tolerance=${TOLERANCE:-0.25}
out=${1:-/dev/stdout}

need_apt ns2 /usr/bin/ns
cargo build --release -q -p schedlab-sim --example run_scenario --manifest-path "$root/Cargo.toml"
runner="$root/target/release/examples/run_scenario"
work=$(mktemp -d /tmp/schedlab-peers-ns2-tcp.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The schedlab scenario of the dumbbell (tcp_dumbbell_scenario.py) with access delays $1 (comma
# list, ms), variant $2 and start times $3 (comma list, s).
scenario() {
    python3 "$here/tcp_dumbbell_scenario.py" "$1" "$2" "$3" "$duration" "$warmup" "$rate" "$buffer"
}

header="case,variant,phase,flow,simulator,goodput_bps,retransmissions,timeouts,wall_s,packets"
echo "$header" >"$work/all.csv"
for variant in $variants; do
    for case in "equal_rtt:10,10,10,10" "rtt_32_232:5,105"; do
        name=${case%%:*}
        base_delays=${case#*:}
        flows=$(echo "$base_delays" | tr ',' '\n' | wc -l)
        for ((phase = 0; phase < phases; phase++)); do
            starts=$(python3 -c "print(','.join(str(round(i * $phase * 0.1387, 4)) for i in range($flows)))")
            # Access delay i + frac(phase · c_i) of the bottleneck's packet time (1040 B), in µs.
            delays=$(python3 -c "
c = [0.6180339887, 0.7548776662, 0.5698402910, 0.8191725134]
packet_ms = 1040 * 8 / ($rate * 1e3)
print(','.join(f'{float(d) + round(($phase * c[i % 4]) % 1 * packet_ms, 3):g}' for i, d in enumerate('$base_delays'.split(','))))")
            echo "tcp_compare: $variant $name phase $phase (access delays $delays ms)" >&2
            start=$(date +%s.%N)
            ns "$here/tcp_dumbbell.tcl" delays="$delays" rate="$rate" buffer="$buffer" \
                duration="$duration" warmup="$warmup" seed=1 variant="$variant" starts="$starts" \
                >"$work/ns2.txt"
            ns_wall=$(echo "$(date +%s.%N) - $start" | bc)
            ns_bytes=$(sed -n 's/^SUMMARY bytes=\([0-9]*\).*/\1/p' "$work/ns2.txt")
            sed -n 's/^FLOW \([0-9]*\) goodput_bps=\([0-9.]*\) retransmissions=\([0-9]*\) timeouts=\([0-9]*\)/\1 \2 \3 \4/p' \
                "$work/ns2.txt" | while read -r flow goodput rexmit timeouts; do
                echo "$name,$variant,$phase,$flow,ns2,$goodput,$rexmit,$timeouts,$ns_wall,$((ns_bytes / 1040))" >>"$work/all.csv"
            done
            scenario "$delays" "$variant" "$starts" >"$work/scenario.toml"
            start=$(date +%s.%N)
            "$runner" "$work/scenario.toml" "$work/schedlab" >"$work/schedlab.txt"
            sl_wall=$(echo "$(date +%s.%N) - $start" | bc)
            sl_packets=$(python3 -c "import json; print(json.load(open('$work/schedlab/summary.json'))['run']['packets'])")
            tail -n +2 "$work/schedlab/tcp_flows.csv" | while IFS=, read -r _ flow _ goodput _ _ rexmit _ timeouts _; do
                echo "$name,$variant,$phase,$flow,schedlab,$goodput,$rexmit,$timeouts,$sl_wall,$sl_packets" >>"$work/all.csv"
            done
            rm -rf "$work/schedlab"
        done
    done
done
cp "$work/all.csv" "$out"
# The check: per case, variant and flow, the mean goodput over the phases.
python3 - "$work/all.csv" "$tolerance" <<'PY'
import csv, sys
from collections import defaultdict
rows, tolerance = list(csv.DictReader(open(sys.argv[1]))), float(sys.argv[2])
mean = defaultdict(list)
for r in rows:
    mean[(r["case"], r["variant"], int(r["flow"]), r["simulator"])].append(float(r["goodput_bps"]))
failed = 0
for (case, variant, flow, simulator), values in sorted(mean.items()):
    if simulator != "ns2":
        continue
    ns2 = sum(values) / len(values)
    ours = mean[(case, variant, flow, "schedlab")]
    ours = sum(ours) / len(ours)
    ratio = ours / ns2
    ok = abs(ratio - 1) <= tolerance
    failed += not ok
    print(f"check {case} {variant} flow {flow}: ns-2 {ns2 / 1e6:.3f} Mbit/s, schedlab {ours / 1e6:.3f}, "
          f"ratio {ratio:.3f} {'ok' if ok else 'OUTSIDE'} ±{tolerance:.0%}", file=sys.stderr)
sys.exit(1 if failed else 0)
PY
