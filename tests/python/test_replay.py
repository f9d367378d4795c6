"""`schedlab replay` and `schedlab list` through the command line and the Python API."""

from __future__ import annotations

import csv
import json

import pytest

import schedlab

DRR = """
[link]
rate = "8Mbit"
[scheduler]
kind = "drr"
quantum = 500
[[flow]]
id = 9
quantum = 1000
"""

TRACE = "time_s,flow,size_bytes\n0,9,500\n0,9,500\n0,9,500\n0,9,500\n0,4,500\n0,4,500\n"


@pytest.fixture
def files(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(DRR)
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    return config, trace, tmp_path / "d.csv"


def test_replay_writes_departures_in_input_order(files, cli):
    config, trace, out = files
    result = cli("replay", "--config", str(config), "--trace", str(trace), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0].keys()) == [
        "flow",
        "seq",
        "size_bytes",
        "arrival_s",
        "start_s",
        "departure_s",
        "outcome",
        "drop_reason",
    ]
    assert all(r["drop_reason"] == "" for r in rows if r["outcome"] == "sent")
    # quantum 1000 vs 500 with 500-byte packets: flow 9 sends two per round, flow 4 one.
    starts = [(r["flow"], r["seq"], r["start_s"]) for r in rows]
    assert starts == [
        ("9", "0", "0.000000000"),
        ("9", "1", "0.000500000"),
        ("9", "2", "0.001500000"),
        ("9", "3", "0.002000000"),
        ("4", "0", "0.001000000"),
        ("4", "1", "0.002500000"),
    ]
    summary = json.loads(result.stdout)
    assert summary["discipline"] == "drr"
    assert [f["flow"] for f in summary["flows"]] == [9, 4]
    assert summary["flows"][1]["delay_max_s"] == pytest.approx(0.003)


def test_replay_summary_prints_a_table(files, cli):
    config, trace, out = files
    result = cli("replay", "-c", str(config), "-t", str(trace), "-o", str(out), "--summary")
    assert result.returncode == 0, result.stderr
    assert "drr: 6 packets" in result.stdout
    assert "3.000 ms" in result.stdout  # flow 4's largest delay


@pytest.mark.parametrize(
    ("replace", "expected"),
    [
        (("quantum = 1000", "quantum = 0"), "c.toml:9: flow[0].quantum = 0"),
        (('kind = "drr"', 'kind = "drrr"'), 'scheduler.kind = "drrr": unknown discipline'),
        (('rate = "8Mbit"', 'rate = "-8Mbit"'), 'link.rate = "-8Mbit"'),
        (("quantum = 500", "quantom = 500"), "scheduler.quantom = 500: unknown key"),
        (("id = 9", "id = 9\nweight = -2"), "flow[0].weight = -2"),
    ],
)
def test_bad_config_exits_2_naming_key_and_value(files, cli, replace, expected):
    config, trace, out = files
    config.write_text(DRR.replace(*replace))
    result = cli("replay", "-c", str(config), "-t", str(trace), "-o", str(out))
    assert result.returncode == 2
    assert expected in result.stderr.replace("\n", "")
    assert not out.exists(), "no output that looks complete"


@pytest.mark.parametrize(
    ("trace_text", "expected"),
    [
        (
            "time_s,flow,size_bytes\n0.2,1,100\n0.1,1,100\n",
            ':3: time_s = "0.1": times must be non-decreasing',
        ),
        ("time_s,flow,size_bytes\n0.1,1,big\n", ':2: size_bytes = "big"'),
        ("time_s,flow,size_bytes\n0.1,1\n", ":2: row"),
        ("time,flow,size_bytes\n0.1,1,1\n", "time_s"),
    ],
)
def test_bad_trace_exits_2_naming_line_field_and_value(files, cli, trace_text, expected):
    config, trace, out = files
    trace.write_text(trace_text)
    result = cli("replay", "-c", str(config), "-t", str(trace), "-o", str(out))
    assert result.returncode == 2
    assert expected in result.stderr.replace("\n", "")
    assert not out.exists()


def test_missing_file_exits_2(files, cli, tmp_path):
    config, _, out = files
    result = cli("replay", "-c", str(config), "-t", str(tmp_path / "nope.csv"), "-o", str(out))
    assert result.returncode == 2
    assert "nope.csv" in result.stderr


def test_python_api_replay_raises_input_error(files):
    config, trace, out = files
    assert schedlab.replay(config, trace, out)["packets"] == 6
    config.write_text(DRR.replace('rate = "8Mbit"', 'rate = "fast"'))
    with pytest.raises(schedlab.InputError, match=r"link.rate = \"fast\""):
        schedlab.replay(config, trace, out)
    with pytest.raises(ValueError):  # InputError is a ValueError
        schedlab.replay(config, trace, out)


def test_list_names_every_discipline_with_units(cli):
    result = cli("list", "--json")
    assert result.returncode == 0
    infos = {d["id"]: d for d in json.loads(result.stdout)["disciplines"]}
    assert {"fifo", "drr"} <= set(infos)
    assert infos["drr"]["flow_params"][0] == {
        "name": "quantum",
        "unit": "bytes",
        "default": "scheduler quantum",
        "description": "bytes added to the flow's deficit per round",
    }
    text = cli("list").stdout
    assert "scheduler.quantum [bytes], default 1500" in text
    assert "rate_pps [packets/s], default required" in text


def test_list_names_traffic_models_and_size_distributions(cli):
    data = json.loads(cli("list", "--json").stdout)
    models = {m["id"] for m in data["traffic_models"]}
    assert {"cbr", "poisson", "on_off", "pareto_on_off", "mmpp", "mpeg", "trace"} == models
    assert "thesis_best_effort" in {d["id"] for d in data["size_distributions"]}


DWCS_DEADLINES = """
[link]
rate = "8Mbit"
[scheduler]
kind = "dwcs"
[[flow]]
id = 0
loss_tolerance = "1/2"
deadline_gap = "10ms"
droppable = true
[[flow]]
id = 1
loss_tolerance = "0/100"
"""


def test_dwcs_reads_the_trace_deadline_of_a_packet(tmp_path):
    """A zero-tolerance blocker holds the 8 Mbit/s link (1 ms per 1000-byte packet) until
    3 ms. Flow 0's first packet carries deadline_s = 0.0005: late at the check of 1 ms and
    dropped; without it its deadline would be arrival + gap = 10 ms. The second packet has no
    deadline of its own: the dropped one's + gap, 10.5 ms, met at 3 ms."""
    config = tmp_path / "dwcs.toml"
    config.write_text(DWCS_DEADLINES)
    trace = tmp_path / "t.csv"
    trace.write_text(
        "time_s,flow,size_bytes,class,deadline_s\n0,1,1000,,\n0,1,1000,,\n0,1,1000,,\n0,0,1000,,0.0005\n0,0,1000,,\n"
    )
    out = tmp_path / "d.csv"
    schedlab.replay(str(config), str(trace), str(out))
    rows = list(csv.DictReader(out.open()))
    assert [(r["outcome"], r["drop_reason"]) for r in rows[3:]] == [("dropped", "late"), ("sent", "")]
    assert rows[4]["start_s"] == "0.003000000"
    # The same trace without the deadline column: both flow-0 packets are sent.
    trace.write_text("time_s,flow,size_bytes\n0,1,1000\n0,1,1000\n0,1,1000\n0,0,1000\n0,0,1000\n")
    schedlab.replay(str(config), str(trace), str(out))
    assert [r["outcome"] for r in csv.DictReader(out.open())] == ["sent"] * 5
