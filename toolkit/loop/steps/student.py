"""The student: behaviour cloning on the generation's dataset."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.loop.steps.base import StepContext


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


def run(ctx: StepContext, step: StudentInput) -> StudentResult:
    from toolkit.train.bc import BCConfig, train_bc
    from toolkit.train.policy import PolicySpec

    s = ctx.config.student
    config = BCConfig(
        dataset=step.dataset,
        fingerprint=step.fingerprint,
        run_id=step.run_id,
        seed=ctx.seed,
        epochs=s.epochs,
        batch_size=s.batch_size,
        learning_rate=s.learning_rate,
        select=s.select,
        patience=s.patience,
        policy=PolicySpec(pi=s.hidden, vf=s.hidden),
        generation=ctx.generation,
    )
    result = train_bc(ctx.layout, config, ctx.folder)
    return StudentResult(
        checkpoint=ctx.layout.stored(result.checkpoint),
        holdout_accuracy=result.holdout_accuracy,
        best_epoch=result.best_epoch,
        epochs=len(result.epochs),
        train_rows=result.train_rows,
        samples_per_second=result.samples_per_second,
    )
