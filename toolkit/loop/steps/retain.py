"""Retention: the loop's own logs, deleted once the lake holds them (``retention: delete``).

Runs right after an ingest step whose result is saved, on the logs the loop
wrote itself (the bootstrap's simulated games, the teacher's export) and
that the ingest read: every row is in the lake, every rejected line in the
quarantine, and the catalog keeps each file's content hash, so nothing
reads these files again. A user's logs (``bootstrap.logs``) never reach
this step, and a file outside the run's own folder is refused. A deletion
cut short by a crash is finished when the run resumes (the step runs again).
"""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.errors import ConfigError
from toolkit.loop.state import RunFolder
from toolkit.loop.steps.base import StepContext


class RetainInput(BaseModel):
    files: list[str]  # the loop's own logs the ingest step read, relative to the data root


class RetainResult(BaseModel):
    deleted: list[str]  # every file of the input, now gone


def retain_step(ctx: StepContext, step: RetainInput) -> RetainResult:
    """Delete the run's own ingested logs.

    Raises:
        ConfigError: a file lies outside the run's folder, or is a symlink (never deleted).
        OutsideRootError: a file leads outside the data root.
    """
    own = RunFolder(ctx.layout, ctx.config.name).root  # checked: inside the data root, symlinks followed
    paths = [ctx.layout.resolve(f) for f in step.files]  # each checked the same way: inside the data root
    outside = [str(p) for p in paths if not p.resolve().is_relative_to(own.resolve()) or p.is_symlink()]
    if outside:
        raise ConfigError(
            f"retention deletes only the loop's own logs under {own}, not {', '.join(outside)}",
            hint="logs named in the loop config are never deleted",
        )
    for path in paths:
        path.unlink(missing_ok=True)  # a re-run after a crash finds some gone
    return RetainResult(deleted=step.files)
