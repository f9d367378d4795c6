#!/usr/bin/env bash
# ns per packet against the number of flows (1 … 1,000,000) for every discipline: the core
# bench (crates/schedlab-core/benches/disciplines.rs, every case of its CASES list) with
# SCHEDLAB_BENCH_FLOWS, then bench/flow_scaling.py draws docs/img/flow_scaling.svg and .png
# (log-log) and writes the section between <!-- flow-scaling:begin --> and
# <!-- flow-scaling:end --> of docs/performance.md, with the machine's load before and after.
#
# usage: bench/flow_scaling.sh
# env:   FLOWS=1,10,100,1000,10000,100000,1000000
#        CRITERION_ARGS="--warm-up-time 0.3 --measurement-time 1"   (shared machine: keep short)
#        PYTHON=.venv/bin/python (needs matplotlib: `make build`)
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
flows=${FLOWS:-1,10,100,1000,10000,100000,1000000}
python=${PYTHON:-.venv/bin/python}
baseline="flow_scaling_$(date +%s)_$$"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "flow_scaling: criterion at $flows flows (about 10 minutes)" >&2
# shellcheck disable=SC2086  # CRITERION_ARGS holds several arguments
SCHEDLAB_BENCH_FLOWS=$flows cargo bench -p schedlab-core --bench disciplines -- \
    --save-baseline "$baseline" ${CRITERION_ARGS:---warm-up-time 0.3 --measurement-time 1} \
    >target/flow_scaling.txt 2>&1 || {
    tail -30 target/flow_scaling.txt >&2
    exit 1
}
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
"$python" bench/flow_scaling.py target/criterion "$baseline" docs/performance.md docs/img \
    "$load_before" "$load_after" "$(git rev-parse --short HEAD)"
