"""How games are played, light to import (the CLI builds its options from these at start-up): what
``distill simulate`` plays and writes (:class:`SimulateConfig`; :mod:`toolkit.game.simulate` plays the games) and
how a rating tournament is played (:class:`TournamentConfig`; :mod:`toolkit.ratings` plays it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.game import DEFAULT_MAX_ROUNDS, PLAYER_TYPES, Compression
from toolkit.limits import MAX_BATCH, MAX_DEALS, MAX_ROWS, MAX_SEED, MaxRounds

# Deals per lineup of a rating tournament, `distill tournament`'s and the loop's alike (each config its own default).
DealsPerLineup = Annotated[
    int, Field(ge=1, le=MAX_DEALS, description="Deals per lineup, each played in every seat rotation.")
]


class SimulateConfig(BaseModel):
    """What to simulate and where to write it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    games: int = Field(1000, ge=1, le=100_000_000, description="Games to play (--games).")
    players: tuple[str, ...] = Field(
        ("heuristic",) * 4,
        min_length=2,
        max_length=6,
        description=f"One player per seat, comma-separated, among {', '.join(PLAYER_TYPES)} (--players).",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of the run; same seed, same games, same bytes (--seed).")
    out: Path | None = Field(None, description="Folder for the decision logs; None plays without writing (--out).")
    compression: Compression = Field("none", description="How the logs are compressed (--compress).")
    batch_size: int = Field(1024, ge=1, le=65_536, description="Games stepped at once (--batch-size).")
    max_rounds: MaxRounds = DEFAULT_MAX_ROUNDS
    rows_per_file: int = Field(
        1_000_000, ge=1, le=MAX_ROWS, description="Decisions per part file before starting the next."
    )

    @field_validator("players")
    @classmethod
    def _known_players(cls, players: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [p for p in players if p not in PLAYER_TYPES]
        if unknown:
            raise ValueError(f"unknown players {unknown}: --players takes names among {', '.join(PLAYER_TYPES)}")
        return players


class TournamentConfig(BaseModel):
    """How a tournament is played."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deals_per_lineup: DealsPerLineup = 16
    max_rounds: MaxRounds = DEFAULT_MAX_ROUNDS
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of the deals.")
    batch_size: int = Field(1024, ge=1, le=MAX_BATCH, description="Games stepped at once.")
