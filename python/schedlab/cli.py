"""The ``schedlab`` command line.

Exit status: 0 success, 2 bad input (the message names the file, line, key and value),
1 internal error, 130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import json
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import schedlab
from schedlab import realnet

if TYPE_CHECKING:
    import pandas as pd

app = typer.Typer(
    name="schedlab",
    help="A laboratory for packet scheduling: replay traces, simulate scenarios, compare disciplines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
err = Console(stderr=True) if sys.stderr.isatty() else Console(stderr=True, width=160)
# Tables stay readable when the output is a file or a pipe (rich would assume 80 columns).
out = Console() if sys.stdout.isatty() else Console(width=160)


def _show_version(value: bool) -> None:
    if value:
        from schedlab import _core

        print(f"schedlab {_core.__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """A laboratory for packet scheduling: replay traces, simulate scenarios, compare disciplines."""


def _fail_input(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


@contextmanager
def _interruptible():
    """Ctrl-C (exit 130) and SIGTERM (exit 143) inside the block end the command with a
    message instead of click's "Aborted!" (exit 1)."""
    from schedlab.interrupts import exit_status

    try:
        yield
    except KeyboardInterrupt as e:
        err.print("interrupted: files written so far are marked partial (*.partial, run-info.json status)")
        raise typer.Exit(exit_status(e)) from None


#: Flows a terminal summary shows unless --all (the rest are summed in an "all flows" row).
TOP_FLOWS = 20


def _ms(seconds) -> str:
    return "" if seconds is None or seconds != seconds else f"{seconds * 1e3:.3f} ms"


def _top(flows: pd.DataFrame, show_all: bool, sent_key: str) -> tuple[list[dict], dict | None, str]:
    """The flows to print: all of them, or the TOP_FLOWS with the largest mean delay plus an
    aggregate row over every flow; and a note for the title. ``flows`` is a table (one row per
    flow) so that a million flows cost a few columns, not a million dicts."""
    import pandas as pd

    if show_all or len(flows) <= TOP_FLOWS:
        return flows.to_dict("records"), None, ""

    def column(name: str) -> pd.Series:
        return pd.to_numeric(flows[name], errors="coerce") if name in flows.columns else pd.Series(0.0, flows.index)

    delay = column("delay_mean_s")
    top = flows.loc[delay.fillna(-1.0).nlargest(TOP_FLOWS).index].to_dict("records")
    weights = column(sent_key).fillna(0)
    measured = delay.notna()
    counted = weights[measured].sum()
    maxima = column("delay_max_s").dropna()
    total = {
        "flow": "all",
        sent_key: int(weights.sum()),
        "dropped": int(column("dropped").fillna(0).sum()),
        "bytes": int(column("bytes").fillna(0).sum()),
        "throughput_bps": float(column("throughput_bps").fillna(0).sum()),
        "delay_mean_s": float((weights * delay)[measured].sum() / counted) if counted else None,
        "delay_p99_s": None,
        "delay_max_s": float(maxima.max()) if len(maxima) else None,
    }
    note = f" ({TOP_FLOWS} of {len(flows)} flows with the largest mean delay, then all flows; --all prints every flow)"
    return top, total, note


#: The per-flow keys of summary.json that the terminal summary of `run` shows.
SIM_FLOW_COLUMNS = [
    "flow",
    "name",
    "received",
    "dropped",
    "throughput_bps",
    "delay_mean_s",
    "delay_mean_ci95_s",
    "delay_p99_s",
    "delay_max_s",
]


def _print_flows(title: str, flows: list[dict], show_all: bool = False) -> None:
    import pandas as pd

    flows, total, note = _top(pd.DataFrame(flows), show_all, "sent")
    table = Table(title=escape(title + note))
    for column in ("flow", "sent", "dropped", "bytes", "throughput", "mean delay", "p99 delay", "max delay"):
        table.add_column(column, justify="right")
    for f in flows + ([total] if total else []):
        table.add_row(
            str(f["flow"]),
            str(f["sent"]),
            str(f["dropped"]),
            str(f["bytes"]),
            f"{f['throughput_bps'] / 1e3:.1f} kbit/s",
            _ms(f["delay_mean_s"]),
            _ms(f["delay_p99_s"]),
            _ms(f["delay_max_s"]),
            end_section=f is flows[-1] and total is not None,
        )
    out.print(table)


def _print_sim_flows(title: str, flows: pd.DataFrame, show_all: bool = False) -> None:
    flows, total, note = _top(flows, show_all, "received")
    table = Table(title=escape(title + note))
    columns = ("flow", "name", "received", "dropped", "throughput", "mean delay ± 95% CI", "p99 delay", "max delay")
    for column in columns:
        table.add_column(column, justify="right")
    for f in flows + ([total] if total else []):
        ci = f.get("delay_mean_ci95_s")
        ci_text = "" if ci is None or ci != ci else f" ± {ci * 1e3:.3f}"
        mean = _ms(f["delay_mean_s"])
        table.add_row(
            str(f["flow"]),
            escape(str(f.get("name") or "")),
            str(f["received"]),
            str(f["dropped"]),
            f"{f['throughput_bps'] / 1e3:.1f} kbit/s",
            mean.replace(" ms", f"{ci_text} ms") if mean else "",
            _ms(f["delay_p99_s"]),
            _ms(f["delay_max_s"]),
            end_section=f is flows[-1] and total is not None,
        )
    out.print(table)


@app.command()
def replay(
    config: Path = typer.Option(
        ..., "--config", "-c", help="TOML: [link] rate, [scheduler] kind and parameters, flows."
    ),
    trace: Path = typer.Option(
        ...,
        "--trace",
        "-t",
        help="CSV with header time_s,flow,size_bytes[,class,deadline_s], or a .pcap/.pcapng capture (flows by 5-tuple or [[gateway.rule]]).",
    ),
    out_path: Path = typer.Option(..., "--out", "-o", help="Departure CSV to write (one row per input packet)."),
    summary: bool = typer.Option(False, "--summary", help="Print per-flow packets, bytes, throughput and delays."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
    show_all: bool = typer.Option(
        False, "--all", help=f"Print every flow (default: the {TOP_FLOWS} worst and a total)."
    ),
) -> None:
    """Replay a packet trace through one scheduler on one link.

    Example: schedlab replay --config experiments/replay/drr.toml --trace experiments/replay/trace.csv
    --out dep.csv --summary
    """
    try:
        with _interruptible():
            from schedlab.sweep import progress_printer

            result = schedlab.replay(str(config), str(trace), str(out_path), progress_printer(label="replay, %"))
    except schedlab.InputError as e:
        _fail_input(str(e))
        return
    if as_json:
        print(json.dumps(result, indent=2))
    elif summary:
        _print_flows(f"{result['discipline']}: {result['packets']} packets", result["flows"], show_all)
        if result["discipline_counters"]:
            out.print(result["discipline_counters"])
    else:
        err.print(f"wrote {out_path} ({result['packets']} packets)")


def _load_scenario(path: Path):
    from schedlab.scenario import Scenario, ScenarioError

    try:
        return Scenario.from_toml(path)
    except ScenarioError as e:
        _fail_input(str(e))


@app.command()
def validate(
    scenario: Path = typer.Argument(..., help="Scenario TOML file."),
    as_json: bool = typer.Option(False, "--json", help="Print what the scenario declares as JSON."),
) -> None:
    """Check a scenario (and every point of its sweep) without running it.

    Example: schedlab validate experiments/thesis/fig5_1_5_2_exponential.toml
    """
    from schedlab.api import validate as validate_scenario
    from schedlab.scenario import ScenarioError

    s = _load_scenario(scenario)
    try:
        info = validate_scenario(s, flows=as_json)
    except (schedlab.InputError, ScenarioError) as e:
        _fail_input(f"{scenario}: {e}" if not str(e).startswith(str(scenario)) else str(e))
        return
    if as_json:
        print(json.dumps(info, indent=2))
    else:
        points = len(s.points())
        out.print(f"{scenario}: ok ({points} point{'s' if points != 1 else ''})", highlight=False)


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario TOML file."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Output folder (summary.json, flows.csv, timeseries.csv)."),
    report: bool = typer.Option(False, "--report", help="Also write report.html and figures."),
    as_json: bool = typer.Option(False, "--json", help="Print summary.json on stdout."),
    show_all: bool = typer.Option(
        False, "--all", help=f"Print every flow (default: the {TOP_FLOWS} worst and a total)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Clear --out first if it holds other results (else they are never overwritten)."
    ),
    packets: Path = typer.Option(
        None,
        "--packets",
        help="Also write one row per measured packet of replication 0 to this CSV (the replay's columns).",
    ),
    packets_flows: str = typer.Option(
        None, "--packets-flows", help="With --packets: only these flow ids, comma-separated (e.g. 0,2)."
    ),
    no_memory_check: bool = typer.Option(
        False,
        "--no-memory-check",
        help="Run even when the memory estimate exceeds the available memory (else refused, exit 2).",
    ),
) -> None:
    """Simulate a scenario (all replications) and write its results.

    --out must be empty or hold results of the same scenario (run-info.json has its
    fingerprint); --force clears it. A run whose memory estimate (schedlab validate --json,
    memory_estimate) exceeds the available memory is refused unless --no-memory-check.
    --packets FILE writes each measured packet of
    replication 0 (flow,seq,size_bytes,arrival_s,start_s,departure_s,outcome; see
    docs/results.md), replication 0 being run once more with the same random streams.

    Example: schedlab run experiments/examples/single_bottleneck.toml --out out/single --report
    """
    flows = None
    if packets_flows is not None:
        if packets is None:
            _fail_input(f"--packets-flows = {packets_flows!r}: needs --packets FILE")
        try:
            flows = [int(f) for f in packets_flows.split(",") if f.strip()]
        except ValueError:
            _fail_input(f"--packets-flows = {packets_flows!r}: must be flow ids separated by commas, e.g. 0,2")
        if not flows or any(f < 0 for f in flows):
            _fail_input(f"--packets-flows = {packets_flows!r}: must be flow ids separated by commas, e.g. 0,2")
    from schedlab.api import load_summary, run_into
    from schedlab.api import validate as validate_scenario
    from schedlab.scenario import ScenarioError

    s = _load_scenario(scenario)
    try:
        # The same checks as `validate`, [sweep] and [report] included; the list of flows only
        # when --packets-flows needs it (with 10^6 flows it is 125 MB of JSON).
        info = validate_scenario(s, flows=flows is not None)
        if not no_memory_check:
            from schedlab import memory

            estimate = info["memory_estimate"]
            memory.check(estimate["total_bytes"], str(scenario), memory.describe(estimate))
    except (schedlab.InputError, ScenarioError) as e:
        _fail_input(str(e))
        return
    if flows is not None:
        known = {flow["flow"] for flow in info["flows"]}
        for flow in flows:
            if flow not in known:
                listed = sorted(known)
                more = f" and {len(listed) - 20:,} more" if len(listed) > 20 else ""
                _fail_input(
                    f"--packets-flows = {packets_flows!r}: flow {flow} is not a flow of {scenario}"
                    f" (flows: {', '.join(str(f) for f in listed[:20])}{more})"
                )
    try:
        if s.sweep is not None:
            err.print(
                "note: the scenario has a \\[sweep]; `run` simulates its base values (use `schedlab sweep`).",
                highlight=False,
            )
        from schedlab.sweep import progress_printer

        with _interruptible():
            run_into(s, out_dir, progress=progress_printer(label="replications"), force=force)
            if packets is not None:
                from schedlab import _core

                text, file = s.rust_source()
                rows = _core.write_packets(text, str(s.base_dir), str(packets), flows, file)
                err.print(f"packets: {rows} rows of replication 0 -> {packets}", highlight=False)
    except (schedlab.InputError, ScenarioError) as e:
        _fail_input(str(e))
        return
    if report:
        from schedlab.report import write_report

        err.print(f"report: {write_report(out_dir)}")
    if as_json:
        # The file as written, a block at a time (a million flows make gigabytes of it).
        with open(out_dir / "summary.json") as written:
            shutil.copyfileobj(written, sys.stdout)
    else:
        head, flows = load_summary(out_dir, SIM_FLOW_COLUMNS)
        _print_sim_flows(f"{s.name}: {head['run'].get('replications', 1)} replication(s) -> {out_dir}", flows, show_all)


@app.command()
def sweep(
    scenario: Path = typer.Argument(..., help="Scenario TOML file with a [sweep] table."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Output folder (sweep.csv, sweep.json, points/)."),
    dask: str = typer.Option(
        None, "--dask", envvar="DASK_SCHEDULER_ADDRESS", help="Dask scheduler address, e.g. tcp://host:8786."
    ),
    workers: int = typer.Option(None, "--workers", help="Local worker processes (default: one per core)."),
    resume: bool = typer.Option(
        False, "--resume", help="Reuse the tasks finished in --out whose fingerprint matches; run the others."
    ),
    force: bool = typer.Option(False, "--force", help="Clear --out first if it holds other results."),
    ci: str = typer.Option("student_t", "--ci", help="Confidence interval: student_t or normal (1.96 sigma/sqrt n)."),
    report: bool = typer.Option(False, "--report", help="Also write report.html and figures."),
    as_json: bool = typer.Option(False, "--json", help="Print the merged table as JSON records."),
    measure: bool = typer.Option(
        False,
        "--measure",
        help="Run the points on real packets (as `schedlab measure`, one after another; root); "
        "the simulation of the same sweep goes to OUT/simulation for the side-by-side report.",
    ),
    no_memory_check: bool = typer.Option(
        False,
        "--no-memory-check",
        help="Run even when the memory estimate exceeds the available memory (else refused, exit 2).",
    ),
) -> None:
    """Run every point of a scenario's sweep table times every replication, in parallel.

    --out must be empty or hold results of the same scenario (run-info.json has its
    fingerprint); --force clears it; --resume reuses the points whose fingerprint matches.
    --measure runs the points on real packets one after another (network namespaces, root)
    and the simulation beside them, for a report with both side by side. A sweep whose local
    workers would together need more memory than is available is refused unless
    --no-memory-check.

    Example: schedlab sweep experiments/thesis/fig5_1_5_2_exponential.toml --out out/fig5_1 --report
    """
    from schedlab.scenario import ScenarioError
    from schedlab.sweep import progress_printer, run_sweep

    if ci not in ("student_t", "normal"):
        _fail_input(f"--ci = {ci!r}: use student_t or normal")
    if measure:
        from schedlab import testbed

        if not testbed.can_admin_network():
            _fail_input("schedlab sweep --measure needs root or CAP_NET_ADMIN (it creates network namespaces)")
    s = _load_scenario(scenario)
    try:
        if s.sweep is None:
            _fail_input(f"{scenario}: no [sweep] table (use `schedlab run` for a single point)")
        if resume and force:
            _fail_input("--resume and --force: choose one (--force clears the finished points)")
        with _interruptible():
            result = run_sweep(
                s,
                out_dir,
                dask=dask,
                workers=workers,
                resume=resume,
                ci=ci,
                progress=progress_printer(),
                force=force,
                measure=measure,
                memory_check=not no_memory_check,
            )
    except (schedlab.InputError, ScenarioError) as e:
        _fail_input(str(e))
        return
    for failure in result.failures:
        err.print(
            f"[red]point {failure['point']} replication {failure['replication']} failed:[/] {escape(failure['error'])}",
            highlight=False,
        )
    if report:
        from schedlab.report import write_report

        err.print(f"report: {write_report(out_dir)}")
    if as_json:
        print(result.table.to_json(orient="records", indent=2))
    else:
        err.print(
            f"{len(result.table)} rows -> {out_dir / 'sweep.csv'}"
            f" ({result.skipped} tasks resumed, {len(result.failures)} failed)"
        )
    if result.failures:
        raise typer.Exit(1)


@app.command(name="report")
def report_command(
    out_dir: Path = typer.Argument(..., help="Output folder of `schedlab run` or `schedlab sweep`."),
) -> None:
    """Write figures (PNG, SVG) and a self-contained report.html for a results folder.

    Example: schedlab report out/fig5_1
    """
    from schedlab.report import write_report

    try:
        path = write_report(out_dir)
    except FileNotFoundError as e:
        _fail_input(str(e))
        return
    out.print(str(path), highlight=False)


@app.command(name="reproduce")
def reproduce_command(
    paper: str = typer.Argument(None, help="Paper id: zhang, wang, dwcs, ewrr or vd."),
    results: list[str] = typer.Argument(
        None, help="Result ids as the paper numbers them (fig5.1, tab5.2); default all."
    ),
    out_dir: Path = typer.Option(None, "--out", "-o", help="Output folder (PAPER/RESULT/, reproduction.html)."),
    everything: bool = typer.Option(False, "--all", help="Every expressible result of every paper."),
    quick: bool = typer.Option(False, "--quick", help="Shorter runs and two replications (a smoke test)."),
    listing: bool = typer.Option(False, "--list", help="List every result of the five papers and its status."),
    as_json: bool = typer.Option(False, "--json", help="With --list: one JSON object per result."),
    dask: str = typer.Option(
        None, "--dask", envvar="DASK_SCHEDULER_ADDRESS", help="Dask scheduler address, e.g. tcp://host:8786."
    ),
    workers: int = typer.Option(None, "--workers", help="Local worker processes (default: one per core)."),
    force: bool = typer.Option(False, "--force", help="Clear run folders in --out that hold other results."),
) -> None:
    """Reproduce the papers' figures and tables: data, the figure as the paper draws it, and
    verdict.json (each claim: the paper's value and source, ours with its 95% CI, a verdict).

    Example: schedlab reproduce dwcs fig1 --out out/repro --quick
    """
    from schedlab import reproduce as rp
    from schedlab.scenario import ScenarioError

    try:
        papers = rp.registry()
        if listing:
            entries = [r.listing() for p in papers for r in p.results]
            if as_json:
                print(json.dumps(entries, indent=2))
                return
            table = Table(title="Results of the five papers (schedlab reproduce PAPER RESULT --out DIR)")
            for column in ("paper", "result", "title", "status"):
                table.add_column(column)
            for e in entries:
                table.add_row(e["paper"], e["result"], e["title"], e["status"])
            out.print(table)
            return
        chosen = rp.select(papers, paper, results or [], everything)
        if out_dir is None:
            _fail_input("--out DIR is required to run results")
            return
    except rp.ReproduceError as e:
        _fail_input(str(e))
        return
    runnable = [r for r in chosen if r.needs is None]
    err.print(f"{len(chosen)} result(s), {len(runnable)} to run -> {out_dir}" + (" (quick)" if quick else ""))

    def progress(message: str) -> None:
        err.print(f"[dim]{escape(message)}[/]", highlight=False)

    try:
        outcomes = rp.reproduce(
            chosen, out_dir, quick=quick, dask=dask, workers=workers, papers=papers, progress=progress, force=force
        )
    except (schedlab.InputError, rp.ReproduceError, ScenarioError) as e:
        _fail_input(str(e))
        return
    table = Table(title=f"Verdicts -> {out_dir / 'reproduction.html'}")
    for column in ("paper", "result", "match", "trend", "mismatch", "not expr.", "error"):
        table.add_column(column)
    failed = False
    for o in outcomes:
        counts = {v: sum(1 for c in o.claims if c["verdict"] == v) for v in rp.VERDICTS}
        failed |= o.error is not None
        table.add_row(
            o.result.paper,
            o.result.id,
            *(str(counts[v]) for v in rp.VERDICTS),
            escape(o.error or (f"skipped: {o.skipped}" if o.skipped else "")),
        )
    out.print(table)
    if failed:
        raise typer.Exit(1)


@app.command(name="list")
def list_disciplines(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the scheduling disciplines, traffic models and packet-size distributions with
    their parameters, units and defaults.

    Example: schedlab list --json
    """
    from schedlab import _core

    infos = schedlab.disciplines()
    models = _core.traffic_models()
    sizes = _core.size_distributions()
    if as_json:
        print(json.dumps({"disciplines": infos, "traffic_models": models, "size_distributions": sizes}, indent=2))
        return
    out.print(f"[bold underline]Scheduling disciplines[/] ({escape('[scheduler] kind = ...')})")
    for info in infos:
        out.print(f"[bold]{info['id']}[/] — {escape(info['name'])}; {escape(info['citation'])}", highlight=False)
        out.print(f"  {escape(info['summary'])}", highlight=False)
        for scope in ("scheduler_params", "flow_params"):
            for p in info[scope]:
                where = "scheduler" if scope == "scheduler_params" else "flow"
                out.print(
                    escape(f"  {where}.{p['name']} [{p['unit']}], default {p['default']}: {p['description']}"),
                    highlight=False,
                )
    for title, entries, key in (
        ("Traffic models", models, "arrivals = { model = ... }"),
        ("Packet-size distributions", sizes, "size = { dist = ... }"),
    ):
        out.print(f"\n[bold underline]{title}[/] ({escape(key)})")
        for entry in entries:
            out.print(f"[bold]{entry['id']}[/] — {escape(entry['summary'])}", highlight=False)
            for p in entry["params"]:
                out.print(
                    escape(f"  {p['name']} [{p['unit']}], default {p['default']}: {p['description']}"),
                    highlight=False,
                )
            if entry["example"]:
                out.print(escape(f"  e.g. {entry['example']}"), highlight=False)


realnet.register(app)


def _interrupt_behind(exit: SystemExit) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM behind an exit that typer or click made of it: a signal that came
    outside a command's :func:`_interruptible` block (while the command line is parsed, or a
    command imports what it needs) reaches them as ``KeyboardInterrupt``, which recent typer
    turns into ``Exit(130)`` (SIGTERM too) and click into ``Abort``, then "Aborted!" and exit 1."""
    handled = exit.__context__
    if handled is not None and isinstance(handled.__cause__, KeyboardInterrupt):
        return handled.__cause__
    return None


def main() -> None:
    """Entry point of the ``schedlab`` command. A Ctrl-C ends it with status 130 and SIGTERM
    with 143 wherever they land once this function runs. Before, while the interpreter starts
    and imports the command line, Python's defaults apply: the process dies of the signal
    (which a shell reports as the same status), or, in CPython's own first milliseconds,
    exits with 1 ("Fatal Python error: init_import_site")."""
    from schedlab.interrupts import INTERRUPTED, exit_now, exit_status, install

    install()
    try:
        app()
    except SystemExit as e:
        interrupt = _interrupt_behind(e)
        if interrupt is not None:
            exit_now(exit_status(interrupt))
        if e.code in INTERRUPTED:
            exit_now(e.code)  # the command has cleaned up; skip the interpreter's teardown
        raise
    except Exception as e:  # an internal error: not the user's input
        err.print(f"[bold red]internal error:[/] {type(e).__name__}: {e}", highlight=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
