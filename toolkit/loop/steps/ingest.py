"""Logs into the lake: one batch per file, bad lines quarantined."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.loop.steps.base import StepContext


class IngestInput(BaseModel):
    files: list[str]  # as recorded (relative to the data root inside it)


class IngestStepResult(BaseModel):
    batches: list[str]
    rows: int
    rejected: int


def run(ctx: StepContext, step: IngestInput) -> IngestStepResult:
    from toolkit.ingest.config import IngestConfig
    from toolkit.ingest.ingest import ingest_paths

    if not step.files:
        return IngestStepResult(batches=[], rows=0, rejected=0)
    result = ingest_paths([ctx.layout.resolve(f) for f in step.files], ctx.layout, IngestConfig())
    return IngestStepResult(
        batches=sorted({f.batch_id for f in result.files if f.batch_id}),
        rows=result.rows_valid,
        rejected=result.rows_rejected,
    )
