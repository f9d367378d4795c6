"""`schedlab run`, `validate`, `sweep` (local and Dask), `report` and the Python API."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import tomllib

import schedlab
from schedlab.api import run, validate
from schedlab.scenario import Scenario
from schedlab.sweep import run_sweep

SMALL = """
name = "small"
[run]
duration = "20s"
seed = 3
replications = 3

[[link]]
name = "bottleneck"
rate = "1Mbit"
scheduler = { kind = "drr" }

[[source]]
flow = 0
name = "A"
path = ["bottleneck"]
arrivals = { model = "poisson", rate_pps = 50 }
size = { dist = "constant", size = 1000 }

[[source]]
flow = 1
name = "B"
path = ["bottleneck"]
arrivals = { model = "poisson", rate_pps = 30 }
size = { dist = "constant", size = 1000 }
"""

SWEEP = """
[sweep]
x = "source[0].arrivals.rate_pps"
[sweep.grid]
"link[0].scheduler.kind" = ["drr", "fifo"]
[sweep.zip]
"source[0].arrivals.rate_pps" = [20, 60]
"""


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def test_api_run_returns_tables(small, tmp_path):
    results = run(small, tmp_path / "out")
    assert list(results.flows["flow"]) == [0, 1]
    a = results.flows.iloc[0]
    # Poisson at 50 pkt/s of 1000 B: about 400 kbit/s offered, all of it carried (load 0.64).
    assert a["throughput_bps"] == pytest.approx(400_000, rel=0.1)
    assert a["delay_mean_ci95_s"] > 0
    assert len(results.replications) == 6  # 2 flows x 3 replications
    assert not results.timeseries.empty
    assert (tmp_path / "out" / "summary.json").exists()


def test_progress_is_reported_per_replication(small):
    calls = []
    run(small, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_mm1_like_delay_through_the_api():
    # A single Poisson flow of exponential sizes on FIFO is M/M/1: mean delay 1/(mu - lambda).
    s = (
        Scenario.new(duration="200s", seed=1, replications=2)
        .add_link("l", "1Mbit", {"kind": "fifo"})
        .add_source(0, ["l"], {"model": "poisson", "rate_pps": 62.5}, {"dist": "exponential", "mean": 1000})
    )
    flows = run(s).flows
    mu = 1e6 / 8000  # 125 packets/s
    assert flows.iloc[0]["delay_mean_s"] == pytest.approx(1 / (mu - 62.5), rel=0.08)


def test_same_seed_same_results_different_seed_differs(small):
    s = Scenario.from_toml(small)
    first = run(s).flows
    again = run(s).flows
    pd.testing.assert_frame_equal(first, again)
    other = run(s.set("run.seed", 4)).flows
    assert other.iloc[0]["delay_mean_s"] != first.iloc[0]["delay_mean_s"]


def test_cli_run_report_and_json(small, tmp_path, cli):
    out = tmp_path / "out"
    result = cli("run", str(small), "--out", str(out), "--report", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert [f["name"] for f in summary["flows"]] == ["A", "B"]
    assert (out / "report.html").exists()
    assert (out / "figures" / "delay_cdf.png").exists() and (out / "figures" / "delay_cdf.svg").exists()
    table = cli("run", str(small), "--out", str(out))
    assert "mean delay" in table.stdout and "A" in table.stdout


@pytest.mark.parametrize(
    ("replace", "expected"),
    [
        (("rate_pps = 30", "rate_pps = -30"), "small.toml:24: source[1].arrivals.rate_pps = -30"),
        (
            (
                'path = ["bottleneck"]\narrivals = { model = "poisson", rate_pps = 30 }',
                'path = ["nowhere"]\narrivals = { model = "poisson", rate_pps = 30 }',
            ),
            'source[1].path[0] = "nowhere"',
        ),
        (("seed = 3", "seed = 3\nsped = 4"), "run.sped = 4: unknown key"),
        (('kind = "drr" }', 'kind = "drr", quantum = 0 }'), "link[0].scheduler.quantum = 0"),
        (
            ('name = "B"', 'name = "B"\nparams = { loss_tolerance = "3/2" }'),
            'small.toml:23: source[1].params.loss_tolerance = "3/2": not a flow key of drr, which reads only quantum',
        ),
    ],
)
def test_bad_scenarios_exit_2_naming_key_and_value(small, tmp_path, cli, replace, expected):
    small.write_text(SMALL.replace(*replace))
    for command in (["validate", str(small)], ["run", str(small), "--out", str(tmp_path / "o")]):
        result = cli(*command)
        assert result.returncode == 2, result.stderr
        assert expected in result.stderr.replace("\n", ""), result.stderr
    assert not (tmp_path / "o" / "summary.json").exists()


def test_validate_reports_points(small, cli):
    small.write_text(SMALL + SWEEP)
    result = cli("validate", str(small))
    assert result.returncode == 0, result.stderr
    assert "ok (4 points)" in result.stdout
    info = validate(small)
    assert info["sweep_points"] == 4


def test_bad_sweep_point_names_point_and_values(small, cli):
    small.write_text(SMALL + SWEEP.replace('["drr", "fifo"]', '["drr", "fifoo"]'))
    result = cli("validate", str(small))
    assert result.returncode == 2
    assert "sweep point 2" in result.stderr and "fifoo" in result.stderr


def test_sweep_local_merges_points_and_replications(small, tmp_path, cli):
    small.write_text(SMALL + SWEEP)
    out = tmp_path / "sweep"
    result = cli("sweep", str(small), "--out", str(out), "--workers", "2", "--report")
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "sweep.csv")
    assert len(table) == 8  # 4 points x 2 flows
    assert set(table["replications"]) == {3}
    reps = pd.read_csv(out / "sweep_replications.csv")
    assert len(reps) == 24
    # The sweep's aggregate equals `schedlab run` of the same point (same seeds, same CI).
    point = Scenario.from_toml(small).points()[1]
    direct = run(point.scenario).flows
    row = table[(table["point"] == 1) & (table["flow"] == 0)].iloc[0]
    assert row["delay_mean_s"] == pytest.approx(direct.iloc[0]["delay_mean_s"], rel=1e-12)
    assert row["delay_mean_s_ci95"] == pytest.approx(direct.iloc[0]["delay_mean_ci95_s"], rel=1e-9)
    html = (out / "report.html").read_text()
    assert html.count("<figure") >= 4 and html.count("<svg") >= 4


def test_sweep_of_whole_tables_labels_them(small, tmp_path):
    """Disciplines with different keys are swept as whole tables; their cells are labels and
    each point runs its own scheduler (FIFO and DRR differ in B's delay at this load)."""
    small.write_text(
        SMALL.replace('duration = "20s"', 'duration = "5s"').replace("replications = 3", "replications = 1")
        + """
[sweep]
x = "link[0].scheduler.kind"
[sweep.zip]
"link[0].scheduler" = [{ kind = "fifo" }, { kind = "drr", quantum = 500 }]
"link[0].scheduler.kind" = ["fifo", "drr"]
"""
    )
    out = tmp_path / "sweep"
    sweep = run_sweep(Scenario.from_toml(small), out, workers=1)
    table = sweep.table
    cells = set(pd.read_csv(out / "sweep.csv")["link[0].scheduler"])
    assert cells == {"fifo", "drr quantum=500"}
    delays = table.set_index(["link[0].scheduler.kind", "flow"])["delay_mean_s"]
    assert delays[("fifo", 1)] != pytest.approx(delays[("drr", 1)], rel=1e-6)


def test_sweep_resume_skips_finished_tasks(small, tmp_path):
    small.write_text(SMALL + SWEEP)
    scenario = Scenario.from_toml(small)
    out = tmp_path / "sweep"
    first = run_sweep(scenario, out, workers=1, representative=False)
    assert first.skipped == 0
    finished = sorted((out / "points").glob("*.json"))
    assert len(finished) == 12
    removed = finished[0]
    removed.unlink()
    mtimes = {p: p.stat().st_mtime_ns for p in finished[1:]}
    second = run_sweep(scenario, out, workers=1, resume=True, representative=False)
    assert second.skipped == 11
    assert removed.exists()
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items()), "finished tasks were not rerun"
    pd.testing.assert_frame_equal(first.table, second.table)


def test_cli_sweep_resume_reports_skipped_tasks(small, tmp_path, cli):
    small.write_text(SMALL + SWEEP)
    out = tmp_path / "sweep"
    first = cli("sweep", str(small), "--out", str(out), "--workers", "1")
    assert first.returncode == 0, first.stderr
    assert "(0 tasks resumed, 0 failed)" in first.stderr
    again = cli("sweep", str(small), "--out", str(out), "--workers", "1", "--resume", "--json")
    assert again.returncode == 0, again.stderr
    assert len(json.loads(again.stdout)) == 8


def test_failing_point_is_reported_and_others_kept(small, tmp_path, monkeypatch):
    small.write_text(SMALL + SWEEP)
    import schedlab.sweep as sweep_module

    real = sweep_module._task

    def flaky(text, base_dir, replication):
        data = tomllib.loads(text)
        if data["link"][0]["scheduler"]["kind"] == "fifo" and data["source"][0]["arrivals"]["rate_pps"] == 60:
            raise RuntimeError("injected failure")
        return real(text, base_dir, replication)

    monkeypatch.setattr(sweep_module, "_task", flaky)
    # Worker processes would not see the patched task: run the local executor on threads.
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(sweep_module, "ProcessPoolExecutor", ThreadPoolExecutor)
    result = run_sweep(Scenario.from_toml(small), tmp_path / "s", workers=2, representative=False)
    assert len(result.failures) == 3  # one point x 3 replications
    assert {f["point"] for f in result.failures} == {3}
    assert set(result.table["point"]) == {0, 1, 2}
    meta = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert "injected failure" in meta["failures"][0]["error"]


def test_sweep_on_a_dask_local_cluster(small, tmp_path):
    distributed = pytest.importorskip("distributed")
    small.write_text(SMALL + SWEEP)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        result = run_sweep(Scenario.from_toml(small), tmp_path / "dask", dask=cluster.scheduler_address)
    local = run_sweep(Scenario.from_toml(small), tmp_path / "local", workers=2)
    assert json.loads((tmp_path / "dask" / "sweep.json").read_text())["executor"].startswith("dask tcp://")
    pd.testing.assert_frame_equal(result.table, local.table)


def test_sweep_without_sweep_table_exits_2(small, tmp_path, cli):
    result = cli("sweep", str(small), "--out", str(tmp_path / "x"))
    assert result.returncode == 2
    assert "no [sweep] table" in result.stderr


def test_report_on_missing_results_exits_2(tmp_path, cli):
    result = cli("report", str(tmp_path))
    assert result.returncode == 2


def test_input_error_type_is_exported():
    with pytest.raises(schedlab.InputError):
        run(Scenario.from_text(SMALL.replace('rate = "1Mbit"', 'rate = "1Mbyte"')))


PAST_CLOCK_END = """
[run]
duration = "4s"
seed = 7
bin = "{bin}"

[[link]]
name = "slow"
rate = "{rate}"
delay = "1ms"
scheduler = {{ kind = "drr" }}

[[source]]
flow = 0
path = ["slow"]
arrivals = {{ model = "poisson", rate_pps = 1.0 }}
size = {{ dist = "constant", size = {size} }}
"""


@pytest.mark.parametrize(
    ("rate", "size", "bin", "expected"),
    [
        # Too slow for its largest packet (the run used to hang, or wrap its clock).
        (
            "3bit",
            4_000_000_000,
            "1s",
            'link[0].rate = 3bit: to send the largest packet of source[0] (4000000000 bytes), link "slow"',
        ),
        ("1bit", 4_000_000_000, "1s", "link[0].rate = 1bit"),
        # Transmissions queued behind each other pass the clock's end while draining.
        ("1bit", 1_000_000_000, "1000000000s", 'link "slow": a packet\'s transmission would end at'),
        # A drain needing more bins than the memory guard allows.
        ("1bit", 1_000_000_000, "1s", "more than 1000000 time-series bins"),
    ],
)
def test_runs_past_the_clock_end_exit_2_with_the_error(tmp_path, cli, rate, size, bin, expected):
    path = tmp_path / "absurd.toml"
    path.write_text(PAST_CLOCK_END.format(rate=rate, size=size, bin=bin))
    result = cli("run", str(path), "--out", str(tmp_path / "o"))
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr.replace("\n", ""), result.stderr
    assert not (tmp_path / "o" / "summary.json").exists()
