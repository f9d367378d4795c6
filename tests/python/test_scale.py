"""Runs with many flows: ``summary.json`` is written and read a flow row at a time, the
terminal and the report show the worst flows and distributions instead of every row."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from schedlab.api import load_summary, run
from schedlab.report import TABLE_FLOWS, write_report

MANY = """
name = "many"
[run]
duration = "2s"
seed = 3
replications = 2

[[link]]
name = "l"
rate = "10Mbit"
scheduler = { kind = "drr" }

[[source]]
count = 80
path = ["l"]
arrivals = { model = "poisson", rate_pps = { each = [%s] } }
size = { dist = "constant", size = 500 }
"""


def _scenario(tmp_path, flows: int = 80):
    path = tmp_path / "many.toml"
    path.write_text(MANY.replace("count = 80", f"count = {flows}") % ", ".join(str(5 + i) for i in range(flows)))
    return path


def test_load_summary_reads_only_the_chosen_columns_of_every_flow(tmp_path):
    out = tmp_path / "out"
    run(_scenario(tmp_path), out)
    whole = json.loads((out / "summary.json").read_text())
    head, flows = load_summary(out, ["flow", "delay_mean_s", "no_such_key"])
    assert "flows" not in head and head["flow_count"] == 80
    assert head["links"] == whole["links"] and head["run"] == whole["run"]
    assert list(flows.columns) == ["flow", "delay_mean_s"]
    assert flows["flow"].tolist() == [f["flow"] for f in whole["flows"]]
    assert flows["delay_mean_s"].tolist() == [f["delay_mean_s"] for f in whole["flows"]]
    _, every = load_summary(out)
    assert list(every.columns) == list(whole["flows"][0])


def test_report_of_many_flows_has_a_table_of_the_worst_flows(tmp_path):
    out = tmp_path / "out"
    results = run(_scenario(tmp_path), out)
    page = write_report(out).read_text()
    assert f"The {TABLE_FLOWS} flows with the largest mean delay, of 80" in page
    table = page[page.index(f"The {TABLE_FLOWS} flows") :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>\s*<td>(\d+)</td>", table)
    worst = results.flows.sort_values("delay_mean_s", ascending=False, kind="stable")["flow"].head(TABLE_FLOWS)
    assert [int(r) for r in rows] == worst.tolist()


def test_report_of_few_flows_lists_every_flow(tmp_path):
    out = tmp_path / "out"
    run(_scenario(tmp_path, flows=TABLE_FLOWS), out)
    page = write_report(out).read_text()
    assert "Per-flow results (every metric" in page and "largest mean delay, of" not in page


def test_cli_json_prints_the_written_summary(tmp_path, cli):
    out = tmp_path / "out"
    result = cli("run", str(_scenario(tmp_path)), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (out / "summary.json").read_text()


HUGE = """
name = "huge"
[run]
duration = "1000s"
bin = "1ms"

[[link]]
name = "l"
rate = "10Mbit"

[[source]]
count = 10000
path = ["l"]
arrivals = { model = "poisson", rate_pps = 1 }
size = { dist = "constant", size = 500 }
"""


def test_a_run_that_cannot_fit_is_refused_before_writing_anything(tmp_path, cli):
    """10^6 time bins of 10,000 flows: 160 GB of time series (16 B per flow and bin) on a
    24 GB machine."""
    path = tmp_path / "huge.toml"
    path.write_text(HUGE)
    out = tmp_path / "out"
    result = cli("run", str(path), "--out", str(out))
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    # 160 MB + 10^4 x 1.8 kB + the sources' calendar (10^4 x about 65 B) fixed,
    # 10^4 x (1.55 kB + 10^6 x 16 B) + 10^6 x 400 B per replication.
    assert "needs about 160.6 GB of memory" in message, message
    assert (
        "179 MB for the program and the flows + 1 replication(s) x 160.4 GB" in message
        and "is available (" in message
        and "--no-memory-check" in message
    )
    assert not out.exists()
    # --no-memory-check gets past the estimate (to the next check, a flow that is not there).
    skipped = cli(
        "run",
        str(path),
        "--out",
        str(out),
        "--no-memory-check",
        "--packets",
        str(tmp_path / "p.csv"),
        "--packets-flows",
        "50000",
    )
    assert skipped.returncode == 2 and "flow 50000 is not a flow" in skipped.stderr, skipped.stderr
    assert not out.exists()


def test_a_sweep_whose_workers_cannot_fit_is_refused(tmp_path, cli):
    path = tmp_path / "huge.toml"
    path.write_text(HUGE + '\n[sweep]\n[sweep.zip]\n"link[0].rate" = ["10Mbit", "20Mbit"]\n')
    out = tmp_path / "out"
    result = cli("sweep", str(path), "--out", str(out), "--workers", "2")
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert (
        "needs about 321.2 GB" in message and "2 worker(s) x 160.6 GB" in message and "--no-memory-check" in message
    ), message
    assert not out.exists()


def test_the_estimate_is_within_a_factor_two_of_the_measured_peak(tmp_path):
    """20,000 light flows, 2 replications: the estimate against the peak RSS of `schedlab run`
    (measured in a child process that waits for it, so no other child's peak counts)."""
    from schedlab.api import validate

    path = _scenario(tmp_path, flows=20_000)
    text = path.read_text().replace('duration = "2s"', 'duration = "3s"')
    text = re.sub(r"rate_pps = \{ each = \[[^]]*\] \}", "rate_pps = 1", text)
    path.write_text(text)
    estimate = validate(path, flows=False)["memory_estimate"]["total_bytes"]
    child = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-m', 'schedlab', 'run', sys.argv[1], '--out', sys.argv[2]],"
        " capture_output=True)\n"
        "assert done.returncode == 0, done.stderr\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    )
    measured = subprocess.run(
        [sys.executable, "-c", child, str(path), str(tmp_path / "out")], capture_output=True, text=True, timeout=600
    )
    assert measured.returncode == 0, measured.stderr
    peak = int(measured.stdout)
    assert 0.5 <= estimate / peak <= 2.0, (estimate, peak)
