#!/usr/bin/env bash
# Simulator throughput: one bottleneck, 10 Poisson flows at 95% load, 10^7 packets.
# Measures packets/s and events/s (printed by the example binary, simulation loop only) and
# peak RSS and total wall time (/usr/bin/time -v).
#
# usage: bench/sim_throughput.sh [KIND] [PACKETS]   (KIND: drr (default), fifo, any discipline id)
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-drr}"
packets="${2:-10000000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 10 flows x 950 pkt/s x 1000 B (exponential sizes) = 76 Mbit/s on an 80 Mbit/s link: rho = 0.95.
{
  cat <<TOML
[run]
packets = $packets
seed = 1
bin = "10s"

[[link]]
name = "bottleneck"
rate = "80Mbit"
scheduler = { kind = "$kind" }
TOML
  for f in $(seq 0 9); do
    cat <<TOML

[[source]]
flow = $f
path = ["bottleneck"]
arrivals = { model = "poisson", rate_pps = 950 }
size = { dist = "exponential", mean = 1000 }
TOML
  done
} >"$work/scenario.toml"

cargo build --release -q -p schedlab-sim --example run_scenario
/usr/bin/time -v target/release/examples/run_scenario "$work/scenario.toml" "$work/out" 2>"$work/time.txt"
grep -E "Maximum resident set size|Elapsed \(wall clock\)|User time" "$work/time.txt"
# On a shared machine the wall time includes waiting for a core; packets per second of user
# CPU time is the steadier figure.
user=$(awk -F': ' '/User time/ {print $2}' "$work/time.txt")
awk -v p="$packets" -v u="$user" 'BEGIN { if (u > 0) printf "packets per CPU second %.0f (%.1f ns/packet)\n", p / u, u * 1e9 / p }'
python3 - "$work/out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
link = s["links"][0]
print(f"utilisation {link['utilisation']:.4f}  mean queue {link['queue_mean_packets']:.2f} packets  "
      f"flow 0 mean delay {s['flows'][0]['delay_mean_s']*1e3:.3f} ms")
PY
