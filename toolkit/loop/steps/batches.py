"""Merge or reject a generation's batches in the catalog (kept either way, with the reason): one lake version."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.catalog.lake import Lake
from toolkit.loop.steps.base import StepContext


class BatchStatusInput(BaseModel):
    batches: list[str]
    status: str
    reason: str


class BatchStatusResult(BaseModel):
    batches: list[str]
    status: str
    reason: str


def batches_step(ctx: StepContext, step: BatchStatusInput) -> BatchStatusResult:
    if step.batches:
        with Lake.open(ctx.layout, write=True, wait=ctx.catalog_wait) as lake:
            lake.review(step.batches, step.status, step.reason)
    return BatchStatusResult(batches=step.batches, status=step.status, reason=step.reason)
