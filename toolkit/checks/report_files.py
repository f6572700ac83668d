"""A gate report on disk: its JSON (the record, read back) and its HTML page (for people), under the data root's
``reports/``."""

from __future__ import annotations

from pathlib import Path

from toolkit.checks.report import GateReport
from toolkit.checks.report_html import render_gate_html
from toolkit.errors import ConfigError
from toolkit.layout import REPORT_FORMAT_VERSION, Layout
from toolkit.storage import read_versioned, write_text_atomic


def write_gate_report(report: GateReport, layout: Layout) -> GateReport:
    """Write ``report`` as JSON and HTML under the data root's ``reports/``; returns it with ``paths`` set."""
    layout.reports.mkdir(parents=True, exist_ok=True)
    json_path = layout.reports / f"{report.report_id}.json"
    html_path = layout.reports / f"{report.report_id}.html"
    paths = {"json": layout.stored(json_path), "html": layout.stored(html_path)}
    report = report.model_copy(update={"paths": paths})
    write_text_atomic(json_path, report.model_dump_json(indent=2))
    write_text_atomic(html_path, render_gate_html(report))
    return report


def read_report(path: Path) -> GateReport:
    """A report written by :func:`write_gate_report`.

    Raises:
        ConfigError: missing, not a gate report, or of a format version this Distill does not read.
    """
    return read_versioned(
        path,
        GateReport,
        REPORT_FORMAT_VERSION,
        what="gate report",
        error=ConfigError,
        hint="run the check again: it writes a new report",
    )
