"""Scenarios: load them from TOML, build or change them in code, expand their sweeps.

A scenario is the TOML document ``schedlab run`` takes (``[run]``, ``[[link]]``,
``[[source]]``, one of which may declare many flows with ``count``
or a CSV ``file``; see ``docs/results.md``) plus two tables that only the Python front reads:

``[sweep]``
    ``grid = { "key.path" = [v1, v2, ...], ... }`` varies every key independently (Cartesian
    product); ``zip = { "key.path" = [...], ... }`` varies keys together (all lists of equal
    length); both may be combined. ``x`` names the key plotted on the x axis and ``series``
    the key that separates curves (defaults: the first zip key, else the first grid key; the
    first grid key other than ``x``).
``[report]``
    ``title`` and ``[[report.theory]]`` overlays (see :mod:`schedlab.theory`).

Key paths use dots and indices: ``source[1].arrivals.rate_pps``, ``link[0].scheduler.kind``.
Every expanded point is validated by the Rust scenario validator (one validator, not two).
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
import tomllib

FRONT_TABLES = ("sweep", "report")
_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


class ScenarioError(ValueError):
    """A scenario the Python front cannot use; the message names the key path and value."""


def _parse_path(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for segment in path.split("."):
        match = _SEGMENT.match(segment.strip())
        if not match:
            raise ScenarioError(f"{path}: {segment!r} is not a key path segment such as name or name[2]")
        steps.append(match.group(1))
        steps.extend(int(i) for i in re.findall(r"\[(\d+)\]", match.group(2)))
    return steps


def get_path(data: dict, path: str) -> Any:
    """The value at ``path`` in ``data`` (``KeyError`` naming the path if absent)."""
    node: Any = data
    for step in _parse_path(path):
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            raise KeyError(path) from None
    return node


def set_path(data: dict, path: str, value: Any) -> None:
    """Set ``path`` in ``data`` to ``value``, creating tables on the way; an index must exist."""
    steps = _parse_path(path)
    node: Any = data
    for step, following in zip(steps[:-1], steps[1:], strict=True):
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                raise ScenarioError(f"{path}: index [{step}] does not exist")
            node = node[step]
        else:
            if not isinstance(node, dict):
                raise ScenarioError(f"{path}: {step!r} is inside a value that is not a table")
            if step not in node:
                if isinstance(following, int):
                    raise ScenarioError(f"{path}: there is no array {step!r}")
                node[step] = {}
            node = node[step]
    last = steps[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise ScenarioError(f"{path}: index [{last}] does not exist")
        node[last] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ScenarioError(f"{path}: cannot set a key inside a value that is not a table")


def _expect_table(function: str, argument: str, value: Any, example: str) -> None:
    if not isinstance(value, dict):
        raise ScenarioError(f"{function}({argument}={value!r}): must be a table (a dict), e.g. {example}")


@dataclass
class SweepPoint:
    """One point of a sweep: its index, the values of the swept keys, and the scenario."""

    index: int
    values: dict[str, Any]
    scenario: Scenario


@dataclass
class Sweep:
    """The ``[sweep]`` table: grid and zip parameters, the x key and the series key."""

    grid: dict[str, list] = field(default_factory=dict)
    zip: dict[str, list] = field(default_factory=dict)
    x: str | None = None
    series: str | None = None

    @classmethod
    def from_table(cls, table: dict) -> Sweep:
        unknown = set(table) - {"grid", "zip", "x", "series"}
        if unknown:
            key = sorted(unknown)[0]
            raise ScenarioError(f"sweep.{key} = {table[key]!r}: unknown key; accepted keys: grid, zip, x, series")
        sweep = cls(grid=dict(table.get("grid", {})), zip=dict(table.get("zip", {})))
        for kind in ("grid", "zip"):
            for key, values in getattr(sweep, kind).items():
                if not isinstance(values, list) or not values:
                    raise ScenarioError(f'sweep.{kind}."{key}" = {values!r}: must be a non-empty list of values')
                _parse_path(key)
        lengths = {len(v) for v in sweep.zip.values()}
        if len(lengths) > 1:
            raise ScenarioError(
                f"sweep.zip = {sweep.zip!r}: every zipped list must have the same length (got {sorted(lengths)})"
            )
        if not sweep.grid and not sweep.zip:
            raise ScenarioError("sweep = {}: give at least one key under sweep.grid or sweep.zip")
        keys = list(sweep.zip) + list(sweep.grid)
        for name in ("x", "series"):
            value = table.get(name)
            if value is not None and value not in keys:
                raise ScenarioError(f"sweep.{name} = {value!r}: must be one of the swept keys {keys}")
        sweep.x = table.get("x") or keys[0]
        others = [k for k in sweep.grid if k != sweep.x]
        sweep.series = table.get("series") or (others[0] if others else None)
        return sweep

    def combinations(self) -> list[dict[str, Any]]:
        """Every point's values: the grid's Cartesian product times the zipped rows."""
        zip_rows = [dict(zip(self.zip, row, strict=True)) for row in zip(*self.zip.values(), strict=True)] or [{}]
        grid_rows = [dict(zip(self.grid, row, strict=True)) for row in itertools.product(*self.grid.values())] or [{}]
        return [{**g, **z} for g in grid_rows for z in zip_rows]


class Scenario:
    """A simulation scenario (the TOML document of ``schedlab run``)."""

    def __init__(self, data: dict | None = None, base_dir: str | Path | None = None, name: str = "scenario"):
        self.data: dict = copy.deepcopy(data) if data else {}
        self.base_dir = Path(base_dir) if base_dir else Path.cwd()
        self.name = name
        # The text and file the scenario was read from, while it is unchanged, so that the
        # Rust validator can name the file and the line of a bad key.
        self._source: tuple[str, str, dict] | None = None

    # -- loading and saving --------------------------------------------------------------
    @classmethod
    def from_toml(cls, path: str | Path) -> Scenario:
        """Load a scenario file; relative paths inside it are relative to its folder."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise ScenarioError(f"{path}: cannot be read: {e.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            raise ScenarioError(
                f"{path}:{line}: byte {raw[e.start]:#04x} at offset {e.start} is not UTF-8 (save the file as UTF-8)"
            ) from None
        return cls.from_text(text, base_dir=path.parent, name=path.stem, file=str(path))

    @classmethod
    def from_text(
        cls, text: str, base_dir: str | Path | None = None, name: str = "scenario", file: str = "<text>"
    ) -> Scenario:
        """Parse a scenario from TOML text."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{file}: {e}") from None
        scenario = cls(data, base_dir=base_dir, name=name)
        scenario._source = (text, file, copy.deepcopy(data))
        return scenario

    def rust_source(self) -> tuple[str, str | None]:
        """The TOML text to hand to the Rust validator and the file to name in its errors: the
        original text while the scenario is unchanged, else the regenerated text (errors then
        name the key path and value only)."""
        if self._source is not None and self._source[2] == self.data:
            return self._source[0], None if self._source[1] == "<text>" else self._source[1]
        return tomli_w.dumps(self.data), None

    def to_toml(self, include_front: bool = True) -> str:
        """The scenario as TOML (without ``[sweep]``/``[report]`` if ``include_front`` is false)."""
        data = self.data if include_front else self.simulation_data()
        return tomli_w.dumps(data)

    def save(self, path: str | Path) -> Path:
        """Write the scenario as TOML to ``path``."""
        path = Path(path)
        path.write_text(self.to_toml())
        return path

    def simulation_data(self) -> dict:
        """The scenario without the tables only the Python front reads."""
        return {k: v for k, v in self.data.items() if k not in FRONT_TABLES}

    # -- building in code ----------------------------------------------------------------
    @classmethod
    def new(cls, name: str = "scenario", **run: Any) -> Scenario:
        """An empty scenario named ``name`` (its top-level ``name`` key, which titles its report)
        with ``[run]`` keys, e.g. ``Scenario.new(duration="10s", seed=1)``;
        a key ``[run]`` does not accept is a :class:`ScenarioError` naming it and the accepted ones."""
        from schedlab import _core

        accepted = _core.run_keys()
        unknown = [key for key in run if key not in accepted]
        if unknown:
            raise ScenarioError(
                f"Scenario.new({unknown[0]}={run[unknown[0]]!r}): unknown [run] key;"
                f" accepted: name, {', '.join(accepted)}"
            )
        return cls({"name": name, "run": dict(run)}, name=name)

    def add_link(self, name: str, rate: str | int, scheduler: dict | str, **keys: Any) -> Scenario:
        """Append a ``[[link]]``; returns the scenario for chaining. ``scheduler`` is a table
        such as ``{"kind": "drr", "quantum": 1500}``, or just the kind (``"drr"``)."""
        if isinstance(scheduler, str):
            scheduler = {"kind": scheduler}
        _expect_table("add_link", "scheduler", scheduler, '{"kind": "drr", "quantum": 1500}')
        self.data.setdefault("link", []).append({"name": name, "rate": rate, "scheduler": dict(scheduler), **keys})
        return self

    def add_source(self, flow: int, path: list[str], arrivals: dict, size: dict | None = None, **keys: Any):
        """Append a ``[[source]]``; returns the scenario for chaining. ``path`` is the list of
        link names the flow crosses, in order."""
        if isinstance(path, (str, bytes)) or not isinstance(path, (list, tuple)):
            raise ScenarioError(
                f"add_source(path={path!r}): must be a list of link names, e.g. [{str(path)!r}] or ['access', 'core']"
            )
        _expect_table("add_source", "arrivals", arrivals, '{"model": "poisson", "rate_pps": 50}')
        if size is not None:
            _expect_table("add_source", "size", size, '{"dist": "constant", "size": 1000}')
        source = {"flow": flow, "path": list(path), "arrivals": dict(arrivals), **keys}
        if size is not None:
            source["size"] = dict(size)
        self.data.setdefault("source", []).append(source)
        return self

    def set(self, path: str, value: Any) -> Scenario:
        """A copy with ``path`` set to ``value``."""
        other = self.copy()
        set_path(other.data, path, value)
        return other

    def get(self, path: str, default: Any = None) -> Any:
        """The value at ``path``, or ``default``."""
        try:
            return get_path(self.data, path)
        except KeyError:
            return default

    def copy(self) -> Scenario:
        """A deep copy (it keeps the source text while its data is unchanged)."""
        other = Scenario(self.data, base_dir=self.base_dir, name=self.name)
        other._source = self._source
        return other

    # -- sweeps --------------------------------------------------------------------------
    @property
    def sweep(self) -> Sweep | None:
        """The ``[sweep]`` table, if any."""
        table = self.data.get("sweep")
        return Sweep.from_table(table) if table is not None else None

    def points(self) -> list[SweepPoint]:
        """Every point of the sweep (a single point with no values if there is no sweep)."""
        sweep = self.sweep
        if sweep is None:
            return [SweepPoint(0, {}, self.copy())]
        points = []
        for index, values in enumerate(sweep.combinations()):
            scenario = Scenario(self.data, base_dir=self.base_dir, name=f"{self.name} point {index}")
            for key, value in values.items():
                try:
                    set_path(scenario.data, key, value)
                except ScenarioError as e:
                    raise ScenarioError(f"sweep: {e}") from None
            points.append(SweepPoint(index, values, scenario))
        return points

    @property
    def replications(self) -> int:
        """``run.replications`` (1 when absent)."""
        return int(self.data.get("run", {}).get("replications", 1))

    def __repr__(self) -> str:
        links = [link.get("name") for link in self.data.get("link", [])]
        return f"Scenario({self.name!r}, links={links}, sources={len(self.data.get('source', []))})"
