"""The HTML rendering of a :class:`~toolkit.checks.report.GateReport`: one page a person reads.

The page reads top to bottom::

    verdict        passed / failed, and how many expectations failed, warned, passed
    what was checked  target, scope, rows and groups, suite, when, how long
    failures       each failed blocking expectation: observed value, arguments, offending rows
    warnings       each failed warning, the same way
    caveats        expectations that passed without deciding everything
    passed         folded: <details> with one table row per expectation
    metrics        a summary table per group, then charts, each followed by a table of its numbers:
                   actions per group, reward per decision, episode return, drift against the reference

Charts are inline SVG from :mod:`toolkit.charts_svg`: no script, no style sheet
or font fetched, so the page renders offline. Every text is escaped. The page
is a rendering only: the JSON report is the record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING, Any, Final

from toolkit.charts_svg import Bar, Quantiles, Series, bar_chart, fmt, grouped_bar_chart, quantile_chart

if TYPE_CHECKING:  # annotations only: report.py imports this module to render
    from toolkit.checks.report import Distribution, ExpectationResult, GateReport, GroupMetrics

_ALL: Final = "*"  # the everything-group's source (toolkit.checks.metrics.ALL; metrics imports report)
_DRIFT_CHECK: Final = "action_drift_at_most"
_SAMPLE_ROWS: Final = 10
_LIST_ITEMS: Final = 20
CSS: Final = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:2.2em;margin:0}h2{margin-top:1.8em;border-bottom:1px solid #ddd}h3{margin:0 0 .4em}
table{border-collapse:collapse;margin:.6em 0}table table{margin:0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;font-size:13px}
th{background:#f5f5f5}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{background:none;font-weight:normal;color:#555}table.facts th{width:9em}
.verdict{padding:1em 1.4em;border-left:10px solid;border-radius:4px}.verdict p{margin:.3em 0 0;font-size:1.1em}
.verdict.pass{background:#e9f6ec;border-color:#176f2c}.verdict.fail{background:#fdecee;border-color:#b00020}
.verdict.note{background:#fff6e0;border-color:#e0a000}
.pass{color:#176f2c}.fail{color:#b00020}.warn{color:#a15c00}
.result{border:1px solid #ddd;border-left:6px solid;border-radius:4px;padding:.8em 1em;margin:1em 0}
.result.is-fail{border-left-color:#b00020}.result.is-warn{border-left-color:#e0a000}.result p{margin:.3em 0}
.result h4{margin:.8em 0 .2em;font-size:14px}.pair{display:flex;flex-wrap:wrap;gap:0 2.5em}
.badge{display:inline-block;font-size:12px;padding:1px 6px;border-radius:3px;color:#fff;vertical-align:middle}
.badge.blocking{background:#b00020}.badge.warning{background:#a15c00}
.muted{color:#666;font-size:13px}code{font-size:12px}figure{margin:1.2em 0}figcaption{font-weight:bold}
details summary{cursor:pointer;font-size:1.1em;padding:.4em 0}svg.chart{max-width:100%;height:auto;display:block}"""


def render_gate_html(report: GateReport) -> str:
    """A self-contained page a person can open offline: verdict, failures first, charts of the metrics."""
    sections = [
        _verdict(report),
        _checked(report),
        _results_section("Failures", report.blocking_failures, "fail"),
        _results_section("Warnings", report.warnings, "warn"),
        _caveats(report.caveats),
        _passed([r for r in report.results if r.success]),
        _metrics(report),
        _footer(report),
    ]
    body = "\n".join(s for s in sections if s)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(report.report_id)}</title>\n'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


# -- verdict and what was checked -------------------------------------------------------------------


def _verdict(report: GateReport) -> str:
    state, word = ("pass", "PASSED") if report.passed else ("fail", "FAILED")
    passed = sum(r.success for r in report.results)
    tally = [
        _count(len(report.blocking_failures), "blocking failure"),
        _count(len(report.warnings), "warning"),
        f"{passed} passed",
    ]
    caveats = f" ({_count(len(report.caveats), 'caveat')})" if report.caveats else ""
    return (
        f'<header class="verdict {state}"><h1 class="{state}">{escape(report.target)} gate {word}</h1>\n'
        f"<p>{' &middot; '.join(tally)}{caveats} of {len(report.results)} expectations</p></header>"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _checked(report: GateReport) -> str:
    groups = [m.key for m in _groups(report)]
    suite = report.suite
    facts = [
        ("checked", _scope_text(report)),
        ("rows", f"{report.rows:,} in {_count(len(groups), 'group')}: {', '.join(groups)}"),
        ("suite", f"{suite.get('name', '')} ({suite.get('path', '')}, sha256 {suite.get('sha256', '')[:12]})"),
        ("when", report.created_at),
        ("took", " · ".join(f"{k} {v:.2f} s" for k, v in report.timings.items())),
    ]
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts)
    return f'<section id="checked"><h2>What was checked</h2><table class="facts">{rows}</table></section>'


def _scope_text(report: GateReport) -> str:
    scope = {k: v for k, v in report.scope.items() if v is not None}
    if report.target == "dataset":
        return f"dataset {scope.get('name', '?')} (fingerprint {str(scope.get('fingerprint', ''))[:12]})"
    return "lake: " + (", ".join(f"{k} {v}" for k, v in scope.items()) or "everything (all committed batches)")


# -- expectations -----------------------------------------------------------------------------------


def _results_section(heading: str, results: list[ExpectationResult], state: str) -> str:
    if not results:
        return ""
    cards = "\n".join(_result_card(r, state) for r in results)
    return f'<section id="{heading.lower()}"><h2 class="{state}">{heading} ({len(results)})</h2>\n{cards}</section>'


def _result_card(r: ExpectationResult, state: str) -> str:
    parts = [
        f'<article class="result is-{state}" id="result-{escape(r.id)}">',
        f'<h3><span class="badge {escape(r.severity)}">{escape(r.severity)}</span> {escape(r.id)}</h3>',
        f'<p class="muted">{escape(r.type)} &middot; {escape(r.engine)}</p>',
    ]
    if r.notes:
        parts.append(f"<p>{escape(r.notes)}</p>")
    if r.error:
        parts.append(f'<p class="fail">Could not run: <code>{escape(r.error)}</code></p>')
    if r.unexpected_count is not None:
        parts.append(f"<p><b>{_unexpected(r)}</b></p>")
    observed = "" if r.observed is None else f"<div><h4>Observed</h4>{_value(r.observed)}</div>"
    expected = f"<div><h4>Expected (arguments)</h4>{_value(r.kwargs)}</div>" if r.kwargs else ""
    if observed or expected:
        parts.append(f'<div class="pair">{observed}{expected}</div>')
    if r.sample:
        parts.append(
            f"<h4>Offending rows (first {min(len(r.sample), _SAMPLE_ROWS)} "
            f"of {r.unexpected_count or len(r.sample):,})</h4>"
            f"{_rows_table(r.sample[:_SAMPLE_ROWS], 'sample')}"
        )
    return "\n".join([*parts, "</article>"])


def _unexpected(r: ExpectationResult) -> str:
    of = "" if r.element_count is None else f" of {r.element_count:,}"
    percent = "" if r.unexpected_percent is None else f" ({r.unexpected_percent:.3g}%)"
    return f"{r.unexpected_count:,}{of} unexpected{percent}"


def _caveats(results: list[ExpectationResult]) -> str:
    if not results:
        return ""
    items = "".join(f"<li><b>{escape(r.id)}</b>: {escape(r.caveat or '')}</li>" for r in results)
    return f'<section id="caveats"><h2>Passed with caveats ({len(results)})</h2><ul>{items}</ul></section>'


def _passed(results: list[ExpectationResult]) -> str:
    if not results:
        return ""
    rows = "".join(
        f"<tr><td>{escape(r.id)}</td><td>{escape(r.type)}</td><td>{escape(r.engine)}</td><td>{escape(r.severity)}</td>"
        f"<td>{_cell(r.observed)}</td></tr>"
        for r in results
    )
    return (
        f'<section id="passed"><details><summary class="pass">{_count(len(results), "expectation")} passed</summary>'
        f"<table><tr><th>id</th><th>type</th><th>engine</th><th>severity</th><th>observed</th></tr>{rows}</table>"
        "</details></section>"
    )


# -- values as HTML ---------------------------------------------------------------------------------


def _value(value: Any, depth: int = 0) -> str:
    """A JSON-like value as readable HTML: mappings as key/value tables, lists of rows as tables."""
    if isinstance(value, dict) and value and depth < 2:
        rows = "".join(f"<tr><th>{escape(str(k))}</th><td>{_value(v, depth + 1)}</td></tr>" for k, v in value.items())
        return f'<table class="kv">{rows}</table>'
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and depth < 2:
        return _rows_table(value[:_SAMPLE_ROWS], "rows")
    return _cell(value)


def _cell(value: Any) -> str:
    if value is None:
        return "&mdash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return escape(f"{value:.4g}")
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        more = f" &hellip; ({len(value) - _LIST_ITEMS} more)" if len(value) > _LIST_ITEMS else ""
        return ", ".join(_cell(v) for v in value[:_LIST_ITEMS]) + more if value else "none"
    return f"<code>{escape(_short_json(value))}</code>"


def _short_json(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rows_table(rows: list[dict[str, Any]], css: str) -> str:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>" for row in rows)
    return f'<table class="{css}"><tr>{head}</tr>{body}</table>'


# -- metrics ----------------------------------------------------------------------------------------


def _groups(report: GateReport) -> list[GroupMetrics]:
    """The (source, generation) groups; the everything-group only when there is nothing else."""
    return [m for m in report.metrics if m.source != _ALL] or list(report.metrics)


def _metrics(report: GateReport) -> str:
    groups = _groups(report)
    if not groups:
        return '<section id="metrics"><h2>Data-quality metrics</h2><p class="muted">No metrics (no rows).</p></section>'
    figures = [
        _summary_table(report.metrics),
        _actions_figure(groups),
        _distribution_figure("reward", "Reward per decision", "reward", groups, lambda m: m.reward),
        _distribution_figure(
            "episode-return",
            "Episode return (at each seat's last decision)",
            "return",
            groups,
            lambda m: m.episode_return,
        ),
        _drift_figure(groups, _drift_threshold(report)),
    ]
    return '<section id="metrics"><h2>Data-quality metrics</h2>\n' + "\n".join(figures) + "</section>"


def _summary_table(metrics: list[GroupMetrics]) -> str:
    head = (
        "<tr><th>group</th><th class='num'>rows</th><th class='num'>games</th><th class='num'>episodes</th>"
        "<th class='num'>action entropy (bits)</th><th class='num'>entropy / uniform</th>"
        "<th class='num'>win rate [95%]</th><th class='num'>decisions per episode (median)</th>"
        "<th class='num'>drift (JS bits)</th></tr>"
    )
    return f'<table id="summary">{head}{"".join(_summary_row(m) for m in metrics)}</table>'


def _summary_row(m: GroupMetrics) -> str:
    win = (
        "&mdash;"
        if m.win_rate is None
        else escape(f"{m.win_rate:.3f} [{m.win_rate_interval[0]:.3f}, {m.win_rate_interval[1]:.3f}]")
    )
    length = "&mdash;" if m.episode_decisions.p50 is None else escape(fmt(m.episode_decisions.p50))
    drift = "&mdash;" if m.drift is None else escape(f"{m.drift.js_bits:.4f}")
    cells = [f"{m.rows:,}", f"{m.games:,}", f"{m.episodes:,}", f"{m.entropy_bits:.3f}", f"{m.entropy_ratio:.3f}"]
    numbers = "".join(f"<td class='num'>{c}</td>" for c in [*cells, win, length, drift])
    return f"<tr><td>{escape(m.key)}</td>{numbers}</tr>"


def _figure(anchor: str, svg: str, table: str) -> str:
    return f'<figure id="{anchor}">\n{svg}\n{table}\n</figure>'


def _actions_figure(groups: list[GroupMetrics]) -> str:
    actions = list(groups[0].actions)
    series = [
        Series(
            m.key,
            [_share(m, a) for a in actions],
            [
                f"{m.key}, {a}: {m.actions.get(a, 0):,} of {sum(m.actions.values()):,} decisions ({_share(m, a):.1f}%)"
                for a in actions
            ],
        )
        for m in groups
    ]
    svg = grouped_bar_chart(
        actions,
        series,
        title="Actions chosen, per group",
        x_label="share of the group's decisions (%)",
        y_label="macro action",
    )
    head = "".join(f"<th class='num'>{escape(m.key)}</th>" for m in groups)
    rows = "".join(
        f"<tr><td>{escape(a)}</td>"
        + "".join(f"<td class='num'>{m.actions.get(a, 0):,} ({_share(m, a):.1f}%)</td>" for m in groups)
        + "</tr>"
        for a in actions
    )
    return _figure("actions", svg, f"<table><tr><th>action</th>{head}</tr>{rows}</table>")


def _share(m: GroupMetrics, action: str) -> float:
    total = sum(m.actions.values())
    return 100.0 * m.actions.get(action, 0) / total if total else 0.0


_DIST_FIELDS: Final = ("count", "mean", "std", "min", "p05", "p25", "p50", "p75", "p95", "max")


def _distribution_figure(
    anchor: str, title: str, what: str, groups: list[GroupMetrics], pick: Callable[[GroupMetrics], Distribution]
) -> str:
    rows = [q for m in groups if (q := _quantiles(m.key, pick(m))) is not None]
    svg = quantile_chart(rows, title=title, x_label=what, y_label="group")
    head = "".join(f"<th class='num'>{f}</th>" for f in _DIST_FIELDS)
    body = "".join(
        f"<tr><td>{escape(m.key)}</td>"
        + "".join(f"<td class='num'>{_number(getattr(pick(m), f))}</td>" for f in _DIST_FIELDS)
        + "</tr>"
        for m in groups
    )
    return _figure(anchor, svg, f"<table><tr><th>group</th>{head}</tr>{body}</table>")


def _quantiles(label: str, d: Distribution) -> Quantiles | None:
    values = [d.min, d.p05, d.p25, d.p50, d.p75, d.p95, d.max]
    if not d.count or any(v is None or not math.isfinite(v) for v in values):
        return None  # nothing to draw honestly; the table under the chart still shows what there is
    mean = d.mean if d.mean is not None and math.isfinite(d.mean) else None
    return Quantiles(label, *values, mean=mean)  # type: ignore[arg-type]


def _number(value: float | None) -> str:
    if value is None:
        return "&mdash;"
    return f"{value:,}" if isinstance(value, int) else escape(f"{value:.4g}")


def _drift_threshold(report: GateReport) -> float | None:
    for r in report.results:
        if r.type == _DRIFT_CHECK and isinstance(r.kwargs.get("max_js"), (int, float)):
            return float(r.kwargs["max_js"])
    return None


def _drift_figure(groups: list[GroupMetrics], threshold: float | None) -> str:
    with_ref = [m for m in groups if m.drift is not None]
    if not with_ref:
        return (
            '<figure id="drift"><figcaption>Action drift against the reference</figcaption>'
            '<p class="muted">No group had a reference to compare with (no previous build, generation '
            "or baseline report).</p></figure>"
        )
    bars = [
        Bar(m.key, m.drift.js_bits, f"{m.key}: {m.drift.js_bits:.4f} bits vs {m.drift.reference}")  # type: ignore[union-attr]
        for m in with_ref
    ]
    svg = bar_chart(
        bars,
        title="Action drift against the reference (Jensen-Shannon)",
        x_label="JS divergence (bits)",
        y_label="group",
        threshold=threshold,
        threshold_label="max",
        value_format=lambda v: f"{v:.3g}",
    )
    rows = "".join(
        f"<tr><td>{escape(m.key)}</td><td class='num'>{m.drift.js_bits:.4f}</td>"  # type: ignore[union-attr]
        f"<td>{escape(m.drift.reference)}</td><td>{_against(m.drift.js_bits, threshold)}</td></tr>"  # type: ignore[union-attr]
        for m in with_ref
    )
    limit = "" if threshold is None else f" (max {threshold:g})"
    head = f"<tr><th>group</th><th class='num'>JS bits</th><th>reference</th><th>threshold{limit}</th></tr>"
    table = f"<table>{head}{rows}</table>"
    return _figure("drift", svg, table)


def _against(js_bits: float, threshold: float | None) -> str:
    if threshold is None:
        return "&mdash;"
    return '<span class="warn">over</span>' if js_bits > threshold else "within"


def _footer(report: GateReport) -> str:
    where = escape(f"{report.report_id}.json")
    return (
        f'<footer class="muted"><p>Report {escape(report.report_id)} &middot; format {report.format_version} '
        f"&middot; the full record is the JSON report beside this page ({where}).</p></footer>"
    )
