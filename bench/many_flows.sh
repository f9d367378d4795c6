#!/usr/bin/env bash
# Peak memory and wall time of `schedlab run` with N light flows (default 100,000): one 1 Gbit/s
# DRR link, N Poisson flows of 1 packet/s of 500 B, 10 s, one replication, declared as one
# compact `[[source]]` with `count = N` (docs/scenarios.md). Prints the `/usr/bin/time -v` lines.
# Usage: bench/many_flows.sh [FLOWS] [extra `schedlab run` options, e.g. --force]
set -euo pipefail
flows="${1:-100000}"
shift || true
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/scenario.toml" <<TOML
[run]
duration = "10s"
seed = 1
replications = 1

[[link]]
name = "l"
rate = "1Gbit"
scheduler = { kind = "drr" }

[[source]]
count = $flows
path = ["l"]
arrivals = { model = "poisson", rate_pps = 1 }
size = { dist = "constant", size = 500 }
TOML
/usr/bin/time -v schedlab run "$work/scenario.toml" --out "$work/out" "$@" 2>&1 >/dev/null \
    | grep -E "Elapsed|Maximum resident"
