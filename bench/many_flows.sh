#!/usr/bin/env bash
# Peak memory and wall time of `schedlab run` with N light flows (default 100,000): one 1 Gbit/s
# DRR link, N Poisson flows of 1 packet/s of 500 B, 10 s, one replication. Prints the
# `/usr/bin/time -v` lines. Usage: bench/many_flows.sh [FLOWS]
set -euo pipefail
flows="${1:-100000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$flows" "$work/scenario.toml" <<'PY'
import sys
flows, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write('[run]\nduration = "10s"\nseed = 1\nreplications = 1\n')
    f.write('[[link]]\nname = "l"\nrate = "1Gbit"\nscheduler = { kind = "drr" }\n')
    for i in range(flows):
        f.write(f'[[source]]\nflow = {i}\npath = ["l"]\narrivals = {{ model = "poisson", rate_pps = 1 }}\n'
                'size = { dist = "constant", size = 500 }\n')
PY
/usr/bin/time -v schedlab run "$work/scenario.toml" --out "$work/out" 2>&1 >/dev/null \
    | grep -E "Elapsed|Maximum resident"
