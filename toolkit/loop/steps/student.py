"""The student: behaviour cloning on the generation's dataset."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from toolkit.loop.config import StudentConfig
from toolkit.loop.steps.base import StepContext

if TYPE_CHECKING:
    from toolkit.train.config import BCConfig


class StudentInput(BaseModel):
    dataset: str
    fingerprint: str
    run_id: str


class StudentResult(BaseModel):
    checkpoint: str  # the card, relative to the data root
    holdout_accuracy: float | None
    best_epoch: int
    epochs: int
    train_rows: int
    samples_per_second: float


def student_step(ctx: StepContext, step: StudentInput) -> StudentResult:
    from toolkit.train.bc import train_bc

    config = bc_config(ctx.config.student, step, seed=ctx.seed, generation=ctx.generation)
    result = train_bc(ctx.layout, config, ctx.folder)
    return StudentResult(
        checkpoint=ctx.layout.stored(result.checkpoint),
        holdout_accuracy=result.holdout_accuracy,
        best_epoch=result.best_epoch,
        epochs=len(result.epochs),
        train_rows=result.train_rows,
        samples_per_second=result.samples_per_second,
    )


def bc_config(student: StudentConfig, step: StudentInput, *, seed: int, generation: int | None) -> BCConfig:
    """The behaviour cloning a loop's student gets: ``student``'s settings on the dataset ``step`` names."""
    from toolkit.train.config import BCConfig, PolicySpec

    return BCConfig(
        dataset=step.dataset,
        fingerprint=step.fingerprint,
        run_id=step.run_id,
        seed=seed,
        epochs=student.epochs,
        batch_size=student.batch_size,
        learning_rate=student.learning_rate,
        select=student.select,
        patience=student.patience,
        policy=PolicySpec(pi=student.hidden, vf=student.hidden),
        generation=generation,
    )
