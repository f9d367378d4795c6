"""The ``schedlab`` command line.

Exit status: 0 success, 2 bad input (the message names the file, line, key and value),
1 internal error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import schedlab

app = typer.Typer(
    name="schedlab",
    help="A laboratory for packet scheduling: replay traces, simulate scenarios, compare disciplines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()


def _fail_input(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _print_flows(title: str, flows: list[dict]) -> None:
    table = Table(title=title)
    for column in ("flow", "sent", "dropped", "bytes", "throughput", "mean delay", "p99 delay", "max delay"):
        table.add_column(column, justify="right")
    for f in flows:
        table.add_row(
            str(f["flow"]),
            str(f["sent"]),
            str(f["dropped"]),
            str(f["bytes"]),
            f"{f['throughput_bps'] / 1e3:.1f} kbit/s",
            f"{f['delay_mean_s'] * 1e3:.3f} ms",
            f"{f['delay_p99_s'] * 1e3:.3f} ms",
            f"{f['delay_max_s'] * 1e3:.3f} ms",
        )
    out.print(table)


@app.command()
def replay(
    config: Path = typer.Option(
        ..., "--config", "-c", help="TOML: [link] rate, [scheduler] kind and parameters, flows."
    ),
    trace: Path = typer.Option(
        ..., "--trace", "-t", help="CSV with header time_s,flow,size_bytes[,class,deadline_s]."
    ),
    out_path: Path = typer.Option(
        ..., "--out", "-o", help="Departure CSV to write (one row per input packet)."
    ),
    summary: bool = typer.Option(
        False, "--summary", help="Print per-flow packets, bytes, throughput and delays."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
) -> None:
    """Replay a packet trace through one scheduler on one link.

    Example: schedlab replay --config experiments/replay/drr.toml --trace trace.csv --out dep.csv --summary
    """
    try:
        result = schedlab.replay(str(config), str(trace), str(out_path))
    except schedlab.InputError as e:
        _fail_input(str(e))
        return
    if as_json:
        print(json.dumps(result, indent=2))
    elif summary:
        _print_flows(f"{result['discipline']}: {result['packets']} packets", result["flows"])
        if result["discipline_counters"]:
            out.print(result["discipline_counters"])
    else:
        err.print(f"wrote {out_path} ({result['packets']} packets)")


@app.command(name="list")
def list_disciplines(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the scheduling disciplines with their parameters and units."""
    infos = schedlab.disciplines()
    if as_json:
        print(json.dumps({"disciplines": infos}, indent=2))
        return
    for info in infos:
        out.print(
            f"[bold]{info['id']}[/] — {escape(info['name'])}; {escape(info['citation'])}", highlight=False
        )
        out.print(f"  {escape(info['summary'])}", highlight=False)
        for scope in ("scheduler_params", "flow_params"):
            for p in info[scope]:
                where = "scheduler" if scope == "scheduler_params" else "flow"
                out.print(
                    escape(
                        f"  {where}.{p['name']} [{p['unit']}], default {p['default']}: {p['description']}"
                    ),
                    highlight=False,
                )


def main() -> None:
    """Entry point of the ``schedlab`` command."""
    try:
        app()
    except SystemExit:
        raise
    except Exception as e:  # an internal error: not the user's input
        err.print(f"[bold red]internal error:[/] {type(e).__name__}: {e}", highlight=False)
        sys.exit(1)


if __name__ == "__main__":
    main()
