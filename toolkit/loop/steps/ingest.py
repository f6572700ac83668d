"""Logs into the lake: one batch per file, bad lines quarantined; a job's files staged at a shared lake by its
workers, one version for them all."""

from __future__ import annotations

from pydantic import BaseModel, Field

from toolkit.catalog.lake import Lake
from toolkit.ingest.handover import StagedShard
from toolkit.loop.steps.base import StepContext


class IngestInput(BaseModel):
    files: list[str]  # as recorded (relative to the data root inside it)
    staged: list[StagedShard] = Field(
        default_factory=list, description="The files as a game job's workers staged them at a shared lake."
    )


class IngestStepResult(BaseModel):
    batches: list[str]
    rows: int  # the batches' rows and rejected lines, as the catalog records them
    rejected: int
    failed: list[str] = []  # files that could not be read at all (nothing of them is in the lake)
    held: int = 0  # decisions of the files the lake held already (the same games, logged before): not ingested again
    held_by: list[str] = []  # the batches holding them (another run's, say, that played the same seed)


def ingest_step(ctx: StepContext, step: IngestInput) -> IngestStepResult:
    """Ingest the files; the counts are the catalog's for their batches, so a re-run after a crash that came
    between the catalog's commit and the step's saved result (the files are then already ingested) records the
    same result."""
    from toolkit.ingest.config import IngestConfig
    from toolkit.ingest.ingest import ingest_paths

    if not step.files:
        return IngestStepResult(batches=[], rows=0, rejected=0)
    if step.staged:  # the workers' files, committed as one version (the logs fetched to the recorded places)
        from toolkit.ingest.shards import commit_shards

        result = commit_shards(step.staged, ctx.layout, IngestConfig(), catalog_wait=ctx.catalog_wait)
    else:
        paths = [ctx.resolve(f) for f in step.files]
        result = ingest_paths(paths, ctx.layout, IngestConfig(), catalog_wait=ctx.catalog_wait)
    batches = sorted({f.batch_id for f in result.files if f.batch_id})
    with Lake.open(ctx.layout).at() as catalog:
        recorded = [b for b in catalog.batches() if b.batch_id in set(batches)]
    return IngestStepResult(
        batches=batches,
        rows=sum(b.rows_valid for b in recorded),
        rejected=sum(b.rows_rejected for b in recorded),
        failed=[ctx.layout.stored(f.path) for f in result.failed],
        held=sum(f.held for f in result.files),
        held_by=sorted({b for f in result.files for b in f.held_by} - set(batches)),
    )
