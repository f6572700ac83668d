"""What every step shares: its name, its seed slot, and the context it runs in."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from pathlib import Path

import numpy as np

from toolkit.catalog.connect import WriterWait
from toolkit.engine.config import EngineConfig
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig


class StepName(StrEnum):
    """The steps, as saved in the state (key ``<attempt>:<name>``) and shown in the progress."""

    SIMULATE = "simulate"
    INGEST = "ingest"
    RETAIN = "retain"
    SELFPLAY = "selfplay"
    PPO_GATE = "ppo_gate"
    DATA_GATE = "data_gate"
    ACCEPT = "accept"
    REJECT = "reject"
    BUILD = "build"
    TRAIN_STUDENT = "train_student"
    ACCURACY_GUARD = "accuracy_guard"
    STUDENT_GATE = "student_gate"
    EVALUATE = "evaluate"
    RATINGS = "ratings"
    EXPLOIT = "exploit"


class SeedSlot(IntEnum):
    """Where each seeded step draws its seed from (see :func:`derive_seed`)."""

    SIMULATE = 1
    SELFPLAY = 2
    PPO_GATE = 3
    BUILD = 4
    TRAIN_STUDENT = 5
    STUDENT_GATE = 6
    TOURNAMENT = 7
    EVALUATION = 8
    EXPLOIT = 9
    LEAGUE = 10


def derive_seed(*parts: int) -> int:
    """A seed for one step, from the loop seed and the step's coordinates."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0] % (2**31))


@dataclass(frozen=True)
class StepContext:
    """Where a step runs: the data root, the loop's config, its own output folder, its seed, and how it waits for
    the catalog another process writes (a loop waits as long as it takes, saying so)."""

    layout: Layout
    config: LoopConfig
    out: Path
    seed: int
    generation: int
    attempt: int
    catalog_wait: WriterWait = field(default_factory=WriterWait)

    def resolve(self, stored: str | Path) -> Path:
        """A path the run recorded, checked to lie inside the data root or under a file or folder the loop's config
        names (``Layout.resolve``).

        Raises:
            OutsideRootError: it leads anywhere else.
        """
        return self.layout.resolve(stored, outside=self.config.named_paths())

    @property
    def folder(self) -> Path:
        """The step's output folder, created on first use (the driver empties it before the step runs)."""
        self.out.mkdir(parents=True, exist_ok=True)
        return self.out

    @property
    def engine(self) -> EngineConfig | None:
        """The loop's engine (None: Distill's own game), its processes' stderr logged in this step's folder."""
        engine = self.config.engine
        if engine is None:
            return None
        return engine.model_copy(update={"log_dir": engine.log_dir or self.folder / "engine-logs"})
