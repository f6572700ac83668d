"""Which engine to start and how to hold it to the protocol: :class:`EngineConfig`, light to import (the CLI
builds its ``--engine`` options from it at start-up; :mod:`toolkit.engine.driver` plays the games)."""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator


class EngineConfig(BaseModel):
    """Which engine to start and how to hold it to the protocol."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: tuple[str, ...] = Field(min_length=1, description="The engine's program and arguments (--engine).")
    processes: int = Field(1, ge=1, le=64, description="Engine processes run at once (--engine-processes).")
    games_per_process: int | None = Field(
        None, ge=1, le=65_536, description="Games in flight per process (default: what its hello offers)."
    )
    hello_seconds: float = Field(30.0, gt=0, le=3600, description="Deadline of an engine's hello.")
    frame_seconds: float = Field(
        60.0, gt=0, le=3600, description="Deadline of an engine's next frame while it has games in flight."
    )
    game_seconds: float = Field(600.0, gt=0, le=86_400, description="Deadline of one game, from its start.")
    shutdown_seconds: float = Field(5.0, gt=0, le=600, description="Grace for an engine to exit at the end.")
    restarts: int = Field(3, ge=0, le=100, description="Engine restarts a run may use before it stops.")
    selfplay: bool = Field(
        True,
        description="PPO trains in the engine too (a vectorised env over its processes: outcome rewards only); "
        "False: PPO trains in Distill's game, every other game is played in the engine.",
    )
    log_dir: Path | None = Field(
        None,
        description="Where each engine process's stderr is kept (engine-<n>.stderr.log); None: only its last lines, "
        "quoted in errors. The loop keeps them in each step's folder.",
    )

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return tuple(shlex.split(value)) if isinstance(value, str) else value
