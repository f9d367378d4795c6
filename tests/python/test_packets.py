"""`schedlab run --packets FILE [--packets-flows …]`: one row per measured packet of
replication 0, with the replay's columns, agreeing with the run's own counters."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIO = (REPO / "experiments" / "examples" / "single_bottleneck.toml").read_text()


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "single.toml"
    path.write_text(
        SCENARIO.replace('duration = "100s"', 'duration = "20s"').replace("replications = 5", "replications = 2")
    )
    return path


def test_packets_agree_with_the_counters(cli, scenario, tmp_path):
    out, packets = tmp_path / "out", tmp_path / "packets.csv"
    result = cli("run", str(scenario), "--out", str(out), "--packets", str(packets), "--packets-flows", "0,2")
    assert result.returncode == 0, result.stderr
    rows = pd.read_csv(packets)
    assert list(rows.columns) == ["flow", "seq", "size_bytes", "arrival_s", "start_s", "departure_s", "outcome"]
    assert sorted(rows["flow"].unique()) == [0, 2]
    flows = pd.read_csv(out / "flows.csv")
    first = flows[flows["replication"] == 0].set_index("flow")
    for flow in (0, 2):
        mine = rows[rows["flow"] == flow]
        assert len(mine) == first.loc[flow, "sent"]
        assert mine["seq"].tolist() == list(range(len(mine)))
        sent = mine[mine["outcome"] == "sent"]
        assert len(sent) == first.loc[flow, "received"]
        delay = (sent["departure_s"] - sent["arrival_s"]).mean()
        assert delay == pytest.approx(first.loc[flow, "delay_mean_s"], rel=1e-6)
        assert (sent["start_s"] >= sent["arrival_s"]).all()
        assert (sent["departure_s"] > sent["start_s"]).all()
        assert (mine["arrival_s"] >= 5.0).all()  # after the 5 s warm-up
    assert "rows of replication 0" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (("--packets-flows", "0"), "needs --packets FILE"),
        (("--packets", "P", "--packets-flows", "9"), "flow 9 is not a flow"),
        (("--packets", "P", "--packets-flows", "a,b"), "--packets-flows = 'a,b'"),
    ],
)
def test_bad_packet_options_are_exit_2(cli, scenario, tmp_path, args, message):
    args = tuple(str(tmp_path / "p.csv") if a == "P" else a for a in args)
    result = cli("run", str(scenario), "--out", str(tmp_path / "out"), *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()
