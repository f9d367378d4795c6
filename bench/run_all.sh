#!/usr/bin/env bash
# `make bench`: every benchmark, each writing its own section of docs/performance.md.
#   1. core disciplines (criterion) beside DPDK rte_sched, measured in the same run;
#   2. the simulator (10 Poisson flows at 95% load) beside ns-2, ns-3 and ns.py.
# Peers are installed by the scripts (apt-get, pip in /tmp); root is needed for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/core_vs_dpdk.sh
bash bench/sim_vs_peers.sh
echo "results: docs/performance.md"
