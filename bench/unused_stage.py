"""What the router model costs a scenario that does not use it (issue 10's "a stage or conditioner
that a scenario does not use costs the simulator no more than 5 % per packet").

Counts instructions and cache misses per simulated packet with cachegrind (independent of the
machine's load), and the instructions spent on the router model's lines, for one plain scenario — one 80 Mbit/s link, FIFO or DRR, ten Poisson flows, no
`service`, `max_sojourn`, `drop_policy`, `conditioner`, `classes` — run by the
`run_scenario` example of this tree and of a base commit from before the router model
(default 1eed8a2, the parent of de7ec74 "Router model, part 1"). Each binary runs the scenario
at two lengths; the difference divided by the difference in packets is the per-packet cost
without start-up and result writing. Writes the `unused-stage` section of docs/performance.md
(`--no-doc`: print only) and exits 1 when the router model's lines cost more than `--limit`
(5 %) of this tree's instructions per packet.

usage: python bench/unused_stage.py [--base COMMIT] [--packets N] [--kinds fifo,drr]
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cachegrind  # noqa: E402
from doc_section import replace_section  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- unused-stage:begin -->", "<!-- unused-stage:end -->"
DEFAULT_BASE = "1eed8a2"


def scenario(kind: str, packets: int) -> str:
    """The plain scenario: ten Poisson flows of exponential 1000-byte packets at 95 % load."""
    text = f'[run]\npackets = {packets}\nseed = 1\nbin = "10s"\n\n'
    text += f'[[link]]\nname = "bottleneck"\nrate = "80Mbit"\nscheduler = {{ kind = "{kind}" }}\n'
    for flow in range(10):
        text += (
            f'\n[[source]]\nflow = {flow}\npath = ["bottleneck"]\n'
            'arrivals = { model = "poisson", rate_pps = 950 }\nsize = { dist = "exponential", mean = 1000 }\n'
        )
    return text


def build(tree: Path, target: Path) -> Path:
    """Builds the `run_scenario` example of `tree` into `target` (release, with debuginfo)."""
    print(f"building {tree} ...", file=sys.stderr, flush=True)
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "schedlab-sim", "--example", "run_scenario"],
        cwd=tree,
        env=env,
        check=True,
    )
    return target / "release" / "examples" / "run_scenario"


def count(binary: Path, kind: str, packets: int, work: Path) -> dict[str, int]:
    """Cachegrind's totals (instructions, D1 and LL misses) of one run."""
    name = f"{binary.parent.parent.parent.name}_{kind}_{packets}"
    path = work / f"{name}.toml"
    path.write_text(scenario(kind, packets))
    print(f"  cachegrind {name} ...", file=sys.stderr, flush=True)
    return cachegrind.totals([str(binary), str(path), str(work / f"{name}_out")], out=work / f"{name}.cg")


def per_packet(binary: Path, kind: str, packets: int, work: Path) -> dict[str, float]:
    """Per simulated packet: (counts at 2N − counts at N) / N."""
    short, long = count(binary, kind, packets, work), count(binary, kind, 2 * packets, work)
    return {key: (long[key] - short[key]) / packets for key in short}


#: Source lines of the router model on every packet's path when a scenario uses none of it:
#: the checks for a conditioner, a link-dropping policy, the sojourn limit, the per-packet
#: service time, the per-class link statistics, and the round-trip echoes.
ROUTER_LINES = (
    "link.conditioner",
    "link.drop_policy",
    "overdue(",
    "> max_sojourn",
    "link.service.of(",
    "self.per_packet",
    "match self.rate",
    "class_mut(",
    "index >= self.classes.len()",
    "self.classes.resize(index + 1",
    "&mut self.classes[index]",
    "class.busy",
    "class.sent_packets",
    "class.delay_sum",
    "self.echoes",
    "ECHO",
    "echo_delay",
    "echo_path",
)
ROUTER_FILES = ("crates/schedlab-sim/src/engine.rs", "crates/schedlab-core/src/stage.rs")


def router_lines(cg: Path) -> int:
    """Instructions cachegrind counted on the [`ROUTER_LINES`] of one run."""
    run = subprocess.run(
        ["cg_annotate", "--show=Ir", "--show-percs=no", "--context=0", "--auto=no", str(cg)]
        + [str(ROOT / f) for f in ROUTER_FILES],
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0
    for line in run.stdout.splitlines():
        match = re.match(r"^\s*([\d,]+)\s{2,}(.*)$", line)
        if match and any(pattern in match.group(2) for pattern in ROUTER_LINES):
            total += int(match.group(1).replace(",", ""))
    return total


def router_per_packet(kind: str, packets: int, work: Path) -> float:
    """Instructions per packet on the router-model lines, from this tree's two runs."""
    short = router_lines(work / f"target_{kind}_{packets}.cg")
    long = router_lines(work / f"target_{kind}_{2 * packets}.cg")
    return (long - short) / packets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="commit from before the router model")
    parser.add_argument("--packets", type=int, default=100_000, help="N: runs of N and 2N packets")
    parser.add_argument("--kinds", default="fifo,drr", help="disciplines of the plain scenario")
    parser.add_argument("--limit", type=float, default=5.0, help="largest overhead allowed, percent")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/performance.md")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("unused_stage: needs valgrind (apt-get install valgrind)")
    work = Path(tempfile.mkdtemp(prefix="unused_stage_"))
    # A fixed place for the base tree, so that cargo reuses its build from one run to the next.
    base_tree = ROOT / "target" / "unused-stage-base" / "tree"
    try:
        cachegrind.base_tree(args.base, base_tree)
        base_bin = build(base_tree, ROOT / "target" / "unused-stage-base")
        head_bin = build(ROOT, ROOT / "target")
        load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
        rows, worst = [], 0.0
        for kind in args.kinds.split(","):
            base = per_packet(base_bin, kind, args.packets, work)
            head = per_packet(head_bin, kind, args.packets, work)
            overhead = 100.0 * (head["Ir"] / base["Ir"] - 1.0)
            router = router_per_packet(kind, args.packets, work)
            share = 100.0 * router / head["Ir"]
            worst = max(worst, share)
            rows.append(
                f"| {kind} | {base['Ir']:.0f} | {head['Ir']:.0f} | {overhead:+.1f} % | {router:.1f} ({share:.1f} %) "
                f"| {base['D1']:.2f} / {head['D1']:.2f} | {base['LL']:.3f} / {head['LL']:.3f} |"
            )
        load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        head_commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        block = "\n".join(
            [
                BEGIN,
                "### What the router model costs a scenario that does not use it (issue 10)",
                "",
                f"`python bench/unused_stage.py` (cachegrind, instructions per simulated packet, independent of the "
                f"machine's load): one 80 Mbit/s link, ten Poisson flows at 95 % load, no `service`, `max_sojourn`, "
                f"`drop_policy`, `conditioner` or `classes`; the `run_scenario` example of {head_commit} against "
                f"base {args.base} (before the router model); runs of {args.packets:,} and {2 * args.packets:,} "
                "packets, the difference per packet (start-up and result writing cancel). The base also lacks "
                "every other change since (TCP, the lateness measure, the packet log, per-flow discipline "
                "counters, …), so its overhead is an upper bound. The router-model column is this tree's own "
                "count: cachegrind's instructions on the source lines of the unused router model on the "
                "per-packet path (the conditioner, drop-policy and sojourn checks, the per-packet service "
                "time, the per-class link statistics, the round-trip echo checks: `ROUTER_LINES` in the "
                f"script), per packet and as a share of all. Limit (on that share): {args.limit:g} %. "
                f"Measured {when}; load average before / after: {load_before} / {load_after} (counts, "
                "not times: the load does not change them).",
                "",
                "| discipline | base Ir/packet | this tree Ir/packet | overhead vs base | router-model lines "
                "Ir/packet (share) | D1 misses/packet (base / this) | LL misses/packet (base / this) |",
                "|---|---|---|---|---|---|---|",
                *rows,
                END,
            ]
        )
        print(block)
        if not args.no_doc:
            replace_section(ROOT / "docs" / "performance.md", BEGIN, END, block + "\n", "unused_stage")
        if worst > args.limit:
            print(f"unused_stage: the router model costs {worst:.1f} % > {args.limit:g} %", file=sys.stderr)
            return 1
        return 0
    except subprocess.CalledProcessError as error:
        print(f"unused_stage: {' '.join(map(str, error.cmd))} failed ({error.returncode})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        cachegrind.remove_tree(base_tree)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
