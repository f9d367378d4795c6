#!/usr/bin/env bash
# ns-3 on the common scenario (bottleneck.cc beside this script, compiled here with g++ -O2
# against Debian's libns3-dev): N flows, each a UDP socket on its own node behind a 1 Gbit/s,
# 1 ms access link, into a 10 Mbit/s, 1 ms bottleneck; Poisson arrivals of 1000 bytes on the
# wire at 95 % load. ns-3 has no DRR queue disc: FqCoDelQueueDisc with CoDel switched off
# (a byte-quantum DRR with DRR++'s new-flow list), quantum 1500 B.
#
# usage: bench/peers/ns3/run.sh [PACKETS]        (default 1000000)
# env:   REPS=1 (runs, seeds 1..REPS), N=10, LOAD=0.95, QUANTUM=1500
# stdout: one line per run (bench/peers/lib.sh, emit): ns3,fqcodel-noaqm,flows,packets,…
# The set-up (process start, topology, global routing) is timed by a run of 1 ms of traffic
# and subtracted for packets_per_s; events from Simulator::GetEventCount().
# Installs `libns3-dev`, `g++` and `time` if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

packets=${1:-1000000}
reps=${REPS:-1}
flows=${N:-10}
load=${LOAD:-0.95}
quantum=${QUANTUM:-1500}

need_apt time /usr/bin/time
need_apt g++ g++
need_apt libns3-dev /usr/include/ns3/fq-codel-queue-disc.h

work=$(mktemp -d /tmp/schedlab-peers-ns3.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "# ns3: compiling bottleneck.cc" >&2
# Debian's ns3 pkg-config files carry a malformed Cflags line, so the libraries are named here.
g++ -O2 -std=c++17 -o "$work/bottleneck" "$here/bottleneck.cc" -lns3-traffic-control \
    -lns3-point-to-point -lns3-applications -lns3-internet -lns3-network -lns3-core >&2

duration=$(awk -v n="$packets" -v l="$load" 'BEGIN { printf "%.3f", n / (1250 * l) }')
run() { # seed duration -> "delivered events" on stdout
    timed "$work/time.txt" "$work/bottleneck" --n="$flows" --load="$load" \
        --quantum="$quantum" --duration="$2" --seed="$1" >"$work/stdout.txt"
    sed -n 's/.*pkts_rx=\([0-9]*\).*events=\([0-9]*\).*/\1 \2/p' "$work/stdout.txt" | grep . || {
        echo "error: no SUMMARY line from bottleneck; its output:" >&2
        cat "$work/stdout.txt" >&2
        exit 1
    }
}

echo "# ns3: FqCoDel (CoDel off) quantum=${quantum} B, n=${flows}, load=${load}," \
    "duration=${duration} s (~${packets} packets), ${reps} run(s)" >&2
emit_header >&2
measure_runs ns3 fqcodel-noaqm "$flows" "$reps" "$duration" run "$work/time.txt"
