"""Before/after a base commit, per discipline and flow count: the core bench
(crates/schedlab-core/benches/disciplines.rs) of a base commit and of this tree, run case by
case in turn (base, this tree, next case) for several rounds; the smallest of each side's
criterion medians goes in the table. Alternating cancels most of a varying load; the smallest
of the rounds is the run least disturbed. Issue 8 asks for "bench numbers not worse" than
before its building blocks (base b2a94da).

Both sides run the same harness, this tree's `benches/disciplines.rs` copied over the base's,
so that only the library differs (`--base-harness` keeps the base's own). The harness shapes
what the compiler inlines into the measured loop: b2a94da's own harness inlined the
`AnyScheduler` dequeue into the loop, the harness with `SCHEDLAB_BENCH_STEPS` does not, which
moves `fifo` by about 11 instructions per packet with the library unchanged.

`--counts` adds cachegrind's instructions and D1/LL misses per packet (steps of the bench's
`SCHEDLAB_BENCH_STEPS` mode: runs of N and 3N steps, the difference over 2N), which do not
depend on the load; it needs valgrind and the same harness on both sides.

Writes the `before-after` section of docs/performance.md (`--no-doc`: print only) with the
load average before and after; raw medians in target/before-after/BASE/results.json. About 8 minutes
for the default 11 cases at 3 flow counts, 3 rounds, plus the two builds (cargo reuses the
base's build in target/before-after/cargo/ from one run to the next).

usage: python3 bench/before_after.py [--base b2a94da] [--cases vd,fifo] [--flows 1,1024,16384]
           [--rounds 3] [--warm-up 0.5] [--measurement 1] [--counts] [--base-harness] [--no-doc]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cachegrind  # noqa: E402
import criterion_estimates  # noqa: E402
from doc_section import replace_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- before-after:begin -->", "<!-- before-after:end -->"
HARNESS = "crates/schedlab-core/benches/disciplines.rs"
#: A 1-minute load average above this marks the times as taken under load: half the CPUs busy.
QUIET_LOAD = (os.cpu_count() or 1) / 2
#: Issue 8's cases: every discipline whose code or building blocks it changed, and `fifo`,
#: whose file it did not (the cost every discipline shares).
DEFAULT_CASES = "vd,ewrr,srr,aliquem,drr_plusplus,drr_plus,drr,wrr,dwcs,qfq,fifo"


def build(tree: Path, target: Path) -> Path:
    """Builds the core bench of `tree` into `target`; returns the bench executable."""
    print(f"before_after: building the bench of {tree} ...", file=sys.stderr, flush=True)
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    command = ["cargo", "bench", "-q", "-p", "schedlab-core", "--bench", "disciplines", "--no-run"]
    run = cachegrind.run([*command, "--message-format=json"], env, tree)
    for line in run.stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "disciplines":
            if message.get("executable"):
                return Path(message["executable"])
    sys.exit(f"before_after: cargo named no executable for the bench of {tree}")


def commit_of(tree: Path, rev: str = "HEAD") -> str:
    """The short hash of `rev` in `tree`."""
    return subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=tree, capture_output=True, text=True, check=True
    ).stdout.strip()


def median_ns(binary: Path, case: str, flows: int, args: argparse.Namespace, home: Path, baseline: str) -> float:
    """Criterion's median ns per packet of one case at one flow count, in a fresh process."""
    env = dict(os.environ, SCHEDLAB_BENCH_FLOWS=str(flows), CRITERION_HOME=str(home))
    command = [
        str(binary),
        "--bench",
        f"^{case}/{flows}$",
        "--warm-up-time",
        str(args.warm_up),
        "--measurement-time",
        str(args.measurement),
        "--noplot",
        "--save-baseline",
        baseline,
    ]
    cachegrind.run(command, env)
    estimate = criterion_estimates.load(home, baseline).get((case, flows))
    if estimate is None:
        sys.exit(f"before_after: criterion wrote no estimate of {case}/{flows} (is {case} a bench case?)")
    return estimate[0]


def per_packet_counts(binary: Path, case: str, flows: int, steps: int) -> dict[str, float]:
    """Cachegrind's counts per packet: (run of 3N steps − run of N steps) / 2N."""
    runs = []
    for n in (steps, 3 * steps):
        env = dict(os.environ, SCHEDLAB_BENCH_STEPS=str(n), SCHEDLAB_BENCH_CASE=case, SCHEDLAB_BENCH_FLOWS=str(flows))
        runs.append(cachegrind.totals([str(binary)], env=env))
    return {key: (runs[1][key] - runs[0][key]) / (2 * steps) for key in runs[0]}


def table(results: dict, cases: list[str], flows: list[int], times: bool, counts: bool) -> list[str]:
    """The Markdown table rows (header first)."""
    header, rule = "| case |", "|---|"
    if times:
        header += " base ns/pkt (min of rounds) | this tree ns/pkt | this ÷ base |"
        rule += "---:|---:|---:|"
    if counts:
        header += " Ir/pkt base → this (ratio) | D1 misses/pkt base → this | LL misses/pkt base → this |"
        rule += "---:|---:|---:|"
    rows = [header, rule]
    for case in cases:
        for count in flows:
            key = f"{case}/{count}"
            row = f"| `{key}` |"
            if times:
                base, head = min(results["time"][key]["base"]), min(results["time"][key]["head"])
                row += f" {base:.1f} | {head:.1f} | {head / base:.2f} |"
            if counts:
                b, h = results["counts"][key]["base"], results["counts"][key]["head"]
                row += (
                    f" {b['Ir']:.0f} → {h['Ir']:.0f} ({h['Ir'] / b['Ir']:.2f}) | {b['D1']:.2f} → {h['D1']:.2f}"
                    f" | {b['LL']:.2f} → {h['LL']:.2f} |"
                )
            rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="b2a94da", help="base commit (default: before issue 8's building blocks)")
    parser.add_argument("--cases", default=DEFAULT_CASES, help="bench cases, comma-separated")
    parser.add_argument("--flows", default="1,1024,16384", help="flow counts, comma-separated")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds; the table takes the smallest (0: counts only)"
    )
    parser.add_argument("--warm-up", type=float, default=0.5, help="criterion warm-up per run, seconds")
    parser.add_argument("--measurement", type=float, default=1.0, help="criterion measurement per run, seconds")
    parser.add_argument("--counts", action="store_true", help="add cachegrind counts per packet (needs valgrind)")
    parser.add_argument("--steps", type=int, default=100_000, help="N of the cachegrind runs (N and 3N steps)")
    parser.add_argument("--base-harness", action="store_true", help="run the base's own bench harness")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/performance.md")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    try:
        flows = [int(f) for f in args.flows.split(",") if f]
    except ValueError:
        parser.error(f"--flows {args.flows!r}: not a comma-separated list of flow counts")
    if args.rounds < 0 or (args.rounds == 0 and not args.counts):
        parser.error(f"--rounds {args.rounds}: at least 1 (0 only with --counts)")
    if args.counts and (args.base_harness or shutil.which("valgrind") is None):
        parser.error("--counts needs valgrind and the same harness on both sides (no --base-harness)")

    # One directory per base (two runs against different bases may go side by side); cargo's
    # build of the base trees is shared, so that it is reused from one run to the next.
    work = ROOT / "target" / "before-after" / args.base
    base_place = work / "tree"
    home = Path(tempfile.mkdtemp(prefix="before_after_"))
    try:
        cachegrind.base_tree(args.base, base_place)
        base_commit, head_commit = commit_of(base_place), commit_of(ROOT)
        if subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=ROOT, check=False).returncode != 0:
            head_commit += " with uncommitted changes"
        if not args.base_harness:
            shutil.copyfile(ROOT / HARNESS, base_place / HARNESS)
        base_bin = build(base_place, ROOT / "target" / "before-after" / "cargo")
        head_bin = build(ROOT, ROOT / "target")
        # Copies, so that a later build of either tree cannot change a binary between rounds.
        binaries = {"base": work / "disciplines-base", "head": work / "disciplines-head"}
        shutil.copyfile(base_bin, binaries["base"])
        shutil.copyfile(head_bin, binaries["head"])
        for binary in binaries.values():
            binary.chmod(0o755)

        load_before = Path("/proc/loadavg").read_text().split()[:3]
        results: dict = {"time": {}, "counts": {}}
        total, done, started = args.rounds * len(cases) * len(flows), 0, time.monotonic()
        for round_number in range(1, args.rounds + 1):
            for case in cases:
                for count in flows:
                    key = f"{case}/{count}"
                    entry = results["time"].setdefault(key, {"base": [], "head": []})
                    for side, binary in binaries.items():
                        entry[side].append(median_ns(binary, case, count, args, home, f"{side}{round_number}"))
                    done += 1
                    left = (time.monotonic() - started) / done * (total - done)
                    print(
                        f"[{done}/{total}, {left / 60:.1f} min left] round {round_number} {key}: "
                        f"base {entry['base'][-1]:.1f} ns, this tree {entry['head'][-1]:.1f} ns",
                        file=sys.stderr,
                        flush=True,
                    )
        load_after = Path("/proc/loadavg").read_text().split()[:3]
        if args.counts:
            for case in cases:
                for count in flows:
                    key = f"{case}/{count}"
                    print(f"before_after: cachegrind {key} ...", file=sys.stderr, flush=True)
                    results["counts"][key] = {
                        side: per_packet_counts(binary, case, count, args.steps) for side, binary in binaries.items()
                    }

        (work / "results.json").write_text(json.dumps(results, indent=1))
        harness = "its own harness" if args.base_harness else f"this tree's harness (`{HARNESS}`) on both sides"
        timing = (
            f"run case by case in turn, {args.rounds} rounds, criterion `--warm-up-time {args.warm_up:g} "
            f"--measurement-time {args.measurement:g}`; the table gives the smallest of each side's medians. "
            f"Load average (1, 5, 15 min) {' '.join(load_before)} before, {' '.join(load_after)} after"
            + (
                " — measured under load, the times are indicative only (the counts are not affected)"
                if max(float(load_before[0]), float(load_after[0])) > QUIET_LOAD
                else ""
            )
            if args.rounds > 0
            else "counts only"
        )
        block = "\n".join(
            [
                BEGIN,
                f"#### Before/after {base_commit}, alternating runs (`bench/before_after.py`)",
                "",
                f"`python3 bench/before_after.py --base {args.base}`: the core bench of {base_commit} and of "
                f"{head_commit}, {harness}, {timing}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
                + (
                    f" Counts: cachegrind per packet, runs of {args.steps:,} and {3 * args.steps:,} steps."
                    if args.counts
                    else ""
                ),
                "",
                *table(results, cases, flows, args.rounds > 0, args.counts),
                END,
            ]
        )
        print(block)
        if not args.no_doc:
            replace_section(ROOT / "docs" / "performance.md", BEGIN, END, block + "\n", "before_after")
        return 0
    except KeyboardInterrupt:
        print("before_after: interrupted; docs/performance.md unchanged", file=sys.stderr)
        return 130
    finally:
        cachegrind.remove_tree(base_place)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
