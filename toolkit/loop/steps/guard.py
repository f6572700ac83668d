"""The accuracy guard: the new student on the FIXED Forge holdout, against the previous promoted student."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from toolkit.loop.gates import GuardVerdict, accuracy_guard
from toolkit.loop.steps.base import StepContext


class GuardInput(BaseModel):
    candidate: Path
    previous: Path | None
    dataset: str
    fingerprint: str


def run(ctx: StepContext, step: GuardInput) -> GuardVerdict:
    from toolkit.datasets.dataset import open_dataset

    dataset = open_dataset(ctx.layout, step.dataset, step.fingerprint)
    return accuracy_guard(step.candidate, step.previous, dataset, ctx.config.accuracy_guard)
