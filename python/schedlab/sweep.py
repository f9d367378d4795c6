"""``schedlab sweep``: every point of a scenario's ``[sweep]`` × every replication, in
parallel on local processes or on a Dask cluster; results merged into one table.

Output folder layout:

* ``points/p0003_r002.json`` — the summary of one replication (here 2) of one point (here 3),
  with the ``fingerprint`` of everything that determined it (a finished task; ``--resume``
  skips tasks whose file exists with the fingerprint the task has now);
* ``sweep_replications.csv`` — one row per point × replication × flow;
* ``sweep.csv`` — one row per point × flow: every metric's mean over replications and its
  95% CI half-width (``<metric>_ci95``);
* ``sweep_links_replications.csv`` and ``sweep_links.csv`` — the same per link (utilisation,
  queue, drops and the discipline's own counters such as DRR++'s ``lc_service``);
* ``sweep.json`` — the scenario, the swept keys, the x and series keys, failed points with
  their errors;
* ``run-info.json`` — the sweep's fingerprint, status and wall time (:mod:`schedlab.outputs`).

With ``measure`` (``schedlab sweep --measure``) every point × replication runs on real packets
(:mod:`schedlab.measure`), one after another since they share the host, and the same files
hold the measured results (``sweep.json`` says ``"method": "measurement"``); each task's point
scenario, logs and gateway stats are kept in ``measured/p0003_r002/``. The simulation of the
same sweep is written to ``simulation/`` (a sweep folder of its own), so that the report shows
both side by side.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from schedlab import memory, outputs
from schedlab.interrupts import stop_children, worker_signals
from schedlab.scenario import Scenario
from schedlab.stats import mean_ci95
from schedlab.theory import validate_report

#: Seconds to wait for a Dask scheduler to answer before giving up.
DASK_CONNECT_TIMEOUT_S = 10

#: Per-flow keys of a replication summary that are identifiers, not metrics.
ID_COLUMNS = ("flow", "class", "replication", "point", "link")


def _task(text: str, base_dir: str, replication: int) -> dict:
    """Run one replication of one point (executed in a worker process); its summary (the
    wall-clock timing is left out so that point files are the same for the same seed)."""
    from schedlab import _core

    return json.loads(_core.run_scenario(text, base_dir, None, replication))["summary"]


@dataclass
class SweepResult:
    """What a sweep produced."""

    out_dir: Path
    table: pd.DataFrame
    replications: pd.DataFrame
    failures: list[dict] = field(default_factory=list)
    skipped: int = 0
    #: Per link: mean and CI per point (``links``) and one row per point × replication.
    links: pd.DataFrame = field(default_factory=pd.DataFrame)
    link_replications: pd.DataFrame = field(default_factory=pd.DataFrame)


def _task_path(out_dir: Path, point: int, replication: int) -> Path:
    return out_dir / "points" / f"p{point:04d}_r{replication:03d}.json"


def _short(key: str) -> str:
    """A column name for a swept key (``source[1].arrivals.rate_pps`` stays as is)."""
    return key


def swept_label(value: Any) -> Any:
    """A swept value as a table cell: scalars unchanged; a table (a whole scheduler or drop
    policy, ``{ kind = "adaptive", share = [0.4, 0.3, 0.3] }``) as its ``kind`` followed by its
    other keys (``adaptive share=[0.4, 0.3, 0.3]``), a list as ``[0.4, 0.3, 0.3]``, so that
    the tables can be grouped by it and a ``where`` can name it."""
    if isinstance(value, dict):
        rest = " ".join(f"{k}={swept_label(v)}" for k, v in value.items() if k != "kind")
        head = str(value.get("kind", ""))
        return f"{head} {rest}".strip()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(swept_label(v)) for v in value) + "]"
    return value


def run_sweep(
    scenario: Scenario,
    out_dir: str | Path,
    dask: str | None = None,
    workers: int | None = None,
    resume: bool = False,
    ci: str = "student_t",
    progress: Callable[[int, int], None] | None = None,
    representative: bool = True,
    force: bool = False,
    measure: bool = False,
    memory_check: bool = True,
) -> SweepResult:
    """Run every point × replication of ``scenario``; see the module docs for the outputs.
    ``dask`` is a scheduler address (``tcp://host:port``) or None for local processes. A
    failing task is recorded in ``sweep.json`` and the others are kept. With
    ``representative``, replication 0 of the largest-x point of each series is run again with
    every output table into ``representative/`` (time series and delay CDFs for the report).

    ``out_dir`` must be empty or hold this sweep's results (:func:`schedlab.outputs.prepare`):
    ``force`` clears it first; ``resume`` reuses the point files whose fingerprint matches.

    ``measure`` runs the tasks on real packets instead, sequentially (see the module docs);
    every point is checked for it before the first namespace is built.

    With ``memory_check`` (local workers only), a sweep whose workers would together need more
    memory than is available — each runs one replication of a point at a time; the largest
    point's estimate times the workers — is refused before anything is written
    (:mod:`schedlab.memory`)."""
    from schedlab.api import validate_point
    from schedlab.scenario import ScenarioError

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ScenarioError(f"workers = {workers!r}: must be a whole number of worker processes, at least 1")
    out_dir = Path(out_dir)
    sweep = scenario.sweep
    points = scenario.points()
    # Validate every point up front: a bad sweep fails before any work is done.
    validate_report(scenario.data)
    texts = {}
    largest = None
    for point in points:
        texts[point.index], declared = validate_point(point)
        estimate = declared["memory_estimate"]
        if largest is None or estimate["fixed_bytes"] + estimate["per_replication_bytes"] > sum(
            largest[k] for k in ("fixed_bytes", "per_replication_bytes")
        ):
            largest = estimate
    if measure and dask:
        raise ScenarioError(f"--measure and --dask {dask}: measured points run on this host, one after another")
    if memory_check and not dask and not measure and largest is not None:
        parallel = min(workers or os.cpu_count() or 1, len(points) * max(scenario.replications, 1))
        task = largest["fixed_bytes"] + largest["per_replication_bytes"]
        memory.check(
            parallel * task,
            f"sweep {scenario.name}",
            f"{parallel} worker(s) x {memory.gigabytes(task)}, the largest point's one replication",
        )
    # A measured result is never taken for a simulated one (or the other way round).
    method = {"method": "measurement"} if measure else {}
    determined = outputs.determinants(
        {k: v for k, v in scenario.data.items() if k != "report"}, scenario.base_dir, **method
    )
    info = outputs.prepare(out_dir, "sweep", determined, force=force, resume=resume)
    (out_dir / "points").mkdir(parents=True, exist_ok=True)
    point_files = _measured_point_files(points, out_dir) if measure else {}
    if measure:
        # The same sweep simulated, for the side-by-side report (seconds; its own folder).
        simulation = run_sweep(scenario, out_dir / "simulation", workers=workers, resume=True, ci=ci)
    tasks = [(p.index, r) for p in points for r in range(scenario.replications)]
    by_index = {p.index: p for p in points}
    expected = {
        (p, r): outputs.fingerprint(
            outputs.determinants(by_index[p].scenario.simulation_data(), scenario.base_dir, replication=r, **method)
        )
        for p, r in tasks
    }
    todo = [t for t in tasks if not (resume and _finished(out_dir, t, expected[t]))]
    skipped = len(tasks) - len(todo)
    failures: list[dict] = []
    done = skipped
    if progress:
        progress(done, len(tasks))

    def finish(task: tuple[int, int], summary: dict | None, error: BaseException | None) -> None:
        nonlocal done
        done += 1
        if error is not None:
            failures.append({"point": task[0], "replication": task[1], "error": f"{type(error).__name__}: {error}"})
        else:
            path = _task_path(out_dir, *task)
            tmp = path.with_suffix(".json.partial")
            tmp.write_text(json.dumps({"fingerprint": expected[task], **summary}))
            tmp.replace(path)
        if progress:
            progress(done, len(tasks))

    base = str(scenario.base_dir)
    if measure:
        from schedlab.measure import measure_replication

        try:
            for p, r in todo:
                try:
                    summary = measure_replication(point_files[p], r, out_dir / "measured" / f"p{p:04d}_r{r:03d}")
                except (OSError, RuntimeError, ValueError) as e:
                    finish((p, r), None, e)
                else:
                    finish((p, r), {k: v for k, v in summary.items() if k != "timing"}, None)
        except KeyboardInterrupt:
            _interrupted(out_dir, info, done, len(tasks))
            raise
    elif dask:
        from distributed import Client

        try:
            client = Client(dask, timeout=DASK_CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as e:
            outputs.finish(out_dir, info, "failed", error=str(e))
            raise ScenarioError(
                f"--dask {dask}: no Dask scheduler answered within {DASK_CONNECT_TIMEOUT_S} s"
                f" ({type(e).__name__}); check the address and that `dask scheduler` runs there"
            ) from None
        with client:
            futures = {client.submit(_task, texts[p], base, r, pure=False): (p, r) for p, r in todo}
            from distributed import as_completed as dask_completed

            try:
                for future in dask_completed(futures):
                    task = futures[future]
                    try:
                        finish(task, future.result(), None)
                    except Exception as e:  # noqa: BLE001 - a failing point is reported, others kept
                        finish(task, None, e)
            except KeyboardInterrupt:
                client.cancel(list(futures))
                _interrupted(out_dir, info, done, len(tasks))
                raise
    elif todo:
        max_workers = workers or os.cpu_count() or 1
        pool = ProcessPoolExecutor(max_workers=max_workers, initializer=worker_signals)
        try:
            futures = {pool.submit(_task, texts[p], base, r): (p, r) for p, r in todo}
            for future in as_completed(futures):
                task = futures[future]
                try:
                    finish(task, future.result(), None)
                except Exception as e:  # noqa: BLE001
                    finish(task, None, e)
        except KeyboardInterrupt:
            # Stop the workers now rather than letting them finish their tasks.
            stop_children()
            pool.shutdown(wait=False, cancel_futures=True)
            _interrupted(out_dir, info, done, len(tasks))
            raise
        pool.shutdown()

    # Merge every finished task (this run's and resumed ones).
    rows = []
    link_rows = []
    failed = {(f["point"], f["replication"]) for f in failures}
    for point in points:
        for r in range(scenario.replications):
            path = _task_path(out_dir, point.index, r)
            if (point.index, r) in failed or not path.exists():
                continue
            summary = _read_point(path)
            if summary.get("fingerprint") != expected[(point.index, r)]:
                continue  # a stale file of another scenario is never merged
            for flow in summary.get("flows", []):
                row = {"point": point.index, "replication": r}
                row.update({_short(k): swept_label(v) for k, v in point.values.items()})
                row.update({k: v for k, v in flow.items() if not isinstance(v, (dict, list))})
                rows.append(row)
            for link in summary.get("links", []):
                row = {"point": point.index, "replication": r}
                row.update({_short(k): swept_label(v) for k, v in point.values.items()})
                row.update({k: v for k, v in link.items() if not isinstance(v, (dict, list))})
                row.update(link.get("discipline_counters") or {})
                link_rows.append(row)
    replications = pd.DataFrame(rows)
    table = aggregate(replications, list(points[0].values), ci=ci)
    replications.to_csv(out_dir / "sweep_replications.csv", index=False)
    table.to_csv(out_dir / "sweep.csv", index=False)
    link_replications = pd.DataFrame(link_rows)
    links = aggregate(link_replications, list(points[0].values), ci=ci, key="link")
    link_replications.to_csv(out_dir / "sweep_links_replications.csv", index=False)
    links.to_csv(out_dir / "sweep_links.csv", index=False)
    meta = {
        "scenario": scenario.rust_source()[0],
        "name": scenario.name,
        "swept": list(points[0].values.keys()),
        "x": sweep.x if sweep else None,
        "series": sweep.series if sweep else None,
        "points": [{"point": p.index, **p.values} for p in points],
        "replications": scenario.replications,
        "failures": failures,
        "executor": "real packets, one task after another"
        if measure
        else f"dask {dask}"
        if dask
        else "local processes",
        "ci": ci,
        "method": "measurement" if measure else "simulation",
    }
    if measure:
        meta["simulation"] = str(simulation.out_dir.relative_to(out_dir))
    if representative:
        meta["representative"] = _representative_runs(scenario, points, sweep, out_dir, failed, measured=measure)
    (out_dir / "sweep.json").write_text(json.dumps(meta, indent=2, default=str))
    outputs.finish(out_dir, info, "complete", resumed_tasks=skipped, failed_tasks=len(failures))
    return SweepResult(out_dir, table, replications, failures, skipped, links, link_replications)


def _interrupted(out_dir: Path, info: dict, done: int, total: int) -> None:
    """Record an interrupted sweep: the finished task files stay (``--resume`` reuses them);
    ``sweep.csv`` and ``sweep.json`` are not written."""
    outputs.finish(out_dir, info, "interrupted", finished_tasks=done, tasks=total)


def _read_point(path: Path) -> dict:
    """A point file's summary; a corrupt one is an OutputFolderError naming the file."""
    try:
        summary = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise outputs.OutputFolderError(
            f"{path}: not a readable point file ({e}); delete it to run that task again"
        ) from None
    if not isinstance(summary, dict):
        raise outputs.OutputFolderError(f"{path}: not a point file (not a JSON object); delete it to run it again")
    return summary


def _finished(out_dir: Path, task: tuple[int, int], fingerprint: str) -> bool:
    """Whether ``task`` has a point file made by exactly the task as it is now."""
    path = _task_path(out_dir, *task)
    return path.exists() and _read_point(path).get("fingerprint") == fingerprint


def _measured_point_files(points, out_dir: Path) -> dict[int, Path]:
    """Each point's scenario as a file ``measured/p0003.toml`` (what gen and the gateway read),
    with the files it names made absolute so that they resolve from there; every point is
    checked for a measured run (:func:`schedlab.measure.check`) before anything runs."""
    from schedlab.measure import MeasureError, check
    from schedlab.scenario import ScenarioError

    folder = out_dir / "measured"
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for point in points:
        data = point.scenario.simulation_data()
        _absolute_files(data, point.scenario.base_dir)
        path = folder / f"p{point.index:04d}.toml"
        path.write_text(Scenario(data, base_dir=point.scenario.base_dir).to_toml())
        try:
            check(path)
        except MeasureError as e:
            raise ScenarioError(f"sweep point {point.index}: {e}") from None
        files[point.index] = path
    return files


def _absolute_files(data, base_dir: Path) -> None:
    """Makes every relative ``file = ...`` value in ``data`` absolute against ``base_dir``."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "file" and isinstance(value, str) and not Path(value).is_absolute():
                data[key] = str((Path(base_dir) / value).resolve())
            else:
                _absolute_files(value, base_dir)
    elif isinstance(data, list):
        for item in data:
            _absolute_files(item, base_dir)


def _representative_runs(
    scenario: Scenario, points, sweep, out_dir: Path, failed: set, measured: bool = False
) -> list[dict]:
    """Run replication 0 of the point with the largest x in each series again with all output
    tables (time series, delay CDF) into ``representative/<label>/``, for the report; for a
    measured sweep, copy those tables from that task's measurement instead."""
    from schedlab.api import run_summary

    if sweep is None or not points:
        return []
    chosen: dict = {}
    for point in points:
        key = point.values.get(sweep.series) if sweep.series else None
        best = chosen.get(key)
        if best is None or _sort_key(point.values.get(sweep.x)) >= _sort_key(best.values.get(sweep.x)):
            chosen[key] = point
    runs = []
    for key, point in chosen.items():
        if (point.index, 0) in failed:
            continue
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{key if key is not None else 'all'}_x{point.values.get(sweep.x)}")
        target = out_dir / "representative" / label
        target.mkdir(parents=True, exist_ok=True)
        if measured:
            source = out_dir / "measured" / f"p{point.index:04d}_r000"
            if not (source / "summary.json").exists():
                continue
            for table in source.iterdir():
                if table.is_file():
                    shutil.copy2(table, target / table.name)
        else:
            run_summary(point.scenario, target, replication=0)
        runs.append({"label": label, "point": point.index, **point.values})
    return runs


def _sort_key(value):
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))


def aggregate(replications: pd.DataFrame, swept_keys, ci: str = "student_t", key: str = "flow") -> pd.DataFrame:
    """Mean and 95% CI half-width over replications, per point and ``key`` (``flow`` or
    ``link``)."""
    if replications.empty:
        return pd.DataFrame()
    keys = ["point", *swept_keys, key]
    labels = [c for c in ("name", "class") if c in replications.columns and c not in keys]
    metrics = [
        c
        for c in replications.columns
        if c not in keys and c not in ID_COLUMNS and c not in labels and pd.api.types.is_numeric_dtype(replications[c])
    ]
    out = []
    for group, frame in replications.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, group, strict=True))
        for label in labels:  # identifiers of the flow, the same in every replication
            row[label] = frame[label].iloc[0]
        row["replications"] = len(frame)
        for metric in metrics:
            mean, half = mean_ci95(frame[metric].tolist(), ci)
            row[metric] = mean
            row[f"{metric}_ci95"] = half
        out.append(row)
    return pd.DataFrame(out)


def progress_printer(stream=sys.stderr, label: str = "sweep") -> Callable[[int, int], None] | None:
    """A rich progress bar on stderr when it is a terminal, None otherwise."""
    if not stream.isatty():
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bar = Progress(label, BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True)
    task = None

    def update(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            bar.start()
            task = bar.add_task(label, total=total)
        bar.update(task, completed=done)
        if done >= total:
            bar.stop()

    return update
