"""``schedlab report DIR``: figures (PNG and SVG) and a self-contained ``report.html`` for the
output folder of ``schedlab run`` (``summary.json``) or ``schedlab sweep`` (``sweep.json``).

Figures of a sweep: mean delay versus the swept parameter with 95% CI error bars per series
and flow, with the scenario's theory overlays; p99 delay; throughput; Jain's fairness index.
Figures of a run (and of the representative runs a sweep keeps): throughput over time, delay
CDF, per-flow mean delay with CI, per-flow throughput with Jain's index; with more than
:data:`MANY_FLOWS` flows, distributions across flows instead (see ``docs/sweeps.md``).
Figures are embedded as inline SVG (legible at page width, measurable in a browser) and the
same results give the same bytes.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# Byte-reproducible SVGs: the ids matplotlib draws at random come from this salt instead.
matplotlib.rcParams["svg.hashsalt"] = "schedlab"
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from jinja2 import Environment, PackageLoader, select_autoescape  # noqa: E402

from schedlab import theory  # noqa: E402
from schedlab.scenario import Scenario  # noqa: E402
from schedlab.stats import jain_index  # noqa: E402


@dataclass
class Figure:
    """A figure written as PNG and SVG."""

    name: str
    title: str
    png: Path
    svg: Path

    def inline_svg(self) -> str:
        """The SVG markup to place in the page (without its XML prologue): it scales to the
        page's width and its tick labels can be measured in the browser."""
        text = self.svg.read_text()
        return text[text.index("<svg") :]


#: Above this many flows, run figures show distributions across flows (CDFs, top flows, a
#: median with a 10-90 % band) instead of one line or bar per flow.
MANY_FLOWS = 12
#: The number of flows the "top flows" bars show.
TOP_FLOWS = 10


def save_figure(fig, out: Path, name: str, title: str) -> Figure:
    """Write a matplotlib figure as ``out/name.png`` and ``.svg`` and close it; both files are
    the same bytes for the same data (no date in their metadata, no random ids)."""
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / f"{name}.png", out / f"{name}.svg"
    fig.tight_layout()
    fig.savefig(png, dpi=120, metadata={"Software": None})
    fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
    return Figure(name, title, png, svg)


def _flow_label(flow, name=None) -> str:
    """``flow 3``, or the source's name (``flow 3 (LC)``) when the scenario gives one."""
    if name is not None and pd.notna(name) and str(name):
        return f"flow {flow} ({name})"
    return f"flow {flow}"


def _flow_name(rows: pd.DataFrame, flow) -> str:
    """``flow 0 (LC)`` when the scenario names the flow's source."""
    names = rows["name"].dropna() if "name" in rows.columns else []
    return _flow_label(flow, names.iloc[0] if len(names) else None)


def _series_values(table: pd.DataFrame, series: str | None):
    return [None] if not series or series not in table.columns else list(dict.fromkeys(table[series]))


def sweep_figures(out_dir: Path, meta: dict, table: pd.DataFrame) -> list[Figure]:
    """Figures of a sweep (see the module docs)."""
    x, series = meta.get("x"), meta.get("series")
    figures_dir = out_dir / "figures"
    figures: list[Figure] = []
    if table.empty or x not in table.columns:
        return figures
    scenario = Scenario.from_text(meta["scenario"])
    points = {p["point"]: p for p in meta["points"]}
    x_label = scenario.data.get("report", {}).get("x_label", x)

    def by_series_and_flow(metric: str, ylabel: str, name: str, title: str, scale: float, with_theory: bool):
        series_values = _series_values(table, series)
        fig, axes = plt.subplots(
            1, len(series_values), figsize=(max(9, 5.5 * len(series_values)), 4.5), sharey=True, squeeze=False
        )
        for ax, s in zip(axes[0], series_values, strict=True):
            frame = table if s is None else table[table[series] == s]
            if frame["flow"].nunique() > MANY_FLOWS:
                # Distributions across flows instead of one line per flow.
                by_x = frame.groupby(x)[metric]
                low, median, high = (by_x.quantile(q) * scale for q in (0.1, 0.5, 0.9))
                ax.fill_between(low.index, low.values, high.values, alpha=0.3, label="10-90 % of flows")
                ax.plot(median.index, median.values, marker="o", markersize=4, label="median flow")
            else:
                for flow, rows in frame.groupby("flow"):
                    rows = rows.sort_values(x)
                    err = rows.get(f"{metric}_ci95")
                    ax.errorbar(
                        rows[x],
                        rows[metric] * scale,
                        yerr=None if err is None else err.fillna(0) * scale,
                        marker="o",
                        markersize=4,
                        capsize=3,
                        label=_flow_name(rows, flow),
                    )
            if with_theory:
                _theory_curves(ax, scenario, points, x, series, s, scale)
            ax.set_xlabel(x_label)
            ax.set_title(title if s is None else f"{title}: {s}")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        axes[0][0].set_ylabel(ylabel)
        return save_figure(fig, figures_dir, name, title)

    if "delay_mean_s" in table.columns:
        figures.append(
            by_series_and_flow("delay_mean_s", "mean delay (ms)", "delay_vs_x", "Mean delay, 95% CI", 1e3, True)
        )
    if "delay_p99_s" in table.columns:
        figures.append(
            by_series_and_flow("delay_p99_s", "p99 delay (ms)", "p99_vs_x", "99th percentile delay", 1e3, False)
        )
    if "throughput_bps" in table.columns:
        figures.append(
            by_series_and_flow("throughput_bps", "throughput (kbit/s)", "throughput_vs_x", "Throughput", 1e-3, False)
        )
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for s in _series_values(table, series):
            frame = table if s is None else table[table[series] == s]
            jain = frame.groupby(x)["throughput_bps"].apply(lambda v: jain_index(v.tolist()))
            ax.plot(jain.index, jain.values, marker="s", label=str(s) if s is not None else "all flows")
        ax.set_xlabel(x_label)
        ax.set_ylabel("Jain's fairness index")
        ax.set_ylim(0, 1.05)
        ax.set_title("Fairness of throughput across flows")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        figures.append(save_figure(fig, figures_dir, "fairness_vs_x", "Jain's fairness index"))
    return figures


def _theory_curves(
    ax, scenario: Scenario, points: dict, x: str, series: str | None, s, scale: float, flow=None
) -> None:
    """Draw the scenario's ``[[report.theory]]`` curves of series ``s`` at the sweep's points
    (with ``flow``: only those for that flow or for none in particular)."""
    styles = ["--", ":", "-.", (0, (5, 1))]
    for index, overlay in enumerate(scenario.data.get("report", {}).get("theory", [])):
        if s is not None and overlay.get("series") is not None and overlay["series"] != s:
            continue
        if flow is not None and overlay.get("flow") is not None and overlay["flow"] != flow:
            continue
        pairs = []
        for p in points.values():
            if s is not None and p.get(series) != s:
                continue
            point_scenario = scenario.copy()
            for key, value in p.items():
                if key != "point":
                    point_scenario = point_scenario.set(key, value)
            value = theory.evaluate(overlay, point_scenario.data, index)
            if not math.isnan(value):
                pairs.append((p.get(x), value * scale))
        pairs.sort()
        if pairs:
            ax.plot(
                [a for a, _ in pairs],
                [b for _, b in pairs],
                linestyle=styles[index % len(styles)],
                color="black",
                label=overlay.get("label", overlay["model"]),
            )


def comparison(measured: pd.DataFrame, simulated: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Simulation and measurement of a measured sweep side by side: one row per point and flow
    with the mean delay (s) and its 95% CI half-width from each, and measured − simulated."""
    metrics = ["delay_mean_s", "delay_mean_s_ci95", "delay_p99_s", "throughput_bps", "lost"]
    columns = [*keys, "flow", *(c for c in ("name",) if c in measured.columns)]
    left = measured[[c for c in columns + metrics if c in measured.columns]]
    right = simulated[[c for c in [*keys, "flow"] + metrics if c in simulated.columns]]
    both = left.merge(right, on=[*keys, "flow"], how="outer", suffixes=("_measured", "_simulated"))
    both["delay_mean_s_difference"] = both["delay_mean_s_measured"] - both["delay_mean_s_simulated"]
    return both


#: Most flows the simulation-against-measurement figure draws (one row of panels each).
COMPARED_FLOWS = 6


def comparison_figure(out_dir: Path, meta: dict, measured: pd.DataFrame, simulated: pd.DataFrame) -> Figure | None:
    """Mean delay per x from the simulation (dashed, squares) and from the measurement (solid,
    circles), with 95% CIs: one row of panels per flow, one column per series, each panel on
    its own scale (so that a low-delay flow such as the thesis's LC flow stays legible); the
    scenario's theory curves of that series and flow. With more than
    :data:`COMPARED_FLOWS` flows, the first ones are drawn (the table has every flow)."""
    x, series = meta.get("x"), meta.get("series")
    if measured.empty or simulated.empty or x not in measured.columns or "delay_mean_s" not in measured.columns:
        return None
    scenario = Scenario.from_text(meta["scenario"])
    points = {p["point"]: p for p in meta["points"]}
    series_values = _series_values(measured, series)
    flows = list(dict.fromkeys(measured["flow"]))[:COMPARED_FLOWS]
    fig, axes = plt.subplots(
        len(flows),
        len(series_values),
        figsize=(max(9, 5.5 * len(series_values)), 3.2 * len(flows)),
        squeeze=False,
    )
    title = "Mean delay: simulation and measurement"
    for row, flow in enumerate(flows):
        for ax, s in zip(axes[row], series_values, strict=True):
            for method, table, style, marker, colour in (
                ("simulation", simulated, "--", "s", "tab:blue"),
                ("measurement", measured, "-", "o", "tab:red"),
            ):
                frame = table[table["flow"] == flow]
                if s is not None and series in frame.columns:
                    frame = frame[frame[series] == s]
                frame = frame.sort_values(x)
                err = frame.get("delay_mean_s_ci95")
                ax.errorbar(
                    frame[x],
                    frame["delay_mean_s"] * 1e3,
                    yerr=None if err is None else err.fillna(0) * 1e3,
                    linestyle=style,
                    marker=marker,
                    markersize=4,
                    capsize=3,
                    color=colour,
                    label=method,
                )
            _theory_curves(ax, scenario, points, x, series, s, 1e3, flow=flow)
            name = _flow_name(measured[measured["flow"] == flow], flow)
            ax.set_title(name if s is None else f"{name}: {s}", fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        axes[row][0].set_ylabel("mean delay (ms)")
    for ax in axes[-1]:
        ax.set_xlabel(scenario.data.get("report", {}).get("x_label", x))
    fig.suptitle(title)
    return save_figure(fig, out_dir / "figures", "simulation_vs_measurement", title)


def _complete_bins(ts: pd.DataFrame, summary: dict) -> pd.DataFrame:
    """The time bins that end within their replication's measurement window: the last bin of
    a run whose length is not a multiple of the bin is partial, and its throughput (bytes
    over the whole bin width) would be drawn as a drop that did not happen."""
    if "bin_end_s" not in ts.columns:
        return ts
    ends = {w["replication"]: w["end_s"] for w in summary.get("run", {}).get("windows", [])}
    if not ends or "replication" not in ts.columns:
        return ts
    window_end = ts["replication"].map(ends)
    complete = ts[ts["bin_end_s"] <= window_end + 1e-9]
    return complete if not complete.empty else ts


def _cdf(ax, values, label: str, scale: float = 1.0) -> None:
    """A step CDF of ``values`` (one per flow) on ``ax``."""
    ordered = sorted(v * scale for v in values if pd.notna(v))
    if ordered:
        ax.step(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], where="post", label=label)


def _names(flows: pd.DataFrame) -> list[str]:
    names = flows["name"] if "name" in flows.columns else [None] * len(flows)
    return [_flow_label(f, n) for f, n in zip(flows["flow"], names, strict=True)]


def run_figures(
    out_dir: Path,
    summary: dict,
    flows: pd.DataFrame,
    prefix: str = "",
    title_suffix: str = "",
    figures_dir: Path | None = None,
) -> list[Figure]:
    """Figures of one run (see the module docs), into ``figures_dir`` (default ``out_dir/figures``),
    from its ``summary.json`` head and per-flow table (see :func:`load_run`).
    With more than :data:`MANY_FLOWS` flows they show distributions across flows."""
    figures_dir = figures_dir or out_dir / "figures"
    figures: list[Figure] = []
    many = len(flows) > MANY_FLOWS
    timeseries = out_dir / "timeseries.csv"
    if timeseries.exists():
        ts = pd.read_csv(timeseries)
        if {"time_s", "flow", "throughput_bps"} <= set(ts.columns) and not ts.empty:
            if "replication" in ts.columns:
                ts = ts[ts["replication"] == ts["replication"].min()]
            ts = _complete_bins(ts, summary)
            fig, ax = plt.subplots(figsize=(9, 4.5))
            if many or ts["flow"].nunique() > MANY_FLOWS:
                by_time = ts.groupby("time_s")["throughput_bps"]
                low, median, high = (by_time.quantile(q) / 1e3 for q in (0.1, 0.5, 0.9))
                ax.fill_between(low.index, low.values, high.values, alpha=0.3, step="post", label="10-90 % of flows")
                ax.step(median.index, median.values, where="post", label="median flow")
                title = f"Per-flow throughput over time ({ts['flow'].nunique()} flows){title_suffix}"
            else:
                for flow, rows in ts.groupby("flow"):
                    ax.plot(rows["time_s"], rows["throughput_bps"] / 1e3, label=_flow_name(rows, flow))
                title = f"Throughput over time{title_suffix}"
            ax.set_xlabel("time (s)")
            ax.set_ylabel("throughput (kbit/s)")
            ax.set_title(title)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            figures.append(save_figure(fig, figures_dir, f"{prefix}throughput_time", title))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    drawn = False
    cdf_path = out_dir / "delay_cdf.csv"
    if many:
        if "delay_mean_s" in flows.columns:
            _cdf(ax, flows["delay_mean_s"], "mean delay of a flow", 1e3)
            drawn = True
        if "delay_p99_s" in flows.columns:
            _cdf(ax, flows["delay_p99_s"], "99th percentile delay of a flow", 1e3)
            drawn = True
        title = f"Delay across {len(flows)} flows (CDF){title_suffix}"
        ax.set_ylabel("fraction of flows")
    else:
        title = f"Delay CDF{title_suffix}"
        ax.set_ylabel("fraction of packets")
        if cdf_path.exists():
            cdf = pd.read_csv(cdf_path)
            if {"flow", "delay_s", "cdf"} <= set(cdf.columns) and not cdf.empty:
                for flow, rows in cdf.groupby("flow"):
                    ax.step(rows["delay_s"] * 1e3, rows["cdf"], where="post", label=_flow_name(rows, flow))
                    drawn = True
    if drawn:
        ax.set_xlabel("delay (ms)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        figures.append(save_figure(fig, figures_dir, f"{prefix}delay_cdf", title))
    else:
        plt.close(fig)
    if not flows.empty and "delay_mean_s" in flows.columns:
        jain = (
            f" (Jain {jain_index(flows['throughput_bps'].tolist()):.3f})" if "throughput_bps" in flows.columns else ""
        )
        err = flows.get("delay_mean_ci95_s")
        if many:
            fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
            top = flows.assign(_err=0 if err is None else err.fillna(0)).nlargest(TOP_FLOWS, "delay_mean_s")[::-1]
            left.barh(_names(top), top["delay_mean_s"] * 1e3, xerr=top["_err"] * 1e3, capsize=3)
            left.set_xlabel("mean delay (ms), 95% CI")
            left.set_title(f"The {len(top)} flows with the largest mean delay")
            if "throughput_bps" in flows.columns:
                _cdf(right, flows["throughput_bps"], "throughput of a flow", 1e-3)
            right.set_xlabel("throughput (kbit/s)")
            right.set_ylabel("fraction of flows")
            right.set_title(f"Throughput across {len(flows)} flows{jain}")
            right.grid(True, alpha=0.3)
        else:
            fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
            labels = _names(flows)
            left.bar(labels, flows["delay_mean_s"] * 1e3, yerr=None if err is None else err.fillna(0) * 1e3, capsize=3)
            left.set_ylabel("mean delay (ms)")
            left.set_title("Mean delay, 95% CI")
            if "throughput_bps" in flows.columns:
                right.bar(labels, flows["throughput_bps"] / 1e3)
            right.set_title(f"Throughput{jain}")
            right.set_ylabel("throughput (kbit/s)")
            for ax in (left, right):
                ax.tick_params(axis="x", labelrotation=30 if len(flows) > 4 else 0, labelsize=8)
                for label in ax.get_xticklabels():
                    label.set_horizontalalignment("right" if len(flows) > 4 else "center")
        figures.append(
            save_figure(fig, figures_dir, f"{prefix}per_flow", f"Per-flow delay and throughput{title_suffix}")
        )
    return figures


#: Per-flow columns shown in the report's tables (all columns are in the CSV files).
MAIN_COLUMNS = (
    "flow",
    "name",
    "replications",
    "received",
    "dropped",
    "throughput_bps",
    "delay_mean_s",
    "delay_mean_s_ci95",
    "delay_mean_ci95_s",
    "delay_p99_s",
    "delay_max_s",
    "jitter_mean_s",
)


#: The per-flow keys of ``summary.json`` the report reads: its figures' and its tables' (a
#: million-flow summary is gigabytes; these columns are tens of MB).
REPORT_FLOW_COLUMNS = [*MAIN_COLUMNS, "delay_p50_s"]

#: With more flows than this, the per-flow table shows the flows with the largest mean delay.
TABLE_FLOWS = 50


def load_run(out_dir: Path) -> tuple[dict, pd.DataFrame]:
    """A run folder's ``summary.json`` without its flows array, and the columns of
    :data:`REPORT_FLOW_COLUMNS` per flow, read a row at a time."""
    from schedlab.api import load_summary

    return load_summary(out_dir, REPORT_FLOW_COLUMNS)


def flow_table_section(flows: pd.DataFrame) -> tuple[str, str]:
    """The per-flow table: every flow, or with more than :data:`TABLE_FLOWS` the
    :data:`TABLE_FLOWS` with the largest mean delay (the rest are in the figures' distributions
    and in the files)."""
    if len(flows) <= TABLE_FLOWS:
        return "Per-flow results (every metric in summary.json and flows.csv)", _table_html(flows)
    delay = pd.to_numeric(flows["delay_mean_s"], errors="coerce").fillna(-1.0)
    top = flows.loc[delay.nlargest(TABLE_FLOWS).index]
    title = (
        f"The {TABLE_FLOWS} flows with the largest mean delay, of {len(flows):,}"
        " (every flow and metric in summary.json and flows.csv)"
    )
    return title, _table_html(top)


def _table_html(frame: pd.DataFrame, leading: list[str] | None = None, max_rows: int = 500) -> str:
    """A compact HTML table: the leading (swept) columns, then the main per-flow metrics."""
    if frame.empty:
        return "<p>(no rows)</p>"
    columns = [c for c in (leading or []) if c in frame.columns]
    columns += [c for c in MAIN_COLUMNS if c in frame.columns and c not in columns]
    shown = frame[columns] if columns else frame
    # A missing value (a CI with one replication, a flow without packets) is shown as "–".
    body = shown.head(max_rows).to_html(
        index=False, float_format=lambda v: f"{v:.6g}", classes="data", border=0, na_rep="–"
    )
    return f'<div class="scroll">{body}</div>'


def _title(scenario: dict, name: str | None) -> tuple[str, str]:
    """The report's title (``[report] title``, else the scenario's name) and the scenario's
    ``description`` (empty if it has none); never the output folder's name, so that the same
    results give the same report wherever they are."""
    title = scenario.get("report", {}).get("title") or scenario.get("name") or name or "schedlab results"
    return str(title), str(scenario.get("description", ""))


def write_report(out_dir: str | Path) -> Path:
    """Write ``figures/`` and ``report.html`` for a run or sweep folder; returns the report path."""
    out_dir = Path(out_dir)
    sections = []
    meta_items: dict = {}
    scenario_text = ""
    if (out_dir / "sweep.json").exists():
        meta = json.loads((out_dir / "sweep.json").read_text())
        table = pd.read_csv(out_dir / "sweep.csv") if (out_dir / "sweep.csv").stat().st_size > 1 else pd.DataFrame()
        scenario_text = meta["scenario"]
        scenario_data = Scenario.from_text(scenario_text).data
        title, description = _title(scenario_data, meta.get("name"))
        figures = sweep_figures(out_dir, meta, table)
        for rep in sorted((out_dir / "representative").glob("*/summary.json")):
            summary, flows = load_run(rep.parent)
            figures += run_figures(
                rep.parent,
                summary,
                flows,
                prefix=f"{rep.parent.name}_",
                title_suffix=f" ({rep.parent.name})",
                figures_dir=out_dir / "figures",
            )
        simulation_csv = out_dir / meta.get("simulation", "simulation") / "sweep.csv"
        if meta.get("method") == "measurement" and simulation_csv.exists() and simulation_csv.stat().st_size > 1:
            simulated = pd.read_csv(simulation_csv)
            side_by_side = comparison_figure(out_dir, meta, table, simulated)
            if side_by_side is not None:
                figures.insert(0, side_by_side)
            sections.append(
                (
                    "Simulation and measurement side by side (mean delay in s, ±95% CI half-width; see docs/gateway.md"
                    " for where and why they differ)",
                    _table_html(comparison(table, simulated, meta.get("swept", [])), meta.get("swept", [])),
                )
            )
        meta_items = {k: v for k, v in meta.items() if k not in ("scenario", "points")}
        sections.append(
            (
                "Sweep results (mean over replications, ±95% CI half-width; every metric in sweep.csv)",
                _table_html(table, ["point", *meta.get("swept", [])]),
            )
        )
        if meta.get("failures"):
            sections.append(("Failed points", _table_html(pd.DataFrame(meta["failures"]))))
    elif (out_dir / "summary.json").exists():
        summary, flows = load_run(out_dir)
        scenario_field = summary.get("scenario", "")
        scenario_text = scenario_field if isinstance(scenario_field, str) else json.dumps(scenario_field, indent=2)
        scenario_data = scenario_field if isinstance(scenario_field, dict) else {}
        title, description = _title(scenario_data, summary.get("run", {}).get("name"))
        figures = run_figures(out_dir, summary, flows)
        meta_items = summary.get("metadata", summary.get("run", {}))
        sections.append(flow_table_section(flows))
    else:
        raise FileNotFoundError(f"{out_dir}: neither sweep.json nor summary.json (run `schedlab run` or `sweep` first)")
    env = Environment(loader=PackageLoader("schedlab", "templates"), autoescape=select_autoescape(["html"]))
    page = env.get_template("report.html.j2").render(
        title=title,
        description=description,
        figures=[{"title": f.title, "svg": f.inline_svg(), "name": f.name} for f in figures],
        sections=[{"title": t, "html": h} for t, h in sections],
        metadata=html.escape(json.dumps(meta_items, indent=2, default=str)),
        scenario=scenario_text,
    )
    path = out_dir / "report.html"
    path.write_text(page)
    return path
