#!/usr/bin/env bash
# Core disciplines vs DPDK rte_sched, measured in one run on this machine.
#
# 1. schedlab's criterion bench (`cargo bench -p schedlab-core --bench disciplines`): enqueue +
#    dequeue cost per packet of every discipline in its CASES list at 1, 64, 1,024 and 16,384
#    backlogged flows (4 packets per flow, steady state).
# 2. bench/peers/dpdk/run.sh: DPDK's rte_sched at the same numbers of pipes, 4 packets per pipe
#    (and a light-load variant with 64 packets in all).
# 3. Writes the table, the machine facts and the date into docs/performance.md, replacing the
#    section "## Core disciplines vs DPDK rte_sched" up to its "Written by" line (hand-written
#    subsections after that line, such as the before/after comparisons, and the rest of the
#    file are kept).
#
# Usage: bench/core_vs_dpdk.sh            (called by `make bench`)
# Environment: CRITERION_ARGS (extra arguments for criterion, e.g. "--measurement-time 1"),
# WAIT_IDLE (a percentage: first wait, at most 10 minutes, until the CPUs are at least that
# idle over 2 s; for shared machines), and the DPDK_* variables of bench/peers/dpdk/run.sh. Raw outputs are kept in $OUT_DIR
# (default target/core_vs_dpdk).
set -euo pipefail

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
out=${OUT_DIR:-$root/target/core_vs_dpdk}
mkdir -p "$out"

idle() { # percentage of CPU time idle over $1 seconds (default 1), all CPUs
	local a b t=0 i
	read -ra a </proc/stat
	sleep "${1:-1}"
	read -ra b </proc/stat
	for i in 1 2 3 4 5 6 7 8; do t=$((t + b[i] - a[i])); done
	echo $((100 * (b[4] - a[4]) / t))
}

if [[ -n ${WAIT_IDLE:-} ]]; then
	deadline=$((SECONDS + 600))
	while (($(idle 2) < WAIT_IDLE && SECONDS < deadline)); do
		echo "core_vs_dpdk: waiting for the CPUs to be ${WAIT_IDLE} % idle" >&2
		sleep 5
	done
fi

facts=$out/facts.txt
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "nproc=$(nproc)"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "cpu_family_model=$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')/$(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
	echo "caches=$(lscpu 2>/dev/null | awk -F: '/^L[123]/ {gsub(/^ +/, "", $2); printf "%s %s; ", $1, $2}')"
	echo "rustc=$(rustc --version)"
	echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates bench || echo ' (with uncommitted changes)')"
	echo "before_idle=$(idle)"
	echo "before_load=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$facts"

echo "core_vs_dpdk: criterion bench (schedlab-core disciplines)" >&2
baseline="core_vs_dpdk_$(date +%s)_$$"
# shellcheck disable=SC2086
cargo bench -p schedlab-core --bench disciplines -- --save-baseline "$baseline" ${CRITERION_ARGS:-} \
	>"$out/criterion.txt" 2>&1 || {
	cat "$out/criterion.txt" >&2
	exit 1
}
grep -E '^[a-z_]+/[0-9]+ +time:' "$out/criterion.txt" >&2 || true
echo "middle_load=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$facts"

echo "core_vs_dpdk: DPDK rte_sched (bench/peers/dpdk/run.sh)" >&2
"$root/bench/peers/dpdk/run.sh" >"$out/dpdk.tsv" 2>"$out/dpdk.log" || {
	tail -30 "$out/dpdk.log" >&2
	exit 1
}
cat "$out/dpdk.tsv" >&2
{
	echo "dpdk=$(pkg-config --modversion libdpdk)"
	echo "dpdk_reps=${DPDK_REPS:-3}"
	echo "dpdk_pkts=${DPDK_PKTS:-5000000}"
	echo "after_idle=$(idle)"
	echo "after_load=$(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$facts"

python3 - "$root/docs/performance.md" "$root/target/criterion" "$baseline" "$out/dpdk.tsv" "$facts" <<'PY'
"""Writes the "Core disciplines vs DPDK rte_sched" section of docs/performance.md."""
import csv
import json
import pathlib
import sys

doc_path, criterion_dir, baseline, dpdk_path, facts_path = sys.argv[1:6]
criterion = pathlib.Path(criterion_dir)
facts = dict(line.rstrip("\n").split("=", 1) for line in open(facts_path) if "=" in line)

# Our numbers: every benchmark that wrote this run's baseline, <discipline>/<flows>.
sys.path.insert(0, str(pathlib.Path(doc_path).resolve().parent.parent / "bench"))
from criterion_estimates import load  # noqa: E402

ours = load(criterion, baseline)
if not ours:
    sys.exit("core_vs_dpdk: no criterion estimates found for this run")

rows = list(csv.DictReader(open(dpdk_path), delimiter="\t"))
sched_matched = {}  # pipes -> row, 4 packets per pipe
sched_light = {}  # pipes -> row, small fixed backlog
ring = {}  # backlog -> row
for row in rows:
    pipes, backlog = int(row["pipes"]), int(row["backlog"])
    if row["scheduler"] == "rte_sched":
        (sched_matched if backlog == 4 * pipes else sched_light)[pipes] = row
    else:
        ring.setdefault(backlog, {})[row["scheduler"]] = row
    if int(row["drops"]) != 0:
        sys.exit(f"core_vs_dpdk: the DPDK harness dropped packets: {row}")
light_backlog = next(iter(sched_light.values()))["backlog"] if sched_light else None


def ns(value):
    return f"{float(value):.1f}"


def ratio(mine, theirs):
    return f"{mine / float(theirs):.2f}" if theirs else "–"


disciplines = sorted({d for d, _ in ours}, key=lambda d: (d != "fifo", d != "drr", d))
flow_counts = sorted({f for _, f in ours})

lines = [
    "## Core disciplines vs DPDK rte_sched",
    "",
    f"Measured {facts['date']} on {facts['nproc']} vCPUs, {facts['cpu']} "
    f"(family/model {facts['cpu_family_model']}; {facts['caches'].strip().rstrip(';')}); "
    f"{facts['rustc']}; DPDK {facts['dpdk']} (Debian `dpdk-dev`); schedlab commit "
    f"`{facts['commit']}`. The machine is shared: CPU idle {facts['before_idle']} % before the "
    f"run and {facts['after_idle']} % after, load average {facts['before_load']} → "
    f"{facts['middle_load']} (between the two benches) → {facts['after_load']}.",
    "",
    "ns per packet = one enqueue + one dequeue in steady state. Ours: criterion median "
    "(95 % interval of the median in brackets). rte_sched: median of "
    f"{facts['dpdk_reps']} repetitions of {int(facts['dpdk_pkts']):,} packets, dequeue and "
    "enqueue in bursts of 32; **4/pipe** = every pipe holds 4 packets, the same state "
    "as our bench (ratio ours / rte_sched in the next column)"
    + (
        f"; **{light_backlog} total** = only {light_backlog} packets queued in all, "
        "rte_sched's favourable case (fewer active pipes than pipes)"
        if light_backlog
        else ""
    )
    + ".",
    "",
]
header = "| discipline | flows / pipes | ours ns/pkt | rte_sched 4/pipe | ours / rte_sched |"
rule = "|---|---:|---:|---:|---:|"
if light_backlog:
    header += f" rte_sched {light_backlog} total | ours / rte_sched ({light_backlog} total) |"
    rule += "---:|---:|"
lines += [header, rule]
for discipline in disciplines:
    for flows in flow_counts:
        if (discipline, flows) not in ours:
            continue
        mine, low, high = ours[(discipline, flows)]
        matched = sched_matched.get(flows)
        light = sched_light.get(flows)
        cells = [
            f"`{discipline}`",
            f"{flows:,}",
            f"{mine:.1f} [{low:.1f}–{high:.1f}]",
            ns(matched["median_ns"]) if matched else "–",
            ratio(mine, matched["median_ns"]) if matched else "–",
        ]
        if light_backlog:
            cells += [
                ns(light["median_ns"]) if light else "–",
                ratio(mine, light["median_ns"]) if light else "–",
            ]
        lines.append("| " + " | ".join(cells) + " |")
lines += [
    "",
    "DPDK detail (min–max over the repetitions; `short` = dequeue calls that returned fewer "
    "than the burst of 32, i.e. the whole backlog was smaller than a burst):",
    "",
    "| scheduler | pipes | backlog | median ns/pkt | min–max | short |",
    "|---|---:|---:|---:|---:|---:|",
]
for row in rows:
    pipes = row["pipes"] if row["scheduler"] == "rte_sched" else "–"
    lines.append(
        f"| {row['scheduler']} | {pipes} | {int(row['backlog']):,} | {ns(row['median_ns'])} | "
        f"{ns(row['min_ns'])}–{ns(row['max_ns'])} | {row['short_deq']} |"
    )
lines += [
    "",
    "Written by `bench/core_vs_dpdk.sh`; raw outputs in `target/core_vs_dpdk/`.",
    "",
]
section = "\n".join(lines)

doc = pathlib.Path(doc_path)
text = doc.read_text() if doc.exists() else "# Performance\n"
marker = "## Core disciplines vs DPDK rte_sched"
if marker in text:
    before, rest = text.split(marker, 1)
    after = rest.split("\n## ", 1)
    tail = "\n## " + after[1] if len(after) == 2 else ""
    written = lines[-2]
    if written in after[0]:
        # Hand-written subsections after the generated part (before/after comparisons) stay.
        text = before + section.rstrip("\n") + after[0].split(written, 1)[1] + tail
    else:
        text = before + section + tail
else:
    text = text.rstrip("\n") + "\n\n" + section
doc.write_text(text)
print(f"core_vs_dpdk: wrote {doc}", file=sys.stderr)
PY
