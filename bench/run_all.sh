#!/usr/bin/env bash
# `make bench`: every benchmark, each writing its own section of docs/performance.md.
#   1. core disciplines (criterion) beside DPDK rte_sched, measured in the same run;
#   2. the simulator on the ns-2 scenario (10 and 1,000 flows) beside ns-2, ns-3 and ns.py;
#   3. a sweep on Dask with 1 and 2 worker processes (needs `make build`: the venv's schedlab);
#   4. every discipline's cost per packet at 1 … 1,000,000 flows, plotted (log-log);
#   5. the simulator with TCP flows beside ns-2 on the same dumbbell (4, 32, 256 flows);
#   6. what the unused router model costs a plain scenario (cachegrind, against the commit
#      before the router model; needs valgrind).
# Peers are installed by the scripts (apt-get, pip in /tmp); root is needed for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/core_vs_dpdk.sh
bash bench/sim_vs_peers.sh
"${PYTHON:-.venv/bin/python}" bench/dask_scaling.py
bash bench/flow_scaling.sh
python3 bench/tcp_vs_ns2.py
python3 bench/unused_stage.py
echo "results: docs/performance.md"
