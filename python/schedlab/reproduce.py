"""``schedlab reproduce``: every figure and table with experimental results in the five papers,
one command each, with the papers' numbers beside ours and a verdict per claim.

The registry is data, one folder per paper under ``experiments/``:

* ``experiments/<folder>/reproduce.toml`` — the paper (``paper = "dwcs"``, its seed, title) and
  one ``[[result]]`` per figure or table, numbered as the paper numbers it (``fig4a``,
  ``tab5.2``). A result is either expressible — ``scenario = "file.toml"`` (a scenario with
  an optional ``[sweep]``), ``[result.figure]`` and ``[[result.claim]]`` — or not yet, with
  ``needs = "…"`` naming the missing component (the router model, TCP, the real gateway).
  ``measure = true`` runs the scenario's sweep on real packets (``schedlab sweep --measure``,
  one task after another); without root it is skipped, and ``verdict.json`` says why
  (``skipped``). Adding an experiment is a scenario file plus such an entry.
* ``experiments/<folder>/paper_values.csv`` — the numbers the papers print (tables, prose),
  one per row: ``key,value,unit,source`` (``source`` gives section, table/figure and page).
  Claims refer to them by ``key``; where a paper gives only a plot, the claim is an ordering
  or a trend check and has no number.

Running a result runs its scenario with the shared sweep runner (:func:`run_sweep`; results
sharing a scenario share one run), then writes ``DIR/<paper>/<result>/``: ``data.csv`` (the
sweep table: mean and 95% CI per point and flow), ``replications.csv``, ``figure.png``/``.svg``
drawn as the paper draws it (the paper's numbers as markers where it gives them) and
``verdict.json``. ``DIR/reproduction.html`` shows every result at a glance, then each figure
with its claims; ``DIR/reproduction.md`` is the same verdict table in Markdown. Both cover
every result whose ``verdict.json`` is in ``DIR``, from this call or an earlier one.

Claims (``[[result.claim]]``): ``id``, ``statement`` (the paper's), ``source`` (section and
page), ``check`` and its keys, and optionally ``explanation`` (why ours differs, shown with
any verdict other than ``match``) or ``needs`` (the claim is ``not_expressible`` until a
missing component exists, while the result's other claims are checked). A *selection* is a table
``{ metric = "…", flow = 0 | flows = [..] | class = 1, where = {key = value}, x = value,
aggregate = "sum" | "mean", minus = { selection } }``, or ``{ table = "links", link = 2, metric = "lc_service", … }``
for a link's columns (utilisation, the discipline's counters); it is evaluated per replication and then averaged with a 95%
confidence interval, so that derived values (shares, ratios) get an honest interval. ``minus``
subtracts another selection replication by replication (it inherits ``x``): a difference of two
runs, such as paper 003's jitter increase (with the competing classes minus class 1 alone). Checks:

``compare``
    ``ours`` (a selection, times ``scale``) against ``paper`` (a key of paper_values.csv):
    ``match`` when the paper's value lies within our 95% CI widened by ``tolerance``
    (relative) or ``tolerance_abs`` (with ``upper_bound = true``: when ours is at most the
    paper's value plus that slack, for "fewer than"), or, with ``tolerance_factor = f``, when ours lies
    within [paper/f, paper·f] (for spreads such as confidence intervals); ``statistic =
    "ci95_normal"`` compares the CI half-width 1.96·s/√n itself instead of the mean; otherwise ``trend`` when the optional ``shape`` check
    (below) holds, else ``mismatch``.
``ratio``
    ``ours`` / ``over`` (selections, per replication) against ``paper``, as ``compare``.
``order``
    ``items`` (selections) are in ``direction`` ("increasing" or "decreasing") order:
    ``match``; in that order with ties: ``trend``; otherwise ``mismatch``.
``shape``
    ``ours`` (a selection without ``x``) along the sweep's x axis is ``increasing``,
    ``decreasing`` or ``flat`` (max/min ≤ 1 + ``tolerance``): ``match`` or ``mismatch``.
``below``
    ``ours`` × ``factor`` ≤ ``than``: ``match``; ``ours`` < ``than`` only: ``trend``;
    otherwise ``mismatch`` (e.g. "two orders of magnitude lower": ``factor = 100``).
``spread``
    ``ours`` (optionally divided by ``over``, per replication, times ``scale``) at every value
    of the sweep's x: ``match`` when max − min is at most ``paper`` (+ ``tolerance_abs``),
    for "the differences are less than …"; otherwise ``mismatch``.
``converges``
    for results with ``timeseries = true`` (replication 0 of every point is run again for
    its per-bin throughput, ``table = "series"``): the start of the first bin from which every
    later bin of each flow in ``targets_bps`` (``{ flow = bit/s }``) stays within ±``scale``
    (default 0.2) of its target, compared with ``paper`` (seconds) within ``tolerance_abs``
    (with ``upper_bound = true``: at most ``paper`` + ``tolerance_abs``, for "within 0.3 s").
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import tomllib

from schedlab.scenario import Scenario, ScenarioError
from schedlab.stats import mean_ci95

#: The papers, in the order of their seeds: (paper id, experiments folder).
PAPERS = (("zhang", "thesis"), ("wang", "wang"), ("dwcs", "dwcs"), ("ewrr", "ewrr"), ("vd", "vd"))
VERDICTS = ("match", "trend", "mismatch", "not_expressible")
CHECKS = ("compare", "ratio", "order", "shape", "below", "converges", "spread")
_RESULT_KEYS = {
    "id",
    "title",
    "scenario",
    "generator",
    "needs",
    "quick",
    "figure",
    "claim",
    "note",
    "timeseries",
    "measure",
}
_CLAIM_KEYS = {
    "id",
    "statement",
    "source",
    "check",
    "ours",
    "over",
    "than",
    "items",
    "paper",
    "scale",
    "tolerance",
    "tolerance_abs",
    "tolerance_factor",
    "shape",
    "direction",
    "factor",
    "explanation",
    "statistic",
    "needs",
    "targets_bps",
    "upper_bound",
}
_SELECTION_KEYS = {"metric", "table", "flow", "flows", "class", "link", "where", "x", "aggregate", "minus"}


class ReproduceError(ValueError):
    """A registry entry, paper value or command line the command cannot use; the message names
    the file, the key and the value."""


def experiments_dir() -> Path:
    """The ``experiments/`` folder of the source tree."""
    return Path(__file__).resolve().parents[2] / "experiments"


@dataclass
class Result:
    """One figure or table of a paper."""

    paper: str
    id: str
    title: str
    folder: Path
    scenario: Path | None
    needs: str | None
    quick: dict
    figure: dict
    claims: list[dict]
    note: str = ""
    timeseries: bool = False
    #: ``file.py:function`` beside ``reproduce.toml`` that generates the result's scenarios.
    generator: str | None = None
    #: Run the scenario's sweep on real packets (``schedlab sweep --measure``): needs root.
    measure: bool = False

    @property
    def status(self) -> str:
        """``expressible`` or ``needs …``."""
        return "expressible" if self.needs is None else f"needs {self.needs}"

    def listing(self) -> dict:
        return {
            "paper": self.paper,
            "result": self.id,
            "title": self.title,
            "status": self.status,
            "expressible": self.needs is None,
            "scenario": self.scenario_label,
            "claims": len(self.claims),
            "measured": self.measure,
        }

    @property
    def scenario_label(self) -> str | None:
        """The scenario file (relative to ``experiments/``) or the generator that writes them."""
        if self.generator is not None:
            return f"{self.folder.name}/{self.generator}"
        return None if self.scenario is None else str(self.scenario.relative_to(self.folder.parent))

    def generated(self, quick: bool) -> list[tuple[dict, Scenario]]:
        """The generator's scenarios, each with the values that tell them apart (columns of
        the result tables, e.g. ``streams``): ``function(quick)`` of ``generator``."""
        return _generator_function(self.folder, self.generator, "generator")(quick)


@dataclass
class Paper:
    """One paper: its results and its numbers."""

    id: str
    seed: str
    title: str
    folder: Path
    results: list[Result] = field(default_factory=list)
    values: dict[str, dict] = field(default_factory=dict)


def _load_values(path: Path) -> dict[str, dict]:
    values: dict[str, dict] = {}
    if not path.exists():
        return values
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = {"key", "value", "unit", "source"} - set(reader.fieldnames or [])
        if missing:
            raise ReproduceError(f"{path}: header lacks {', '.join(sorted(missing))}")
        for line, row in enumerate(reader, start=2):
            try:
                value = float(row["value"])
            except ValueError:
                raise ReproduceError(f"{path}:{line}: value = {row['value']!r}: not a number") from None
            if not row["source"].strip():
                raise ReproduceError(f"{path}:{line}: {row['key']} has no source")
            if row["key"] in values:
                raise ReproduceError(f"{path}:{line}: key {row['key']!r} appears twice")
            values[row["key"]] = {"value": value, "unit": row["unit"], "source": row["source"]}
    return values


def _check_keys(table: dict, allowed: set, where: str) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise ReproduceError(f"{where}.{key} = {value!r}: unknown key; accepted: {', '.join(sorted(allowed))}")


def _check_selection(selection, where: str) -> None:
    if not isinstance(selection, dict) or "metric" not in selection:
        raise ReproduceError(f"{where} = {selection!r}: must be a table with a metric")
    _check_keys(selection, _SELECTION_KEYS, where)
    if selection.get("table", "flows") not in ("flows", "links", "series"):
        raise ReproduceError(f"{where}.table = {selection['table']!r}: use flows, links or series")
    if selection.get("aggregate", "sum") not in ("sum", "mean"):
        raise ReproduceError(f"{where}.aggregate = {selection['aggregate']!r}: use sum or mean")
    if "minus" in selection:
        _check_selection(selection["minus"], f"{where}.minus")


def _check_claim(claim: dict, values: dict, where: str) -> None:
    _check_keys(claim, _CLAIM_KEYS, where)
    for key in ("id", "statement", "source", "check"):
        if not isinstance(claim.get(key), str) or not claim[key]:
            raise ReproduceError(f"{where}.{key} = {claim.get(key)!r}: required text")
    check = claim["check"]
    if "needs" in claim:
        return  # evaluated as not_expressible: nothing else to check
    if check not in CHECKS:
        raise ReproduceError(f"{where}.check = {check!r}: unknown; known: {', '.join(CHECKS)}")
    if check in ("compare", "ratio", "shape", "below", "converges", "spread"):
        _check_selection(claim.get("ours"), f"{where}.ours")
    if check == "converges":
        targets = claim.get("targets_bps")
        if not isinstance(targets, dict) or not targets:
            raise ReproduceError(f"{where}.targets_bps = {targets!r}: a table flow = bit/s, e.g. {{ 1 = 2.5e6 }}")
        if claim.get("paper") not in values:
            raise ReproduceError(f"{where}.paper = {claim.get('paper')!r}: not a key of paper_values.csv")
    if check == "ratio" or (check == "spread" and "over" in claim):
        _check_selection(claim.get("over"), f"{where}.over")
    if check == "below":
        _check_selection(claim.get("than"), f"{where}.than")
    if check == "order":
        items = claim.get("items")
        if not isinstance(items, list) or len(items) < 2:
            raise ReproduceError(f"{where}.items = {items!r}: at least two selections")
        for i, item in enumerate(items):
            _check_selection(item, f"{where}.items[{i}]")
    if check in ("compare", "ratio", "spread"):
        if claim.get("paper") not in values:
            raise ReproduceError(f"{where}.paper = {claim.get('paper')!r}: not a key of paper_values.csv")
    if claim.get("statistic", "mean") not in ("mean", "ci95_normal"):
        raise ReproduceError(f"{where}.statistic = {claim['statistic']!r}: use mean or ci95_normal")
    for shape_key in ("shape", "direction"):
        if shape_key in claim and claim[shape_key] not in ("increasing", "decreasing", "flat"):
            raise ReproduceError(f"{where}.{shape_key} = {claim[shape_key]!r}: use increasing, decreasing or flat")


def load_paper(paper_id: str, folder: Path) -> Paper:
    """Read ``folder/reproduce.toml`` and ``folder/paper_values.csv``, checking every entry."""
    path = folder / "reproduce.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ReproduceError(f"{path}: {e}") from None
    if data.get("paper") != paper_id:
        raise ReproduceError(f"{path}: paper = {data.get('paper')!r}: expected {paper_id!r}")
    paper = Paper(paper_id, str(data.get("seed", "")), str(data.get("title", "")), folder)
    paper.values = _load_values(folder / "paper_values.csv")
    seen = set()
    for index, entry in enumerate(data.get("result", [])):
        where = f"{path}: result[{index}]"
        _check_keys(entry, _RESULT_KEYS, where)
        rid = entry.get("id")
        if not isinstance(rid, str) or not re.fullmatch(r"(fig|tab)[0-9][0-9a-z.]*", rid):
            raise ReproduceError(f"{where}.id = {rid!r}: must be fig… or tab… as the paper numbers it")
        if rid in seen:
            raise ReproduceError(f"{where}.id = {rid!r}: appears twice")
        seen.add(rid)
        scenario = entry.get("scenario")
        needs = entry.get("needs")
        generator = entry.get("generator")
        if sum(v is not None for v in (scenario, needs, generator)) != 1:
            raise ReproduceError(f"{where} ({rid}): give exactly one of scenario, generator and needs")
        if generator is not None:
            _generator_function(folder, generator, f"{where}.generator")
        scenario_path = None
        if scenario is not None:
            scenario_path = folder / scenario
            if not scenario_path.exists():
                raise ReproduceError(f"{where}.scenario = {scenario!r}: no such file in {folder}")
        measure = entry.get("measure", False)
        if not isinstance(measure, bool):
            raise ReproduceError(f"{where}.measure = {measure!r}: must be true or false")
        if measure and scenario is None:
            raise ReproduceError(f"{where} ({rid}): measure = true needs a scenario")
        claims = entry.get("claim", [])
        for c, claim in enumerate(claims):
            _check_claim(claim, paper.values, f"{where}.claim[{c}]")
        paper.results.append(
            Result(
                paper_id,
                rid,
                str(entry.get("title", "")),
                folder,
                scenario_path,
                needs,
                dict(entry.get("quick", {})),
                dict(entry.get("figure", {})),
                list(claims),
                str(entry.get("note", "")),
                bool(entry.get("timeseries", False)),
                generator,
                measure,
            )
        )
    return paper


def _generator_function(folder: Path, generator, where: str) -> Callable:
    """The function ``name`` of ``folder/file.py`` for ``generator = "file.py:name"``."""
    import importlib.util

    if not isinstance(generator, str) or not re.fullmatch(r"[A-Za-z0-9_]+\.py:[A-Za-z_][A-Za-z0-9_]*", generator):
        raise ReproduceError(f'{where} = {generator!r}: must be "file.py:function" (a file beside reproduce.toml)')
    file, name = generator.split(":")
    path = folder / file
    if not path.exists():
        raise ReproduceError(f"{where} = {generator!r}: no such file in {folder}")
    spec = importlib.util.spec_from_file_location(f"schedlab_experiments_{folder.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any error in the experiment's code is reported as the registry's
        raise ReproduceError(f"{where} = {generator!r}: {path} fails to load: {type(e).__name__}: {e}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ReproduceError(f"{where} = {generator!r}: {path} has no function {name}")
    return function


def registry(root: Path | None = None) -> list[Paper]:
    """Every paper of the registry, in seed order."""
    root = root or experiments_dir()
    return [load_paper(pid, root / folder) for pid, folder in PAPERS]


def select(papers: list[Paper], paper: str | None, results: list[str], everything: bool) -> list[Result]:
    """The results named on the command line (``--all``: every expressible result)."""
    by_id = {p.id: p for p in papers}
    if everything:
        if paper or results:
            raise ReproduceError("--all runs every paper: give no PAPER or RESULT with it")
        return [r for p in papers for r in p.results if r.needs is None]
    if paper is None:
        raise ReproduceError("give a PAPER (one of " + ", ".join(by_id) + ") or --all")
    if paper not in by_id:
        raise ReproduceError(f"PAPER = {paper!r}: unknown; known: {', '.join(by_id)}")
    known = {r.id: r for r in by_id[paper].results}
    if not results:
        return [r for r in by_id[paper].results if r.needs is None]
    chosen = []
    for rid in results:
        if rid not in known:
            raise ReproduceError(f"RESULT = {rid!r}: not a result of {paper}; known: {', '.join(known)}")
        chosen.append(known[rid])
    return chosen


# --------------------------------------------------------------------------- running


def scenario_for(result: Result, quick: bool) -> Scenario:
    """The result's scenario, with its ``quick`` overrides (and at most two replications)
    under ``--quick``."""
    return _shortened(Scenario.from_toml(result.scenario), result, quick)


def _shortened(scenario: Scenario, result: Result, quick: bool) -> Scenario:
    if quick:
        for key, value in result.quick.items():
            scenario = scenario.set(key, value)
        if "run.replications" not in result.quick:
            scenario = scenario.set("run.replications", min(2, scenario.replications))
    return scenario


def _time_series(scenario: Scenario, run_dir: Path) -> pd.DataFrame:
    """Replication 0 of every point run again with its output tables, for the per-bin
    throughput (``timeseries.csv``) of results that are about the transient (EWRR figures
    12-14); one row per point × bin × flow with the point's swept values."""
    from schedlab.api import run_summary

    frames = []
    for point in scenario.points():
        target = run_dir / "series" / f"p{point.index:04d}"
        target.mkdir(parents=True, exist_ok=True)
        run_summary(point.scenario, target, replication=0)
        frame = pd.read_csv(target / "timeseries.csv")
        frame["point"] = point.index
        for key, value in point.values.items():
            frame[key] = value
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _run_key(result: Result, quick: bool) -> str:
    overrides = json.dumps(result.quick, sort_keys=True) if quick else ""
    return f"{result.scenario_label}|{overrides}"


@dataclass
class _Generated:
    """The sweeps of a generator's scenarios, concatenated, with the values that tell them
    apart as columns (the shape of :class:`schedlab.sweep.SweepResult` that claims and figures read)."""

    table: pd.DataFrame
    replications: pd.DataFrame
    links: pd.DataFrame
    link_replications: pd.DataFrame
    failures: list


def _run_generated(result: Result, quick: bool, run_root: Path, progress, **sweep_args) -> tuple[Scenario, _Generated]:
    """Every scenario of ``result``'s generator, each run as a sweep into its own folder of
    ``run_root`` (named by its values), shortened under ``--quick``."""
    from schedlab.sweep import run_sweep

    generated = result.generated(quick)
    if not generated:
        raise ReproduceError(f"{result.paper} {result.id}: generator {result.generator} returned no scenario")
    frames: dict[str, list] = {"table": [], "replications": [], "links": [], "link_replications": []}
    failures = []
    for index, (values, scenario) in enumerate(generated):
        scenario = _shortened(scenario, result, quick)
        label = "_".join(f"{k}{v}" for k, v in values.items()) or f"g{index}"
        if progress:
            progress(f"  {result.paper} {result.id}: {label} ({index + 1}/{len(generated)})")
        sweep = run_sweep(scenario, run_root / label, representative=False, **sweep_args)
        failures.extend(sweep.failures)
        for name in frames:
            frame = getattr(sweep, name).copy()
            for key, value in values.items():
                frame[key] = value
            frames[name].append(frame)
    joined = {name: pd.concat(parts, ignore_index=True) for name, parts in frames.items()}
    return generated[0][1], _Generated(failures=failures, **joined)


def _selection_values(replications, selection: dict, x_key: str | None) -> pd.Series:
    """One value per replication (indexed by replication) of a selection. ``replications`` is
    the per-replication flow table, or a dict of them by ``table`` (``flows``, ``links``)."""
    table = selection.get("table", "flows")
    if isinstance(replications, dict):
        frame = replications.get(table, pd.DataFrame())
    elif table == "flows":
        frame = replications
    else:
        raise ReproduceError(f"table = {table!r}: this result has no per-link results")
    for key, value in selection.get("where", {}).items():
        if key not in frame.columns:
            raise ReproduceError(f"where: {key!r} is not a swept key of this result's scenario")
        frame = frame[frame[key] == value]
    if "x" in selection:
        if x_key is None or x_key not in frame.columns:
            raise ReproduceError(f"x = {selection['x']!r}: the scenario has no swept x")
        frame = frame[frame[x_key] == selection["x"]]
    if "flow" in selection:
        frame = frame[frame["flow"] == selection["flow"]]
    if "flows" in selection:
        frame = frame[frame["flow"].isin(selection["flows"])]
    if "class" in selection:
        frame = frame[frame["class"] == selection["class"]]
    if "link" in selection:
        frame = frame[frame["link"] == selection["link"]]
    metric = selection["metric"]
    if metric not in frame.columns:
        raise ReproduceError(f"metric = {metric!r}: not a column of the results")
    if frame.empty:
        raise ReproduceError(f"selection {selection!r}: selects no rows")
    grouped = frame.groupby("replication")[metric]
    values = grouped.mean() if selection.get("aggregate", "sum") == "mean" else grouped.sum(min_count=1)
    if "minus" in selection:
        # A difference of two runs, replication by replication (paper 003's jitter increase:
        # with the competing traffic minus alone); the minus selection inherits x.
        minus = selection["minus"]
        if "x" in selection and "x" not in minus:
            minus = {**minus, "x": selection["x"]}
        values = values - _selection_values(replications, minus, x_key)
        if values.isna().all():
            raise ReproduceError(f"selection {selection!r}: its minus selection shares no replication with it")
    return values


def _stat(values: pd.Series, statistic: str = "mean") -> dict:
    """The mean over replications with its 95% CI (Student t), or with ``statistic =
    "ci95_normal"`` the CI half-width itself as the thesis computes it (1.96·s/√n)."""
    if statistic == "ci95_normal":
        _, half = mean_ci95(values.tolist(), "normal")
        return {"value": half, "ci95": None, "replications": len(values)}
    mean, half = mean_ci95(values.tolist())
    return {"value": mean, "ci95": None if math.isnan(half) else half, "replications": len(values)}


def _shape_holds(series: list[float], shape: str, tolerance: float) -> bool:
    finite = [v for v in series if v is not None and not math.isnan(v)]
    if len(finite) < 2:
        return False
    span = max(abs(v) for v in finite) or 1.0
    steps = [b - a for a, b in zip(finite, finite[1:], strict=False)]
    if shape == "increasing":
        return all(s >= -tolerance * span for s in steps) and finite[-1] > finite[0]
    if shape == "decreasing":
        return all(s <= tolerance * span for s in steps) and finite[-1] < finite[0]
    low = min(finite)
    return low > 0 and max(finite) / low <= 1 + tolerance


def _along_x(replications: pd.DataFrame, selection: dict, x_key: str | None) -> list[tuple]:
    if x_key is None:
        raise ReproduceError("a shape check needs a scenario with a swept x")
    frame = replications.get(selection.get("table", "flows")) if isinstance(replications, dict) else replications
    if frame is None or x_key not in frame.columns:
        raise ReproduceError(f"x = {x_key!r}: not a column of this result's {selection.get('table', 'flows')}")
    xs = sorted(set(frame[x_key].dropna()))
    pairs = []
    for x in xs:
        values = _selection_values(replications, {**selection, "x": x}, x_key)
        pairs.append((x, float(values.mean())))
    return pairs


def evaluate_claim(claim: dict, replications, x_key: str | None, values: dict) -> dict:
    """One entry of ``verdict.json``. A claim with ``needs`` (a component schedlab lacks for
    this one claim of an otherwise expressible result) is ``not_expressible``."""
    check = claim["check"]
    if "needs" in claim:
        return {
            "id": claim["id"],
            "statement": claim["statement"],
            "source": claim["source"],
            "check": check,
            "paper": None,
            "ours": None,
            "verdict": "not_expressible",
            "why": f"schedlab cannot check this claim yet: it needs {claim['needs']}",
        }
    scale = float(claim.get("scale", 1.0))
    tolerance = float(claim.get("tolerance", 0.0))
    out = {
        "id": claim["id"],
        "statement": claim["statement"],
        "source": claim["source"],
        "check": check,
        "paper": None,
        "ours": None,
    }
    if "paper" in claim:
        paper = values[claim["paper"]]
        out["paper"] = {"key": claim["paper"], **paper}
    if check in ("compare", "ratio"):
        ours = _selection_values(replications, claim["ours"], x_key) * scale
        if check == "ratio":
            ours = ours / (_selection_values(replications, claim["over"], x_key) * scale)
        stat = _stat(ours, claim.get("statistic", "mean"))
        out["ours"] = stat
        target = out["paper"]["value"]
        if "tolerance_factor" in claim:
            factor = float(claim["tolerance_factor"])
            within = target > 0 and target / factor <= stat["value"] <= target * factor
            rule = f"within a factor {factor:g} of {target:g}"
            why = f"ours {stat['value']:.4g} is {'' if within else 'not '}{rule}"
        else:
            slack = (stat["ci95"] or 0.0) + max(tolerance * abs(target), float(claim.get("tolerance_abs", 0.0)))
            within, rule = _within(stat["value"], target, slack, bool(claim.get("upper_bound")))
            why = f"ours {stat['value']:.4g} is {'' if within else 'not '}{rule}"
        if within:
            verdict = "match"
        else:
            verdict = "mismatch"
            if "shape" in claim:
                pairs = _along_x(replications, {k: v for k, v in claim["ours"].items() if k != "x"}, x_key)
                if _shape_holds([v for _, v in pairs], claim["shape"], 0.05):
                    verdict = "trend"
                    why += f", but ours is {claim['shape']} along x as the paper's is"
    elif check == "order":
        stats = [_stat(_selection_values(replications, item, x_key) * scale) for item in claim["items"]]
        out["ours"] = {"values": stats}
        means = [s["value"] for s in stats]
        direction = claim.get("direction", "increasing")
        pairs = list(zip(means, means[1:], strict=False))
        ok = all((b > a) if direction == "increasing" else (b < a) for a, b in pairs)
        weak = all((b >= a) if direction == "increasing" else (b <= a) for a, b in pairs)
        verdict = "match" if ok else "trend" if weak else "mismatch"
        why = f"ours {', '.join(f'{m:.4g}' for m in means)}: {'' if ok else 'not strictly ' if weak else 'not '}{direction}"
    elif check == "shape":
        pairs = _along_x(replications, claim["ours"], x_key)
        out["ours"] = {"x": [p[0] for p in pairs], "values": [p[1] * scale for p in pairs]}
        shape = claim.get("shape", "increasing")
        ok = _shape_holds([p[1] for p in pairs], shape, tolerance)
        verdict = "match" if ok else "mismatch"
        why = f"ours is {'' if ok else 'not '}{shape} along x"
    elif check == "spread":
        pairs = []
        for x, _ in _along_x(replications, claim["ours"], x_key):
            value = _selection_values(replications, {**claim["ours"], "x": x}, x_key) * scale
            if "over" in claim:
                value = value / _selection_values(replications, {**claim["over"], "x": x}, x_key)
            pairs.append((x, float(value.mean())))
        spread = max(v for _, v in pairs) - min(v for _, v in pairs)
        out["ours"] = {"value": spread, "ci95": None, "x": [p[0] for p in pairs], "values": [p[1] for p in pairs]}
        within, rule = _within(spread, out["paper"]["value"], float(claim.get("tolerance_abs", 0.0)), True)
        verdict = "match" if within else "mismatch"
        why = f"ours spread {spread:.4g} (max − min of {', '.join(f'{v:.4g}' for _, v in pairs)}) is {'' if within else 'not '}{rule}"
    elif check == "converges":
        stat = _convergence(replications, claim, x_key)
        out["ours"] = stat
        target = out["paper"]["value"]
        slack = max(tolerance * abs(target), float(claim.get("tolerance_abs", 0.0)))
        within, rule = _within(stat["value"], target, slack, bool(claim.get("upper_bound")), " s")
        verdict = "match" if within else "mismatch"
        why = (
            f"ours converges at {stat['value']:.2g} s (every later bin within ±{stat['band']:.0%} of each class's"
            f" share): {'' if within else 'not '}{rule}"
        )
    else:  # below
        statistic = claim.get("statistic", "mean")
        a = _stat(_selection_values(replications, claim["ours"], x_key) * scale, statistic)
        b = _stat(_selection_values(replications, claim["than"], x_key) * scale, statistic)
        factor = float(claim.get("factor", 1.0))
        out["ours"] = {"value": a["value"], "ci95": a["ci95"], "than": b}
        if a["value"] * factor <= b["value"]:
            verdict, why = "match", f"ours {a['value']:.4g} × {factor:g} ≤ {b['value']:.4g}"
        elif a["value"] < b["value"]:
            verdict = "trend"
            why = f"ours {a['value']:.4g} < {b['value']:.4g}, but by a factor {b['value'] / a['value']:.3g}, not {factor:g}"
        else:
            verdict, why = "mismatch", f"ours {a['value']:.4g} is not below {b['value']:.4g}"
    out["verdict"] = verdict
    out["why"] = why
    if verdict != "match" and claim.get("explanation"):
        out["explanation"] = claim["explanation"]
    return out


def _within(value: float, target: float, slack: float, upper_bound: bool, unit: str = "") -> tuple[bool, str]:
    """Whether ``value`` lies within ``target`` ± ``slack`` (``upper_bound``: at most
    ``target`` + ``slack``), and the rule in words."""
    if upper_bound:
        return value <= target + slack, f"at most {target:g}{unit} (+{slack:.3g})"
    return abs(value - target) <= slack, f"within {target:g} ± {slack:.3g}{unit}"


def _convergence(frames, claim: dict, x_key: str | None) -> dict:
    """The convergence time of a per-bin throughput series (``table = "series"``): the start
    of the first time bin from which every later bin of every flow in ``targets_bps`` lies
    within ±``band`` (default 20%) of that flow's target; the run's end if none does."""
    selection = claim["ours"]
    frame = frames.get("series") if isinstance(frames, dict) else None
    if frame is None or frame.empty:
        raise ReproduceError("a converges check needs the result's time series (timeseries = true)")
    if "x" in selection:
        frame = frame[frame[x_key] == selection["x"]]
    for key, value in selection.get("where", {}).items():
        frame = frame[frame[key] == value]
    band = float(claim.get("scale", 0.2))
    starts = sorted(set(frame["time_s"]))
    if not starts:
        raise ReproduceError(f"selection {selection!r}: selects no time bins")
    converged_at = None
    for start in reversed(starts):
        later = frame[frame["time_s"] >= start]
        ok = True
        for flow, target in claim["targets_bps"].items():
            rows = later[later["flow"] == int(flow)][selection["metric"]]
            if rows.empty or ((rows - target).abs() > band * target).any():
                ok = False
                break
        if not ok:
            break
        converged_at = start
    end = float(frame["bin_end_s"].max()) if "bin_end_s" in frame.columns else starts[-1]
    return {"value": end if converged_at is None else float(converged_at), "ci95": None, "band": band}


def _not_expressible(result: Result) -> list[dict]:
    claims = result.claims or [{"id": "all", "statement": result.title, "source": result.id}]
    return [
        {
            "id": c["id"],
            "statement": c["statement"],
            "source": c["source"],
            "paper": None,
            "ours": None,
            "verdict": "not_expressible",
            "why": f"schedlab cannot express this result yet: it needs {result.needs}",
        }
        for c in claims
    ]


def _cannot_measure() -> str | None:
    """Why a measured result cannot run here (None: it can)."""
    import sys

    from schedlab import testbed

    if not sys.platform.startswith("linux"):
        return "measured on real packets through Linux network namespaces; this is not Linux"
    if not testbed.can_admin_network():
        return (
            "measured on real packets through network namespaces, which needs root or CAP_NET_ADMIN; "
            "run it as root (its simulated counterparts are the results without 'm')"
        )
    return None


@dataclass
class Outcome:
    """What reproducing one result produced."""

    result: Result
    claims: list[dict]
    folder: Path
    figure: Path | None = None
    error: str | None = None
    wall_time_s: float = 0.0
    #: Why the result was not run (a measured result without root), or None.
    skipped: str | None = None


def _write_verdict(outcome: Outcome, quick: bool) -> None:
    r = outcome.result
    doc = {
        "paper": r.paper,
        "result": r.id,
        "title": r.title,
        "status": r.status,
        "quick": quick,
        "scenario": r.scenario_label,
        "note": r.note,
        "error": outcome.error,
        "skipped": outcome.skipped,
        "claims": outcome.claims,
    }
    outcome.folder.mkdir(parents=True, exist_ok=True)
    path = outcome.folder / "verdict.json"
    tmp = path.with_suffix(".json.partial")
    tmp.write_text(json.dumps(doc, indent=2, default=_json_default))
    tmp.replace(path)


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def reproduce(
    results: list[Result],
    out_dir: Path,
    quick: bool = False,
    dask: str | None = None,
    workers: int | None = None,
    papers: list[Paper] | None = None,
    progress: Callable[[str], None] | None = None,
    force: bool = False,
) -> list[Outcome]:
    """Run ``results`` into ``out_dir`` (see the module docs); writes ``reproduction.html``.
    Runs already in ``out_dir`` are reused where their fingerprints match (the sweep's
    resume); a run folder holding another scenario's results is refused
    (:class:`schedlab.outputs.OutputFolderError`) unless ``force`` clears it."""
    from schedlab.outputs import OutputFolderError
    from schedlab.sweep import run_sweep

    papers = papers or registry()
    values = {p.id: p.values for p in papers}
    out_dir = Path(out_dir)
    runs: dict[str, tuple] = {}
    outcomes = []
    for result in results:
        folder = out_dir / result.paper / result.id
        folder.mkdir(parents=True, exist_ok=True)
        started = time.time()
        if result.needs is not None:
            outcome = Outcome(result, _not_expressible(result), folder)
            _write_verdict(outcome, quick)
            outcomes.append(outcome)
            continue
        if result.measure and (reason := _cannot_measure()):
            if progress:
                progress(f"{result.paper} {result.id}: skipped: {reason}")
            outcome = Outcome(result, [], folder, skipped=reason)
            _write_verdict(outcome, quick)
            outcomes.append(outcome)
            continue
        if progress:
            progress(f"{result.paper} {result.id}: {result.title}")
        key = _run_key(result, quick)
        try:
            if key not in runs and result.generator is not None:
                stem = result.generator.replace(".py:", "_") + ("_quick" if quick else "")
                scenario, sweep = _run_generated(
                    result,
                    quick,
                    out_dir / result.paper / "_runs" / stem,
                    progress,
                    dask=dask,
                    workers=workers,
                    resume=not force,
                    force=force,
                )
                if sweep.failures:
                    raise ReproduceError(f"{len(sweep.failures)} task(s) failed: {sweep.failures[0]['error']}")
                runs[key] = (scenario, sweep, pd.DataFrame())
            if key not in runs:
                scenario = scenario_for(result, quick)
                run_dir = out_dir / result.paper / "_runs" / (result.scenario.stem + ("_quick" if quick else ""))
                sweep = run_sweep(
                    scenario,
                    run_dir,
                    # Measured tasks run one after another on this host (no workers, no dask).
                    dask=None if result.measure else dask,
                    workers=None if result.measure else workers,
                    representative=False,
                    resume=not force,
                    force=force,
                    measure=result.measure,
                )
                if sweep.failures:
                    raise ReproduceError(f"{len(sweep.failures)} task(s) failed: {sweep.failures[0]['error']}")
                series = _time_series(scenario, run_dir) if result.timeseries else pd.DataFrame()
                runs[key] = (scenario, sweep, series)
            scenario, sweep, series = runs[key]
            x_key = scenario.sweep.x if scenario.sweep else None
            if result.generator is not None:
                x_key = result.figure.get("x")  # a value of the generator's, such as streams
            sweep.table.to_csv(folder / "data.csv", index=False)
            sweep.replications.to_csv(folder / "replications.csv", index=False)
            sweep.links.to_csv(folder / "data_links.csv", index=False)
            frames = {"flows": sweep.replications, "links": sweep.link_replications, "series": series}
            if not series.empty:
                series.to_csv(folder / "timeseries.csv", index=False)
            claims = [evaluate_claim(c, frames, x_key, values[result.paper]) for c in result.claims]
            outcome = Outcome(result, claims, folder)
            table = {"links": sweep.links, "series": series}.get(result.figure.get("table"), sweep.table)
            outcome.figure = draw_figure(result, scenario, table, values[result.paper], folder)
        except OutputFolderError:
            raise
        except (ReproduceError, ScenarioError, KeyError, ValueError) as e:
            outcome = Outcome(result, [], folder, error=f"{type(e).__name__}: {e}")
        outcome.wall_time_s = time.time() - started
        _write_verdict(outcome, quick)
        outcomes.append(outcome)
    everything = _with_earlier(outcomes, papers, out_dir)
    write_html(everything, out_dir, quick)
    write_markdown(everything, out_dir, quick)
    return outcomes


def _with_earlier(outcomes: list[Outcome], papers: list[Paper], out_dir: Path) -> list[Outcome]:
    """This call's outcomes plus those an earlier call left in ``out_dir`` (its
    ``verdict.json`` files), in registry order, so that the pages cover every result run
    into the folder."""
    fresh = {(o.result.paper, o.result.id): o for o in outcomes}
    merged = []
    for paper in papers:
        for result in paper.results:
            key = (paper.id, result.id)
            if key in fresh:
                merged.append(fresh[key])
                continue
            folder = out_dir / paper.id / result.id
            try:
                doc = json.loads((folder / "verdict.json").read_text())
            except (OSError, ValueError):
                continue
            figure = folder / "figure.png"
            merged.append(
                Outcome(
                    result,
                    doc.get("claims", []),
                    folder,
                    figure if figure.exists() else None,
                    doc.get("error"),
                    skipped=doc.get("skipped"),
                )
            )
    return merged


# --------------------------------------------------------------------------- figures


def draw_figure(result: Result, scenario: Scenario, table: pd.DataFrame, values: dict, folder: Path) -> Path | None:
    """The result's figure as the paper draws it (``[result.figure]``): ``y`` (a metric)
    against the swept ``x`` (or per flow as bars when the scenario has no sweep), one curve
    per flow in ``flows`` (default all) and per value of ``series``, restricted by ``where``;
    ``scale``, ``x_label``, ``y_label``, ``log_y``, ``log_x`` (base 2); ``table = "links"`` (with ``links =
    [..]``) draws per-link columns such as a discipline's counters, and ``y`` may list several; ``paper = [keys…]`` with ``paper_x``
    draws the paper's numbers as markers; ``theory = true`` adds the scenario's
    ``[[report.theory]]`` overlays, labelled as the approximations they are."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from schedlab import theory
    from schedlab.report import save_figure

    spec = result.figure
    if not spec or table.empty:
        return None
    if "group" in spec or "panels" in spec:
        return _draw_grouped(result, table, folder)
    metric = spec.get("y", "delay_mean_s")
    for name in metric if isinstance(metric, list) else [metric]:
        if name not in table.columns:
            raise ReproduceError(f"{result.paper} {result.id}: figure.y = {name!r}: not a column of the results")
    scale = float(spec.get("scale", 1.0))
    frame = table
    for key, value in spec.get("where", {}).items():
        frame = frame[frame[key] == value]
    key = "link" if spec.get("table") == "links" else "flow"
    if "flows" in spec:
        frame = frame[frame["flow"].isin(spec["flows"])]
    if "links" in spec:
        frame = frame[frame["link"].isin(spec["links"])]
    metrics = spec["y"] if isinstance(spec.get("y"), list) else [metric]
    x_key = spec.get("x", scenario.sweep.x if scenario.sweep else None)
    series_key = spec.get("series")
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    if x_key is None:
        metric = metrics[0]
        labels = [_flow_label(r) for _, r in frame.iterrows()]
        err = frame.get(f"{metric}_ci95")
        ax.bar(labels, frame[metric] * scale, yerr=None if err is None else err.fillna(0) * scale, capsize=3)
        ax.set_xlabel(spec.get("x_label", "flow"))
    else:
        groups = [(None, frame)] if not series_key else list(frame.groupby(series_key, sort=False))
        for series, rows in groups:
            for _id, id_rows in rows.groupby(key):
                id_rows = id_rows.sort_values(x_key)
                for name in metrics:
                    err = id_rows.get(f"{name}_ci95")
                    label = _flow_label(id_rows.iloc[0]) if key == "flow" else f"link {_id}"
                    label += "" if len(metrics) == 1 else f" {name}"
                    label += "" if series is None else f", {series}"
                    ax.errorbar(
                        id_rows[x_key],
                        id_rows[name] * scale,
                        yerr=None if err is None else err.fillna(0) * scale,
                        marker="o",
                        markersize=4,
                        capsize=3,
                        label=label,
                    )
        if spec.get("theory"):
            for index, overlay in enumerate(scenario.data.get("report", {}).get("theory", [])):
                pairs = []
                for point in scenario.points():
                    if any(point.values.get(k) != v for k, v in spec.get("where", {}).items()):
                        continue
                    sweep_series = scenario.sweep.series if scenario.sweep else None
                    if overlay.get("series") is not None and point.values.get(sweep_series) != overlay["series"]:
                        continue
                    y = theory.evaluate(overlay, point.scenario.data, index)
                    if not math.isnan(y):
                        pairs.append((point.values.get(x_key), y * scale))
                pairs.sort()
                if pairs:
                    ax.plot(
                        [a for a, _ in pairs],
                        [b for _, b in pairs],
                        linestyle=("--", ":", "-.")[index % 3],
                        color="black",
                        label=overlay.get("label", overlay["model"]),
                    )
        ax.set_xlabel(spec.get("x_label", x_key))
    paper_keys = spec.get("paper", [])
    if paper_keys:
        xs = spec.get("paper_x", list(range(len(paper_keys))))
        ys = [values[k]["value"] for k in paper_keys]
        ax.plot(xs, ys, linestyle="none", marker="x", markersize=8, color="red", label="paper")
    ax.set_ylabel(spec.get("y_label", ", ".join(metrics)))
    if spec.get("log_y"):
        ax.set_yscale("log")
    if spec.get("log_x"):
        ax.set_xscale("log", base=2)
    ax.set_title(f"{result.paper} {result.id}: {result.title}", fontsize=9)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    return save_figure(fig, folder, "figure", result.title).png


def _draw_grouped(result: Result, table: pd.DataFrame, folder: Path) -> Path | None:
    """Figures of many flows drawn as the paper draws them (DWCS figures 4, 9, 10): ``y``
    against ``x``, summed over the flows of each class (``group = "class"``; only for the
    ``series`` values in ``classes_for`` when given) and in total (``totals = true``), one curve
    per ``series`` value, one panel per value of ``panels``; ``where``, ``log_y``, ``x_label``,
    ``y_label`` as for the other figures; ``group_labels = { "0" = "1/80", … }`` names the
    group curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from schedlab.report import save_figure

    spec = result.figure
    metric, x_key, series_key = spec.get("y"), spec.get("x"), spec.get("series")
    for name in (metric, x_key, series_key, spec.get("panels"), spec.get("group")):
        if name is not None and name not in table.columns:
            raise ReproduceError(f"{result.paper} {result.id}: figure names {name!r}, not a column of the results")
    frame = table
    for key, value in spec.get("where", {}).items():
        frame = frame[frame[key] == value]
    panel_key = spec.get("panels")
    panels = [(None, frame)] if panel_key is None else list(frame.groupby(panel_key, sort=True))
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, (panel, rows) in zip(axes[0], panels, strict=True):
        series_groups = [(None, rows)] if series_key is None else list(rows.groupby(series_key, sort=False))
        for s_index, (series, srows) in enumerate(series_groups):
            style = ("-", "--", ":", "-.")[s_index % 4]
            prefix = "" if series is None else f"{series}: "
            if spec.get("group") and (series is None or series in spec.get("classes_for", [series])):
                labels = spec.get("group_labels", {})
                sums = srows.groupby([spec["group"], x_key])[metric].sum()
                for group_value in sorted(set(sums.index.get_level_values(0))):
                    curve = sums.loc[group_value]
                    label = labels.get(str(group_value), f"{spec['group']} {group_value}")
                    ax.plot(curve.index, curve.values, linestyle=style, marker="o", markersize=3, label=prefix + label)
            if spec.get("totals") or not spec.get("group"):
                total = srows.groupby(x_key)[metric].sum()
                ax.plot(
                    total.index,
                    total.values,
                    linestyle=style,
                    color="black" if spec.get("group") else None,
                    linewidth=2,
                    marker="s",
                    markersize=4,
                    label=prefix + "total",
                )
        ax.set_xlabel(spec.get("x_label", x_key))
        ax.set_ylabel(spec.get("y_label", metric))
        if spec.get("log_y"):
            ax.set_yscale("symlog", linthresh=10)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"{panel_key} = {panel}" if panel_key else "", fontsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6, ncol=2)
    fig.suptitle(f"{result.paper} {result.id}: {result.title}", fontsize=9)
    return save_figure(fig, folder, "figure", result.title).png


def _flow_label(row) -> str:
    name = row.get("name") if hasattr(row, "get") else None
    if isinstance(name, str) and name:
        return f"flow {row['flow']} ({name})"
    return f"flow {row['flow']}"


# --------------------------------------------------------------------------- report


_COLOURS = {
    "match": "#2e7d32",
    "trend": "#f9a825",
    "mismatch": "#c62828",
    "not_expressible": "#757575",
    "skipped": "#9e9e9e",
}


def _summary_verdict(outcome: Outcome) -> str:
    if outcome.error:
        return "error"
    if outcome.skipped:
        return "skipped"
    verdicts = {c["verdict"] for c in outcome.claims}
    for v in ("mismatch", "trend", "not_expressible", "match"):
        if v in verdicts:
            return v
    return "no claims"


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        if "values" in value and isinstance(value["values"], list):
            parts = [_fmt(v) for v in value["values"]]
            return ", ".join(parts)
        text = f"{value.get('value', float('nan')):.4g}"
        if value.get("ci95") is not None:
            text += f" ± {value['ci95']:.3g}"
        if value.get("unit"):
            text += f" {value['unit']}"
        return text
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write_html(outcomes: list[Outcome], out_dir: Path, quick: bool) -> Path:
    """``DIR/reproduction.html``: the verdicts at a glance, then each figure with its claims."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    rows = []
    for o in outcomes:
        figure = None
        if o.figure is not None and o.figure.exists():
            figure = "data:image/png;base64," + base64.b64encode(o.figure.read_bytes()).decode()
        claims = [
            {
                "id": c["id"],
                "statement": c["statement"],
                "source": c["source"],
                "paper": _fmt(c.get("paper")),
                "ours": _fmt(c.get("ours")),
                "verdict": c["verdict"],
                "colour": _COLOURS[c["verdict"]],
                "why": c["why"] + (f" — {c['explanation']}" if c.get("explanation") else ""),
            }
            for c in o.claims
        ]
        verdict = _summary_verdict(o)
        rows.append(
            {
                "paper": o.result.paper,
                "id": o.result.id,
                "anchor": f"{o.result.paper}-{o.result.id}".replace(".", "_"),
                "title": o.result.title,
                "status": o.result.status,
                "verdict": verdict,
                "colour": _COLOURS.get(verdict, "#000"),
                "figure": figure,
                "claims": claims,
                "error": o.error,
                "skipped": o.skipped,
                "note": o.result.note,
                "wall_time_s": round(o.wall_time_s, 1),
            }
        )
    env = Environment(loader=PackageLoader("schedlab", "templates"), autoescape=select_autoescape(["html"]))
    page = env.get_template("reproduction.html.j2").render(rows=rows, quick=quick, escape=html.escape)
    path = out_dir / "reproduction.html"
    tmp = path.with_suffix(".html.partial")
    tmp.write_text(page)
    tmp.replace(path)
    return path


def _one_line(outcome: Outcome) -> str:
    """Why a result has its verdict, in one line: the first claim that is not a match."""
    if outcome.error:
        return f"error: {outcome.error}"
    if outcome.skipped:
        return f"skipped: {outcome.skipped}"
    for claim in outcome.claims:
        if claim["verdict"] != "match":
            text = f"{claim['id']}: {claim['why']}"
            if claim.get("explanation"):
                text += f" ({claim['explanation'].split('. ')[0].rstrip('.')})"
            return text.replace("|", "/")
    return f"all {len(outcome.claims)} claims match"


def write_markdown(outcomes: list[Outcome], out_dir: Path, quick: bool) -> Path:
    """``DIR/reproduction.md``: one table row per result (paper, result, verdict, claims by
    verdict, one line why), the source of ``docs/reproduction.md``."""
    lines = [
        "| paper | result | verdict | claims (match/trend/mismatch/not expressible) | why |",
        "|---|---|---|---|---|",
    ]
    for o in outcomes:
        counts = "/".join(str(sum(1 for c in o.claims if c["verdict"] == v)) for v in VERDICTS)
        lines.append(f"| {o.result.paper} | {o.result.id} | {_summary_verdict(o)} | {counts} | {_one_line(o)} |")
    header = "Quick run (--quick): shortened runs.\n\n" if quick else ""
    path = out_dir / "reproduction.md"
    path.write_text(header + "\n".join(lines) + "\n")
    return path
