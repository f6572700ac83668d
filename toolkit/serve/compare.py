"""Two or more runs side by side: the strength of the student in use per generation (every evaluation table),
the composition of its training rows, and each run's latest ratings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, Field

from toolkit.errors import ConfigError
from toolkit.layout import Layout
from toolkit.loop.config import NAME_PATTERN
from toolkit.loop.state import RunFolder
from toolkit.ratings import Standing
from toolkit.serve import charts as specs
from toolkit.serve.generations import GenerationRow, generation_rows, table_label
from toolkit.serve.views import composition_points, generations, run_config

MAX_RUNS: Final = 8


class ComparedRun(BaseModel):
    name: str
    rows: list[GenerationRow]
    teacher_share: list[float] = Field(description="Per generation: the PPO teacher's share of the student's rows.")
    rows_total: list[int] = Field(description="Per generation: the student's training rows.")
    ratings_after: int | None = Field(description="The generation of the latest ratings.")
    ratings: list[Standing]


class RunComparison(BaseModel):
    runs: list[ComparedRun]
    tables: dict[str, str] = Field(description="Evaluation tables the runs share -> their opponents in words.")
    charts: list[specs.Chart]


def parse_runs(values: Sequence[str]) -> list[str]:
    """Run names from ``?runs=a,b`` (or ``?runs=a&runs=b``), in order, each once.

    Raises:
        ConfigError: fewer than two, more than ``MAX_RUNS``, or a name that is not a run name.
    """
    names = list(dict.fromkeys(n.strip() for v in values for n in v.split(",") if n.strip()))
    bad = [n for n in names if not re.fullmatch(NAME_PATTERN, n)]
    if bad:
        raise ConfigError(f"{bad[0][:80]!r} is not a loop run name", hint="runs=NAME,NAME with names of this data root")
    if not 2 <= len(names) <= MAX_RUNS:
        raise ConfigError(
            f"compare takes 2 to {MAX_RUNS} runs, got {len(names)}", hint="e.g. /compare?runs=demo,demo-2"
        )
    return names


def comparison(layout: Layout, names: Sequence[str]) -> RunComparison:
    """The runs ``names`` side by side (raises RunNotFoundError for an unknown one)."""
    runs, tables = [], None
    for name in names:
        RunFolder(layout, name).load()  # an unknown run: RunNotFoundError (404)
        records = generations(layout, name)
        config = run_config(layout, name)
        shares = composition_points(records, layout)
        rated = [r for r in records if r.ratings]
        runs.append(
            ComparedRun(
                name=name,
                rows=generation_rows(records),
                teacher_share=[c.teacher_share for c in shares],
                rows_total=[sum(c.rows.values()) for c in shares],
                ratings_after=rated[-1].generation if rated else None,
                ratings=rated[-1].ratings or [] if rated else [],
            )
        )
        named = {t: tuple(o) for t, o in config.evaluation.tables.items()}
        tables = named if tables is None else {t: o for t, o in tables.items() if named.get(t) == o}
    shared = tables or {}
    return RunComparison(runs=runs, tables={t: table_label(o) for t, o in shared.items()}, charts=_charts(runs, shared))


def _charts(runs: list[ComparedRun], tables: dict[str, tuple[str, ...]]) -> list[specs.Chart]:
    longest = max((len(r.rows) for r in runs), default=0)
    x = list(range(longest))
    charts = []
    for i, (table, opponents) in enumerate(tables.items()):
        label, pod = table_label(opponents), len(opponents) + 1
        lines = [
            specs.Line(
                label=f"{run.name}: student vs {label}",
                data=_padded(
                    [
                        (row.student_scores.get(table).win_rate if table in row.student_scores else None)
                        for row in run.rows
                    ],
                    longest,
                ),
                notes=_padded([f"{row.student.in_use} ({row.student.status})" for row in run.rows], longest, ""),
                color=specs.PALETTE[j % len(specs.PALETTE)],
                marker=specs.MARKERS[j % len(specs.MARKERS)],
                dash=[] if j % 2 == 0 else [6, 3],
            )
            for j, run in enumerate(runs)
        ]
        lines.append(specs.reference_line(f"chance (1 in {pod})", x, specs.chance(pod), specs.CHANCE_COLOR))
        charts.append(
            specs.Chart(
                id=f"compare-strength-{i}",
                title=f"Student win rate vs {label}",
                x=x,
                x_label="generation",
                y_label=f"win rate vs {label} (%)",
                unit="percent",
                lines=lines,
            )
        )
    charts.append(
        specs.Chart(
            id="compare-composition",
            title="The PPO teacher's share of the student's training rows",
            kind="bar",
            x=x,
            x_label="generation",
            y_label="teacher's share of the rows (%)",
            unit="percent",
            lines=[
                specs.Line(
                    label=run.name,
                    data=_padded(run.teacher_share, longest),
                    color=specs.PALETTE[j % len(specs.PALETTE)],
                )
                for j, run in enumerate(runs)
            ],
        )
    )
    return charts


def _padded(values: list, length: int, fill: object = None) -> list:
    return values + [fill] * (length - len(values))
