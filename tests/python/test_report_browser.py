"""The HTML report in a real browser: headless Chromium (Debian `chromium`) opens report.html;
a layout rule computed in the page checks every figure's displayed size and that its tick
labels are legible and do not overlap (bounding boxes of the SVG tick labels), for the demo,
a small sweep and a 1,000-flow run; screenshots are saved in `out/test-artifacts/`. Skips only when Chromium or Playwright is
not installed, saying which."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from schedlab.api import run
from schedlab.report import TABLE_FLOWS, write_report
from schedlab.scenario import Scenario
from schedlab.sweep import run_sweep

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "out" / "test-artifacts"

SCENARIO = """
name = "browser_check"
[run]
duration = "10s"
seed = 5
replications = 2

[[link]]
name = "l"
rate = "1Mbit"
scheduler = { kind = "drr" }

[[source]]
flow = 0
name = "A"
path = ["l"]
arrivals = { model = "poisson", rate_pps = 40 }
size = { dist = "constant", size = 1000 }

[[source]]
flow = 1
name = "B"
path = ["l"]
arrivals = { model = "poisson", rate_pps = 40 }
size = { dist = "constant", size = 1000 }

[sweep]
[sweep.zip]
"source[0].arrivals.rate_pps" = [20, 60, 80]

[report]
title = "Browser check"

[[report.theory]]
model = "mm1_mean_delay"
label = "M/M/1 (for reference)"
arrival_rate_pps = "source[0].arrivals.rate_pps"
service_rate_pps = 125
"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


#: Measured in the page for every figure: its displayed size, and per axis the bounding boxes
#: of the tick labels (matplotlib's SVG groups ``xtick_N``/``ytick_N`` > ``text_N``): how many,
#: the smallest height, and how many pairs overlap.
LAYOUT = """() => Array.from(document.querySelectorAll("figure svg")).map(svg => {
  const box = svg.getBoundingClientRect();
  let labels = 0, overlaps = 0, smallest = Infinity;
  for (const axes of svg.querySelectorAll('g[id^="axes_"]')) {
    for (const axis of ["xtick", "ytick"]) {
      const boxes = Array.from(axes.querySelectorAll(`g[id^="${axis}_"] > g[id^="text_"]`))
        .map(t => t.getBoundingClientRect()).filter(b => b.width > 0 && b.height > 0);
      labels += boxes.length;
      for (const b of boxes) smallest = Math.min(smallest, b.height);
      for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
          overlaps += 1;
      }
    }
  }
  return {id: svg.closest("figure").id, width: box.width, height: box.height, labels, overlaps, smallest};
})"""


def _check_in_chromium(report: Path, screenshot: str) -> tuple[str, list[dict], dict]:
    """Open ``report`` in headless Chromium at 1200 x 900: the page title, the layout of every
    figure, and the first figure's size after a click (it enlarges). Saves a screenshot."""
    chromium = _chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip extra `test`)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(report.resolve().as_uri())
        layout = page.evaluate(LAYOUT)
        # The figures and the start of the tables (a 1,000-flow table is 100,000 px long).
        height = min(page.evaluate("document.body.scrollHeight"), 8000)
        page.screenshot(
            path=str(ARTIFACTS / screenshot), full_page=True, clip={"x": 0, "y": 0, "width": 1200, "height": height}
        )
        page.click("figure")
        enlarged = page.eval_on_selector(
            "figure svg", "s => ({w: s.getBoundingClientRect().width, h: s.getBoundingClientRect().height})"
        )
        title = page.title()
        browser.close()
    assert (ARTIFACTS / screenshot).stat().st_size > 10_000
    return title, layout, enlarged


def _assert_readable(layout: list[dict], count: int) -> None:
    """Every figure at least 800 px wide on a 1200 px page, with tick labels at least 9 px
    high (a 10 pt font shown at 100 % is 13 px) that never overlap."""
    assert len(layout) >= count, layout
    for figure in layout:
        assert figure["width"] >= 800 and figure["height"] >= 250, figure
        assert figure["labels"] >= 4, figure
        assert figure["smallest"] >= 9, figure
        assert figure["overlaps"] == 0, figure


def test_demo_report_is_readable_in_chromium(tmp_path):
    """The demo's sweep (shortened) and the browser-check sweep: figure sizes and tick labels."""
    demo = Scenario.from_toml(REPO / "experiments/thesis/fig5_1_5_2_exponential.toml")
    demo = demo.set("run.duration", "20s").set("run.replications", 2)
    out = tmp_path / "demo"
    run_sweep(demo, out, workers=2)
    title, layout, enlarged = _check_in_chromium(write_report(out), "report_demo.png")
    assert demo.data.get("report", {}).get("title", demo.data.get("name")) in title
    # Sweep figures (delay, p99, throughput, fairness) and each representative run's three.
    _assert_readable(layout, 7)
    assert enlarged["h"] > layout[0]["height"] * 1.2, (enlarged, layout[0])


def test_report_of_1000_flows_is_readable_in_chromium(tmp_path):
    """With 1,000 flows the figures show distributions across flows, and stay legible."""
    scenario = Scenario.new(name="thousand", duration="1s", seed=3, replications=2, bin="300ms")
    scenario.data["description"] = "1,000 Poisson flows through one DRR link"
    scenario.add_link("l", "100Mbit", "drr")
    for flow in range(1000):
        scenario.add_source(
            flow,
            ["l"],
            {"model": "poisson", "rate_pps": 5 + flow % 20},
            {"dist": "constant", "size": 1000},
            name=f"f{flow}",
        )
    out = tmp_path / "thousand"
    run(scenario, out)
    title, layout, _ = _check_in_chromium(write_report(out), "report_1000_flows.png")
    assert "thousand" in title
    _assert_readable(layout, 3)
    page = (out / "report.html").read_text()
    assert "1,000 Poisson flows through one DRR link" in page
    assert "None" not in page
    # A table of the worst flows, not 1,000 rows.
    assert f"The {TABLE_FLOWS} flows with the largest mean delay, of 1,000" in page
    assert page.count("<tr>") <= TABLE_FLOWS + 5


def test_report_renders_every_figure_in_chromium(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    out = tmp_path / "sweep"
    run_sweep(Scenario.from_toml(path), out, workers=2)
    title, layout, _ = _check_in_chromium(write_report(out), "report.png")
    assert "Browser check" in title
    _assert_readable(layout, 7)


def test_sweep_of_many_flows_plots_the_median_flow_not_a_line_per_flow(tmp_path):
    scenario = Scenario.new(name="twenty", duration="2s", seed=2, replications=1)
    scenario.add_link("l", "10Mbit", "drr")
    for flow in range(20):
        scenario.add_source(flow, ["l"], {"model": "poisson", "rate_pps": 30}, {"dist": "constant", "size": 1000})
    scenario.data["sweep"] = {"grid": {"link[0].rate": ["5Mbit", "10Mbit"]}}
    out = tmp_path / "sweep"
    run_sweep(scenario, out, workers=1, representative=False)
    write_report(out)
    svg = (out / "figures" / "delay_vs_x.svg").read_text()
    assert "<!-- median flow -->" in svg and "<!-- 10-90 % of flows -->" in svg
    assert "<!-- flow 7 -->" not in svg
