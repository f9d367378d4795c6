"""Runs with many flows: ``summary.json`` is written and read a flow row at a time, the
terminal and the report show the worst flows and distributions instead of every row."""

from __future__ import annotations

import json
import re

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
