#!/usr/bin/env bash
# Cross-check schedlab's DRR against ns.py's DRRServer on one Poisson trace.
#
# The same trace (shared gen_trace.py: 10 flows, 95 % of 1 Gbit/s, sizes uniform 64..1500 B,
# 9-decimal times) is replayed
#   * through ns.py's DRRServer with the shared replay.py (feeder `direct`), and
#   * through `python -m schedlab replay` (the repository's .venv; `make build` is run if the
#     extension does not import),
# with the same per-flow quanta: flow i gets 1500 x w_i bytes, w = 1,1,1,1,1,2,2,2,4,4.
# compare.py then prints per-flow throughput and mean delay from both and their differences,
# and compares every packet's departure time. See bench/peers/README.md for what must match
# exactly and what cannot.
#
# usage: bench/peers/nspy/crosscheck.sh [PACKETS]   (default 100000)
# env:   SEED=1, FEEDER=direct|ns (replay.py's feeder), NSPY_VENV, SCHEDLAB_PYTHON, PEERS_DIR,
#        KEEP=DIR (keep trace and departure files in DIR)
# exit:  0 if every difference is explained by a same-nanosecond tie, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

packets=${1:-100000}
seed=${SEED:-1}
feeder=${FEEDER:-direct}
top=$(git -C "$here" rev-parse --show-toplevel)
harness=$(peers_dir nspy)
nspy=$(nspy_python "$harness" "${NSPY_VENV:-/tmp/schedlab-peers/nspy-venv}")
schedlab=${SCHEDLAB_PYTHON:-$top/.venv/bin/python}
if ! "$schedlab" -c 'import schedlab._core' 2>/dev/null; then
    echo "# schedlab's Python module is not built: running make build in $top" >&2
    make -C "$top" build >&2
fi

if [ -n "${KEEP:-}" ]; then
    work=$KEEP
    mkdir -p "$work"
else
    work=$(mktemp -d /tmp/schedlab-crosscheck.XXXXXX)
    trap 'rm -rf "$work"' EXIT
fi

weights=(1 1 1 1 1 2 2 2 4 4)
quantum=1500
{
    printf '{"weights": [%s], "quantum": %d}\n' "$(IFS=,; echo "${weights[*]}")" "$quantum"
} >"$work/params.json"
{
    printf '[link]\nrate = "1Gbit"\n\n[scheduler]\nkind = "drr"\nquantum = %d\n' "$quantum"
    for i in "${!weights[@]}"; do
        printf '\n[[flow]]\nid = %d\nquantum = %d\n' "$i" $((quantum * weights[i]))
    done
} >"$work/drr.toml"

python3 "$harness/gen_trace.py" --flows 10 --load 0.95 --link-bps 1e9 --size 64 1500 \
    --packets "$packets" --seed "$seed" --out "$work/trace.csv"
"$nspy" "$harness/replay.py" --scheduler drr --rate-bps 1e9 --params "$work/params.json" \
    --trace "$work/trace.csv" --out "$work/nspy.csv" --feeder "$feeder" \
    --summary "$work/nspy_summary.json" 2>/dev/null
"$schedlab" -m schedlab replay --config "$work/drr.toml" --trace "$work/trace.csv" \
    --out "$work/schedlab.csv" --json >"$work/schedlab_summary.json"
echo "# ns.py DRRServer (feeder $feeder) vs schedlab drr; quanta 1500 x (${weights[*]}) B; 1 Gbit/s"
python3 "$here/compare.py" "$work/trace.csv" "$work/nspy.csv" "$work/schedlab.csv" \
    "$work/schedlab_summary.json"
