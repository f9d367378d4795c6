#!/usr/bin/env bash
# schedlab's simulator on the ns-2 harness's scenario (bench/scenarios/ns2_bottleneck.py):
# N flows, each over its own 1 Gbit/s, 1 ms access link into a 10 Mbit/s, 1 ms DRR bottleneck
# (quantum 1500 B), Poisson arrivals of 1000-byte packets at 95 % load.
#
# usage: bench/sim_ns2_scenario.sh [PACKETS]     (default 10000000)
# env:   REPS=1 (runs, seeds 1..REPS), N=10 (flows), LOAD=0.95, QUANTUM=1500
# stdout: one line per run in the peers' format (bench/peers/lib.sh, emit):
#   schedlab,drr,flows,packets,wall_s,setup_s,cpu_s,setup_cpu_s,packets_per_s,…
# The set-up (process start, parsing, building N+1 links) is timed by a run of 1 ms of
# traffic, as for the peers. `packets` are the packets the simulator carried.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=peers/lib.sh
. "$here/peers/lib.sh"
cd "$here/.."

packets=${1:-10000000}
reps=${REPS:-1}
flows=${N:-10}
load=${LOAD:-0.95}
quantum=${QUANTUM:-1500}

need_apt time /usr/bin/time
cargo build --release -q -p schedlab-sim --example run_scenario
duration=$(awk -v n="$packets" -v l="$load" 'BEGIN { printf "%.3f", n / (1250 * l) }')
work=$(mktemp -d /tmp/schedlab-sim-ns2.XXXXXX)
trap 'rm -rf "$work"' EXIT

run() { # seed duration -> packets on stdout
    python3 bench/scenarios/ns2_bottleneck.py "$flows" "$2" "$1" "$load" "$quantum" \
        >"$work/scenario.toml"
    timed "$work/time.txt" target/release/examples/run_scenario "$work/scenario.toml" \
        "$work/out" >"$work/stdout.txt"
    sed -n 's/^packets \([0-9]*\) .*/\1/p' "$work/stdout.txt" | grep . || {
        echo "error: no summary line from run_scenario; its output:" >&2
        cat "$work/stdout.txt" >&2
        exit 1
    }
}

echo "# schedlab: drr quantum=${quantum} B, n=${flows}, load=${load}, duration=${duration} s" \
    "(~${packets} packets), ${reps} run(s)" >&2
emit_header >&2
measure_runs schedlab drr "$flows" "$reps" "$duration" run "$work/time.txt"
