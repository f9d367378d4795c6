#!/usr/bin/env bash
# ns.py on the common scenario: N Poisson flows of 1000-byte packets at 95 % of a 10 Mbit/s
# link, ns.py's DRRServer (quantum 1500 B for every flow). poisson_trace.py first writes the
# trace (not timed), then drr_replay.py feeds it to DRRServer (timed; the set-up is the
# interpreter start, the imports and reading the trace: everything but the SimPy run).
# ns.py has no links with propagation delay in this harness: it models the bottleneck only.
#
# usage: bench/peers/nspy/run.sh [PACKETS]       (default 1000000)
# env:   REPS=1 (runs, trace seeds 1..REPS), N=10, LOAD=0.95, QUANTUM=1500,
#        NSPY_VENV=/tmp/schedlab-peers/nspy-venv
# stdout: one line per run (bench/peers/lib.sh, emit): nspy,DRRServer,flows,packets,…
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

packets=${1:-1000000}
reps=${REPS:-1}
flows=${N:-10}
load=${LOAD:-0.95}
quantum=${QUANTUM:-1500}
venv=${NSPY_VENV:-/tmp/schedlab-peers/nspy-venv}

need_apt time /usr/bin/time
py=$(nspy_python "$venv")
work=$(mktemp -d /tmp/schedlab-peers-nspy.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "# nspy: ns.py DRRServer quantum=${quantum} B, n=${flows}, load=${load}, 10 Mbit/s," \
    "1000 B, ~${packets} packets, ${reps} run(s)" >&2
emit_header >&2
for seed in $(seq 1 "$reps"); do
    python3 "$here/poisson_trace.py" --flows "$flows" --load "$load" --link-bps 1e7 \
        --size 1000 1000 --packets "$packets" --seed "$seed" --out "$work/trace.csv"
    timed "$work/time.txt" "$py" "$here/drr_replay.py" --trace "$work/trace.csv" \
        --rate-bps 1e7 --quanta "$quantum" >"$work/summary.json"
    read -r delivered sim_s sim_cpu < <(python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); print(s["delivered"], s["t_sim_s"], s["cpu_sim_s"])' \
        "$work/summary.json")
    wall=$(time_wall "$work/time.txt")
    cpu=$(time_cpu "$work/time.txt")
    setup=$(awk -v w="$wall" -v s="$sim_s" 'BEGIN { u = w - s; printf "%.2f", u < 0 ? 0 : u }')
    setup_cpu=$(awk -v c="$cpu" -v s="$sim_cpu" 'BEGIN { u = c - s; printf "%.2f", u < 0 ? 0 : u }')
    emit nspy DRRServer "$flows" "$delivered" "$wall" "$setup" "$cpu" "$setup_cpu" "" \
        "$(time_rss_mb "$work/time.txt")"
    rm -f "$work/trace.csv"
done
