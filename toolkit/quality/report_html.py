"""The HTML page of a label check, in the style of the gate reports: verdict first, then the numbers.

The page reads top to bottom::

    verdict        flagged decisions and the issue rate with its 95% interval
    what was checked  the build, the folds and models, cleanlab's settings, when, how long
    by group       the issue rate per source and generation: a bar chart and its table
    issues         the worst flagged decisions (label, what the models expected, score)

Inline SVG only (:mod:`toolkit.charts_svg`): it opens offline. The JSON beside
it (the result) and ``label-scores.json`` beside the build are the record.
"""

from __future__ import annotations

import datetime as dt
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Final

from toolkit.charts_svg import Bar, bar_chart
from toolkit.checks.report_html import CSS
from toolkit.layout import Layout
from toolkit.quality.rates import ALARM_RATE, CLEAN_RATE
from toolkit.storage import write_text_atomic

if TYPE_CHECKING:
    from toolkit.datasets.scores import LabelScoresInfo
    from toolkit.quality.result import LabelCheckResult

ISSUE_ROWS: Final = 50


def write_labels_report(layout: Layout, result: LabelCheckResult, info: LabelScoresInfo) -> Path:
    """Write ``reports/check-labels-<name>-<fp>-<time>.{html,json}``; returns the HTML's path."""
    stem = f"check-labels-{result.dataset}-{result.fingerprint[:12]}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S%f}"
    html = layout.reports / f"{stem}.html"
    write_text_atomic(layout.reports / f"{stem}.json", result.model_dump_json(indent=1) + "\n")
    write_text_atomic(html, render_labels_html(result, info))
    return html


def render_labels_html(result: LabelCheckResult, info: LabelScoresInfo) -> str:
    title = f"label check: {result.dataset} {result.fingerprint}"
    body = "\n".join([_verdict(result), _checked(result, info), _groups(result), _issues(result)])
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>\n'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def _verdict(r: LabelCheckResult) -> str:
    # Green only where the rate is what clean logs give; amber above it; red above the alarm.
    state = "pass" if r.rate_interval[0] <= 2 * CLEAN_RATE else "note" if r.rate <= ALARM_RATE else "fail"
    low, high = r.rate_interval
    steps = "".join(f"<li><code>{escape(step)}</code></li>" for step in r.next_steps)
    return (
        f'<div class="verdict {state}"><h1>{r.flagged:,} label issues</h1>'
        f"<p>{r.rate:.2%} of {r.scored:,} decisions with a choice (95% interval {low:.2%} - {high:.2%}); "
        f"{r.conflicts_within_source:,} in conflicting duplicates within a source, "
        f"{r.conflicts_across_sources:,} across sources</p><p>{escape(r.reading)}.</p></div>"
        f"<h2>Next</h2><ul>{steps}</ul>"
    )


def _checked(r: LabelCheckResult, info: LabelScoresInfo) -> str:
    c = r.config
    facts = [
        ("dataset", f"{r.dataset} {r.fingerprint} (lake version {info.lake_version})"),
        ("decisions", f"{r.rows:,} ({r.scored:,} with more than one legal action)"),
        (
            "models",
            f"{c.folds}-fold behaviour cloning by game, network {list(c.policy.pi)} {c.policy.activation}, "
            f"seed {c.seed}; out-of-sample accuracy {r.out_of_sample_accuracy:.3f}",
        ),
        ("cleanlab", f"find_label_issues(filter_by={c.filter_by}), get_label_quality_scores({c.quality_method})"),
        ("teacher", "none" if r.teacher is None else f"{r.teacher}: mean p(logged) {r.teacher_mean_p_label:.3f}"),
        ("scores", f"label-scores.parquet sha256 {info.scores_sha256[:16]}"),
        ("when", f"{info.created_at:%Y-%m-%d %H:%M:%S} UTC; {r.seconds:.1f} s"),
    ]
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts)
    return f"<h2>What was checked</h2><table class='kv facts'>{rows}</table>"


def _groups(r: LabelCheckResult) -> str:
    def key(source: str, generation: int | None) -> str:
        return f"{source} / gen {'-' if generation is None else generation}"

    bars = [
        Bar(key(g.source, g.generation), 100 * g.rate, f"{g.flagged:,} of {g.scored:,} ({100 * g.rate:.2f}%)")
        for g in r.groups
    ]
    svg = bar_chart(bars, title="Label-issue rate per source and generation", x_label="flagged (%)")
    head = "".join(
        f"<th class='num'>{h}</th>"
        for h in ("decisions", "with a choice", "flagged", "rate", "95% interval", "in conflicts")
    )
    rows = "".join(
        f"<tr><td>{escape(key(g.source, g.generation))}</td><td class='num'>{g.decisions:,}</td>"
        f"<td class='num'>{g.scored:,}</td><td class='num'>{g.flagged:,}</td><td class='num'>{g.rate:.2%}</td>"
        f"<td class='num'>{g.low:.2%} - {g.high:.2%}</td><td class='num'>{g.conflicts:,}</td></tr>"
        for g in r.groups
    )
    table = f"<table><tr><th>source / generation</th>{head}</tr>{rows}</table>"
    return f"<h2>By source and generation</h2><figure id='groups'>{svg}{table}</figure>"


def _issues(r: LabelCheckResult) -> str:
    if not r.issues:
        return "<h2>Issues</h2><p class='muted'>No decision was flagged.</p>"
    head = "".join(f"<th>{h}</th>" for h in ("game", "seat", "decision", "source", "split", "logged", "expected"))
    rows = "".join(
        f"<tr><td>{escape(i.game_id)}</td><td class='num'>{i.seat}</td><td class='num'>{i.decision_index}</td>"
        f"<td>{escape(i.source)}</td><td>{escape(i.split)}</td><td>{escape(i.label)}</td>"
        f"<td>{escape(i.predicted)}</td><td class='num'>{i.score:.4f}</td></tr>"
        for i in r.issues[:ISSUE_ROWS]
    )
    more = (
        ""
        if len(r.issues) <= ISSUE_ROWS
        else f"<p class='muted'>{len(r.issues) - ISSUE_ROWS:,} more in the scores table.</p>"
    )
    return (
        f"<h2>Issues (worst {min(ISSUE_ROWS, len(r.issues))})</h2><table><tr>{head}<th class='num'>quality</th></tr>"
        f"{rows}</table>{more}"
    )
