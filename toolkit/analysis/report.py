"""Static HTML reports that open offline: tables as HTML, charts as inline SVG (rendered here, no CDN)."""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from toolkit.layout import Layout, checked_name
from toolkit.storage import write_text_atomic

MAX_ROWS = 200
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f4f4f4}.note{color:#555}figure{margin:.5em 0}
"""


@dataclass
class Section:
    """One part of a report: a heading, a note, a table and/or a chart (an Altair chart)."""

    title: str
    table: pl.DataFrame | None = None
    chart: Any = None
    note: str = ""


def report_path(layout: Layout, kind: str, name: str | None = None) -> Path:
    """Where the report of ``kind`` (lake, dataset, loop) for ``name`` goes: ``<home>/reports/notebooks/``."""
    if name is None:
        return layout.inside(layout.reports / "notebooks" / f"{kind}.html")
    return layout.inside(layout.reports / "notebooks" / f"{kind}-{checked_name(name, f'{kind} name')}.html")


def write_sections_report(path: Path, title: str, sections: list[Section]) -> Path:
    """Write the sections as one self-contained HTML page (charts drawn to SVG here: nothing is fetched)."""
    parts = [
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title><style>{_STYLE}</style>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='note'>written {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by Distill</p>",
    ]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.note:
            parts.append(f"<p class='note'>{html.escape(section.note)}</p>")
        if section.chart is not None:
            parts.append(f"<figure>{_svg(section.chart)}</figure>")
        if section.table is not None:
            parts.append(_table(section.table))
    write_text_atomic(path, "\n".join(parts) + "\n")
    return path


def _svg(chart: Any) -> str:
    import vl_convert

    return vl_convert.vegalite_to_svg(chart.to_dict())


def _table(frame: pl.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    rows = []
    for row in frame.head(MAX_ROWS).iter_rows():
        rows.append("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>")
    more = f"<p class='note'>{frame.height - MAX_ROWS:,} more rows</p>" if frame.height > MAX_ROWS else ""
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>{more}"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    return str(value)
