"""Running scenarios from Python: :func:`run`, :func:`validate` and :class:`Results`."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from schedlab import _core, outputs
from schedlab.scenario import Scenario
from schedlab.theory import validate_report


def _as_scenario(scenario: Scenario | str | Path) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    return Scenario.from_toml(scenario)


def validate(scenario: Scenario | str | Path, flows: bool = True) -> dict:
    """Check a scenario without running it (the Rust validator). Returns what it declares
    (links, ``flow_count``, run length, ``memory_estimate`` — see :mod:`schedlab.memory` — and
    with ``flows`` the list of every flow).
    Raises :class:`schedlab.InputError` naming the key and value."""
    s = _as_scenario(scenario)
    text, file = s.rust_source()
    info = json.loads(_core.validate_scenario(text, str(s.base_dir), file, flows))
    validate_report(s.data)
    if s.sweep is not None:
        for point in s.points():
            validate_point(point)
        info["sweep_points"] = len(s.points())
    return info


def validate_point(point) -> tuple[str, dict]:
    """Validate one sweep point; returns its TOML text and what it declares (as
    :func:`validate` without the list of flows: ``flow_count``, ``memory_estimate``, …).
    Errors name the point and its values."""
    text, _ = point.scenario.rust_source()
    try:
        info = json.loads(_core.validate_scenario(text, str(point.scenario.base_dir), None, False))
    except _core.InputError as e:
        values = ", ".join(f"{k} = {v!r}" for k, v in point.values.items())
        raise _core.InputError(f"sweep point {point.index} ({values}): {e}") from None
    return text, info


def run_summary(
    scenario: Scenario,
    out_dir: str | Path | None = None,
    replication: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Run ``scenario`` in Rust (GIL released) and return ``summary.json`` as a dict; writes
    the output tables to ``out_dir`` when given. ``replication`` runs only that replication
    (same random streams as in a full run). ``progress(done, total)`` is called as
    replications finish. The wall-clock timing is left out (see :func:`run_timed`)."""
    return run_timed(scenario, out_dir, replication, progress)[0]


def run_timed(
    scenario: Scenario,
    out_dir: str | Path | None = None,
    replication: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    flows: bool = True,
) -> tuple[dict, dict]:
    """:func:`run_summary` and the run's wall-clock timing (``wall_time_s``, ``events_per_s``,
    ``packets_per_s`` and per replication), which is kept out of the result files. With
    ``flows=False`` the summary has ``flow_count`` in place of its per-flow arrays (``flows``,
    ``tcp_flows``): with many flows, read them from the written file with :func:`load_summary`."""
    text, file = scenario.rust_source()
    out = None if out_dir is None else str(out_dir)
    both = json.loads(_core.run_scenario(text, str(scenario.base_dir), out, replication, file, progress, flows))
    return both["summary"], both["timing"]


def load_summary(out_dir: str | Path, columns: list[str] | None = None) -> tuple[dict, pd.DataFrame]:
    """``summary.json`` of ``out_dir`` read a flow row at a time (in Rust): the document without
    its ``flows`` array (``flow_count`` in its place) and the per-flow rows as a table with only
    ``columns`` (every key when None; a key no row has is no column). A million-flow summary is
    gigabytes of JSON; a few columns are megabytes."""
    path = Path(out_dir) / "summary.json"
    read = json.loads(_core.read_summary(str(path), columns))
    return read["head"], pd.DataFrame(read["flows"])


@dataclass
class Results:
    """The results of a run: ``summary`` (the ``summary.json`` dict without its ``flows`` array,
    with ``flow_count`` instead), ``flows`` (that array as a table: per flow, mean over
    replications with 95% confidence intervals), ``replications`` (per flow and replication)
    and ``timeseries`` (throughput and queue length per time bin)."""

    summary: dict
    flows: pd.DataFrame
    replications: pd.DataFrame
    timeseries: pd.DataFrame
    out_dir: Path | None = None

    @classmethod
    def load(cls, out_dir: str | Path) -> Results:
        """Read the results a run wrote to ``out_dir``."""
        out_dir = Path(out_dir)
        summary, flows = load_summary(out_dir)

        def table(name: str) -> pd.DataFrame:
            path = out_dir / name
            return pd.read_csv(path) if path.exists() else pd.DataFrame()

        return cls(
            summary=summary,
            flows=flows,
            replications=table("flows.csv"),
            timeseries=table("timeseries.csv"),
            out_dir=out_dir,
        )


def run_into(
    scenario: Scenario,
    out_dir: str | Path,
    progress: Callable[[int, int], None] | None = None,
    force: bool = False,
) -> dict:
    """Run ``scenario`` into the output folder ``out_dir`` and return its summary without the
    per-flow arrays (``flow_count`` in their place; they are in ``out_dir/summary.json``).

    The folder must be empty or hold results of the same scenario (same fingerprint, see
    :mod:`schedlab.outputs`), else :class:`schedlab.outputs.OutputFolderError`; ``force``
    clears it first. ``run-info.json`` records the fingerprint, the status and the wall time
    (with the simulator's own timing under ``simulation``); no result file holds a wall time."""
    determined = outputs.determinants(scenario.simulation_data(), scenario.base_dir)
    info = outputs.prepare(out_dir, "run", determined, force=force)
    try:
        summary, timing = run_timed(scenario, out_dir, progress=progress, flows=False)
    except BaseException as e:
        status = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
        outputs.finish(out_dir, info, status, error=f"{type(e).__name__}: {e}")
        raise
    outputs.finish(out_dir, info, "complete", simulation=timing)
    return summary


def run(
    scenario: Scenario | str | Path,
    out_dir: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    force: bool = False,
) -> Results:
    """Run a scenario (a :class:`Scenario` or a TOML path) with all its replications and
    return its :class:`Results`. Output files go to ``out_dir`` (a temporary folder if None),
    which must be empty or hold results of the same scenario unless ``force`` (which clears
    it; see :func:`run_into`). ``progress(done, total)`` is called as replications finish."""
    s = _as_scenario(scenario)
    if out_dir is not None:
        run_into(s, out_dir, progress=progress, force=force)
        return Results.load(out_dir)
    with tempfile.TemporaryDirectory(prefix="schedlab-") as tmp:
        run_timed(s, tmp, progress=progress, flows=False)
        results = Results.load(tmp)
        results.out_dir = None
        return results
