"""The gate's HTML page: verdict and failures first, passes folded, one chart per metric with its table, text
escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from toolkit.checks.report import (
    REPORT_FORMAT_VERSION,
    Distribution,
    Drift,
    ExpectationResult,
    GateReport,
    GroupMetrics,
)
from toolkit.checks.report_files import read_report, write_gate_report
from toolkit.checks.report_html import render_gate_html
from toolkit.layout import Layout
from toolkit.schema.vocab import MACRO_ACTIONS

FORGE_ACTIONS = dict(zip(MACRO_ACTIONS, [5, 0, 1, 2, 0, 3, 0, 9], strict=True))
PPO_ACTIONS = dict(zip(MACRO_ACTIONS, [0, 0, 0, 0, 0, 0, 0, 4], strict=True))


def group(
    source: str,
    generation: int | None,
    actions: dict[str, int],
    drift: float | None = None,
    reward: Distribution | None = None,
) -> GroupMetrics:
    spread = Distribution(count=4, mean=0.1, std=0.5, min=-1, p05=-0.9, p25=-0.2, p50=0, p75=0.3, p95=0.9, max=1)
    return GroupMetrics(
        source=source,
        generation=generation,
        rows=sum(actions.values()),
        actions=actions,
        entropy_bits=1.0,
        entropy_ratio=1 / 3,
        reward=reward or spread,
        episode_return=spread,
        episode_decisions=spread,
        games=1,
        episodes=4,
        wins=1,
        episodes_with_result=4,
        win_rate=0.25,
        win_rate_interval=(0.05, 0.7),
        drift=None if drift is None else Drift(reference=f"{source} generation 0", js_bits=drift),
    )


def result(id_: str, success: bool, severity: str = "blocking", **fields: Any) -> ExpectationResult:
    return ExpectationResult(
        id=id_,
        type=fields.pop("type", "expect_column_values_to_be_between"),
        engine="gx",
        severity=severity,
        success=success,
        **fields,
    )  # type: ignore[arg-type]


def tiny_report(source: str = "forge", passed: bool = False, **changes: Any) -> GateReport:
    """Two groups (forge, ppo generation 1 with drift) and the all-group; results listed passes first."""
    results = [
        result("key.unique", True, type="decision_key_unique", observed={"duplicates": 0}),
        result(
            "drift.actions",
            False,
            "warning",
            type="action_drift_at_most",
            kwargs={"max_js": 0.1},
            observed={"max_js": 0.1, "js_bits": {"ppo/gen=1": 0.4}},
            unexpected_count=1,
            element_count=1,
        ),
    ]
    if not passed:
        results.append(
            result(
                "range.turn",
                False,
                kwargs={"column": "turn", "min_value": 0},
                observed={"unexpected_count": 1},
                unexpected_count=1,
                element_count=24,
                sample=[{"turn": -3, "game_id": "g-1", "seat": 2}],
            )
        )
    everything = {a: FORGE_ACTIONS[a] + PPO_ACTIONS[a] for a in MACRO_ACTIONS}
    fields: dict[str, Any] = {
        "report_id": "check-lake-all-test",
        "target": "lake",
        "scope": {"source": None, "generation": None, "batch": None},
        "suite": {"name": "lake", "path": "checks/lake.json", "sha256": "ab" * 32},
        "created_at": "2026-01-02T03:04:05+00:00",
        "rows": 24,
        "passed": passed,
        "results": results,
        "timings": {"gx": 0.5, "duckdb": 0.25, "arrow": 0.0, "total": 0.8},
        "metrics": [
            group(source, None, FORGE_ACTIONS),
            group("ppo", 1, PPO_ACTIONS, drift=0.4),
            group("*", None, everything),
        ],
    }
    return GateReport(**(fields | changes))


def figure(page: str, anchor: str) -> str:
    """The ``<figure id=anchor>`` element of the page."""
    start = page.index(f'<figure id="{anchor}">')
    return page[start : page.index("</figure>", start)]


def test_a_failing_report_leads_with_the_verdict_then_failures_then_folded_passes() -> None:
    page = render_gate_html(tiny_report())
    verdict, failure, warning = page.index("lake gate FAILED"), page.index("range.turn"), page.index("drift.actions")
    details = page[page.index("<details") : page.index("</details>")]
    assert '<h1 class="fail">lake gate FAILED</h1>' in page
    assert verdict < failure < warning < page.index("<details") < page.index("key.unique")
    assert "1 expectation passed" in details and "key.unique" in details and "range.turn" not in details
    assert "1 blocking failure &middot; 1 warning &middot; 1 passed" in page


def test_a_failure_shows_its_severity_observed_value_and_offending_rows_as_a_table() -> None:
    page = render_gate_html(tiny_report())
    card = page[page.index('id="result-range.turn"') : page.index("</article>", page.index('id="result-range.turn"'))]
    assert "blocking" in card and "1 of 24 unexpected" in card
    assert "<th>unexpected_count</th><td>1</td>" in card  # observed as key / value, not JSON
    assert '<table class="sample"><tr><th>turn</th><th>game_id</th><th>seat</th></tr>' in card
    assert "<tr><td>-3</td><td>g-1</td><td>2</td></tr>" in card


def test_what_was_checked_names_scope_rows_groups_suite_and_time() -> None:
    page = render_gate_html(tiny_report())
    checked = page[page.index('id="checked"') : page.index("</section>", page.index('id="checked"'))]
    for text in ("everything", "24 in 2 groups: forge/gen=-, ppo/gen=1", "checks/lake.json", "2026-01-02T03:04:05"):
        assert text in checked


def test_a_passing_report_has_no_failure_section_and_a_green_verdict() -> None:
    page = render_gate_html(tiny_report(passed=True, results=[result("key.unique", True)]))
    assert '<h1 class="pass">lake gate PASSED</h1>' in page and 'id="failures"' not in page
    assert '<summary class="pass">1 expectation passed</summary>' in page


def test_the_action_chart_is_one_svg_with_a_bar_per_action_and_group_zeros_included() -> None:
    actions = figure(render_gate_html(tiny_report()), "actions")
    assert actions.count("<svg") == 1
    assert (
        actions.count('<rect class="bar"') == len(MACRO_ACTIONS) * 2
    )  # forge and ppo/gen=1; the all-group is not drawn
    assert (
        "ppo/gen=1, cast_creature: 0 of 4 decisions (0.0%)" in actions
    )  # a zero is a (zero-length) bar with a tooltip
    assert "ppo/gen=1, pass: 4 of 4 decisions (100.0%)" in actions
    assert "<td class='num'>9 (45.0%)</td>" in actions  # the table under the chart: forge's 9 passes of 20


def test_every_chart_has_a_title_axis_labels_and_a_table_of_its_numbers() -> None:
    page = render_gate_html(tiny_report())
    for anchor, boxes in (("actions", None), ("reward", 2), ("episode-return", 2), ("drift", None)):
        fig = figure(page, anchor)
        assert fig.count("<svg") == 1 and fig.count("<table") == 1 and 'class="axis-label"' in fig
        svg = fig[fig.index("<svg") : fig.index("</svg>")]
        assert re.match(r"<svg[^>]*>\n<title>[^<]+</title>", svg)
        if boxes is not None:
            assert svg.count('<rect class="box"') == boxes


def test_drift_is_a_bar_per_group_with_a_reference_and_the_threshold_line() -> None:
    drift = figure(render_gate_html(tiny_report()), "drift")
    assert drift.count('<rect class="bar"') == 1 and drift.count('class="threshold"') == 1
    assert "ppo/gen=1: 0.4000 bits vs ppo generation 0" in drift and "over" in drift


def test_without_references_the_drift_section_says_so() -> None:
    report = tiny_report()
    report = report.model_copy(update={"metrics": [m.model_copy(update={"drift": None}) for m in report.metrics]})
    drift = figure(render_gate_html(report), "drift")
    assert "<svg" not in drift and "No group had a reference" in drift


def test_a_group_without_values_is_left_out_of_the_chart_but_kept_in_the_table() -> None:
    report = tiny_report()
    empty = group("sim", None, FORGE_ACTIONS, reward=Distribution(count=0))
    reward = figure(render_gate_html(report.model_copy(update={"metrics": [*report.metrics, empty]})), "reward")
    assert reward.count('<rect class="box"') == 2 and "<td>sim/gen=-</td>" in reward


def test_text_from_the_data_is_escaped_and_the_page_loads_nothing() -> None:
    evil = "<script>alert('x')</script>"
    report = tiny_report(source=evil)
    broken = result("range.turn", False, notes=evil, sample=[{"game_id": evil}], observed={evil: evil})
    page = render_gate_html(report.model_copy(update={"results": [*report.results, broken], "scope": {"source": evil}}))
    assert "<script" not in page.lower() and "&lt;script&gt;" in page
    assert not re.search(r"https?://", page) and " src=" not in page and "<link" not in page


def test_the_page_is_the_same_for_the_same_report() -> None:
    assert render_gate_html(tiny_report()) == render_gate_html(tiny_report())


def test_writing_keeps_the_json_format_and_puts_the_page_next_to_it(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    report = write_gate_report(tiny_report(), layout)
    assert report.paths == {"json": "reports/check-lake-all-test.json", "html": "reports/check-lake-all-test.html"}
    stored = json.loads((tmp_path / report.paths["json"]).read_text())
    assert stored["format_version"] == REPORT_FORMAT_VERSION == 1 and set(stored) == set(GateReport.model_fields)
    assert read_report(tmp_path / report.paths["json"]) == report
    assert (tmp_path / report.paths["html"]).read_text() == render_gate_html(report)
    assert sorted(p.name for p in layout.reports.iterdir()) == ["check-lake-all-test.html", "check-lake-all-test.json"]
