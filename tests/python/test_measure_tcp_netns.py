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


@needs_root
def test_ctrl_c_during_tcp_run_removes_everything(tmp_path):
    scenario = _scenario(tmp_path, (1500, 1500), duration="30s")
    prefix = f"schedlab-tc{os.getpid()}-"
    run = subprocess.Popen(
        [sys.executable, "-m", "schedlab", "measure", str(scenario), "--out", str(tmp_path / "out")],
        env={**os.environ, "SCHEDLAB_NETNS_PREFIX": prefix},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    # sink, gateway, gen, the TCP senders and receivers: five processes in the namespaces.
    while len(_pids(prefix)) < 5:
        assert run.poll() is None and time.monotonic() < deadline, "measure did not start its processes"
        time.sleep(0.2)
    time.sleep(1)
    run.send_signal(signal.SIGINT)
    run.wait(timeout=10)
    assert run.returncode != 0
    assert testbed.namespaces(prefix) == []
    assert not (tmp_path / "out" / "summary.json").exists()


def _pids(prefix: str) -> list[str]:
    return [
        pid
        for ns in testbed.namespaces(prefix)
        for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    ]
