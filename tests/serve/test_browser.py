"""The dashboard in a real browser: Debian's Chromium driven by Playwright, headless, offline.

Every request to anything but the server is blocked and fails the test; the
charts draw (their canvases are not blank) the numbers of the run's history;
Pause pauses the live loop at its next step boundary and Resume continues
it. Over the suite's finished run and a copy whose last student was kept:
the kept student reads as kept, every evaluation table is charted with the
chance line, the training curves draw, the comparison and gate report pages
work, and the run page fits a 420 px window. Screenshots are kept in
``test-artifacts/`` (or ``$DISTILL_TEST_ARTIFACTS``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.serve.conftest import live_config, serving, wait_for
from toolkit.loop.state import RunFolder
from toolkit.serve import control
from toolkit.serve.admission import LoopSlots

pytestmark = pytest.mark.slow
CHROMIUM = Path(os.environ.get("DISTILL_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("DISTILL_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts"))
# The lines each Start form label's text takes (its first text node's boxes).
LABEL_LINES = """() => [...document.querySelectorAll('form.start label')].map(label => {
    const range = document.createRange(); range.selectNodeContents(label.firstChild);
    return range.getClientRects().length; })"""
# Chromium's own background traffic (updates, sync, field trials) off: the machine is offline and the test counts
# every request that leaves the server.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-features=OptimizationHints,Translate",
]
CANVAS_DRAWN = """id => { const c = document.getElementById(id); const d = c.getContext('2d')
    .getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
    return n; }"""


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: the browser tests need Debian's chromium package "
            f"(`apt-get install chromium`, which `make test` runs) or DISTILL_CHROMIUM=/path/to/chromium",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        yield launched
        launched.close()


def test_the_run_page_draws_the_history_and_pauses_and_resumes_a_live_loop(browser, served) -> None:
    from playwright.sync_api import expect

    layout, base = served
    control.start_run(layout, control.StartRequest(name="web", config=live_config()), LoopSlots())
    try:
        wait_for(layout, "web", lambda s: s.generations_recorded >= 1)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        escaped: list[str] = []
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(base + "/")
                else (escaped.append(route.request.url), route.abort())
            ),
        )
        page.goto(f"{base}/runs/web")
        page.wait_for_function("document.body.dataset.drawn !== undefined")
        for canvas in ("chart-strength-0", "chart-accuracy", "chart-composition", "chart-elo", "chart-ordinal"):
            assert page.evaluate(CANVAS_DRAWN, canvas) > 500, f"{canvas} is blank"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=ARTIFACTS / "run-page.png", full_page=True)

        page.click("#pause")
        expect(page.locator("[data-field=status]")).to_have_text("paused", timeout=120_000)
        assert wait_for(layout, "web", lambda s: s.status == "paused").pid is None
        page.reload()  # the loop is idle now: the page and its charts stay as they are
        page.wait_for_function("document.body.dataset.drawn !== undefined")
        records = RunFolder(layout, "web").records()
        drawn = page.evaluate("""() => Object.fromEntries(Chart.getChart('chart-strength-0').data.datasets
            .map(d => [d.label, d.data]))""")
        assert drawn["student vs 3 heuristics"] == [r["student_win_rate"] for r in records]
        assert drawn["PPO vs 3 heuristics"] == [r["ppo_win_rate"] for r in records]
        bars = page.evaluate("""() => Object.fromEntries(Chart.getChart('chart-composition').data.datasets
            .map(d => [d.label, d.data]))""")
        for i, record in enumerate(records):
            total = sum(record["rows_by_source"].values())
            assert {s: bars[s][i] for s in record["rows_by_source"]} == pytest.approx(
                {s: n / total for s, n in record["rows_by_source"].items()}
            )
        elo = page.evaluate("() => Chart.getChart('chart-elo').data.datasets.find(d => d.label === 'heuristic').data")
        assert elo == [1500] * len([r for r in records if r["ratings"]])

        page.click("#resume")
        expect(page.locator("[data-field=status]")).to_have_text("running", timeout=60_000)
        assert wait_for(layout, "web", lambda s: s.pid is not None or s.status == "finished")
        page.click("#stop")
        expect(page.locator("[data-field=status]")).to_have_text(re.compile("stopped|finished"), timeout=120_000)
        assert escaped == [], f"requests left the server: {escaped}"
    finally:
        holder = RunFolder(layout, "web").process()
        if holder:
            os.kill(holder, 9)


def _offline(page, base: str) -> list[str]:  # noqa: ANN001 - a Playwright page
    """Abort (and list) every request that leaves the server."""
    escaped: list[str] = []
    page.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(base + "/")
            else (escaped.append(route.request.url), route.abort())
        ),
    )
    return escaped


def test_the_run_page_answers_is_it_working_at_a_glance(browser, two_runs) -> None:  # noqa: ANN001
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tables = len(RunFolder(two_runs, "kept").config().evaluation.tables)
    with serving(two_runs) as base:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        escaped = _offline(page, base)
        page.goto(f"{base}/runs/kept")
        page.wait_for_function("document.body.dataset.drawn !== undefined")
        student = page.locator("#table-generations tr[data-generation='1'] td[data-kind=student]")
        assert student.get_attribute("data-status") == "kept"
        assert "kept" in student.inner_text() and "gen-000-student" in student.inner_text()
        assert "refused candidate gen-001-student" in student.inner_text()
        strength = page.locator("canvas[id^=chart-strength]")
        assert strength.count() == tables >= 2, "every evaluation table is charted"
        for i in range(tables):
            assert page.evaluate(CANVAS_DRAWN, f"chart-strength-{i}") > 500
            chance = page.evaluate(
                f"() => Chart.getChart('chart-strength-{i}').data.datasets.find(d => d.label.startsWith('chance')).data"
            )
            assert chance == [0.25, 0.25]
        curves = page.locator("#training-curves canvas")
        assert curves.count() >= 3
        page.locator("#training-curves details").first.evaluate("d => d.open = true")
        for canvas in curves.evaluate_all("cs => cs.map(c => c.id)"):
            assert page.evaluate(CANVAS_DRAWN, canvas) > 200, f"{canvas} is blank"
        page.screenshot(path=ARTIFACTS / "run-page-kept.png", full_page=True)

        page.click("#table-generations tr[data-generation='1'] td[data-kind=student] a:text('report')")
        page.wait_for_url(f"{base}/runs/kept/gates/1/student_gate")
        assert page.locator("svg.chart polyline.line").count() == 1
        assert page.locator("svg.chart line.threshold").count() == 2
        page.screenshot(path=ARTIFACTS / "gate-report.png", full_page=True)
        page.click("#back-to-run")
        page.wait_for_url(f"{base}/runs/kept")

        page.goto(f"{base}/")
        page.check("input[name=runs][value=tiny]")
        page.check("input[name=runs][value=kept]")
        page.click("#compare")
        page.wait_for_function("document.body.dataset.drawn === '2'")
        assert page.evaluate(CANVAS_DRAWN, "compare-strength-0") > 500
        assert page.evaluate(CANVAS_DRAWN, "compare-composition") > 200
        assert page.locator("table.ratings").count() == 2
        page.screenshot(path=ARTIFACTS / "compare-page.png", full_page=True)
        page.goto(base + "/lake")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        page.screenshot(path=ARTIFACTS / "lake-page.png", full_page=True)

        narrow = browser.new_page(viewport={"width": 420, "height": 900})
        escaped += _offline(narrow, base)
        for path, shot in (
            ("/runs/kept", "run-page-420px.png"),
            ("/compare?runs=tiny,kept", None),
            ("/runs/kept/gates/1/student_gate", None),
            ("/", None),
            ("/lake", "lake-page-420px.png"),
        ):
            narrow.goto(base + path)
            if narrow.locator("canvas").count():
                narrow.wait_for_function("document.body.dataset.drawn !== undefined")
            assert narrow.evaluate("document.documentElement.scrollWidth") <= 420, f"{path} is wider than 420 px"
            if path == "/":  # each Start form label on one line, its field under it
                assert set(narrow.evaluate(LABEL_LINES)) == {1}, narrow.evaluate(LABEL_LINES)
            if shot:
                narrow.screenshot(path=ARTIFACTS / shot, full_page=True)
        assert escaped == [], f"requests left the server: {escaped}"
