"""Real packets: the ``schedlab gateway``, ``gen``, ``sink`` and ``measure`` commands.

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
        None,
        "--config",
        "-c",
        help="TOML as for `schedlab replay` ([link] rate, [scheduler], [[flow]]) plus an optional [gateway] table.",
    ),
    scenario: Path = typer.Option(
        None, "--scenario", help="Instead of --config: the bottleneck link of this scenario (as `measure` runs it)."
    ),
    port_base: int = typer.Option(20000, "--port-base", help="With --scenario: source FLOW sends from port BASE+FLOW."),
    ingress: str = typer.Option(..., "--ingress", "-i", help="Interface whose traffic is scheduled."),
    egress: str = typer.Option(..., "--egress", "-e", help="Interface the emulated bottleneck transmits on."),
    stats: Path = typer.Option(None, "--stats", help="Write counters as JSON here on exit and on SIGUSR1."),
    duration: float = typer.Option(
        None, "--duration", help="Stop after this many seconds (default: at SIGINT/SIGTERM)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the final stats as JSON on stdout."),
    pcap_out: Path = typer.Option(
        None,
        "--pcap-out",
        help="Capture every frame sent on EGRESS (pcap, ns timestamps at transmission); complete at exit.",
    ),
    busy_poll: str = typer.Option(
        None,
        "--busy-poll",
        help="Spin on the receive rings for this long (e.g. 2ms; 0us = off) after the last frame before "
        "sleeping: lower latency for a core's CPU while traffic flows (default: [gateway] busy_poll, else "
        "off; see docs/gateway.md).",
    ),
) -> None:
    """Forward frames from INGRESS to EGRESS through a scheduler on an emulated bottleneck.

    Needs root (or CAP_NET_RAW). Frames leave unchanged (a transparent layer-2 forwarder);
    IP packets from INGRESS are classified (5-tuple or [[gateway.rule]]), scheduled and paced
    at the link rate plus [gateway] propagation_delay; non-IP frames and everything from
    EGRESS pass unscheduled. SIGINT/SIGTERM stop it (stats written); SIGUSR1 writes the stats.

    Example: schedlab gateway -c experiments/gateway/drr.toml -i gw-in -e gw-out --stats stats.json
    """
    from schedlab.cli import _fail_input, err
    from schedlab.interrupts import exit_now

    if not hasattr(_core, "gateway"):
        _fail_input("schedlab gateway needs Linux (AF_PACKET)")
        return
    try:
        text = _core.gateway(
            ingress,
            egress,
            config=str(config) if config else None,
            scenario=str(scenario) if scenario else None,
            port_base=port_base,
            stats=str(stats) if stats else None,
            duration_s=duration,
            pcap_out=str(pcap_out) if pcap_out else None,
            busy_poll=busy_poll,
        )
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
    # Everything is written: exit now rather than after the interpreter's teardown (seconds
    # on a loaded machine), so that SIGINT/SIGTERM end the process within one second.
    exit_now(0)


def gen(
    scenario: Path = typer.Argument(..., help="Scenario TOML whose [[source]]s to send."),
    destination: str = typer.Option(..., "--destination", "-d", help="The sink's IP address."),
    port: int = typer.Option(9000, "--port", help="The sink's UDP port."),
    port_base: int = typer.Option(20000, "--port-base", help="Source FLOW sends from UDP port BASE+FLOW."),
    replication: int = typer.Option(0, "--replication", help="Replication (random streams as in `schedlab run`)."),
    source: list[int] = typer.Option([], "--source", help="Only this source (index; repeatable)."),
    origin: int = typer.Option(
        None, "--origin", help="CLOCK_MONOTONIC ns of the scenario's time 0 (default: in 0.2 s)."
    ),
    log: Path = typer.Option(None, "--log", help="Write every sent packet here (CSV)."),
    ready: Path = typer.Option(None, "--ready", help="Create this file once set up."),
    origin_file: Path = typer.Option(None, "--origin-file", help="Wait for this file; it holds the origin in ns."),
) -> None:
    """Send a scenario's traffic as UDP datagrams, paced by the simulator's own traffic models.

    Every datagram carries source index, sequence number and send time (ns) in its first 24
    bytes; its IP length is the model's packet size (larger than the MTU: fragmented by the
    kernel). Prints requested and achieved rate per source.

    Example: schedlab gen experiments/examples/single_bottleneck.toml -d 198.18.0.2 --log sent.csv
    """
    from schedlab.cli import _fail_input
    from schedlab.interrupts import exit_now

    try:
        text = _core.generate(
            str(scenario),
            destination,
            port=port,
            port_base=port_base,
            replication=replication,
            sources=list(source),
            origin_ns=origin,
            log=str(log) if log else None,
            ready=str(ready) if ready else None,
            origin_file=str(origin_file) if origin_file else None,
        )
    except _core.InputError as e:
        _fail_input(str(e))
        return
    print(json.dumps(json.loads(text), indent=2))
    exit_now(0)  # as the gateway: the log is written, the teardown would only cost time


def sink(
    log: Path = typer.Option(..., "--log", help="Write every received datagram here (CSV)."),
    port: int = typer.Option(9000, "--port", help="UDP port to receive on."),
    origin: int = typer.Option(None, "--origin", help="CLOCK_MONOTONIC ns of time 0, as given to gen (default: now)."),
    until: float = typer.Option(None, "--until", help="Stop this many seconds after the origin (default: SIGINT)."),
    ready: Path = typer.Option(None, "--ready", help="Create this file once listening."),
    origin_file: Path = typer.Option(None, "--origin-file", help="Wait for this file; it holds the origin in ns."),
) -> None:
    """Receive `schedlab gen` datagrams and log source, sequence, send and receive time, size.

    `schedlab measure` turns the logs into `summary.json` and the other files of `schedlab run`.
    One-way delays are exact when gen and sink share a clock (one host); across hosts the
    clocks would have to be synchronised.

    Example: schedlab sink --log received.csv --until 12
    """
    from schedlab.cli import _fail_input
    from schedlab.interrupts import exit_now

    try:
        text = _core.sink(
            str(log),
            port=port,
            origin_ns=origin,
            until_s=until,
            ready=str(ready) if ready else None,
            origin_file=str(origin_file) if origin_file else None,
        )
    except _core.InputError as e:
        _fail_input(str(e))
        return
    print(text)
    exit_now(0)  # as the gateway


def measure(
    scenario: Path = typer.Argument(None, help="Scenario TOML with one bottleneck (every path ends at one link)."),
    out_dir: Path = typer.Option(None, "--out", "-o", help="Output folder (summary.json etc. as `schedlab run`)."),
    cleanup: bool = typer.Option(
        False, "--cleanup", help="Only remove what a killed run left (schedlab-* namespaces)."
    ),
) -> None:
    """Run a scenario on real packets in network namespaces: gen -> gateway -> sink.

    Needs root (or CAP_NET_ADMIN). Creates schedlab-* namespaces joined by veth pairs (198.18.0.0/24
    inside them only), runs the sink, the gateway with the bottleneck link's scheduler, rate,
    buffer and propagation delay, and the generator, for the scenario's duration and each of
    its replications (TCP bulk sources: Linux TCP senders in the source namespace, receivers
    in the sink's); writes OUT/summary.json in the format of `schedlab run`, measure.json,
    and each replication's logs and gateway stats. Removes everything at the end, on error
    and on Ctrl-C.

    Example: schedlab measure experiments/thesis/measure_fig5_1_lambda10.toml --out out/measured
    """
    from schedlab import testbed
    from schedlab.cli import _fail_input, _interruptible, err
    from schedlab.measure import MeasureError, measure_scenario

    if not testbed.can_admin_network():
        _fail_input("schedlab measure needs root or CAP_NET_ADMIN (it creates network namespaces)")
        return
    if cleanup:
        removed = testbed.cleanup()
        err.print(f"removed {len(removed)} namespaces" + (f": {', '.join(removed)}" if removed else ""))
        return
    if scenario is None or out_dir is None:
        _fail_input("give SCENARIO and --out DIR (or --cleanup)")
        return
    try:
        with _interruptible():
            summary = measure_scenario(scenario, out_dir, progress=lambda text: err.print(text, highlight=False))
    except (_core.InputError, MeasureError) as e:
        _fail_input(str(e))
        return
    tcp = {flow["flow"]: flow for flow in summary.get("tcp_flows", [])}
    for flow in summary["flows"]:
        if flow["flow"] in tcp:
            goodput, retransmissions = tcp[flow["flow"]]["goodput_bps"], tcp[flow["flow"]]["retransmissions"]
            err.print(
                f"{flow['name']}: Linux TCP, goodput {goodput / 1e6:.3f} Mbit/s, {retransmissions} retransmissions",
                highlight=False,
            )
            continue
        delay = flow.get("delay_mean_s")
        err.print(
            f"{flow['name']}: sent {flow['sent']}, received {flow['received']}, mean delay {delay * 1e3:.3f} ms"
            if delay is not None
            else f"{flow['name']}: nothing received",
            highlight=False,
        )
    err.print(f"wrote {out_dir}/summary.json")


def register(app: typer.Typer) -> None:
    """Adds the real-packet commands to the ``schedlab`` command."""
    app.command(name="gateway")(gateway)
    app.command(name="gen")(gen)
    app.command(name="sink")(sink)
    app.command(name="measure")(measure)
