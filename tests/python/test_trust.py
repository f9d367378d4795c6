"""What keeps a user's trust: output folders never mix results of different scenarios
(fingerprints, ``--resume``, ``--force``), and bad input is exit 2 naming what is wrong."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from schedlab.outputs import RUN_INFO, OutputFolderError
from schedlab.scenario import Scenario, ScenarioError
from schedlab.sweep import run_sweep

SMALL = """
name = "small"
[run]
duration = "5s"
seed = 1
replications = 2

[[link]]
name = "bottleneck"
rate = "1Mbit"
scheduler = { kind = "drr" }

[[source]]
flow = 0
path = ["bottleneck"]
arrivals = { model = "poisson", rate_pps = 50 }
size = { dist = "constant", size = 1000 }

[sweep]
[sweep.zip]
"source[0].arrivals.rate_pps" = [20, 60]
"""


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def test_resume_refuses_a_changed_scenario_naming_what_differs(small, tmp_path, cli):
    out = tmp_path / "sweep"
    assert cli("sweep", str(small), "--out", str(out), "--workers", "1").returncode == 0
    before = (out / "sweep.csv").read_text()
    changed = tmp_path / "changed.toml"
    changed.write_text(SMALL.replace('duration = "5s"', 'duration = "2s"').replace("seed = 1", "seed = 7"))
    next(iter(sorted((out / "points").glob("*.json")))).unlink()
    result = cli("sweep", str(changed), "--out", str(out), "--workers", "1", "--resume")
    assert result.returncode == 2, result.stderr
    assert "run.duration: '5s' -> '2s'" in result.stderr
    assert "run.seed: 1 -> 7" in result.stderr
    assert (out / "sweep.csv").read_text() == before, "the refused resume changed the results"


def test_resume_reuses_only_points_whose_fingerprint_matches(small, tmp_path):
    out = tmp_path / "sweep"
    run_sweep(Scenario.from_toml(small), out, workers=1, representative=False)
    # A grown sweep: the same base scenario, one more point. Points 0 and 1 are reused.
    small.write_text(SMALL.replace("[20, 60]", "[20, 60, 80]"))
    grown = run_sweep(Scenario.from_toml(small), out, workers=1, resume=True, representative=False)
    assert grown.skipped == 4
    assert sorted(grown.table["source[0].arrivals.rate_pps"]) == [20, 60, 80]
    # Changed values at the same point indices: nothing matches, everything runs again.
    small.write_text(SMALL.replace("[20, 60]", "[30, 70, 80]"))
    changed = run_sweep(Scenario.from_toml(small), out, workers=1, resume=True, representative=False)
    assert changed.skipped == 2  # only point 2 (rate 80) is unchanged
    fresh = run_sweep(Scenario.from_toml(small), tmp_path / "fresh", workers=1, representative=False)
    assert changed.table.equals(fresh.table)


def test_every_point_file_carries_its_fingerprint(small, tmp_path):
    out = tmp_path / "sweep"
    run_sweep(Scenario.from_toml(small), out, workers=1, representative=False)
    prints = {json.loads(p.read_text())["fingerprint"] for p in (out / "points").glob("*.json")}
    assert len(prints) == 4  # 2 points x 2 replications, all different
    info = json.loads((out / RUN_INFO).read_text())
    assert info["status"] == "complete" and info["kind"] == "sweep"
    assert info["determines"]["scenario"]["run"]["seed"] == 1
    assert "wall_time_s" in info
    assert "wall_time_s" not in json.loads((out / "sweep.json").read_text())


def test_corrupt_point_file_on_resume_is_exit_2_naming_the_file(small, tmp_path, cli):
    out = tmp_path / "sweep"
    assert cli("sweep", str(small), "--out", str(out), "--workers", "1").returncode == 0
    broken = out / "points" / "p0001_r000.json"
    broken.write_text('{"fingerprint": ')
    result = cli("sweep", str(small), "--out", str(out), "--workers", "1", "--resume")
    assert result.returncode == 2
    assert "p0001_r000.json" in result.stderr and "delete it" in result.stderr


def test_run_refuses_a_folder_holding_a_sweep_unless_force(small, tmp_path, cli):
    out = tmp_path / "out"
    assert cli("sweep", str(small), "--out", str(out), "--workers", "1").returncode == 0
    base = tmp_path / "base.toml"
    base.write_text(SMALL.split("[sweep]")[0])
    refused = cli("run", str(base), "--out", str(out), "--report")
    assert refused.returncode == 2
    assert "holds the results of a `sweep`" in refused.stderr
    assert not (out / "report.html").exists() and (out / "sweep.csv").exists()
    forced = cli("run", str(base), "--out", str(out), "--report", "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (out / "sweep.csv").exists() and not (out / "points").exists()
    assert json.loads((out / RUN_INFO).read_text())["kind"] == "run"


def test_run_into_a_foreign_folder_is_refused_and_rerun_of_same_is_allowed(small, tmp_path, cli):
    base = tmp_path / "base.toml"
    base.write_text(SMALL.split("[sweep]")[0])
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    refused = cli("run", str(base), "--out", str(out))
    assert refused.returncode == 2 and "holds no run-info.json" in refused.stderr
    assert (out / "notes.txt").read_text() == "mine"
    other = tmp_path / "other"
    assert cli("run", str(base), "--out", str(other)).returncode == 0
    first = (other / "flows.csv").read_text()
    assert cli("run", str(base), "--out", str(other)).returncode == 0, "a rerun of the same scenario is refused"
    assert (other / "flows.csv").read_text() == first
    base.write_text(SMALL.split("[sweep]")[0].replace("seed = 1", "seed = 2"))
    changed = cli("run", str(base), "--out", str(other))
    assert changed.returncode == 2 and "run.seed: 1 -> 2" in changed.stderr


def test_api_run_guards_the_folder_too(small, tmp_path):
    import schedlab

    scenario = Scenario.from_text(SMALL.split("[sweep]")[0])
    out = tmp_path / "api"
    schedlab.run(scenario, out)
    with pytest.raises(OutputFolderError, match="run.seed: 1 -> 5"):
        schedlab.run(scenario.set("run.seed", 5), out)
    assert schedlab.run(scenario.set("run.seed", 5), out, force=True).summary["run"]["seed"] == 5


def test_a_referenced_file_is_part_of_the_fingerprint(tmp_path):
    from schedlab.outputs import determinants, fingerprint

    (tmp_path / "sizes.csv").write_text("size_bytes,probability\n100,1\n")
    data = {"source": [{"size": {"dist": "empirical", "file": "sizes.csv"}}]}
    first = fingerprint(determinants(data, tmp_path))
    (tmp_path / "sizes.csv").write_text("size_bytes,probability\n200,1\n")
    assert fingerprint(determinants(data, tmp_path)) != first


def test_non_utf8_scenario_is_exit_2_naming_file_and_line(tmp_path, cli):
    path = tmp_path / "latin1.toml"
    path.write_bytes(SMALL.encode().replace(b'name = "small"', b'name = "sm\xe9ll"'))
    result = cli("validate", str(path))
    assert result.returncode == 2
    assert f"{path}:2: byte 0xe9" in result.stderr.replace("\n", "")


def test_out_under_a_file_is_exit_2(small, tmp_path, cli):
    (tmp_path / "afile").write_text("x")
    base = tmp_path / "base.toml"
    base.write_text(SMALL.split("[sweep]")[0])
    result = cli("run", str(base), "--out", str(tmp_path / "afile" / "out"))
    assert result.returncode == 2, result.stderr
    assert "cannot be created" in result.stderr or "not a folder" in result.stderr


def test_run_rejects_a_bad_sweep_like_validate(small, tmp_path, cli):
    small.write_text(SMALL.replace("[sweep.zip]", '[sweep.zip]\n"run.seed" = [1, 2, 3]'))
    assert cli("validate", str(small)).returncode == 2
    result = cli("run", str(small), "--out", str(tmp_path / "o"))
    assert result.returncode == 2
    assert "same length" in result.stderr
    small.write_text(SMALL + '\n[report]\ntitel = "x"\n')
    result = cli("run", str(small), "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "titel" in result.stderr


def test_negative_workers_is_exit_2(small, tmp_path, cli):
    result = cli("sweep", str(small), "--out", str(tmp_path / "o"), "--workers", "-3")
    assert result.returncode == 2
    assert "workers = -3" in result.stderr


def test_unreachable_dask_names_address_and_wait(small, tmp_path, monkeypatch):
    import schedlab.sweep as sweep_module

    monkeypatch.setattr(sweep_module, "DASK_CONNECT_TIMEOUT_S", 1)
    with pytest.raises(ScenarioError) as e:
        run_sweep(Scenario.from_toml(small), tmp_path / "o", dask="tcp://127.0.0.1:9", representative=False)
    assert "--dask tcp://127.0.0.1:9: no Dask scheduler answered within 1 s" in str(e.value)
    assert json.loads((tmp_path / "o" / RUN_INFO).read_text())["status"] == "failed"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.add_source(0, "bottleneck", {"model": "cbr", "rate_pps": 1}), "must be a list of link names"),
        (lambda s: s.add_source(0, ["bottleneck"], None), "add_source(arrivals=None): must be a table"),
        (lambda s: s.add_link("l", "1Mbit", 3), "add_link(scheduler=3): must be a table"),
    ],
)
def test_python_api_argument_errors_name_the_argument(call, message):
    with pytest.raises(ScenarioError) as e:
        call(Scenario.new(duration="1s"))
    assert message in str(e.value)


def test_add_link_accepts_the_kind_alone():
    s = Scenario.new(duration="1s").add_link("l", "1Mbit", "drr")
    assert s.data["link"][0]["scheduler"] == {"kind": "drr"}


LONG = """
[run]
duration = "100000s"
seed = 1
replications = 2

[[link]]
name = "l"
rate = "100Mbit"
scheduler = { kind = "drr" }

[[source]]
flow = 0
path = ["l"]
arrivals = { model = "poisson", rate_pps = 5000 }
size = { dist = "constant", size = 1000 }
"""


def _start(args: list[str], cwd) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "schedlab", *args],
        cwd=cwd,
        stderr=subprocess.PIPE,
        text=True,
        # A child started from a non-interactive shell may inherit an ignored SIGINT.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(path, process, seconds=120.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_run_stops_on_a_signal_and_leaves_nothing_that_looks_complete(tmp_path, signum, status):
    # Unstopped, this run takes minutes (two replications of 5e8 packets).
    (tmp_path / "long.toml").write_text(LONG)
    process = _start(["run", "long.toml", "--out", "o"], tmp_path)
    _wait_for(tmp_path / "o" / RUN_INFO, process)
    time.sleep(0.5)  # inside the first replication
    sent = time.monotonic()
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    stopped = time.monotonic() - sent
    assert process.returncode == status, stderr
    assert stopped < 10, f"took {stopped:.1f} s to stop"  # generous: CI machines are shared
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [RUN_INFO]
    assert json.loads((tmp_path / "o" / RUN_INFO).read_text())["status"] == "interrupted"
    assert "interrupted" in stderr


def test_sweep_stops_its_workers_on_ctrl_c(tmp_path):
    psutil = pytest.importorskip("psutil")
    (tmp_path / "long.toml").write_text(LONG + '[sweep]\nzip = { "source[0].arrivals.rate_pps" = [4000, 5000] }\n')
    process = _start(["sweep", "long.toml", "--out", "o", "--workers", "2"], tmp_path)
    _wait_for(tmp_path / "o" / RUN_INFO, process)
    deadline = time.monotonic() + 60
    while len(workers := psutil.Process(process.pid).children()) < 2:
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.1)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, "a worker process kept running"
    assert not (tmp_path / "o" / "sweep.csv").exists() and not (tmp_path / "o" / "sweep.json").exists()
    assert json.loads((tmp_path / "o" / RUN_INFO).read_text())["status"] == "interrupted"


def test_python_api_run_reports_progress_within_a_replication():
    calls = []
    scenario = Scenario.from_text(LONG.replace('"100000s"', '"200s"').replace("replications = 2", "replications = 1"))
    start = time.monotonic()
    import schedlab

    schedlab.run(scenario, progress=lambda done, total: calls.append((done, total)))
    fractions = [d for d, _ in calls if 0 < d < 1]
    assert calls[0] == (0, 1) and calls[-1] == (1, 1)
    # 2e6 packets take well over 0.2 s of wall time, so at least one report came from inside.
    assert time.monotonic() - start < 0.4 or fractions, calls
    assert fractions == sorted(fractions)


def test_version(cli):
    import schedlab

    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"schedlab {schedlab.__version__}"


def test_bracketed_text_survives_rich_markup(small, tmp_path, cli):
    assert "([scheduler] kind = ...)" in cli("list").stdout
    base = tmp_path / "base.toml"
    base.write_text(SMALL)
    result = cli("run", str(base), "--out", str(tmp_path / "o"))
    assert "the scenario has a [sweep]" in result.stderr
    assert "scenario's sweep table" in cli("--help").stdout


def test_every_help_example_uses_files_that_exist(cli):
    import re

    from conftest import REPO

    commands = ["replay", "validate", "run", "sweep", "report", "list"]
    for command in commands:
        text = " ".join(cli(command, "--help").stdout.split())
        example = text.split("Example:")[1]
        for path in re.findall(r"experiments/\S+", example):
            assert (REPO / path).exists(), f"`{command} --help` cites {path}, which does not exist"
    # The replay example runs as printed.
    example = " ".join(cli("replay", "--help").stdout.split()).split("Example: schedlab ")[1].split(" --summary")[0]
    assert "experiments/replay/drr.toml" in example


def test_mmpp_initial_state_default_is_what_the_code_does(cli):
    models = json.loads(cli("list", "--json").stdout)["traffic_models"]
    mmpp = next(m for m in models if m["id"] == "mmpp")
    initial = next(p for p in mmpp["params"] if p["name"] == "initial_state")
    assert initial["default"] != "0" and "stationary" in initial["description"]


def test_terminal_summary_shows_top_flows_and_a_total_unless_all(tmp_path, cli):
    flows = "".join(
        f'[[source]]\nflow = {i}\npath = ["l"]\narrivals = {{ model = "cbr", rate_pps = {1 + i % 7} }}\n'
        'size = { dist = "constant", size = 500 }\n'
        for i in range(60)
    )
    (tmp_path / "many.toml").write_text(
        '[run]\nduration = "5s"\nseed = 1\n[[link]]\nname = "l"\nrate = "1Mbit"\nscheduler = { kind = "drr" }\n' + flows
    )
    short = cli("run", str(tmp_path / "many.toml"), "--out", str(tmp_path / "a"))
    assert short.returncode == 0, short.stderr
    rows = [line for line in short.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 21 and rows[-1].split("│")[1].strip() == "all"
    assert "20 of 60 flows" in " ".join(short.stdout.split())
    every = cli("run", str(tmp_path / "many.toml"), "--out", str(tmp_path / "a"), "--all")
    assert len([line for line in every.stdout.splitlines() if line.startswith("│")]) == 60


def test_replay_stops_on_ctrl_c_and_leaves_no_departure_file(tmp_path):
    import os

    from conftest import REPO

    import schedlab

    rows = "".join(f"{k * 1e-5:.6f},{k % 7},500\n" for k in range(200_000))
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,flow,size_bytes\n" + rows)  # 3.6 MB: several watcher calls
    out = tmp_path / "dep.csv"
    calls = []

    def progress(done, total):
        calls.append(done)
        if len(calls) == 1:  # Ctrl-C as the replay starts; the next check must stop it
            os.kill(os.getpid(), signal.SIGINT)

    # Python keeps an inherited SIG_IGN (pytest started as a background job of a
    # non-interactive shell): give this process the interactive default for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            schedlab.replay(REPO / "experiments/replay/drr.toml", trace, out, progress)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not out.exists() and not (tmp_path / "dep.csv.partial").exists()
    assert calls == [0]
    done = schedlab.replay(REPO / "experiments/replay/drr.toml", trace, out)
    assert done["packets"] == 200_000 and out.exists()


def _folder_bytes(folder) -> dict:
    """Every file under ``folder`` but the run-info, by relative path."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != RUN_INFO
    }


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_same_seed_gives_byte_identical_outputs_but_run_info(small, tmp_path, cli, command):
    """Result tables, point files, figures (PNG and SVG) and report.html are the same bytes
    for the same scenario and seed; only run-info.json holds wall-clock facts."""
    folders = [tmp_path / "a", tmp_path / "b"]
    for out in folders:
        extra = ["--workers", "1"] if command == "sweep" else []
        done = cli(command, str(small), "--out", str(out), "--report", *extra)
        assert done.returncode == 0, done.stderr
    first, second = (_folder_bytes(out) for out in folders)
    assert any(name.endswith(".svg") for name in first) and "report.html" in first
    assert first.keys() == second.keys()
    differing = [name for name in first if first[name] != second[name]]
    assert differing == []
    for name, content in first.items():
        if name.endswith((".json", ".csv")):
            assert b"wall_time_s" not in content, name
    info = json.loads((folders[0] / RUN_INFO).read_text())
    assert info["wall_time_s"] > 0
    if command == "run":
        assert info["simulation"]["wall_time_s"] > 0
        assert len(info["simulation"]["replications"]) == 2


def test_scenario_new_rejects_an_unknown_run_key_naming_the_accepted_ones():
    with pytest.raises(ScenarioError, match=r"duraton='1s'.*accepted: name, duration, packets, warmup, seed"):
        Scenario.new(duraton="1s")
    assert Scenario.new(duration="1s", seed=3).data["run"] == {"duration": "1s", "seed": 3}


COMPACT = """
[run]
duration = "2s"
seed = 5
[[link]]
name = "l"
rate = "10Mbit"
scheduler = { kind = "drr" }
[[source]]
count = 50
flow = 1000
name = "web"
path = ["l"]
arrivals = { model = "cbr", rate_pps = { each = [%s] } }
size = { dist = "constant", size = 500 }
[[source]]
file = "flows.csv"
path = ["l"]
arrivals = { model = "cbr", rate_pps = 1 }
size = { dist = "constant", size = 500 }
"""


def test_compact_sources_run_from_the_cli_and_the_api(tmp_path, cli):
    (tmp_path / "flows.csv").write_text("flow,name,arrivals.rate_pps\n7,video,40\n8,,\n")
    path = tmp_path / "compact.toml"
    path.write_text(COMPACT % ", ".join(str(1 + i) for i in range(50)))
    result = cli("run", str(path), "--out", str(tmp_path / "out"), "--json")
    assert result.returncode == 0, result.stderr
    flows = {f["flow"]: f for f in json.loads(result.stdout)["flows"]}
    assert len(flows) == 52
    # CBR from t = 0 for 2 s at r packets/s sends 2r packets.
    assert flows[1000]["name"] == "web0" and flows[1000]["received"] == 2
    assert flows[1049]["name"] == "web49" and flows[1049]["received"] == 100
    assert flows[7]["name"] == "video" and flows[7]["received"] == 80
    assert flows[8]["name"] == "flow8" and flows[8]["received"] == 2
    info = json.loads(cli("validate", str(path), "--json").stdout)
    assert info["flow_count"] == 52 and len(info["flows"]) == 52


def test_bad_compact_sources_are_exit_2_naming_key_value_and_line(tmp_path, cli):
    (tmp_path / "flows.csv").write_text("flow,arrivals.rate_pps\n7,40\n8,-3\n")
    path = tmp_path / "compact.toml"
    path.write_text(COMPACT % "1, 2")
    short = cli("validate", str(path))
    assert short.returncode == 2
    message = " ".join(short.stderr.split())
    assert "source[0].arrivals.rate_pps.each = (2 values)" in message and "count = 50" in message
    assert f"{path}:14" in message
    path.write_text(COMPACT % ", ".join(["1"] * 50))
    bad_row = cli("run", str(path), "--out", str(tmp_path / "out"))
    assert bad_row.returncode == 2
    message = " ".join(bad_row.stderr.split())
    assert "source[1].arrivals.rate_pps = -3" in message and "flow 8, flows.csv line 3" in message
    assert not (tmp_path / "out").exists()
