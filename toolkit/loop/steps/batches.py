"""Merge or reject a generation's batches in the catalog (kept either way, with the reason): one lake version."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.catalog.store import Catalog
from toolkit.loop.steps.base import StepContext


class BatchStatusInput(BaseModel):
    batches: list[str]
    status: str
    reason: str


class BatchStatusResult(BaseModel):
    batches: list[str]
    status: str
    reason: str


def run(ctx: StepContext, step: BatchStatusInput) -> BatchStatusResult:
    if step.batches:
        with Catalog.open(ctx.layout, wait=ctx.catalog_wait) as catalog:
            catalog.set_batch_status(step.batches, step.status, step.reason)
    return BatchStatusResult(batches=step.batches, status=step.status, reason=step.reason)
