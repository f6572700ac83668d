"""What the dashboard's charts draw, decided here and drawn by ``static/app.js`` (Chart.js) as given.

A :class:`Chart` names its axes with their units, and each :class:`Line` its
style: the student solid with round markers, the PPO model dashed with
triangles and drawn above the student's (so neither hides the other), the
reference lines (chance in a pod, the PPO export floor) thin and dashed,
every point marked (a series of one point shows). Tooltips are written in
the value axis's unit (a percent axis shows percents), with the point's
note (a kept model says it is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from toolkit.loop.config import LoopConfig
from toolkit.serve.generations import GenerationRow, ModelOutcome, table_label

Unit = Literal["percent", "number"]
PALETTE = ("#2459a8", "#d9822b", "#1f7a3f", "#b3261e", "#7b4fb5", "#2a9d8f", "#8a5a00", "#5d6875", "#c2185b")
MARKERS = ("circle", "triangle", "rect", "rectRot", "star", "crossRot", "rectRounded", "cross")
CHANCE_COLOR, FLOOR_COLOR = "#5d6875", "#b3261e"


class Line(BaseModel):
    """One series: its values (None: no point), its style, and its 95% band when it has one."""

    label: str
    data: list[float | None]
    color: str
    dash: list[int] = Field(default_factory=list, description="Chart.js borderDash: [] is solid.")
    marker: str = Field("circle", description="Chart.js pointStyle; 'none' draws no marker (reference lines).")
    width: float = 2.0
    order: int = Field(0, description="Drawing order: a lower order is drawn above a higher one.")
    low: list[float | None] | None = Field(None, description="The 95% band's lower edge, if any.")
    high: list[float | None] | None = None
    notes: list[str] = Field(default_factory=list, description="Per point: text added to its tooltip.")
    reference: bool = Field(False, description="A reference line (chance, a floor), not a measurement.")


class Chart(BaseModel):
    """One chart: kind, x values, axes with units, series."""

    id: str = Field(description="The canvas's id on the page.")
    title: str
    kind: Literal["line", "bar"] = "line"
    x: list[int | float | str]
    x_label: str
    y_label: str
    unit: Unit
    stacked: bool = False
    lines: list[Line]


def chance(pod: int) -> float:
    """A player's win rate by chance in a ``pod``-player game."""
    return 1 / pod


def strength_charts(rows: Sequence[GenerationRow], config: LoopConfig) -> list[Chart]:
    """One win-rate chart per evaluation table: the student and the PPO model in use, with 95% bands, chance in
    the pod, and the PPO export floor on the floor's own table."""
    charts = []
    gens = [r.generation for r in rows]
    floor_table = tuple(config.floor.opponents)
    for i, (table, opponents) in enumerate(config.evaluation.tables.items()):
        label = table_label(opponents)
        lines = [
            _scores_line(f"student vs {label}", rows, "student", table, PALETTE[0], [], "circle", 3.0, 2),
            _scores_line(f"PPO vs {label}", rows, "ppo", table, PALETTE[1], [6, 3], "triangle", 2.0, 1),
            reference_line(f"chance (1 in {len(opponents) + 1})", gens, chance(len(opponents) + 1), CHANCE_COLOR),
        ]
        if config.floor.win_rate is not None and tuple(opponents) == floor_table:
            lines.append(reference_line("PPO export floor", gens, config.floor.win_rate, FLOOR_COLOR, dash=[6, 4]))
        charts.append(
            Chart(
                id=f"chart-strength-{i}",
                title=f"Win rate vs {label}",
                x=gens,
                x_label="generation",
                y_label=f"win rate vs {label} (%)",
                unit="percent",
                lines=lines,
            )
        )
    return charts


def _scores_line(
    label: str,
    rows: Sequence[GenerationRow],
    kind: Literal["student", "ppo"],
    table: str,
    color: str,
    dash: list[int],
    marker: str,
    width: float,
    order: int,
) -> Line:
    scores = [(r.student_scores if kind == "student" else r.ppo_scores).get(table) for r in rows]
    outcomes = [r.student if kind == "student" else r.ppo for r in rows]
    return Line(
        label=label,
        data=[s.win_rate if s else None for s in scores],
        low=[s.win_low if s else None for s in scores],
        high=[s.win_high if s else None for s in scores],
        color=color,
        dash=dash,
        marker=marker,
        width=width,
        order=order,
        notes=[_in_use(o) if s else "" for s, o in zip(scores, outcomes, strict=True)],
    )


def _in_use(outcome: ModelOutcome) -> str:
    """Whose point it is: ``gen-001-student (promoted)``, ``gen-001-student (kept, same model as generation 1)``."""
    same = f", same model as generation {outcome.in_use_generation}" if outcome.status == "kept" else ""
    return f"{outcome.in_use} ({outcome.status}{same})"


def reference_line(label: str, x: Sequence[object], value: float, color: str, dash: list[int] | None = None) -> Line:
    return Line(
        label=label,
        data=[value] * len(x),
        color=color,
        dash=dash if dash is not None else [2, 3],
        marker="none",
        width=1.5,
        order=9,
        reference=True,
    )


def accuracy_chart(rows: Sequence[GenerationRow], config: LoopConfig) -> Chart:
    """Each generation's trained student candidate on the FIXED holdout (promoted or refused), with the floor, next
    to the win rate of the student in use against the first evaluation table."""
    gens = [r.generation for r in rows]
    candidates = [r.student.candidates[-1] if r.student.candidates else None for r in rows]
    first = next(iter(config.evaluation.tables.items()), None)
    strength: list[Line] = []
    if first is not None:
        table, opponents = first
        strength = [
            _scores_line(
                f"student in use vs {table_label(opponents)}", rows, "student", table, PALETTE[0], [], "circle", 2.0, 1
            ).model_copy(update={"low": None, "high": None})
        ]
    return Chart(
        id="chart-accuracy",
        title="Holdout accuracy of each generation's student candidate, and strength",
        x=gens,
        x_label="generation",
        y_label="accuracy, win rate (%)",
        unit="percent",
        lines=[
            Line(
                label="candidate's holdout accuracy",
                data=[c.holdout_accuracy if c else None for c in candidates],
                color=PALETTE[2],
                notes=[
                    ("" if c is None else f"{c.name}, " + ("promoted" if c.promoted else "refused")) for c in candidates
                ],
            ),
            *strength,
            reference_line("accuracy floor", gens, config.accuracy_guard.floor, FLOOR_COLOR, dash=[6, 4]),
        ],
    )


def ratings_chart(chart_id: str, points: Sequence[tuple[int, dict[str, float]]], y_label: str) -> Chart:
    """One line per player over generations, every point marked (a player rated once shows as a marker)."""
    players = sorted({name for _, values in points for name in values})
    return Chart(
        id=chart_id,
        title=y_label,
        x=[g for g, _ in points],
        x_label="generation",
        y_label=y_label,
        unit="number",
        lines=[
            Line(
                label=name,
                data=[values.get(name) for _, values in points],
                color=PALETTE[i % len(PALETTE)],
                marker=MARKERS[i % len(MARKERS)],
                dash=[] if i < len(PALETTE) else [4, 2],
            )
            for i, name in enumerate(players)
        ],
    )


def composition_chart(chart_id: str, points: Sequence[tuple[int, dict[str, float]]]) -> Chart:
    """Stacked bars: the share of the student's training rows by source, per generation."""
    sources = sorted({s for _, share in points for s in share})
    return Chart(
        id=chart_id,
        title="The student's training rows by source",
        kind="bar",
        x=[g for g, _ in points],
        x_label="generation",
        y_label="share of the student's rows (%)",
        unit="percent",
        stacked=True,
        lines=[
            Line(label=s, data=[share.get(s, 0.0) for _, share in points], color=PALETTE[i % len(PALETTE)])
            for i, s in enumerate(sources)
        ],
    )
