"""One progress callback for every stage: validate, ingest, build, simulate, training and the loop.

A stage that takes a ``progress`` argument calls it with a :class:`Progress`
as its work advances, never with anything else; the CLI draws every stage's
progress with one renderer (``toolkit.cli.app.progress_bar``), and a test or
a notebook can watch any stage the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a stage is: ``done`` of ``total`` (``None`` while unknown) ``unit``, working on ``item``.

    ``done`` counts from the start of the stage (or of ``item``, for a
    stage that works through several: the files of an ingest), never a delta.
    """

    done: int
    total: int | None
    unit: str  # "rows", "games", "epochs", "steps", "generations"
    item: str = ""  # what is being worked on: a file, a loop step


ProgressFn = Callable[[Progress], None]
