"""An ablation's record and page: ``ablation.json`` (the record) and ``ablation.html`` (a rendering of it).

The page reads top to bottom, in the style of the gate reports: what was
varied and how it was measured, then one table per opponent table (each
variant's win rate with its 95% interval, the paired difference to the
first variant with its interval, holdout accuracy and rows) with a bar chart
of the win rates. Inline SVG only: it renders offline. Every text is escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Final

from toolkit.ablate.grid import setting_text
from toolkit.ablate.result import AblationResult, VariantResult, VariantTable
from toolkit.charts_svg import Bar, bar_chart
from toolkit.checks.report_html import CSS
from toolkit.errors import ConfigError
from toolkit.layout import ABLATION_FORMAT_VERSION, Layout
from toolkit.storage import read_versioned, write_text_atomic

RECORD_FILE: Final = "ablation.json"
PAGE_FILE: Final = "ablation.html"


def write_ablation(layout: Layout, root: Path, table: AblationResult) -> AblationResult:
    """Write ``table`` as ``root/ablation.json`` and ``root/ablation.html`` (each atomically); returns it with
    its ``paths`` set."""
    paths = {"json": layout.stored(root / RECORD_FILE), "html": layout.stored(root / PAGE_FILE)}
    table = table.model_copy(update={"paths": paths})
    write_text_atomic(root / RECORD_FILE, table.model_dump_json(indent=1))
    write_text_atomic(root / PAGE_FILE, render_ablation_html(table))
    return table


def read_ablation(path: Path) -> AblationResult:
    """An ``ablation.json``.

    Raises:
        ConfigError: unreadable, invalid, or of a format version this Distill does not read.
    """
    return read_versioned(
        path,
        AblationResult,
        ABLATION_FORMAT_VERSION,
        what="ablation",
        error=ConfigError,
        hint="run the ablation again with this version of Distill (distill ablate)",
    )


def percent(value: float | None, signed: bool = False) -> str:
    """``0.412`` as ``41.2%`` (``+41.2`` points when ``signed``); ``-`` for None."""
    if value is None:
        return "-"
    return f"{value * 100:+.1f}" if signed else f"{value * 100:.1f}%"


def interval(low: float | None, high: float | None, signed: bool = False) -> str:
    """``[low, high]`` in percent (points when ``signed``)."""
    if low is None or high is None:
        return ""
    return f"[{low * 100:+.1f}, {high * 100:+.1f}]" if signed else f"[{low * 100:.1f}, {high * 100:.1f}]"


def render_ablation_html(table: AblationResult) -> str:
    """A self-contained page: what was varied, then a table and a chart per opponent table."""
    sections = [_header(table), *(_table_section(table, name) for name in table.tables), _footer(table)]
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ablation {escape(table.name)}</title>\n'
        f"<style>{CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )


def _header(table: AblationResult) -> str:
    facts = {
        "base": table.base,
        "varied": ", ".join(table.fields) + (" (zipped)" if table.zip else " (every combination)"),
        "variants": str(len(table.variants)),
        "measured": f"{table.games:,} games per student and table, seats rotated, the same deals for every "
        f"student (seed {table.seed}), at most {table.max_rounds} rounds",
        "holdout": "one FIXED holdout for every variant"
        if table.same_holdout
        else "the variants' holdouts differ: accuracies do not compare",
        "back end": table.backend,
    }
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts.items())
    return f'<h1>Ablation {escape(table.name)}</h1>\n<table class="kv facts">{rows}</table>'


def _table_section(table: AblationResult, name: str) -> str:
    head = (
        "<tr><th>#</th><th>variant</th><th class=num>win rate</th><th>95% interval</th>"
        "<th class=num>vs first (points)</th><th>95% interval</th><th class=num>holdout acc</th>"
        "<th class=num>train rows</th><th>shares</th></tr>"
    )
    rows = "".join(_row(v, v.tables[name]) for v in table.variants)
    bars = [
        Bar(_short(v), v.tables[name].win_rate, f"{v.label}: {percent(v.tables[name].win_rate)}")
        for v in table.variants
    ]
    chart = bar_chart(bars, title=f"win rate vs {name}", x_label="win rate", value_format=percent)
    opponents = ", ".join(table.tables[name])
    return (
        f"<h2>Against {escape(name)} ({escape(opponents)})</h2>\n<table>{head}{rows}</table>\n<figure>{chart}</figure>"
    )


def _row(v: VariantResult, s: VariantTable) -> str:
    shares = ", ".join(f"{k} {x:.0%}" for k, x in sorted(v.shares.items()) if x > 0)
    cells = [
        f"<td>{v.index + 1}</td>",
        f"<td>{escape(v.label)}</td>",
        f"<td class=num>{percent(s.win_rate)}</td>",
        f"<td>{interval(s.win_low, s.win_high)}</td>",
        f"<td class=num>{percent(s.diff, signed=True) if v.index else 'baseline'}</td>",
        f"<td>{interval(s.diff_low, s.diff_high, signed=True)}</td>",
        f"<td class=num>{v.holdout_accuracy:.3f}</td>",
        f"<td class=num>{v.train_rows:,}</td>",
        f"<td>{escape(shares)}</td>",
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def _short(v: VariantResult) -> str:
    """A bar's label: the variant's number and its values (the table names the fields)."""
    return f"#{v.index + 1}: " + ", ".join(setting_text(x) for x in v.settings.values())


def _footer(table: AblationResult) -> str:
    return (
        f'<p class="muted">Distill {escape(table.code_version)}, {escape(table.created_at)}, '
        f"{table.seconds:.0f} s. The paired difference counts each deal (played in every seat by both students) "
        "as one unit. The record is ablation.json.</p>"
    )
