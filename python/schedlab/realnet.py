"""Real packets: the ``schedlab gateway`` command.

The forwarding loop is Rust (``schedlab_gateway``), exposed through the extension module
(``schedlab._core.gateway``) and run in the process of the command: one build artifact (the
wheel's extension module) serves the CLI, the tests and the testbed scripts, which start
``python -m schedlab gateway …`` as a child process inside the gateway's network namespace.
The call releases the GIL and installs its own SIGINT/SIGTERM/SIGUSR1 handlers for its
duration (restoring Python's afterwards).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from schedlab import _core


def gateway(
    config: Path = typer.Option(
        ...,
        "--config",
        "-c",
        help="TOML as for `schedlab replay` ([link] rate, [scheduler], [[flow]]) plus an optional [gateway] table.",
    ),
    ingress: str = typer.Option(..., "--ingress", "-i", help="Interface whose traffic is scheduled."),
    egress: str = typer.Option(..., "--egress", "-e", help="Interface the emulated bottleneck transmits on."),
    stats: Path = typer.Option(None, "--stats", help="Write counters as JSON here on exit and on SIGUSR1."),
    duration: float = typer.Option(
        None, "--duration", help="Stop after this many seconds (default: at SIGINT/SIGTERM)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the final stats as JSON on stdout."),
) -> None:
    """Forward frames from INGRESS to EGRESS through a scheduler on an emulated bottleneck.

    Needs root (or CAP_NET_RAW). Frames leave unchanged (a transparent layer-2 forwarder);
    IP packets from INGRESS are classified (5-tuple or [[gateway.rule]]), scheduled and paced
    at the link rate plus [gateway] propagation_delay; non-IP frames and everything from
    EGRESS pass unscheduled. SIGINT/SIGTERM stop it (stats written); SIGUSR1 writes the stats.

    Example: schedlab gateway -c experiments/gateway/drr.toml -i gw-in -e gw-out --stats stats.json
    """
    from schedlab.cli import _fail_input, err

    if not hasattr(_core, "gateway"):
        _fail_input("schedlab gateway needs Linux (AF_PACKET)")
        return
    try:
        text = _core.gateway(str(config), ingress, egress, str(stats) if stats else None, duration)
    except _core.InputError as e:
        _fail_input(str(e))
        return
    result = json.loads(text)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        total = result["total"]
        err.print(
            f"{result['discipline']}: {total['in_packets']} in, {total['sent_packets']} sent, "
            f"{total['dropped_packets']} dropped, {total['queued_packets']} queued, "
            f"{total['malformed_packets']} malformed, {total['passed_unscheduled']} not IP",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Adds the real-packet commands to the ``schedlab`` command."""
    app.command(name="gateway")(gateway)
