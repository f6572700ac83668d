"""The accuracy guard: the new student on the FIXED Forge holdout, against the previous promoted student."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.loop.gates import GuardVerdict, accuracy_guard
from toolkit.loop.steps.base import StepContext


class GuardInput(BaseModel):
    candidate: str  # cards, relative to the data root
    previous: str | None
    dataset: str
    fingerprint: str


def guard_step(ctx: StepContext, step: GuardInput) -> GuardVerdict:
    from toolkit.datasets.dataset import open_dataset

    dataset = open_dataset(ctx.layout, step.dataset, step.fingerprint)
    previous = ctx.resolve(step.previous) if step.previous else None
    return accuracy_guard(ctx.resolve(step.candidate), previous, dataset, ctx.config.accuracy_guard)
