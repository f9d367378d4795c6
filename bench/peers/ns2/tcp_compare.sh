#!/usr/bin/env bash
# TCP NewReno in schedlab's simulator against ns-2's Agent/TCP/Newreno on the same dumbbell
# (tcp_dumbbell.tcl beside this script): per-flow goodput and retransmissions, and the wall
# time of both on the same number of flows.
#
# usage: bench/peers/ns2/tcp_compare.sh [OUT.csv]        (default: stdout)
# env:   DURATION=60 (s simulated), WARMUP=10, RATE=10 (Mbit/s), BUFFER=50 (packets)
# Cases: four flows with equal RTTs (access delays 10 ms), two flows with RTTs of about 32 and
# 212 ms (access delays 5 and 105 ms). Both simulators: 1000-byte packets (schedlab: mss 960
# + 40 header bytes), initial window 2, minimum RTO 200 ms, unlimited advertised window, an
# ACK per segment over the reverse links, DropTail FIFO of BUFFER packets at the bottleneck.
# Goodput is compared on payload: ns-2's acknowledged segments × 960 bytes.
# stdout: case,flow,simulator,goodput_bps,retransmissions,timeouts,wall_s,packets
# Installs `ns2` if missing (Debian); builds schedlab's run_scenario example.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

duration=${DURATION:-60}
warmup=${WARMUP:-10}
rate=${RATE:-10}
buffer=${BUFFER:-50}
out=${1:-/dev/stdout}

need_apt ns2 /usr/bin/ns
cargo build --release -q -p schedlab-sim --example run_scenario --manifest-path "$root/Cargo.toml"
runner="$root/target/release/examples/run_scenario"
work=$(mktemp -d /tmp/schedlab-peers-ns2-tcp.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The schedlab scenario of the dumbbell with access delays $1 (comma list, ms).
scenario() {
    python3 - "$1" "$duration" "$warmup" "$rate" "$buffer" <<'PY'
import sys
delays, duration, warmup, rate, buffer = sys.argv[1].split(","), *sys.argv[2:]
out = [f'[run]\nduration = "{duration}s"\nwarmup = "{warmup}s"\nseed = 1\nbin = "1s"\n']
link = lambda name, r, d, extra="": out.append(f'[[link]]\nname = "{name}"\nrate = "{r}"\ndelay = "{d}ms"\n{extra}')
link("bottleneck", f"{rate}Mbit", 10, f"buffer_packets = {buffer}\n")
link("bottleneck_back", f"{rate}Mbit", 10)
for i, d in enumerate(delays):
    link(f"access{i}", "100Mbit", d)
    link(f"exit{i}", "100Mbit", 1)
    link(f"exit_back{i}", "100Mbit", 1)
    link(f"access_back{i}", "100Mbit", d)
for i in range(len(delays)):
    out.append(
        f'[[source]]\nflow = {i}\npath = ["access{i}", "bottleneck", "exit{i}"]\n'
        f'transport = {{ kind = "tcp", mss = 960, header = 40, initial_window = 2, min_rto = "200ms", initial_rto = "3s" }}\n'
        f'arrivals = {{ model = "bulk" }}\n'
        f'ack_path = ["exit_back{i}", "bottleneck_back", "access_back{i}"]\n'
    )
print("".join(out))
PY
}

echo "case,flow,simulator,goodput_bps,retransmissions,timeouts,wall_s,packets" >"$out"
for case in "equal_rtt:10,10,10,10" "rtt_32_212:5,105"; do
    name=${case%%:*}
    delays=${case#*:}
    start=$(date +%s.%N)
    ns "$here/tcp_dumbbell.tcl" delays="$delays" rate="$rate" buffer="$buffer" \
        duration="$duration" warmup="$warmup" seed=1 >"$work/ns2.txt"
    ns_wall=$(echo "$(date +%s.%N) - $start" | bc)
    ns_bytes=$(sed -n 's/^SUMMARY bytes=\([0-9]*\).*/\1/p' "$work/ns2.txt")
    sed -n 's/^FLOW \([0-9]*\) goodput_bps=\([0-9.]*\) retransmissions=\([0-9]*\) timeouts=\([0-9]*\)/\1 \2 \3 \4/p' \
        "$work/ns2.txt" | while read -r flow goodput rexmit timeouts; do
        echo "$name,$flow,ns2,$(echo "$goodput * 0.96" | bc),$rexmit,$timeouts,$ns_wall,$((ns_bytes / 1000))" >>"$out"
    done
    scenario "$delays" >"$work/scenario.toml"
    start=$(date +%s.%N)
    "$runner" "$work/scenario.toml" "$work/schedlab" >"$work/schedlab.txt"
    sl_wall=$(echo "$(date +%s.%N) - $start" | bc)
    sl_packets=$(python3 -c "import json; print(json.load(open('$work/schedlab/summary.json'))['run']['packets'])")
    tail -n +2 "$work/schedlab/tcp_flows.csv" | while IFS=, read -r _ flow _ goodput _ _ rexmit _ timeouts _; do
        echo "$name,$flow,schedlab,$goodput,$rexmit,$timeouts,$sl_wall,$sl_packets" >>"$out"
    done
done
