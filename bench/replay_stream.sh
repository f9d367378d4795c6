#!/usr/bin/env bash
# Peak memory and wall time of a streamed `schedlab replay` of a generated trace of PACKETS
# packets (default 50,000,000) from FLOWS flows (default 1,000): 1,000-byte packets every
# 1 us (8 Gbit/s offered) into a 10 Gbit/s DRR link, so the queue stays short and the departure
# file is as long as the trace. Prints the trace size and the `/usr/bin/time -v` lines.
# The trace (about 24 B per packet) and the departures (about 75 B per packet) go to a
# temporary folder under ${TMPDIR:-/tmp} that is removed at the end: 50 M packets need ~5 GB free.
# Usage: bench/replay_stream.sh [PACKETS] [FLOWS]
set -euo pipefail
packets="${1:-50000000}"
flows="${2:-1000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/config.toml" <<TOML
[link]
rate = "10Gbit"
[scheduler]
kind = "drr"
quantum = 1500
TOML
awk -v n="$packets" -v f="$flows" 'BEGIN {
    print "time_s,flow,size_bytes"
    for (k = 0; k < n; k++) printf "%.6f,%d,1000\n", k * 1e-6, (k * 7919) % f
}' > "$work/trace.csv"
echo "trace: $packets packets, $flows flows, $(du -h "$work/trace.csv" | cut -f1)"
/usr/bin/time -v schedlab replay --config "$work/config.toml" --trace "$work/trace.csv" \
    --out "$work/departures.csv" 2>&1 >/dev/null | grep -E "Elapsed|Maximum resident"
echo "departures: $(($(wc -l < "$work/departures.csv") - 1)) rows, $(du -h "$work/departures.csv" | cut -f1)"
