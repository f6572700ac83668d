"""The training curves a run's trainers wrote, as charts: PPO per update and BC per epoch, per generation.

Every trainer writes its curves as CSV beside its checkpoints
(:mod:`toolkit.train.metrics`): the self-play step's PPO run writes
``*-metrics-update.csv`` (one row per update) and ``*-metrics-evaluation.csv``
(its periodic evaluations), the student's BC run ``*-metrics-epoch.csv`` (one
row per epoch), each in its step's folder of the run
(``gen-NNN/attempt-K/<step>/``). TensorBoard reads the same numbers from its
event files when the package is installed.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Final

from pydantic import BaseModel

from toolkit.layout import generation_label
from toolkit.loop.state import RunFolder
from toolkit.loop.steps.base import StepName
from toolkit.serve.charts import PALETTE, Chart, Line
from toolkit.train.metrics import tensorboard_available

# (step, CSV suffix, x column, curves drawn, unit, what the chart shows)
CURVES: Final = (
    (
        StepName.SELFPLAY,
        "update",
        "steps",
        ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "explained_variance"),
        "number",
        "PPO per update",
    ),
    (StepName.SELFPLAY, "evaluation", "steps", ("win_rate",), "percent", "PPO's evaluations during training"),
    (
        StepName.TRAIN_STUDENT,
        "epoch",
        "epoch",
        ("train_loss", "holdout_loss", "holdout_accuracy"),
        "number",
        "student (behaviour cloning) per epoch",
    ),
)
MAX_POINTS: Final = 400  # a long PPO run's updates are thinned to this many points


class TrainingCurves(BaseModel):
    """One generation's curves: a chart per trainer run and kind of record, every attempt."""

    generation: int
    charts: list[Chart]


def training_curves(run: RunFolder, generations: int) -> list[TrainingCurves]:
    """The curves of generations 0 .. ``generations`` - 1 that wrote any."""
    found = []
    for g in range(generations):
        attempts = sorted(run.gen_dir(g).glob("attempt-*"), key=lambda p: _attempt(p.name))
        charts = [
            chart
            for folder in attempts
            for step, kind, x, columns, unit, what in CURVES
            if (chart := _chart(run, folder / step, g, _attempt(folder.name), kind, x, columns, unit, what)) is not None
        ]
        if charts:
            found.append(TrainingCurves(generation=g, charts=charts))
    return found


def tensorboard_note(run: RunFolder) -> tuple[str, str | None]:
    """The command that opens the run's curves in TensorBoard, and what to install first when it is missing."""
    install = None if tensorboard_available() else "pip install 'distill[tensorboard]'"
    return f"tensorboard --logdir {run.root}", install


def _attempt(name: str) -> int:
    tail = name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else 0


def _chart(
    run: RunFolder,
    folder: Path,
    g: int,
    attempt: int,
    kind: str,
    x: str,
    columns: tuple[str, ...],
    unit: str,
    what: str,
) -> Chart | None:
    files = run.layout.within(sorted(folder.glob(f"*-metrics-{kind}.csv")))  # never a file a link leads out to
    rows = _read(files[0]) if files else []
    if not rows or x not in rows[0]:
        return None
    rows = rows[:: max(1, math.ceil(len(rows) / MAX_POINTS))]
    drawn = [c for c in columns if c in rows[0]]
    return Chart(
        id=f"curve-{generation_label(g)}-a{attempt}-{kind}",
        title=f"generation {g}, attempt {attempt}: {what}",
        x=[_number(r[x]) or 0 for r in rows],
        x_label="environment steps" if x == "steps" else x,
        y_label="win rate (%)" if unit == "percent" else "value (loss, entropy, ...)",
        unit="percent" if unit == "percent" else "number",
        lines=[
            Line(label=c, data=[_number(r[c]) for r in rows], color=PALETTE[i % len(PALETTE)], width=1.5)
            for i, c in enumerate(drawn)
        ],
    )


def _read(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None
