#!/usr/bin/env bash
# ns-2 on the common scenario (bottleneck.tcl beside this script): N flows, each from its own
# source node over a 1 Gbit/s, 1 ms access link into a 10 Mbit/s, 1 ms bottleneck with
# Queue/DRR (quantum 1500 B); Poisson arrivals of 1000-byte packets at 95 % load; no trace.
#
# usage: bench/peers/ns2/run.sh [PACKETS]        (default 10000000)
# env:   REPS=1 (runs, seeds 1..REPS), N=10 (flows), LOAD=0.95, QUANTUM=1500
# stdout: one line per run (bench/peers/lib.sh, emit): ns2,DRR,flows,packets,wall_s,setup_s,…
# The set-up (Tcl start-up, building N nodes and links, ns-2's route computation, which grows
# quickly with N) is timed by a run of 1 ms of traffic and subtracted for packets_per_s.
# `packets` are the packets delivered to the sink. Installs `ns2` and `time` if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

packets=${1:-10000000}
reps=${REPS:-1}
flows=${N:-10}
load=${LOAD:-0.95}
quantum=${QUANTUM:-1500}

need_apt time /usr/bin/time
need_apt ns2 /usr/bin/ns

# 10 Mbit/s of 1000-byte packets is 1250 packets/s; at LOAD that is 1250 × LOAD offered.
duration=$(awk -v n="$packets" -v l="$load" 'BEGIN { printf "%.3f", n / (1250 * l) }')
work=$(mktemp -d /tmp/schedlab-peers-ns2.XXXXXX)
trap 'rm -rf "$work"' EXIT

run() { # seed duration -> delivered packets on stdout, /usr/bin/time output in $work/time.txt
    timed "$work/time.txt" ns "$here/bottleneck.tcl" n="$flows" load="$load" \
        quantum="$quantum" duration="$2" seed="$1" >"$work/stdout.txt"
    sed -n 's/.*pkts_rx=\([0-9]*\).*/\1/p' "$work/stdout.txt" | grep . || {
        echo "error: no SUMMARY line from ns; its output:" >&2
        cat "$work/stdout.txt" >&2
        exit 1
    }
}

echo "# ns2: Queue/DRR quantum=${quantum} B, n=${flows}, load=${load}, duration=${duration} s" \
    "(~${packets} packets), ${reps} run(s)" >&2
emit_header >&2
measure_runs ns2 DRR "$flows" "$reps" "$duration" run "$work/time.txt"
