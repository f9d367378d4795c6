#!/usr/bin/env bash
# DPDK rte_sched peer: ns per packet (enqueue + dequeue) of DPDK's hierarchical scheduler at
# 1, 64, 1,024 and 16,384 pipes, in the same state as schedlab's core bench (4 packets queued
# per pipe), plus a light-load variant (64 packets queued in all) and the rte_ring FIFO floor.
#
# Installs Debian's dpdk-dev and pkg-config if missing (needs root), builds schedlab's own
# harness rte_sched_cost.c (beside this script; its header says what it measures) in a
# temporary directory, and runs it on one core without hugepages or NICs.
#
# Output (stdout): one tab-separated row per configuration after a header line:
#   scheduler  pipes  backlog  burst  median_ns  min_ns  max_ns  short_deq  drops
# (median / min / max over the repetitions; short_deq = dequeue calls returning fewer than
# `burst` packets, drops must be 0). Raw harness output goes to stderr.
#
# Environment: DPDK_PIPES (default "1 64 1024 16384"), DPDK_PKTS (packets per timed
# repetition, default 5000000), DPDK_REPS (default 3), DPDK_BURST (default 32), DPDK_LCORE
# (default 1), DPDK_LIGHT_BACKLOG (default 64; empty to skip the light rows).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if ! pkg-config --exists libdpdk 2>/dev/null; then
	if [[ $(id -u) != 0 ]]; then
		echo "run.sh: dpdk-dev is not installed and installing it needs root" >&2
		exit 1
	fi
	echo "run.sh: installing dpdk-dev and pkg-config" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpdk-dev pkg-config >&2
fi

build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
# shellcheck disable=SC2046  # pkg-config prints several flags
cc -O3 -Wall -Wextra -DALLOW_EXPERIMENTAL_API $(pkg-config --cflags libdpdk) \
	-o "$build/rte_sched_cost" "$here/rte_sched_cost.c" $(pkg-config --libs libdpdk) >&2

pipes=${DPDK_PIPES:-1 64 1024 16384}
pkts=${DPDK_PKTS:-5000000}
reps=${DPDK_REPS:-3}
burst=${DPDK_BURST:-32}
lcore=${DPDK_LCORE:-1}
light=${DPDK_LIGHT_BACKLOG-64}
# No hugepages (none are mounted here), no PCI devices, no shared runtime files, no telemetry;
# 1 GiB of ordinary memory is enough for 16,384 pipes with 65,536 mbufs.
eal=(--no-huge --no-pci -m 1024 --no-shconf --no-telemetry -l "$lcore" --log-level=lib.eal:notice)

run() { # pipes backlog [--no-fifo]
	"$build/rte_sched_cost" "${eal[@]}" -- --pipes "$1" --backlog "$2" --burst "$burst" \
		--pkts "$pkts" --reps "$reps" "${@:3}" 2>&1 | tee /dev/stderr | grep '^RESULT' || {
		echo "run.sh: harness failed for pipes=$1 backlog=$2" >&2
		exit 1
	}
}

printf 'scheduler\tpipes\tbacklog\tburst\tmedian_ns\tmin_ns\tmax_ns\tshort_deq\tdrops\n'
{
	for p in $pipes; do
		# Same state as schedlab's bench: every pipe holds 4 packets. The first run also
		# measures the rte_ring FIFO floor at that backlog.
		run "$p" $((4 * p))
		if [[ -n $light ]]; then
			run "$p" "$light" --no-fifo
		fi
	done
} | awk '{
	for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", $2, v["pipes"], v["backlog"], v["burst"],
		v["median_ns_per_pkt"], v["min_ns"], v["max_ns"], v["short_deq"], v["drops"]
}'
