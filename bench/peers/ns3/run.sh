#!/usr/bin/env bash
# ns-3 on the common scenario: one 10 Mbit/s bottleneck, 10 Poisson flows of 1000-byte
# packets (on the wire) at 95 % load. ns-3 mainline has no DRR queue disc; the nearest is
# FqCoDelQueueDisc with CoDel switched off (target 10000 s): a byte-quantum DRR (quantum
# 1500 B) with DRR++'s new-flow list. The shared bottleneck.cc is compiled in a temp dir.
#
# usage: bench/peers/ns3/run.sh [PACKETS]        (default 1000000: ns-3 is ~15x slower than ns-2)
# env:   REPS=1 (runs, seeds 1..REPS), N=10, LOAD=0.95, QUANTUM=1500, PEERS_DIR
# stdout: one line per run
#         ns3,fqcodel-noaqm,packets,wall_s,packets_per_s,events_per_s,peak_rss_mb
# (events from Simulator::GetEventCount(), divided by the whole process wall time).
# Installs the Debian packages `libns3-dev`, `g++` and `time` if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

packets=${1:-1000000}
reps=${REPS:-1}
flows=${N:-10}
load=${LOAD:-0.95}
quantum=${QUANTUM:-1500}

harness=$(peers_dir ns3)
need_apt time /usr/bin/time
need_apt g++ g++
need_apt libns3-dev /usr/include/ns3/fq-codel-queue-disc.h

work=$(mktemp -d /tmp/schedlab-peers-ns3.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "# ns3: building $harness/bottleneck.cc in $work" >&2
bash "$harness/build.sh" "$work" >&2

duration=$(awk -v n="$packets" -v l="$load" 'BEGIN { printf "%.3f", n / (1250 * l) }')
echo "# ns3: FqCoDel (CoDel off) quantum=${quantum} B, n=${flows}, load=${load}," \
    "duration=${duration} s (~${packets} packets), ${reps} run(s)" >&2
emit_header >&2
for seed in $(seq 1 "$reps"); do
    timed "$work/time.txt" "$work/bottleneck" --queue=fqcodel --n="$flows" --load="$load" \
        --quantum="$quantum" --duration="$duration" --seed="$seed" >"$work/stdout.txt"
    delivered=$(sed -n 's/.*pkts_rx=\([0-9]*\).*/\1/p' "$work/stdout.txt")
    events=$(sed -n 's/.*events=\([0-9]*\).*/\1/p' "$work/stdout.txt")
    if [ -z "$delivered" ]; then
        echo "error: no SUMMARY line from bottleneck; its output:" >&2
        cat "$work/stdout.txt" >&2
        exit 1
    fi
    emit ns3 fqcodel-noaqm "$delivered" "$(time_wall "$work/time.txt")" "$events" \
        "$(time_rss_mb "$work/time.txt")"
done
