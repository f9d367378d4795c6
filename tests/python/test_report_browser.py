"""The HTML report in a real browser: headless Chromium (Debian `chromium`) opens report.html,
every figure must have rendered (a decoded image with non-zero size), and a screenshot is
saved as a test artifact in `out/test-artifacts/`. Skips only when Chromium or Playwright is
not installed, saying which."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from schedlab.report import write_report
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


def test_report_renders_every_figure_in_chromium(tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip extra `test`)")
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    out = tmp_path / "sweep"
    run_sweep(Scenario.from_toml(path), out, workers=2)
    report = write_report(out)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(report.resolve().as_uri())
        images = page.eval_on_selector_all(
            "figure img",
            "els => els.map(e => ({alt: e.alt, complete: e.complete, w: e.naturalWidth, h: e.naturalHeight}))",
        )
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        title = page.title()
        browser.close()
    assert "Browser check" in title
    # Sweep figures (delay, p99, throughput, fairness) and the representative run's three.
    assert len(images) >= 7, images
    for image in images:
        assert image["complete"] and image["w"] > 100 and image["h"] > 100, image
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000
