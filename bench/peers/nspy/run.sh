#!/usr/bin/env bash
# ns.py on the common scenario: one 10 Mbit/s bottleneck, 10 Poisson flows of 1000-byte
# packets at 95 % load, ns.py's DRRServer (quantum 1500 B for every flow). The shared harness
# first writes the Poisson trace (gen_trace.py, not timed), then replay.py feeds it to
# DRRServer (timed: interpreter start, trace load, simulation, departure CSV write).
#
# usage: bench/peers/nspy/run.sh [PACKETS]       (default 1000000: ns.py is ~15x slower than ns-2)
# env:   REPS=1 (runs, trace seeds 1..REPS), N=10, LOAD=0.95, QUANTUM=1500,
#        NSPY_VENV=/tmp/schedlab-peers/nspy-venv, PEERS_DIR
# stdout: one line per run
#         nspy,DRRServer,packets,wall_s,packets_per_s,,peak_rss_mb
# (events_per_s is empty: SimPy does not count events for the harness.) The simulation-loop
# rate (replay.py's t_sim) is printed on stderr. Creates the venv with the shared setup.sh
# (ns.py 0.5.0, see its README for the install caveat on Python < 3.14) if missing.
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

harness=$(peers_dir nspy)
need_apt time /usr/bin/time
py=$(nspy_python "$harness" "$venv")

work=$(mktemp -d /tmp/schedlab-peers-nspy.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$py" - "$flows" "$quantum" >"$work/params.json" <<'PY'
import json, sys
n, q = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({"weights": [1] * n, "quantum": q}))
PY

echo "# nspy: ns.py DRRServer quantum=${quantum} B, n=${flows}, load=${load}, 10 Mbit/s," \
    "1000 B, ~${packets} packets, ${reps} run(s)" >&2
emit_header >&2
for seed in $(seq 1 "$reps"); do
    python3 "$harness/gen_trace.py" --flows "$flows" --load "$load" --link-bps 1e7 \
        --size 1000 1000 --packets "$packets" --seed "$seed" --out "$work/trace.csv" 2>/dev/null
    timed "$work/time.txt" "$py" "$harness/replay.py" --scheduler drr --rate-bps 1e7 \
        --params "$work/params.json" --trace "$work/trace.csv" --out "$work/departures.csv" \
        --summary "$work/summary.json" 2>"$work/stderr.txt" || {
        cat "$work/stderr.txt" >&2
        exit 1
    }
    read -r delivered sim_s < <("$py" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["delivered"], s["t_sim_s"])' "$work/summary.json")
    awk -v n="$delivered" -v s="$sim_s" 'BEGIN { printf "# nspy seed '"$seed"': simulation loop %.2f s, %.0f packets/s\n", s, n / s }' >&2
    emit nspy DRRServer "$delivered" "$(time_wall "$work/time.txt")" "" "$(time_rss_mb "$work/time.txt")"
    rm -f "$work/departures.csv" "$work/trace.csv"
done
