"""`schedlab measure` on the namespace testbed: the thesis scenario on real packets agrees with
the simulator, leaves nothing behind, and `--cleanup` removes what a killed run left.

Root only (CI runs as root); each test scopes its namespaces with its own
SCHEDLAB_NETNS_PREFIX so that cleanup never touches another run's testbed.
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
from typer.testing import CliRunner

from schedlab import testbed
from schedlab.cli import app

REPO = Path(__file__).resolve().parents[2]
THESIS = REPO / "experiments" / "thesis" / "measure_fig5_1_lambda10.toml"

needs_root = pytest.mark.skipif(
    not testbed.can_admin_network(), reason="needs root or CAP_NET_ADMIN to create network namespaces"
)


def _short(tmp_path: Path, seconds: int) -> Path:
    text = THESIS.read_text().replace('duration = "100s"', f'duration = "{seconds}s"')
    text = text.replace("replications = 5", "replications = 1")
    path = tmp_path / "thesis.toml"
    path.write_text(text)
    return path


def _env(prefix: str) -> dict:
    return {**os.environ, "SCHEDLAB_NETNS_PREFIX": prefix}


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "schedlab", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _processes_in(prefix: str) -> list[str]:
    return [
        pid
        for ns in testbed.namespaces(prefix)
        for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    ]


@needs_root
def test_thesis_lc_delay_measured_agrees_with_simulation_and_nothing_is_left(tmp_path):
    scenario = _short(tmp_path, 8)
    prefix = f"schedlab-m{os.getpid()}-"
    measured = _cli("measure", str(scenario), "--out", str(tmp_path / "real"), env=_env(prefix))
    assert measured.returncode == 0, measured.stderr
    simulated = _cli("run", str(scenario), "--out", str(tmp_path / "sim"), env=_env(prefix))
    assert simulated.returncode == 0, simulated.stderr
    real = json.loads((tmp_path / "real" / "summary.json").read_text())
    sim = json.loads((tmp_path / "sim" / "summary.json").read_text())
    # The same packets were offered (gen uses the simulator's random streams).
    assert [f["sent"] for f in real["flows"]] == [f["sent"] for f in sim["flows"]]
    assert [f["flow"] for f in real["flows"]] == [f["flow"] for f in sim["flows"]]
    lc_real, lc_sim = real["flows"][0]["delay_mean_s"], sim["flows"][0]["delay_mean_s"]
    assert real["flows"][0]["name"] == "LC"
    assert abs(lc_real - lc_sim) <= 0.2 * lc_sim + 0.002, (lc_real, lc_sim)
    # The report's inputs are there, with the same columns as a simulated run.
    for name in ("flows.csv", "timeseries.csv", "delay_cdf.csv", "measure.json", "replication-0/gateway.json"):
        assert (tmp_path / "real" / name).exists(), name
    assert set(real["flows"][0]) == set(sim["flows"][0])
    gateway = json.loads((tmp_path / "real" / "replication-0" / "gateway.json").read_text())
    assert gateway["accounting_ok"] is True
    assert gateway["discipline"] == "drr_plusplus"
    # Nothing left behind: no namespace (and so no veth), no process.
    assert testbed.namespaces(prefix) == []


@needs_root
def test_cleanup_after_sigkill_leaves_nothing(tmp_path):
    scenario = _short(tmp_path, 20)
    prefix = f"schedlab-k{os.getpid()}-"
    run = subprocess.Popen(
        [sys.executable, "-m", "schedlab", "measure", str(scenario), "--out", str(tmp_path / "out")],
        env=_env(prefix),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while len(_processes_in(prefix)) < 3:
        assert run.poll() is None and time.monotonic() < deadline, "measure did not start its processes"
        time.sleep(0.2)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=5)
    assert testbed.namespaces(prefix), "the killed run should have left its namespaces"
    cleaned = _cli("measure", "--cleanup", env=_env(prefix))
    assert cleaned.returncode == 0, cleaned.stderr
    assert "removed 3 namespaces" in cleaned.stderr
    assert testbed.namespaces(prefix) == []
    assert _processes_in(prefix) == []


def test_measure_without_network_admin_exits_2(monkeypatch, tmp_path):
    monkeypatch.setattr(testbed, "can_admin_network", lambda: False)
    result = CliRunner().invoke(app, ["measure", str(THESIS), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "needs root or CAP_NET_ADMIN" in result.output
    assert not (tmp_path / "x").exists()


def test_prefix_must_stay_inside_the_schedlab_namespace_space(monkeypatch):
    monkeypatch.setenv("SCHEDLAB_NETNS_PREFIX", "other-")
    with pytest.raises(testbed.TestbedError, match="must start with 'schedlab-'"):
        testbed.prefix()
