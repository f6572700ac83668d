"""What a game job's shard does with the logs it writes, beyond writing them: the protocol a stage above hands in.

A game job (a simulation, a league export) writes its logs where it is told.
A caller that wants more of its workers (the loop on a shared lake: stage each
log at the lake's location, :class:`toolkit.ingest.handover.ShardStaging`)
hands the job a :class:`Handoff`, which the job's shard function calls on
the worker; the job itself never imports the stage that implements it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol


class Handoff(Protocol):
    """Where a shard writes its logs, and what it hands the driver for them (picklable: it travels to workers)."""

    def output(self, out: Path) -> AbstractContextManager[Path]:
        """The folder the shard writes the logs meant for ``out`` to (on the worker), while the context lasts."""
        ...

    def hand_over(self, written: list[Path], out: Path) -> tuple[list[Path], list[Any]]:
        """The logs ``written`` as the driver records them (in ``out``), and what the shard hands over for them."""
        ...
