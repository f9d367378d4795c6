#!/usr/bin/env python3
"""How a sweep scales across cores on Dask: the same sweep on a LocalCluster of 1 and of 2
worker processes (one thread each), timed side by side in one run, repeated; writes the
section "Sweeps across cores" of docs/performance.md (between <!-- dask-scaling:begin --> and
<!-- dask-scaling:end -->; appended if absent).

usage: bench/dask_scaling.py [--tasks 8] [--packets 10000000] [--reps 3] [--out docs/performance.md]

The sweep: one 10 Mbit/s DRR bottleneck, 10 Poisson flows at 95 % load, constant 1000-byte
packets, `--tasks` points (the seed-independent offered load of flow 0 varied slightly, so
every point is a separate task of the same size) × 1 replication, each about `--packets`
packets. Each measurement is the wall time of `schedlab.sweep.run_sweep(..., dask=address)`
with the cluster already started (start-up is not counted), so it includes scheduling the
tasks, shipping the scenario texts and the results back, and merging the tables. The load
average is recorded before and after; the ratio 2 workers / 1 worker of each repetition is
reported, and its median is the figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_section import replace_section  # noqa: E402


def scenario_text(tasks: int, packets: int) -> str:
    flows = 10
    rate_pps = 0.95 * 10e6 / 8000 / flows
    duration = packets / (rate_pps * flows)
    lines = [
        'name = "dask-scaling"',
        "[run]",
        f'duration = "{duration:.3f}s"',
        "seed = 1",
        "replications = 1",
        "",
        "[[link]]",
        'name = "bottleneck"',
        'rate = "10Mbit"',
        'scheduler = { kind = "drr", quantum = 1500 }',
    ]
    for flow in range(flows):
        lines += [
            "",
            "[[source]]",
            f"flow = {flow}",
            'path = ["bottleneck"]',
            f'arrivals = {{ model = "poisson", rate_pps = {rate_pps!r} }}',
            'size = { dist = "constant", size = 1000 }',
        ]
    loads = ", ".join(f"{rate_pps * (1 - 0.001 * k):.4f}" for k in range(tasks))
    lines += [
        "",
        "[sweep]",
        'x = "source[0].arrivals.rate_pps"',
        "[sweep.zip]",
        f'"source[0].arrivals.rate_pps" = [{loads}]',
    ]
    return "\n".join(lines) + "\n"


def timed_sweep(scenario_path: Path, address: str, out_dir: Path) -> float:
    from schedlab.scenario import Scenario
    from schedlab.sweep import run_sweep

    start = time.perf_counter()
    result = run_sweep(Scenario.from_toml(scenario_path), out_dir, dask=address, representative=False, force=True)
    elapsed = time.perf_counter() - start
    if result.failures:
        sys.exit(f"dask_scaling: tasks failed: {result.failures}")
    return elapsed


def write_section(doc_path: Path, block: str) -> None:
    replace_section(doc_path, "<!-- dask-scaling:begin -->", "<!-- dask-scaling:end -->", block, "dask_scaling")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--packets", type=int, default=10_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default="docs/performance.md")
    args = parser.parse_args(argv)
    if args.tasks < 2 or args.packets < 1000 or args.reps < 1:
        sys.exit("dask_scaling: --tasks >= 2, --packets >= 1000, --reps >= 1")
    import logging

    from distributed import LocalCluster

    work = Path(tempfile.mkdtemp(prefix="schedlab-dask-scaling."))
    scenario_path = work / "sweep.toml"
    scenario_path.write_text(scenario_text(args.tasks, args.packets))
    load_before = os.getloadavg()
    clusters = {
        n: LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
        )
        for n in (1, 2)
    }
    rows = []
    try:
        # One untimed sweep per cluster: workers import schedlab and warm their caches.
        for n, cluster in clusters.items():
            timed_sweep(scenario_path, cluster.scheduler_address, work / f"warm{n}")
        for rep in range(args.reps):
            times = {
                n: timed_sweep(scenario_path, c.scheduler_address, work / f"r{rep}w{n}") for n, c in clusters.items()
            }
            rows.append(times)
            print(
                f"dask_scaling: rep {rep + 1}: 1 worker {times[1]:.2f} s, 2 workers {times[2]:.2f} s, "
                f"ratio {times[2] / times[1]:.2f} (load {os.getloadavg()[0]:.2f})",
                file=sys.stderr,
            )
    finally:
        for cluster in clusters.values():
            cluster.close()
    load_after = os.getloadavg()
    ratios = [r[2] / r[1] for r in rows]
    fmt = " ".join(f"{x:.2f}" for x in load_before), " ".join(f"{x:.2f}" for x in load_after)
    lines = [
        "<!-- dask-scaling:begin -->",
        "## Sweeps across cores (Dask)",
        "",
        "Written by `bench/dask_scaling.py` (rerun it; do not edit by hand). The same sweep — "
        f"{args.tasks} tasks of about {args.packets:,} packets each (one 10 Mbit/s DRR bottleneck, "
        "10 Poisson flows at 95 % load) — on a Dask `LocalCluster` of 1 and of 2 worker processes "
        "with one thread each, started beforehand; wall time of `run_sweep` (submit, run, "
        "collect, merge), each repetition measuring both clusters back to back.",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs; "
        f"load average before / after: {fmt[0]} / {fmt[1]}. Other jobs on the machine take cores "
        "from the 2-worker run first, so a loaded machine shows a ratio above 0.5.",
        "",
        "| repetition | 1 worker s | 2 workers s | 2 / 1 |",
        "|---:|---:|---:|---:|",
    ]
    for k, r in enumerate(rows, 1):
        lines.append(f"| {k} | {r[1]:.2f} | {r[2]:.2f} | {r[2] / r[1]:.2f} |")
    lines += [
        "",
        f"Median ratio 2 workers / 1 worker: **{statistics.median(ratios):.2f}** (target ≤ 0.6).",
        "<!-- dask-scaling:end -->",
        "",
    ]
    write_section(Path(args.out), "\n".join(lines))
    print(f"dask_scaling: median ratio {statistics.median(ratios):.2f}; wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
