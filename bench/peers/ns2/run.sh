#!/usr/bin/env bash
# ns-2 on the common scenario: one 10 Mbit/s bottleneck, 10 Poisson flows of 1000-byte
# packets at 95 % load, ns-2's Queue/DRR (quantum 1500 B, one source node per flow so that no
# two flows share a DRR bucket), no packet trace (sink counters only).
#
# usage: bench/peers/ns2/run.sh [PACKETS]        (default 10000000)
# env:   REPS=1 (runs, seeds 1..REPS), N=10 (flows), LOAD=0.95, QUANTUM=1500, PEERS_DIR
# stdout: one line per run
#         ns2,DRR,packets,wall_s,packets_per_s,,peak_rss_mb
# (events_per_s is empty: ns-2 has no event counter; the shared README counts ~5 per packet
# from the code path.) `packets` are the packets delivered to the sink, a Poisson count close
# to PACKETS. Installs the Debian package `ns2` (and `time`) if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

packets=${1:-10000000}
reps=${REPS:-1}
flows=${N:-10}
load=${LOAD:-0.95}
quantum=${QUANTUM:-1500}

harness=$(peers_dir ns2)
need_apt time /usr/bin/time
need_apt ns2 /usr/bin/ns

# 10 Mbit/s of 1000-byte packets is 1250 pkt/s; at LOAD that is 1250*LOAD pkt/s offered.
duration=$(awk -v n="$packets" -v l="$load" 'BEGIN { printf "%.3f", n / (1250 * l) }')
work=$(mktemp -d /tmp/schedlab-peers-ns2.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "# ns2: Queue/DRR quantum=${quantum} B, n=${flows}, load=${load}, duration=${duration} s" \
    "(~${packets} packets), ${reps} run(s)" >&2
emit_header >&2
for seed in $(seq 1 "$reps"); do
    timed "$work/time.txt" ns "$harness/bottleneck.tcl" queue=DRR n="$flows" load="$load" \
        quantum="$quantum" duration="$duration" seed="$seed" >"$work/stdout.txt"
    delivered=$(sed -n 's/.*pkts_rx=\([0-9]*\).*/\1/p' "$work/stdout.txt")
    if [ -z "$delivered" ]; then
        echo "error: no SUMMARY line from ns; its output:" >&2
        cat "$work/stdout.txt" >&2
        exit 1
    fi
    emit ns2 DRR "$delivered" "$(time_wall "$work/time.txt")" "" "$(time_rss_mb "$work/time.txt")"
done
