"""`schedlab reproduce`: the registry covers every result, claims are evaluated correctly, and
known-good claims (DWCS figure 1's schedule, EWRR's 1:2:4 without QoS and equal shares with
it) come out `match` in a --quick run."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import tomllib

from schedlab import reproduce as rp

PAPERS = {"zhang", "wang", "dwcs", "ewrr", "vd"}


def test_registry_covers_every_paper_with_unique_result_ids(cli):
    result = cli("reproduce", "--list", "--json")
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)
    assert {e["paper"] for e in entries} == PAPERS
    keys = [(e["paper"], e["result"]) for e in entries]
    assert len(keys) == len(set(keys))
    for e in entries:
        assert set(e) >= {"paper", "result", "title", "status"}
        assert e["status"] == "expressible" or e["status"].startswith("needs ")
    # Results the papers number and the issue names explicitly.
    for key in [("zhang", "fig5.1"), ("zhang", "tab5.2"), ("zhang", "fig5.14"), ("wang", "fig11"), ("dwcs", "fig4a")]:
        assert key in keys
    for key in [("ewrr", "fig17"), ("ewrr", "tab1"), ("vd", "fig8")]:
        assert key in keys
    by_key = {(e["paper"], e["result"]): e for e in entries}
    assert by_key[("wang", "fig3")]["status"] == "expressible"
    assert "real gateway" in by_key[("zhang", "fig4.4")]["status"]
    assert by_key[("vd", "fig4")]["status"] == "expressible"
    assert by_key[("vd", "fig5")]["status"] == "expressible"
    assert "gateway" in by_key[("vd", "fig7")]["status"]


def test_every_registered_scenario_validates():
    """Each expressible result's scenario (and every point of its sweep) passes the Rust
    validator, so a change to the scenario format cannot silently break a reproduction."""
    from schedlab.api import validate

    results = [r for p in rp.registry() for r in p.results if r.needs is None]
    assert len(results) >= 15
    for result in results:
        if result.generator is not None:
            # Generated scenarios (hundreds of streams): every one is built, shortened and
            # checked by the Rust validator with each point of its sweep.
            from schedlab.api import validate_point

            for _values, scenario in result.generated(quick=True):
                short = rp._shortened(scenario, result, quick=True)
                assert result.quick, result.id
                for key, value in result.quick.items():
                    assert short.get(key) == value != scenario.get(key), (result.id, key)
                for point in short.points():
                    validate_point(point)
            continue
        info = validate(result.scenario)
        assert info["flows"], result.id
        quick = rp.scenario_for(result, quick=True)
        assert quick.replications <= 2


def _verdicts(path):
    doc = json.loads(path.read_text())
    assert set(doc) >= {"paper", "result", "title", "status", "claims", "quick"}
    for claim in doc["claims"]:
        assert set(claim) >= {"id", "statement", "source", "paper", "ours", "verdict", "why"}
        assert claim["verdict"] in rp.VERDICTS
        assert claim["statement"] and claim["source"] and claim["why"]
    return doc, {c["id"]: c for c in doc["claims"]}


def test_quick_run_known_good_claims_match(cli, tmp_path):
    out = tmp_path / "repro"
    for args in (("dwcs", "fig1"), ("ewrr", "fig7", "fig8")):
        result = cli("reproduce", *args, "--out", str(out), "--quick")
        assert result.returncode == 0, result.stderr + result.stdout
    doc, claims = _verdicts(out / "dwcs" / "fig1" / "verdict.json")
    assert doc["quick"] is True and doc["error"] is None
    for claim in ("share_s1", "share_s2", "share_s3", "loss_s2", "loss_s3", "no_violations"):
        assert claims[claim]["verdict"] == "match", claims[claim]
    assert claims["share_s1"]["ours"]["value"] == pytest.approx(0.5, abs=0.005)
    assert claims["share_s1"]["paper"]["source"].startswith("§3, figure 1")
    links = pd.read_csv(out / "dwcs" / "fig1" / "data_links.csv")
    assert links["loss_tolerance_violations"].tolist() == [0]
    assert links["deadlines_missed"].iloc[0] > 0
    _, claims = _verdicts(out / "ewrr" / "fig7" / "verdict.json")
    assert claims["ratio_4"]["verdict"] == "match"
    assert claims["ratio_4"]["ours"]["value"] == pytest.approx(4.0, rel=0.02)
    _, claims = _verdicts(out / "ewrr" / "fig8" / "verdict.json")
    assert claims["equal_shares_a"]["verdict"] == "match"
    assert claims["class1_gets_its_input"]["verdict"] == "match"
    for result in ("dwcs/fig1", "ewrr/fig7", "ewrr/fig8"):
        folder = out / result
        assert (folder / "figure.png").stat().st_size > 1000
        assert (folder / "figure.svg").exists()
        assert not pd.read_csv(folder / "data.csv").empty
    page = (out / "reproduction.html").read_text()
    assert "ewrr" in page and "equal_shares_a" in page and "data:image/png;base64," in page


def test_quick_run_on_a_dask_local_cluster(cli, tmp_path):
    """``--dask ADDRESS``: the tasks run on a local Dask cluster (2 worker processes) and give
    the same data and verdicts as the local process pool."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        args = ("dwcs", "fig1", "--quick", "--dask", cluster.scheduler_address)
        result = cli("reproduce", *args, "--out", str(tmp_path / "dask"))
        assert result.returncode == 0, result.stderr + result.stdout
    sweep = json.loads((tmp_path / "dask" / "dwcs" / "_runs" / "fig1_schedule_quick" / "sweep.json").read_text())
    assert sweep["executor"].startswith("dask tcp://")
    local = cli("reproduce", "dwcs", "fig1", "--quick", "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    for name in ("data.csv", "data_links.csv"):
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / "dask" / "dwcs" / "fig1" / name),
            pd.read_csv(tmp_path / "local" / "dwcs" / "fig1" / name),
        )
    _, claims = _verdicts(tmp_path / "dask" / "dwcs" / "fig1" / "verdict.json")
    assert {c["verdict"] for c in claims.values()} == {"match"}


def test_not_expressible_result_gets_that_verdict(cli, tmp_path):
    result = cli("reproduce", "zhang", "fig4.4", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    doc, claims = _verdicts(tmp_path / "zhang" / "fig4.4" / "verdict.json")
    assert all(c["verdict"] == "not_expressible" for c in claims.values())
    assert "real gateway" in next(iter(claims.values()))["why"]


def test_wang_router_model_figures_run_with_their_claims(cli, tmp_path):
    """Paper 001's figures run issue 10's experiments/wang2001 scenarios; policies swept as whole
    tables are selected by their label. Fixed-Priority starving Bronze (figure 5), Dynamic-Link
    protecting Gold (figure 4) and the policies' equal overall drop rates (figure 7) are
    known-good; Silver under Dynamic-Link is the known mismatch."""
    result = cli("reproduce", "wang", "fig4", "fig5", "fig7", "--out", str(tmp_path), "--quick")
    assert result.returncode == 0, result.stderr + result.stdout
    _, claims = _verdicts(tmp_path / "wang" / "fig5" / "verdict.json")
    assert {c["verdict"] for c in claims.values()} == {"match"}
    assert claims["fixed_priority_bronze_above_gold"]["ours"]["than"]["value"] > 0.5
    _, claims = _verdicts(tmp_path / "wang" / "fig4" / "verdict.json")
    assert claims["dynamic_gold_near_zero"]["verdict"] == "match"
    assert claims["dynamic_silver_below_default"]["verdict"] == "mismatch"
    assert "Silver" in claims["dynamic_silver_below_default"]["explanation"]
    _, claims = _verdicts(tmp_path / "wang" / "fig7" / "verdict.json")
    # The four policies' overall drop rates (dropped / sent over all flows) differ by less than
    # the paper's 0.2 percentage points.
    assert claims["overall_rates_close"]["verdict"] == "match"
    assert len(claims["overall_rates_close"]["ours"]["values"]) == 4
    assert 0 <= claims["overall_rates_close"]["ours"]["value"] < 0.2
    data = pd.read_csv(tmp_path / "wang" / "fig5" / "data.csv")
    assert "adaptive share=[0.4, 0.3, 0.3] interval=100ms" in set(data["link[0].scheduler"])


@pytest.mark.parametrize(
    "args, message",
    [
        (("nosuch", "--out", "x"), "PAPER = 'nosuch'"),
        (("dwcs", "fig99", "--out", "x"), "RESULT = 'fig99'"),
        (("dwcs", "fig1"), "--out"),
        (("--all", "dwcs", "--out", "x"), "--all"),
    ],
)
def test_bad_command_line_is_exit_2_naming_it(cli, args, message):
    result = cli("reproduce", *args)
    assert result.returncode == 2
    assert message in result.stderr


def _write_paper(folder, result_toml: str, values: str = "key,value,unit,source\nk,2,x,p. 1\n"):
    folder.mkdir()
    (folder / "reproduce.toml").write_text('paper = "dwcs"\n' + result_toml)
    (folder / "paper_values.csv").write_text(values)


@pytest.mark.parametrize(
    "result_toml, message",
    [
        ('[[result]]\nid = "fig1"\ntitle = "t"\nneeds = "x"\ncolour = 1\n', "colour"),
        ('[[result]]\nid = "figure1"\ntitle = "t"\nneeds = "x"\n', "id = 'figure1'"),
        ('[[result]]\nid = "fig1"\ntitle = "t"\n', "exactly one of scenario, generator and needs"),
        ('[[result]]\nid = "fig1"\ngenerator = "gen.py"\n', "file.py:function"),
        ('[[result]]\nid = "fig1"\ngenerator = "gen.py:points"\n', "no such file"),
        ('[[result]]\nid = "fig1"\nscenario = "missing.toml"\n', "missing.toml"),
        (
            '[[result]]\nid = "fig1"\nneeds = "x"\n[[result.claim]]\nid = "c"\nstatement = "s"\nsource = "p"\n'
            'check = "compare"\nours = { metric = "m" }\npaper = "nokey"\n',
            "paper = 'nokey'",
        ),
        (
            '[[result]]\nid = "fig1"\nneeds = "x"\n[[result.claim]]\nid = "c"\nstatement = "s"\nsource = "p"\n'
            'check = "guess"\n',
            "check = 'guess'",
        ),
    ],
)
def test_bad_registry_entries_name_the_key(tmp_path, result_toml, message):
    _write_paper(tmp_path / "p", result_toml)
    with pytest.raises(rp.ReproduceError, match=message.replace("(", r"\(").replace("[", r"\[")):
        rp.load_paper("dwcs", tmp_path / "p")


def test_paper_values_need_a_number_and_a_source(tmp_path):
    _write_paper(tmp_path / "a", "", "key,value,unit,source\nk,two,x,p. 1\n")
    with pytest.raises(rp.ReproduceError, match="value = 'two'"):
        rp.load_paper("dwcs", tmp_path / "a")
    _write_paper(tmp_path / "b", "", "key,value,unit,source\nk,2,x,\n")
    with pytest.raises(rp.ReproduceError, match="no source"):
        rp.load_paper("dwcs", tmp_path / "b")


# ----------------------------------------------------------------- claim evaluation

X = "source[1].arrivals.rate_pps"


def _replications():
    """Two flows, three x values, three replications: flow 0's delay 1, 2, 3 (+ small
    noise), flow 1's 10× flow 0's."""
    rows = []
    for x, base in ((5, 1.0), (10, 2.0), (20, 3.0)):
        for r, noise in enumerate((-0.01, 0.0, 0.01)):
            rows.append({"replication": r, X: x, "flow": 0, "class": 0, "delay": base + noise})
            rows.append({"replication": r, X: x, "flow": 1, "class": 1, "delay": 10 * (base + noise)})
    return pd.DataFrame(rows)


VALUES = {
    "three": {"value": 3.0, "unit": "s", "source": "p. 1"},
    "four": {"value": 4.0, "unit": "s", "source": "p. 1"},
    "ten": {"value": 10.0, "unit": "", "source": "p. 2"},
}


def _claim(**keys):
    return {"id": "c", "statement": "s", "source": "p", **keys}


def test_compare_match_trend_and_mismatch():
    frame = _replications()
    ours = {"metric": "delay", "flow": 0, "x": 20}
    match = rp.evaluate_claim(_claim(check="compare", ours=ours, paper="three"), frame, X, VALUES)
    assert match["verdict"] == "match"
    assert match["ours"]["value"] == pytest.approx(3.0)
    assert match["ours"]["ci95"] == pytest.approx(0.01 * 4.302653 / math.sqrt(3), rel=1e-3)  # t(0.975, 2)·s/√3
    far = _claim(check="compare", ours=ours, paper="four", explanation="because")
    mismatch = rp.evaluate_claim(far, frame, X, VALUES)
    assert mismatch["verdict"] == "mismatch" and mismatch["explanation"] == "because"
    trend = rp.evaluate_claim({**far, "shape": "increasing"}, frame, X, VALUES)
    assert trend["verdict"] == "trend"
    assert rp.evaluate_claim({**far, "shape": "decreasing"}, frame, X, VALUES)["verdict"] == "mismatch"
    tolerant = rp.evaluate_claim({**far, "tolerance": 0.3}, frame, X, VALUES)
    assert tolerant["verdict"] == "match"
    factor = rp.evaluate_claim({**far, "tolerance_factor": 1.2}, frame, X, VALUES)
    assert factor["verdict"] == "mismatch"
    assert rp.evaluate_claim({**far, "tolerance_factor": 1.4}, frame, X, VALUES)["verdict"] == "match"


def test_ratio_is_computed_per_replication():
    frame = _replications()
    claim = _claim(
        check="ratio", ours={"metric": "delay", "flow": 1, "x": 10}, over={"metric": "delay", "flow": 0, "x": 10}
    )
    out = rp.evaluate_claim({**claim, "paper": "ten"}, frame, X, VALUES)
    assert out["verdict"] == "match"
    assert out["ours"]["value"] == pytest.approx(10.0)
    assert out["ours"]["ci95"] == pytest.approx(0.0, abs=1e-9)


def test_sum_over_flows_and_classes():
    frame = _replications()
    both = rp._selection_values(frame, {"metric": "delay", "flows": [0, 1], "x": 5}, X)
    assert both.tolist() == pytest.approx([0.99 * 11, 11.0, 1.01 * 11])
    mean = rp._selection_values(frame, {"metric": "delay", "flows": [0, 1], "x": 5, "aggregate": "mean"}, X)
    assert mean.tolist() == pytest.approx([0.99 * 5.5, 5.5, 1.01 * 5.5])
    by_class = rp._selection_values(frame, {"metric": "delay", "class": 1, "x": 5}, X)
    assert by_class.tolist() == pytest.approx([9.9, 10.0, 10.1])


def test_minus_subtracts_another_selection_per_replication_and_inherits_x():
    frame = _replications()
    difference = {"metric": "delay", "flow": 1, "x": 10, "minus": {"metric": "delay", "flow": 0}}
    values = rp._selection_values(frame, difference, X)
    assert values.tolist() == pytest.approx([9 * 1.99, 18.0, 9 * 2.01])
    along_x = {key: value for key, value in difference.items() if key != "x"}
    claim = _claim(check="shape", ours=along_x, shape="increasing")
    out = rp.evaluate_claim(claim, frame, X, VALUES)
    assert out["verdict"] == "match" and out["ours"]["values"] == pytest.approx([9.0, 18.0, 27.0])
    rp._check_selection(difference, "ours")
    with pytest.raises(rp.ReproduceError, match="ours.minus"):
        rp._check_selection({**difference, "minus": {"flow": 0}}, "ours")


def test_jitter_generator_runs_class_1_alone_and_swaps_ewrr_for_drr():
    """Paper 003's table 1 / figure 17 (experiments/ewrr/jitter.py): the alone runs keep the
    router and class 1's packets and move every other source off it; DRR gets quantum L."""
    (fig17,) = [r for r in rp.load_paper("ewrr", rp.experiments_dir() / "ewrr").results if r.id == "fig17"]
    (tab1,) = [r for r in rp.load_paper("ewrr", rp.experiments_dir() / "ewrr").results if r.id == "tab1"]
    runs = dict((tuple(sorted(v.items())), s) for v, s in tab1.generated(quick=False))
    assert len(runs) == 4
    drr = runs[(("scheduler", "drr"), ("traffic", "competing"))]
    node = drr.get("link[0].scheduler.classes[0]")
    assert node["kind"] == "drr" and all(c["params"] == {"quantum": 512} for c in node["classes"])
    alone = runs[(("scheduler", "ewrr"), ("traffic", "alone"))]
    assert alone.get("source[0].path") == ["out"]
    assert [alone.get(f"source[{i}].path") for i in range(1, 5)] == [["elsewhere"]] * 4
    assert alone.get("link[0].scheduler.classes[0].classes[0].params.max_weight_bytes") == 512
    assert alone.sweep.x == "source[0].arrivals.on_packets" and not alone.sweep.grid
    assert len(alone.points()) == 3
    figure = fig17.generated(quick=False)
    assert [v["traffic"] for v, _ in figure] == ["competing", "alone"]
    assert all(len(s.points()) == 24 for _, s in figure)


def test_below_order_and_shape():
    frame = _replications()
    a, b = {"metric": "delay", "flow": 0, "x": 20}, {"metric": "delay", "flow": 1, "x": 20}
    assert rp.evaluate_claim(_claim(check="below", ours=a, than=b, factor=5), frame, X, VALUES)["verdict"] == "match"
    assert rp.evaluate_claim(_claim(check="below", ours=a, than=b, factor=100), frame, X, VALUES)["verdict"] == "trend"
    assert rp.evaluate_claim(_claim(check="below", ours=b, than=a), frame, X, VALUES)["verdict"] == "mismatch"
    order = _claim(check="order", items=[{"metric": "delay", "flow": 0, "x": x} for x in (5, 10, 20)])
    assert rp.evaluate_claim(order, frame, X, VALUES)["verdict"] == "match"
    assert rp.evaluate_claim({**order, "direction": "decreasing"}, frame, X, VALUES)["verdict"] == "mismatch"
    shape = _claim(check="shape", ours={"metric": "delay", "flow": 1}, shape="increasing")
    out = rp.evaluate_claim(shape, frame, X, VALUES)
    assert out["verdict"] == "match" and out["ours"]["x"] == [5, 10, 20]
    flat = rp.evaluate_claim({**shape, "shape": "flat", "tolerance": 0.5}, frame, X, VALUES)
    assert flat["verdict"] == "mismatch"
    # Ties in an order are a trend, not a match.
    tied = _claim(check="order", items=[{"metric": "delay", "flow": 0, "x": 5}] * 2 + [{"metric": "delay", "flow": 1}])
    assert rp.evaluate_claim(tied, frame, X, VALUES)["verdict"] == "trend"
    # "Fewer than": compare with upper_bound.
    bound = _claim(check="compare", ours={"metric": "delay", "flow": 0, "x": 20}, paper="four", upper_bound=True)
    assert rp.evaluate_claim(bound, frame, X, VALUES)["verdict"] == "match"
    above = {**bound, "ours": {"metric": "delay", "flow": 1, "x": 20}, "paper": "ten"}
    assert rp.evaluate_claim(above, frame, X, VALUES)["verdict"] == "mismatch"


GENERATOR = """
from schedlab.scenario import Scenario


def points(quick):
    out = []
    for n in (2, 4):
        s = Scenario.new(f"g{n}", duration="1s", replications=2)
        s.add_link("l", "1Mbit", {"kind": "fifo"})
        for flow in range(n):
            s.add_source(flow, ["l"], {"model": "cbr", "rate_pps": 10}, {"dist": "constant", "size": 100},
                         **{"class": flow % 2})
        s.data["sweep"] = {"grid": {"link[0].scheduler.kind": ["fifo", "drr"]}}
        out.append(({"n": n}, s))
    return out
"""


def test_generated_result_runs_every_scenario_with_its_values_as_columns(tmp_path):
    """A ``generator`` entry: the scenarios of a function in a file beside reproduce.toml, run
    one sweep each, tables joined with the generator's values as columns; claims select by
    them and by class; the figure sums each class's flows."""
    toml = (
        '[[result]]\nid = "fig3"\ntitle = "g"\ngenerator = "gen.py:points"\nquick = { "run.duration" = "0.5s" }\n'
        'figure = { y = "received", x = "n", series = "link[0].scheduler.kind", group = "class", totals = true }\n'
        '[[result.claim]]\nid = "more"\nstatement = "s"\nsource = "p"\ncheck = "below"\n'
        'ours = { metric = "received", class = 1, x = 2, where = { "link[0].scheduler.kind" = "drr" } }\n'
        'than = { metric = "received", class = 1, x = 4, where = { "link[0].scheduler.kind" = "drr" } }\n'
    )
    _write_paper(tmp_path / "p", toml)
    (tmp_path / "p" / "gen.py").write_text(GENERATOR)
    paper = rp.load_paper("dwcs", tmp_path / "p")
    result = paper.results[0]
    assert result.listing()["scenario"] == "p/gen.py:points" and result.status == "expressible"
    (outcome,) = rp.reproduce([result], tmp_path / "out", quick=True, papers=[paper], workers=1)
    assert outcome.error is None, outcome.error
    data = pd.read_csv(outcome.folder / "replications.csv")
    # 2 + 4 flows, two kinds, two replications; class 1 has 1 flow at n = 2 and 2 at n = 4,
    # each receiving 5 packets in 0.5 s at 10 packets/s.
    assert len(data) == (2 + 4) * 2 * 2 and set(data["n"]) == {2, 4}
    (claim,) = outcome.claims
    assert claim["verdict"] == "match" and claim["ours"]["value"] == 5 and claim["ours"]["than"]["value"] == 10
    assert (outcome.folder / "figure.png").exists()
    verdict = json.loads((outcome.folder / "verdict.json").read_text())
    assert verdict["scenario"] == "p/gen.py:points"


def test_dwcs_streams_generator_builds_the_papers_setup(tmp_path):
    """experiments/dwcs/streams.py: 8 equal classes 1/80 … 1/150, 20-packet bursts of 125-byte
    packets, the same deadlines for DWCS (its sub-table) and for the lateness measure; below
    500 streams FIFO meets every deadline and DWCS misses some at start-up (figure 4(a))."""
    import importlib.util

    from schedlab import _core

    path = rp.experiments_dir() / "dwcs" / "streams.py"
    spec = importlib.util.spec_from_file_location("dwcs_streams", path)
    streams = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(streams)
    with pytest.raises(ValueError, match="multiple of 8"):
        streams.scenario(10, 500, 1000)
    missed = {}
    for kind in ("dwcs", "fifo"):
        s = streams.scenario(240, 500, 40_000, disciplines=(kind,))
        sources = s.data["source"]
        assert len(sources) == 240 and {src["class"] for src in sources} == set(range(8))
        assert sources[7]["params"]["dwcs"]["loss_tolerance"] == sources[7]["lateness"]["loss_tolerance"] == "1/150"
        summary = json.loads(_core.run_scenario(s.rust_source()[0], str(tmp_path), None, 0))["summary"]
        flows = summary["flows"]
        assert sum(f["received"] for f in flows) == 40_000
        missed[kind] = [sum(f["deadlines_missed"] for f in flows if f["class"] == c) for c in range(8)]
    assert sum(missed["fifo"]) == 0
    assert missed["dwcs"][0] > missed["dwcs"][7] > 0


def test_spread_across_the_sweep_is_max_minus_min():
    frame = _replications()
    values = {**VALUES, "one": {"value": 1.0, "unit": "s", "source": "p. 3"}}
    claim = _claim(check="spread", ours={"metric": "delay", "flow": 0}, paper="three")
    out = rp.evaluate_claim(claim, frame, X, values)
    assert out["verdict"] == "match" and out["ours"]["value"] == pytest.approx(2.0)
    assert out["ours"]["x"] == [5, 10, 20]
    assert rp.evaluate_claim({**claim, "paper": "one"}, frame, X, values)["verdict"] == "mismatch"
    # With over: flow 1 / flow 0 is 10 at every x, a spread of 0.
    ratio = {**claim, "ours": {"metric": "delay", "flow": 1}, "over": {"metric": "delay", "flow": 0}, "paper": "one"}
    out = rp.evaluate_claim(ratio, frame, X, values)
    assert out["verdict"] == "match" and out["ours"]["value"] == pytest.approx(0.0, abs=1e-9)


def test_ci_statistic_is_the_thesis_normal_half_width():
    frame = _replications()
    claim = _claim(check="compare", ours={"metric": "delay", "flow": 0, "x": 5}, paper="three", statistic="ci95_normal")
    out = rp.evaluate_claim(claim, frame, X, VALUES)
    assert out["ours"]["value"] == pytest.approx(1.96 * 0.01 / math.sqrt(3))
    assert out["verdict"] == "mismatch"


def test_link_selection_reads_the_link_table():
    links = pd.DataFrame(
        [
            {"replication": r, X: x, "link": link, "lc_service": 100 * link + x + r}
            for r in range(2)
            for x in (5, 10)
            for link in (0, 2)
        ]
    )
    frames = {"flows": _replications(), "links": links}
    values = rp._selection_values(frames, {"table": "links", "link": 2, "metric": "lc_service", "x": 10}, X)
    assert values.tolist() == [210, 211]
    claim = _claim(check="shape", ours={"table": "links", "link": 0, "metric": "lc_service"}, shape="increasing")
    assert rp.evaluate_claim(claim, frames, X, VALUES)["ours"]["values"] == [5.5, 10.5]
    with pytest.raises(rp.ReproduceError, match="no per-link results"):
        rp._selection_values(_replications(), {"table": "links", "metric": "lc_service"}, X)
    needs = rp.evaluate_claim(_claim(check="below", needs="a counter"), frames, X, VALUES)
    assert needs["verdict"] == "not_expressible" and "a counter" in needs["why"]


def test_selection_errors_name_the_problem():
    frame = _replications()
    with pytest.raises(rp.ReproduceError, match="metric = 'nosuch'"):
        rp._selection_values(frame, {"metric": "nosuch"}, X)
    with pytest.raises(rp.ReproduceError, match="selects no rows"):
        rp._selection_values(frame, {"metric": "delay", "flow": 7}, X)
    with pytest.raises(rp.ReproduceError, match="not a swept key"):
        rp._selection_values(frame, {"metric": "delay", "where": {"link[0].rate": 1}}, X)


def test_vd_scenarios_are_what_bakiras2004_run_writes():
    """experiments/vd/fig4_delay.toml, fig4_loaded_delay.toml and fig5_tcp_small_buffers.toml
    are generated by experiments/bakiras2004/run.py --write-scenarios; a change there without
    regenerating them fails here."""
    import importlib.util

    path = rp.experiments_dir() / "bakiras2004" / "run.py"
    spec = importlib.util.spec_from_file_location("bakiras2004_run", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.REPRODUCE_SCENARIOS) == {"fig4", "fig4_loaded", "fig5"}
    for figure, (name, _) in module.REPRODUCE_SCENARIOS.items():
        on_disk = tomllib.loads((rp.experiments_dir() / "vd" / name).read_text())
        assert on_disk == module.reproduce_scenario(figure), name
    # The loaded variant is figure 4 over slower chain links, nothing else.
    loaded, plain = module.reproduce_scenario("fig4_loaded"), module.reproduce_scenario("fig4")
    assert [link["rate"] for link in loaded["link"][:4]] == ["11Mbit"] * 4
    for link in loaded["link"][:4]:
        link["rate"] = "50Mbit"
    assert loaded == plain


def test_vd_fairness_figure_is_drawn_from_the_committed_measures(tmp_path):
    """experiments/bakiras2004/results/fairness.svg is fairness.py's drawing of
    results/fairness.csv (the measures with theorems 1-3's bounds over them): redrawing gives
    the same bytes, so the figure cannot drift from the table."""
    import importlib.util

    folder = rp.experiments_dir() / "bakiras2004"
    spec = importlib.util.spec_from_file_location("bakiras2004_fairness", folder / "fairness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--from-csv", str(folder / "results" / "fairness.csv"), "--out", str(tmp_path)]) == 0
    drawn = (tmp_path / "fairness.svg").read_bytes()
    assert drawn == (folder / "results" / "fairness.svg").read_bytes()
    assert b"theorem 1" in drawn and b"theorem 2" in drawn and b"theorem 3" in drawn


def test_swept_tables_become_labels():
    from schedlab.sweep import swept_label

    assert swept_label({"kind": "fifo"}) == "fifo"
    assert swept_label({"kind": "adaptive", "share": [0.4, 0.3, 0.3], "interval": "100ms"}) == (
        "adaptive share=[0.4, 0.3, 0.3] interval=100ms"
    )
    assert swept_label([0.6, 0.2, 0.2]) == "[0.6, 0.2, 0.2]"
    assert swept_label(633) == 633 and swept_label("10ms") == "10ms"


def test_vd_testbed_scenarios_are_measurable_and_say_what_reproduce_lacks():
    """Figures 7-8 of paper 004 run in the simulator and, with Linux TCP senders, through
    schedlab measure (the checks it makes before building a namespace pass, and each TCP
    source is a Linux bulk sender from its own port); their registry status names what
    schedlab reproduce lacks (claims per phase) and the files that run them."""
    from schedlab import measure
    from schedlab.api import validate

    by_id = {r.id: r for p in rp.registry() if p.id == "vd" for r in p.results}
    vd = rp.experiments_dir() / "vd"
    for rid, name, measured, tcp_flows in [
        ("fig7", "fig7_linux_three_tcp.toml", "fig7_linux_three_tcp.toml", [1, 2, 3]),
        ("fig8", "fig8_linux_tcp_udp.toml", "measure_fig8_linux_tcp_udp.toml", [3]),
    ]:
        info = validate(vd / name)
        assert len(info["flows"]) == 3
        assert "claims per phase" in by_id[rid].status and name in by_id[rid].status
        assert measure.check(vd / measured) == (20.0, 1)
        sources = measure.tcp_sources(vd / measured)
        assert [s["flow"] for s in sources] == tcp_flows
        assert all(s["port"] == measure.PORT_BASE + s["flow"] and s["variant"] == "newreno" for s in sources)
        assert [s["start_s"] for s in sources] == [0.0, 4.0, 8.0][-len(tcp_flows) :]


def test_measured_thesis_sweep_is_registered_and_measurable(tmp_path):
    """fig5.1m runs figures 5.1/5.2's sweep on real packets: its scenario is the measured
    sweep, every point passes the checks `sweep --measure` makes before building a namespace,
    and the listing says it is measured."""
    from schedlab.measure import check
    from schedlab.sweep import _measured_point_files

    result = next(r for p in rp.registry() for r in p.results if (r.paper, r.id) == ("zhang", "fig5.1m"))
    assert result.measure and result.needs is None
    assert result.listing()["measured"] is True
    assert result.scenario.name == "measure_fig5_1_5_2.toml"
    scenario = rp.scenario_for(result, quick=True)
    points = scenario.points()
    assert len(points) == 8
    files = _measured_point_files(points, tmp_path)
    assert {check(path) for path in files.values()} == {(10.0, 2)}


def test_measured_result_without_root_is_skipped_with_the_reason(tmp_path, monkeypatch):
    from schedlab import testbed

    monkeypatch.setattr(testbed, "can_admin_network", lambda: False)
    papers = rp.registry()
    chosen = rp.select(papers, "zhang", ["fig5.1m"], False)
    (outcome,) = rp.reproduce(chosen, tmp_path, quick=True, papers=papers)
    assert outcome.error is None and "root or CAP_NET_ADMIN" in outcome.skipped
    doc = json.loads((tmp_path / "zhang" / "fig5.1m" / "verdict.json").read_text())
    assert doc["skipped"] == outcome.skipped and doc["claims"] == []
    assert not (tmp_path / "zhang" / "_runs").exists()
    assert "| zhang | fig5.1m | skipped |" in (tmp_path / "reproduction.md").read_text()
