"""`schedlab measure` with TCP bulk sources: Linux TCP senders in the source namespace, through
`schedlab gateway`'s DRR, to receivers in the sink namespace (paper 004's figures 7–8 on real
packets need this).

Root only (CI runs as root); without it the namespace tests skip and say why. Each run is 6 s
of traffic at 10 Mbit/s, only between namespaces the test creates.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from schedlab import testbed

needs_root = pytest.mark.skipif(
    not testbed.can_admin_network(), reason="needs root or CAP_NET_ADMIN to create network namespaces"
)
RATE_BPS = 10_000_000


def _scenario(tmp_path: Path, quanta: tuple[int, ...], duration: str = "6s") -> Path:
    sources = "".join(
        f"""
[[source]]
flow = {i + 1}
name = "tcp{i + 1}"
path = ["bottleneck"]
transport = {{ kind = "tcp", mss = 1448, header = 52 }}
arrivals = {{ model = "bulk" }}
ack_delay = "1ms"
params = {{ quantum = {quantum} }}
"""
        for i, quantum in enumerate(quanta)
    )
    path = tmp_path / "tcp_drr.toml"
    path.write_text(
        f"""name = "tcp_drr"
[run]
duration = "{duration}"
warmup = "2s"
seed = 1
bin = "0.5s"

[[link]]
name = "bottleneck"
rate = "10Mbit"
delay = "1ms"
scheduler = {{ kind = "drr", quantum = 1500, buffer_packets = 60 }}
{sources}"""
    )
    return path


def _cli(*args: str, prefix: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "schedlab", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SCHEDLAB_NETNS_PREFIX": prefix},
        timeout=120,
    )


def _measure(tmp_path: Path, quanta: tuple[int, ...], prefix: str) -> tuple[list[float], dict]:
    scenario = _scenario(tmp_path, quanta)
    result = _cli("measure", str(scenario), "--out", str(tmp_path / "real"), prefix=prefix)
    assert result.returncode == 0, result.stderr
    assert testbed.namespaces(prefix) == [], "measure left namespaces behind"
    summary = json.loads((tmp_path / "real" / "summary.json").read_text())
    goodputs = [flow["goodput_bps"] for flow in summary["tcp_flows"]]
    # Every flow got through; together not above the bottleneck (goodput excludes headers).
    assert all(g > 0 for g in goodputs), goodputs
    assert sum(goodputs) <= RATE_BPS * 1.01, goodputs
    # The bottleneck was the limit, not the senders: the link was nearly full.
    assert sum(goodputs) >= RATE_BPS * 0.8, goodputs
    gateway = json.loads((tmp_path / "real" / "replication-0" / "gateway.json").read_text())
    assert gateway["accounting_ok"] is True
    # Each connection's segments were scheduled as its configured flow; its ACKs came back
    # through the gateway's egress side, unscheduled.
    by_flow = {f["flow"]: f for f in gateway["flows"]}
    assert all(by_flow[flow]["sent_packets"] > 100 for flow in (1, 2, 3))
    assert gateway["total"]["reverse_frames"] > 100
    return goodputs, summary


@needs_root
def test_three_tcp_flows_share_drr_with_equal_quanta_fairly(tmp_path):
    goodputs, summary = _measure(tmp_path, (1500, 1500, 1500), f"schedlab-te{os.getpid()}-")
    jain = sum(goodputs) ** 2 / (len(goodputs) * sum(g * g for g in goodputs))
    assert jain >= 0.9, goodputs
    # The same tcp_flows columns as the simulator's, so schedlab report works unchanged.
    simulated = _cli("run", str(tmp_path / "tcp_drr.toml"), "--out", str(tmp_path / "sim"), prefix="schedlab-x-")
    assert simulated.returncode == 0, simulated.stderr
    sim = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert set(summary["tcp_flows"][0]) == set(sim["tcp_flows"][0])
    assert [f["flow"] for f in summary["tcp_flows"]] == [1, 2, 3]
    # flows[] carries the goodput as the flow's throughput, so the Jain index is over goodput.
    assert summary["fairness"]["jain_index"] == pytest.approx(jain, rel=1e-9)
    series = (tmp_path / "real" / "tcp_timeseries.csv").read_text().splitlines()
    assert series[0].startswith("replication,flow,name,time_s,cwnd_bytes")
    assert len(series) == 1 + 3 * 12  # three flows, a sample at every 0.5 s bin boundary


@needs_root
def test_drr_quanta_1_2_4_order_the_tcp_shares(tmp_path):
    goodputs, _ = _measure(tmp_path, (1500, 3000, 6000), f"schedlab-tw{os.getpid()}-")
    assert goodputs[0] < goodputs[1] < goodputs[2], goodputs
    # Nearly in proportion to the quanta: each share within 30 % of quantum / sum of quanta.
    total = sum(goodputs)
    for goodput, weight in zip(goodputs, (1, 2, 4), strict=True):
        assert goodput / total == pytest.approx(weight / 7, rel=0.3), goodputs


#: Seconds from the signal to the exit of `schedlab measure`: the testbed's removal takes about
#: a second at most (SIGTERM to every process at once, 0.5 s of grace, SIGKILL); the rest is
#: headroom for a machine shared with builds (about 2.5 s measured at a load average of 17).
STOP_S = 5


def _interrupt(tmp_path: Path, prefix: str, ready, signum: int = signal.SIGINT) -> None:
    """Starts a 30 s TCP measurement, sends ``signum`` once ``ready(run)`` (polled every 5 ms)
    is true, and checks that it stops within STOP_S with nothing left: no namespace, no
    process, no summary, no file that looks complete."""
    scenario = _scenario(tmp_path, (1500, 1500), duration="30s")
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, "-m", "schedlab", "measure", str(scenario), "--out", str(out)],
        env={**os.environ, "SCHEDLAB_NETNS_PREFIX": prefix},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as on a terminal: pytest started as a background job of a non-interactive
        # shell would hand SIGINT down ignored, and the command keeps an ignored SIGINT.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not ready(run):
            assert run.poll() is None and time.monotonic() < deadline, "measure did not get there"
            time.sleep(0.005)
        sent = time.monotonic()
        run.send_signal(signum)
        _, stderr = run.communicate(timeout=10)
        stopped = time.monotonic() - sent
        assert run.returncode == 128 + signum, stderr
        assert stopped < STOP_S, f"took {stopped:.1f} s to stop"
        assert testbed.namespaces(prefix) == []
        assert _processes_of(tmp_path) == []
        assert not (out / "summary.json").exists()
        looks_complete = [p for p in out.rglob("*") if p.is_file() and p.suffix != ".partial"]
        assert looks_complete == [], looks_complete
    finally:  # a failure above must not leave a testbed running into the next test
        if run.poll() is None:
            run.kill()
            run.wait()
        testbed.cleanup(prefix)


@needs_root
def test_ctrl_c_during_tcp_run_removes_everything(tmp_path):
    prefix = f"schedlab-tc{os.getpid()}-"
    started = []

    def running(run: subprocess.Popen) -> bool:
        # sink, gateway, gen, the TCP senders and receivers: five processes in the namespaces.
        if not started and len(_pids(prefix)) >= 5:
            started.append(time.monotonic())
        return bool(started) and time.monotonic() - started[0] >= 1

    _interrupt(tmp_path, prefix, running)


@needs_root
@pytest.mark.parametrize(
    ("moment", "signum"),
    [("building", signal.SIGINT), ("starting", signal.SIGINT), ("running", signal.SIGTERM)],
)
def test_an_interrupt_at_any_moment_removes_everything(tmp_path, moment, signum):
    """Ctrl-C while the namespaces are being made (inside `ip` commands), Ctrl-C as the gateway
    starts (inside `Popen` or the wait for it), SIGTERM once the origin is set."""
    prefix = f"schedlab-ti{os.getpid()}-"
    ready = {
        "building": lambda run: bool(testbed.namespaces(prefix)),
        "starting": lambda run: any("schedlab gateway" in command for command in _processes_of(tmp_path)),
        "running": lambda run: (tmp_path / "out" / "replication-0" / "origin").exists(),
    }[moment]
    _interrupt(tmp_path, prefix, ready, signum)


def _pids(prefix: str) -> list[str]:
    return [
        pid
        for ns in testbed.namespaces(prefix)
        for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    ]


def _processes_of(tmp_path: Path) -> list[str]:
    """Processes whose command line names a file under ``tmp_path`` (measure, gateway, gen,
    sink, TCP senders and receivers all do), wherever they run."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and str(tmp_path) in command:
            found.append(f"{entry.name}: {command}")
    return found
