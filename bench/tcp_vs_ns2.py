"""The simulator's speed with TCP flows against ns-2's on the same dumbbell, same number of
flows: data packets delivered per second of wall time and per CPU second. Writes the section
"TCP flows: schedlab against ns-2" of docs/performance.md.

    python3 bench/tcp_vs_ns2.py [--flows 4,32,256] [--duration 120] [--rate 100] [--variant newreno]
                                [--doc docs/performance.md] [--csv OUT.csv]

The dumbbell is bench/peers/ns2/tcp_dumbbell.tcl's (ns-2) and tcp_dumbbell_scenario.py's
(schedlab): N bulk TCP flows, access delays 10 ms, a RATE Mbit/s, 10 ms bottleneck with a
drop-tail buffer of 100 packets, ACKs over the reverse links, 1040-byte packets. Each run is
timed with a set-up run of 20 ms of traffic (start-up, building the topology), whose wall and
CPU time, the least of three such runs, are subtracted. Packets: data packets the sinks received (ns-2:
its sinks' bytes / 1040; schedlab: `received` summed over flows.csv). Installs Debian's `ns2`
when missing (root); builds schedlab's run_scenario example.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NS2 = HERE / "peers" / "ns2"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(NS2))
from doc_section import replace_section  # noqa: E402
from tcp_dumbbell_scenario import scenario  # noqa: E402

BEGIN, END = "<!-- tcp-vs-ns2:begin -->", "<!-- tcp-vs-ns2:end -->"
BUFFER = 100
SETUP_SECONDS = 0.02
SETUP_RUNS = 3
WIRE_BYTES = 1040


def timed(cmd: list[str]) -> tuple[str, float, float]:
    """Runs `cmd`; its stdout, wall seconds and CPU seconds (user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"tcp_vs_ns2.py: {' '.join(cmd[:2])} failed (exit {done.returncode}): {done.stderr[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, wall, cpu


def run_ns2(flows: int, duration: float, rate: float, variant: str) -> tuple[int, float, float]:
    out, wall, cpu = timed(
        [
            "ns",
            str(NS2 / "tcp_dumbbell.tcl"),
            "delays=" + ",".join(["10"] * flows),
            f"rate={rate:g}",
            f"buffer={BUFFER}",
            f"duration={duration:g}",
            f"warmup={duration / 2:g}",
            "seed=1",
            f"variant={variant}",
        ]
    )
    match = re.search(r"^SUMMARY bytes=(\d+)", out, re.MULTILINE)
    if not match:
        sys.exit(f"tcp_vs_ns2.py: ns-2 printed no SUMMARY line:\n{out[-800:]}")
    return int(match.group(1)) // WIRE_BYTES, wall, cpu


def run_schedlab(
    runner: Path, work: Path, flows: int, duration: float, rate: float, variant: str
) -> tuple[int, float, float]:
    path = work / "scenario.toml"
    # No warm-up: flows.csv then counts every packet of the run, as ns-2's sinks do.
    text = scenario(["10"] * flows, variant, [], f"{duration:g}", "0", f"{rate:g}", BUFFER)
    path.write_text(text)
    out_dir = work / "out"
    _, wall, cpu = timed([str(runner), str(path), str(out_dir)])
    with (out_dir / "flows.csv").open() as f:
        packets = sum(int(row["received"]) for row in csv.DictReader(f))
    subprocess.run(["rm", "-rf", str(out_dir)], check=True)
    return packets, wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", default="4,32,256", help="flow counts, comma-separated")
    parser.add_argument("--duration", type=float, default=120.0, help="simulated seconds per run")
    parser.add_argument("--rate", type=float, default=100.0, help="bottleneck rate, Mbit/s")
    parser.add_argument("--variant", choices=["newreno", "sack"], default="newreno")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--csv", type=Path, help="also write the measurements here")
    args = parser.parse_args(argv)
    try:
        counts = [int(n) for n in args.flows.split(",")]
    except ValueError:
        parser.error(f"--flows {args.flows!r}: give whole numbers separated by commas")
    if not counts or min(counts) < 1 or args.duration <= 0.04 or args.rate <= 0:
        parser.error(f"--flows {args.flows!r}, --duration {args.duration}, --rate {args.rate}: must be positive")

    lib = HERE / "peers" / "lib.sh"
    subprocess.run(["bash", "-c", f'. "{lib}" && need_apt ns2 /usr/bin/ns'], check=True)
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "schedlab-sim", "--example", "run_scenario"],
        cwd=ROOT,
        check=True,
    )
    runner = ROOT / "target" / "release" / "examples" / "run_scenario"
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = []
    with tempfile.TemporaryDirectory(prefix="schedlab-tcp-vs-ns2.") as tmp:
        work = Path(tmp)
        for flows in counts:
            for simulator in ("ns2", "schedlab"):
                print(f"tcp_vs_ns2: {simulator}, {flows} flows, {args.duration:g} s", file=sys.stderr, flush=True)

                def run(duration: float, simulator: str = simulator, flows: int = flows) -> tuple[int, float, float]:
                    if simulator == "ns2":
                        return run_ns2(flows, duration, args.rate, args.variant)
                    return run_schedlab(runner, work, flows, duration, args.rate, args.variant)

                # The set-up is short and its time noisy on a shared machine: the least of three
                # runs, so that a slow one cannot eat into the full run's figure.
                setups = [run(SETUP_SECONDS) for _ in range(SETUP_RUNS)]
                setup_wall = min(s[1] for s in setups)
                setup_cpu = min(s[2] for s in setups)
                packets, wall, cpu = run(args.duration)
                rows.append(
                    {
                        "simulator": simulator,
                        "flows": flows,
                        "packets": packets,
                        "wall_s": wall,
                        "setup_wall_s": setup_wall,
                        "cpu_s": cpu,
                        "setup_cpu_s": setup_cpu,
                        "packets_per_s": packets / (wall - setup_wall) if wall > setup_wall else None,
                        "packets_per_cpu_s": packets / (cpu - setup_cpu) if cpu > setup_cpu else None,
                    }
                )
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.csv:
        partial = args.csv.with_suffix(".csv.partial")
        with partial.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        partial.replace(args.csv)
    replace_section(args.doc, BEGIN, END, section(rows, args, load_before, load_after), "tcp_vs_ns2.py")
    print(f"tcp_vs_ns2: wrote the section of {args.doc}", file=sys.stderr)
    return 0


def rate_cell(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "–"


def wall_cell(row: dict) -> tuple[str, bool]:
    """The wall-time rate, marked when it exceeds the CPU-time rate: both simulators run on one
    thread, so that can only come from other jobs slowing the set-up run more than the full one."""
    wall, cpu = row["packets_per_s"], row["packets_per_cpu_s"]
    implausible = wall is not None and cpu is not None and wall > cpu * 1.02
    return rate_cell(wall) + (" ¹" if implausible else ""), implausible


def section(rows: list[dict], args: argparse.Namespace, load_before: str, load_after: str) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    busiest = max(float(load_before.split()[0]), float(load_after.split()[0]))
    cores = os.cpu_count() or 1
    warning = (
        f" **The load average ({busiest:.1f}) was above the {cores} cores: other jobs shared the "
        "CPUs, so the wall-time rates are dominated by them; the CPU-second rates are steadier. "
        "Rerun on a quiet machine.**"
        if busiest > cores
        else ""
    )
    by = {(r["simulator"], r["flows"]): r for r in rows}
    lines = [
        BEGIN,
        "## TCP flows: schedlab against ns-2",
        "",
        "Written by `bench/tcp_vs_ns2.py` (rerun it; do not edit by hand): the same dumbbell in "
        f"both simulators (bulk TCP {args.variant} flows, access delays 10 ms, a {args.rate:g} Mbit/s, "
        f"10 ms bottleneck with a {BUFFER}-packet drop-tail buffer, ACKs over the reverse links, "
        f"1040-byte packets), {args.duration:g} s simulated per run, one run each; ns-2.35 "
        "`Agent/TCP/Newreno` (or `Sack1`) against schedlab-sim. Packets are the data packets the "
        "sinks received; rates exclude the set-up (the least of three 20 ms runs of the same scenario). Measured "
        f"{when} on {cores} CPUs, commit `{commit.stdout.strip()}`; load average before / after: "
        f"{load_before} / {load_after}.{warning}",
        "",
        "| flows | packets (ns-2 / schedlab) | ns-2 packets/s (wall) | schedlab packets/s (wall) "
        "| ns-2 packets/CPU s | schedlab packets/CPU s | schedlab / ns-2 (CPU) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    marked = False
    for flows in sorted({r["flows"] for r in rows}):
        ns2, ours = by[("ns2", flows)], by[("schedlab", flows)]
        ns2_wall, ns2_marked = wall_cell(ns2)
        ours_wall, ours_marked = wall_cell(ours)
        marked = marked or ns2_marked or ours_marked
        ratio = (
            f"{ours['packets_per_cpu_s'] / ns2['packets_per_cpu_s']:.1f}×"
            if ours["packets_per_cpu_s"] and ns2["packets_per_cpu_s"]
            else "–"
        )
        lines.append(
            f"| {flows:,} | {ns2['packets']:,} / {ours['packets']:,} | {ns2_wall} "
            f"| {ours_wall} | {rate_cell(ns2['packets_per_cpu_s'])} "
            f"| {rate_cell(ours['packets_per_cpu_s'])} | {ratio} |"
        )
    if marked:
        lines += [
            "",
            "¹ Above the CPU-time rate, which a single-threaded run cannot reach: other jobs slowed "
            "the set-up runs more than the full run, so this wall-time figure is not a measurement; "
            "read the CPU columns.",
        ]
    lines += ["", END, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("tcp_vs_ns2: interrupted; docs/performance.md left as it was", file=sys.stderr)
        sys.exit(130)
