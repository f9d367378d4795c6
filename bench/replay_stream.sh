#!/usr/bin/env bash
# Peak memory and wall time of a streamed `schedlab replay` of a generated trace of PACKETS
# packets (default 50,000,000) from FLOWS flows (default 1,000), as FORMAT (default csv):
# * csv: 1,000-byte packets every 1 us (8 Gbit/s offered) into a 10 Gbit/s DRR link (the trace
#   is about 24 B per packet, the departures about 75 B per packet: 50 M packets need ~5 GB free);
# * pcap: a capture of UDP/IPv4 Ethernet frames of 100-byte IP packets every 1 us, one 5-tuple
#   per flow (source port 10000 + flow), into the same link: 130 B per packet of capture.
# The queue stays short, so the departure file is as long as the trace. Prints the trace size
# and the `/usr/bin/time -v` lines. Everything goes to a temporary folder under ${TMPDIR:-/tmp}
# that is removed at the end.
# Usage: bench/replay_stream.sh [PACKETS] [FLOWS] [csv|pcap]
set -euo pipefail
packets="${1:-50000000}"
flows="${2:-1000}"
format="${3:-csv}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/config.toml" <<TOML
[link]
rate = "10Gbit"
[scheduler]
kind = "drr"
quantum = 1500
[gateway]
max_flows = $((flows + 1))
TOML
case "$format" in
csv)
    trace="$work/trace.csv"
    awk -v n="$packets" -v f="$flows" 'BEGIN {
        print "time_s,flow,size_bytes"
        for (k = 0; k < n; k++) printf "%.6f,%d,1000\n", k * 1e-6, (k * 7919) % f
    }' > "$trace"
    ;;
pcap)
    trace="$work/trace.pcap"
    python3 - "$packets" "$flows" "$trace" <<'PY'
import struct, sys
packets, flows, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
payload = 100 - 28
def frame(port):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 100, 0, 0, 64, 17, 0, bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
    udp = struct.pack("!HHHH", port, 9000, 8 + payload, 0)
    return bytes(6 * [2]) + bytes(6 * [4]) + b"\x08\x00" + ip + udp + bytes(payload)
frames = [frame(10000 + f) for f in range(flows)]
record = struct.Struct("<IIII")
with open(path, "wb", buffering=1 << 20) as out:
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for k in range(packets):
        data = frames[(k * 7919) % flows]
        out.write(record.pack(k // 1_000_000, k % 1_000_000, len(data), len(data)))
        out.write(data)
PY
    ;;
*)
    echo "FORMAT must be csv or pcap, not $format" >&2
    exit 2
    ;;
esac
echo "trace: $packets packets, $flows flows, $format, $(du -h "$trace" | cut -f1)"
/usr/bin/time -v schedlab replay --config "$work/config.toml" --trace "$trace" \
    --out "$work/departures.csv" 2>&1 >/dev/null | grep -E "Elapsed|Maximum resident"
echo "departures: $(($(wc -l < "$work/departures.csv") - 1)) rows, $(du -h "$work/departures.csv" | cut -f1)"
