"""Scenario key paths, sweep expansion, statistics and theory formulas (no simulation)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab import theory
from schedlab.scenario import Scenario, ScenarioError, get_path, set_path
from schedlab.stats import jain_index, mean_ci95

BASE = """
[run]
duration = "10s"
replications = 2

[[link]]
name = "bottleneck"
rate = "1Mbit"
scheduler = { kind = "drr", quantum = 1500 }

[[source]]
flow = 0
path = ["bottleneck"]
arrivals = { model = "poisson", rate_pps = 10 }

[[source]]
flow = 1
path = ["bottleneck"]
arrivals = { model = "poisson", rate_pps = 5 }
"""


def test_key_paths_get_and_set():
    data = Scenario.from_text(BASE).data
    assert get_path(data, "source[1].arrivals.rate_pps") == 5
    set_path(data, "link[0].scheduler.kind", "fifo")
    assert data["link"][0]["scheduler"]["kind"] == "fifo"
    set_path(data, "source[0].params.quantum", 2000)  # creates the params table
    assert data["source"][0]["params"] == {"quantum": 2000}
    with pytest.raises(ScenarioError, match=r"index \[5\] does not exist"):
        set_path(data, "source[5].flow", 1)
    with pytest.raises(ScenarioError, match="not a key path segment"):
        set_path(data, "source[x].flow", 1)
    with pytest.raises(KeyError):
        get_path(data, "link[0].nope")


def test_sweep_grid_times_zip():
    text = (
        BASE
        + """
[sweep]
x = "source[1].arrivals.rate_pps"
[sweep.grid]
"link[0].scheduler.kind" = ["drr", "fifo"]
[sweep.zip]
"source[1].arrivals.rate_pps" = [5, 10, 20]
"link[0].scheduler.quantum" = [500, 1000, 2000]
"""
    )
    s = Scenario.from_text(text)
    points = s.points()
    assert len(points) == 6
    assert s.sweep.series == "link[0].scheduler.kind"
    assert points[4].values == {
        "link[0].scheduler.kind": "fifo",
        "source[1].arrivals.rate_pps": 10,
        "link[0].scheduler.quantum": 1000,
    }
    assert points[4].scenario.get("link[0].scheduler") == {"kind": "fifo", "quantum": 1000}
    # The base scenario is unchanged and the simulation TOML carries no front tables.
    assert s.get("source[1].arrivals.rate_pps") == 5
    assert "sweep" not in points[0].scenario.to_toml(include_front=False)


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ('[sweep.zip]\n"a" = [1, 2]\n"b" = [1]\n', "same length"),
        ("[sweep]\nsteps = 3\n", "sweep.steps = 3: unknown key"),
        ('[sweep.grid]\n"a" = []\n', "non-empty list"),
        ('[sweep]\nx = "b"\n[sweep.grid]\n"a" = [1]\n', "sweep.x = 'b'"),
    ],
)
def test_bad_sweeps_name_the_key(sweep, message):
    with pytest.raises(ScenarioError, match=message):
        Scenario.from_text(BASE + sweep).points()


def test_building_in_code_round_trips_through_toml():
    s = (
        Scenario.new(duration="1s", seed=3)
        .add_link("l", "1Mbit", {"kind": "fifo"})
        .add_source(0, ["l"], {"model": "cbr", "rate_pps": 100}, {"dist": "constant", "bytes": 100})
    )
    again = Scenario.from_text(s.to_toml())
    assert again.data == s.data


def test_mean_ci95_student_t_and_normal():
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    mean, half = mean_ci95(values)
    # t(0.975, 4) = 2.776445; s = sqrt(2.5)
    assert mean == 3.0
    assert half == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert mean_ci95(values, "normal")[1] == pytest.approx(1.96 * math.sqrt(2.5) / math.sqrt(5))
    assert math.isnan(mean_ci95([1.0])[1])


@given(st.lists(st.floats(min_value=0.0, max_value=1e9), min_size=1, max_size=50))
def test_jain_index_is_between_1_over_n_and_1(values):
    j = jain_index(values)
    if not any(values):
        assert math.isnan(j)
    else:
        assert 1 / len(values) - 1e-9 <= j <= 1 + 1e-9


def test_thesis_max_vacation_example():
    # Thesis §5.1.1: Q_BE = 2666 B at 250 kbit/s gives 85.3 ms.
    assert theory.drr_plusplus_max_vacation(2666, 250_000) == pytest.approx(0.0853, abs=5e-5)


def test_drr_plusplus_mean_delay_formula():
    # Q_i = 4000 B = 32000 bit; nu = floor(2000/410) = 4; BNBW = 250 kbit/s, lambda = 15 pkt/s.
    expected = 0.5 * 32000 / (250_000 - 32000 * 15 / 4)
    assert theory.drr_plusplus_mean_delay(2000, 2000, 250_000, 15, 410) == pytest.approx(expected)
    assert math.isnan(theory.drr_plusplus_mean_delay(2000, 2000, 100_000, 15, 410))


def test_queueing_formulas():
    assert theory.mm1_mean_delay(50, 100) == pytest.approx(0.02)
    # M/D/1 at rho = 0.5: 1/mu + rho/(2 mu (1-rho)) = 0.01 + 0.005
    assert theory.md1_mean_delay(50, 100) == pytest.approx(0.015)


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ('[report]\ntitel = "x"\n', "report.titel = 'x': unknown key"),
        ('[[report.theory]]\nmodel = "mm2"\n', "report.theory[0].model = 'mm2': unknown model"),
        (
            '[[report.theory]]\nmodel = "mm1_mean_delay"\narrival_rate_pps = "source[0].nothing"\nservice_rate_pps = 1\n',
            "report.theory[0].arrival_rate_pps = 'source[0].nothing'",
        ),
        ('[[report.theory]]\nmodel = "mm1_mean_delay"\narrival_rate_pps = 1\n', "report.theory[0]: "),
    ],
)
def test_bad_report_tables_name_the_key(report, message):
    with pytest.raises(ScenarioError, match=re.escape(message)):
        theory.validate_report(Scenario.from_text(BASE + report).data)


def test_theory_overlay_reads_key_paths_and_units():
    data = Scenario.from_text(BASE).data
    table = {"model": "mm1_mean_delay", "arrival_rate_pps": "source[1].arrivals.rate_pps", "service_rate_pps": 10}
    assert theory.evaluate(table, data) == pytest.approx(1 / (10 - 5))
    table = {"model": "drr_plusplus_max_vacation", "quantum_be": 2666, "bottleneck": "250kbit"}
    assert theory.evaluate(table, data) == pytest.approx(2666 * 8 / 250_000)
