"""``schedlab measure``: a scenario on real packets, through the namespace testbed.

For each replication: a fresh :class:`schedlab.testbed.Testbed`; in it ``schedlab sink`` (sink
namespace), ``schedlab gateway --scenario`` (gateway namespace: the bottleneck link's
scheduler, rate, buffer and propagation delay) and ``schedlab gen`` (source namespace: every
source of the scenario, the replication's random streams). All three are child processes
running the Rust code of the extension module; gen and sink share one ``CLOCK_MONOTONIC``
origin, set only once both say they are ready (:func:`run_traffic`), so one-way delays are
exact and slow start-ups cannot make the generator late. The sink stops
``drain`` seconds after the scenario's end, then the gateway (SIGINT) writes its stats. The
logs of every replication are turned into the files of ``schedlab run`` by
``schedlab._core.write_measured``.

TCP sources run as Linux TCP bulk transfers (:mod:`schedlab.tcpbulk`: a sender per source in
the source namespace, the receivers in the sink namespace, started before the origin too);
their samples become the ``tcp_flows`` of ``summary.json``.

Layout of ``OUT``: ``summary.json`` … (as ``schedlab run``), ``measure.json`` (duplicates,
reordering, achieved rates, gateway stats per replication), ``replication-N/{sent.csv,
received.csv, gateway.json, gen.json}`` (and ``tcp_sent.csv``, ``tcp_received.csv`` with TCP
sources). A replication that does not finish (Ctrl-C, SIGTERM, a failure) leaves its files as
``NAME.partial`` and no ``summary.json`` is written; its testbed is removed either way
(:meth:`schedlab.testbed.Testbed.destroy`: about a second at most).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from schedlab import _core, interrupts, testbed

PORT = 9000
PORT_BASE = 20000
# Seconds between gen and sink being ready and the scenario's time 0; after its end.
LEAD_S = 0.2
DRAIN_S = 2.0


class MeasureError(RuntimeError):
    """A measured run failed (the message says which process and why)."""


def _declared(scenario: Path) -> dict:
    text = scenario.read_text()
    return json.loads(_core.validate_scenario(text, str(scenario.parent), str(scenario)))


def _wait_for(path: Path, process: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise MeasureError(f"{what} exited with status {process.returncode}: {process.stderr.read().strip()}")
        if time.monotonic() > deadline:
            raise MeasureError(f"{what} did not start within {timeout} s")
        time.sleep(0.05)


def _finish(process: subprocess.Popen, what: str, timeout: float) -> None:
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise MeasureError(f"{what} did not finish within {timeout:.0f} s") from e
    if process.returncode != 0:
        raise MeasureError(f"{what} exited with status {process.returncode}: {process.stderr.read().strip()}")


def run_traffic(
    bed: testbed.Testbed,
    scenario: Path,
    folder: Path,
    duration_s: float,
    replication: int = 0,
    destination: str = testbed.SINK_ADDRESS,
    tcp: list[dict] | None = None,
    drain_s: float = DRAIN_S,
) -> None:
    """Runs ``schedlab sink`` and ``schedlab gen`` for ``scenario`` in ``bed``; both start
    up, say they are ready, and only then get the shared origin (0.2 s ahead), so slow
    start-ups cannot make the generator late. Gen sends to ``destination`` (the sink's IPv4
    address, or :data:`schedlab.testbed.SINK_ADDRESS6` for IPv6). Leaves ``sent.csv``,
    ``received.csv`` and ``gen.json`` in ``folder``. ``tcp``: the scenario's TCP sources
    (:func:`tcp_sources`), run as Linux TCP bulk transfers (:mod:`schedlab.tcpbulk`) that
    leave ``tcp_sent.csv`` and ``tcp_received.csv``. ``drain_s``: how long the sink (and the
    TCP receivers) keep receiving after the scenario's end (a benchmark whose packets spend
    microseconds in flight needs far less than the default's 2 s)."""
    sent, received, origin = folder / "sent.csv", folder / "received.csv", folder / "origin"
    sink_ready, gen_ready = folder / "sink.ready", folder / "gen.ready"
    tcp_sent, tcp_received = folder / "tcp_sent.csv", folder / "tcp_received.csv"
    sender_ready, receiver_ready = folder / "tcp_sender.ready", folder / "tcp_receiver.ready"
    for stale in (sent, received, origin, sink_ready, gen_ready, tcp_sent, tcp_received, sender_ready, receiver_ready):
        stale.unlink(missing_ok=True)
    python = [sys.executable, "-m", "schedlab"]
    quiet = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    sink = bed.spawn(
        bed.sink,
        [*python, "sink", "--port", str(PORT), "--origin-file", str(origin), "--until", str(duration_s + drain_s)]
        + ["--log", str(received), "--ready", str(sink_ready)],
        **quiet,
    )
    gen = bed.spawn(
        bed.source,
        [*python, "gen", str(scenario), "--destination", destination, "--port", str(PORT)]
        + ["--port-base", str(PORT_BASE), "--replication", str(replication), "--origin-file", str(origin)]
        + ["--log", str(sent), "--ready", str(gen_ready)],
        **quiet,
    )
    tcp_processes = []
    if tcp:
        bulk = [sys.executable, "-m", "schedlab.tcpbulk"]
        endpoints = json.dumps(tcp)
        receiver = bed.spawn(
            bed.sink,
            [*bulk, "receive", endpoints, "--port", str(PORT), "--until", str(duration_s + drain_s)]
            + ["--origin-file", str(origin), "--log", str(tcp_received), "--ready", str(receiver_ready)],
            **quiet,
        )
        _wait_for(receiver_ready, receiver, "the TCP receivers")
        sender = bed.spawn(
            bed.source,
            [*bulk, "send", endpoints, "--destination", destination, "--port", str(PORT)]
            + ["--origin-file", str(origin), "--log", str(tcp_sent), "--ready", str(sender_ready)],
            **quiet,
        )
        _wait_for(sender_ready, sender, "the TCP senders")
        tcp_processes = [(sender, "the TCP senders"), (receiver, "the TCP receivers")]
    _wait_for(sink_ready, sink, "schedlab sink")
    _wait_for(gen_ready, gen, "schedlab gen")
    partial = origin.with_suffix(".partial")
    partial.write_text(str(time.monotonic_ns() + int(LEAD_S * 1e9)))
    partial.rename(origin)
    _finish(gen, "schedlab gen", LEAD_S + duration_s + 30)
    (folder / "gen.json").write_text(gen.stdout.read())
    for process, what in tcp_processes:
        _finish(process, what, LEAD_S + duration_s + drain_s + 30)
    _finish(sink, "schedlab sink", LEAD_S + duration_s + drain_s + 30)
    for marker in (origin, sink_ready, gen_ready, sender_ready, receiver_ready):
        marker.unlink(missing_ok=True)


def _set_aside(folder: Path) -> None:
    """After a replication that did not finish: removes its start-up markers (``*.ready``,
    ``origin``) and renames every other file in ``folder`` to ``NAME.partial``, so that no
    log or stats file there looks like the record of a whole run."""
    for path in folder.iterdir():
        if path.suffix == ".partial" or not path.is_file():
            continue
        if path.suffix == ".ready" or path.name == "origin":
            path.unlink(missing_ok=True)
        else:
            path.replace(path.with_name(path.name + ".partial"))


def _replication(
    scenario: Path, replication: int, folder: Path, duration_s: float, destination: str = testbed.SINK_ADDRESS
) -> tuple:
    folder.mkdir(parents=True, exist_ok=True)
    stats = folder / "gateway.json"
    stats.unlink(missing_ok=True)
    try:
        with testbed.Testbed() as bed:
            gateway = bed.spawn(
                bed.gateway,
                [sys.executable, "-m", "schedlab", "gateway", "--scenario", str(scenario)]
                + ["--port-base", str(PORT_BASE), "-i", "gwin", "-e", "gwout", "--stats", str(stats)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            _wait_for(stats, gateway, "the gateway")
            run_traffic(bed, scenario, folder, duration_s, replication, destination, tcp_sources(scenario))
            gateway.send_signal(signal.SIGINT)
            _finish(gateway, "the gateway", 5)
    except BaseException:  # Ctrl-C, SIGTERM or a failure: the testbed is gone, its logs are not results
        with interrupts.deferred():
            _set_aside(folder)
        raise
    return (replication, str(folder / "sent.csv"), str(folder / "received.csv"), str(stats))


def tcp_sources(scenario: Path) -> list[dict]:
    """The TCP sources of a measurable ``scenario`` (``source``, ``flow``, ``port``,
    ``start_s``, ``stop_s``, ``mss``, ``variant``): each runs as a Linux TCP bulk transfer."""
    return json.loads(_core.check_measurable(str(scenario), PORT_BASE) or "[]")


def check(scenario: Path) -> tuple[float, int]:
    """Checks, before any namespace is built, that ``scenario`` can be measured (valid; one
    bottleneck; open-loop UDP sources or TCP bulk sources; no simulator-only link keys;
    ``run.duration`` given); returns its duration in seconds and its replications."""
    declared = _declared(scenario)
    if hasattr(_core, "check_measurable"):
        _core.check_measurable(str(scenario), PORT_BASE)
    length = declared["run"]["length"]
    if "duration_s" not in length:
        raise MeasureError(f"{scenario}: run.packets: a measured run needs run.duration")
    return float(length["duration_s"]), int(declared["run"]["replications"])


def measure_replication(
    scenario: Path, replication: int, out_dir: Path, destination: str = testbed.SINK_ADDRESS
) -> dict:
    """Measures one replication of ``scenario`` (checked by :func:`check`) into ``out_dir``
    (the files of ``schedlab run`` for that replication alone, and its logs in
    ``replication-N/``); returns its ``summary.json``. ``schedlab sweep --measure`` runs its
    points this way, one after another. ``destination``: the sink's address gen sends to
    (IPv4 by default; :data:`schedlab.testbed.SINK_ADDRESS6` sends the same traffic over IPv6)."""
    duration_s, _ = check(scenario)
    out_dir.mkdir(parents=True, exist_ok=True)
    run = _replication(scenario, replication, out_dir / f"replication-{replication}", duration_s, destination)
    _core.write_measured(str(scenario), [run], str(out_dir))
    return json.loads((out_dir / "summary.json").read_text())


def measure_scenario(scenario: Path, out_dir: Path, progress: Callable[[str], None] = lambda _: None) -> dict:
    """Measures every replication of ``scenario`` into ``out_dir``; returns ``summary.json``.
    Bad input (including a TCP source that is not a bulk transfer) fails before anything is
    built."""
    duration_s, replications = check(scenario)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for replication in range(replications):
        progress(f"replication {replication + 1}/{replications}: {duration_s:g} s of traffic on real packets")
        runs.append(_replication(scenario, replication, out_dir / f"replication-{replication}", duration_s))
    _core.write_measured(str(scenario), runs, str(out_dir))
    return json.loads((out_dir / "summary.json").read_text())
