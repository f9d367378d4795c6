#!/usr/bin/env bash
# Cross-check schedlab's DRR against ns.py's DRRServer on one Poisson trace.
#
# The same trace (poisson_trace.py: 10 flows, 95 % of 1 Gbit/s, sizes uniform 64..1500 B,
# times in whole nanoseconds) is replayed
#   * through ns.py's DRRServer with drr_replay.py, and
#   * through `python -m schedlab replay` (the repository's .venv; `make build` is run if the
#     extension does not import),
# with the same per-flow quanta: flow i gets 1500 x w_i bytes, w = 1,1,1,1,1,2,2,2,4,4.
# compare.py then prints per-flow throughput and mean delay from both and their differences,
# and compares every packet's departure time. See bench/peers/README.md for what must match
# exactly and what cannot.
#
# usage: bench/peers/nspy/crosscheck.sh [PACKETS]   (default 100000)
# env:   SEED=1, NSPY_VENV, SCHEDLAB_PYTHON,
#        KEEP=DIR (keep trace and departure files in DIR)
# exit:  0 if every difference is explained by a same-nanosecond tie, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"

packets=${1:-100000}
seed=${SEED:-1}
top=$(git -C "$here" rev-parse --show-toplevel)
nspy=$(nspy_python "${NSPY_VENV:-/tmp/schedlab-peers/nspy-venv}")
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
quanta=()
for w in "${weights[@]}"; do quanta+=($((quantum * w))); done
{
    printf '[link]\nrate = "1Gbit"\n\n[scheduler]\nkind = "drr"\nquantum = %d\n' "$quantum"
    for i in "${!quanta[@]}"; do
        printf '\n[[flow]]\nid = %d\nquantum = %d\n' "$i" "${quanta[i]}"
    done
} >"$work/drr.toml"

python3 "$here/poisson_trace.py" --flows 10 --load 0.95 --link-bps 1e9 --size 64 1500 \
    --packets "$packets" --seed "$seed" --out "$work/trace.csv"
"$nspy" "$here/drr_replay.py" --trace "$work/trace.csv" --rate-bps 1e9 \
    --quanta "$(IFS=,; echo "${quanta[*]}")" --out "$work/nspy.csv" >"$work/nspy_summary.json"
"$schedlab" -m schedlab replay --config "$work/drr.toml" --trace "$work/trace.csv" \
    --out "$work/schedlab.csv" --json >"$work/schedlab_summary.json"
echo "# ns.py DRRServer vs schedlab drr; quanta 1500 x (${weights[*]}) B; 1 Gbit/s"
python3 "$here/compare.py" "$work/trace.csv" "$work/nspy.csv" "$work/schedlab.csv" \
    "$work/schedlab_summary.json"
