"""The simulate stage: play games with chosen players and write canonical decision logs.

``simulate(SimulateConfig(...))`` plays ``games`` games in batches, writes
every decision as a canonical JSON line (rows are built as games finish and
written on a background thread while the next games play) and returns a
:class:`SimulateResult` with the win rate of every seat and every player
type. Progress goes through a callback; nothing is printed.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.errors import ConfigError
from toolkit.game import core, records, rules
from toolkit.game.players import PLAYER_TYPES, make_player
from toolkit.progress import Progress, ProgressFn


class SimulateConfig(BaseModel):
    """What to simulate and where to write it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    games: int = Field(1000, ge=1, le=100_000_000, description="Games to play (--games).")
    players: tuple[str, ...] = Field(
        ("heuristic",) * 4,
        min_length=2,
        max_length=6,
        description=f"One player per seat, among {', '.join(PLAYER_TYPES)} (--players).",
    )
    seed: int = Field(0, ge=0, description="Seed of the run; same seed, same games, same bytes (--seed).")
    out: Path | None = Field(None, description="Folder for the decision logs; None plays without writing (--out).")
    compression: records.Compression = Field("none", description="none, gzip or zstd (--compress).")
    batch_size: int = Field(1024, ge=1, le=65_536, description="Games stepped at once (--batch-size).")
    max_rounds: int = Field(30, ge=1, le=1000, description="Rounds before a game is a truncation (--max-rounds).")
    rows_per_file: int = Field(1_000_000, ge=1, description="Decisions per part file before starting the next.")

    @field_validator("players")
    @classmethod
    def _known_players(cls, players: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [p for p in players if p not in PLAYER_TYPES]
        if unknown:
            raise ValueError(f"unknown players {unknown}: --players takes names among {', '.join(PLAYER_TYPES)}")
        return players


class SimulateResult(BaseModel):
    """What a simulation played and wrote."""

    games: int
    decisions: int
    seconds: float
    decisions_per_second: float
    wins_per_seat: list[int]
    win_rate_per_seat: list[float]
    win_rate_per_player_type: dict[str, float]
    draws: int
    truncations: int
    files: list[Path]


def simulate(config: SimulateConfig, progress: ProgressFn | None = None) -> SimulateResult:
    """Play ``config.games`` games and write their decisions.

    Raises:
        ConfigError: if the output folder already holds decision logs of this seed.
    """
    players = [make_player(name) for name in config.players]
    n = len(players)
    writer = None
    if config.out is not None:
        prefix = f"sim-{config.seed}"
        if any(config.out.glob(f"{prefix}-part-*")):
            raise ConfigError(
                f"{config.out} already holds logs of seed {config.seed}", hint="choose another --out folder or --seed"
            )
        writer = records.DecisionWriter(config.out, prefix, config.compression, config.rows_per_file)
    rules_config = rules.RulesConfig(n_seats=n, max_rounds=config.max_rounds)
    sources = [p.source for p in players]
    wins = np.zeros(n, np.int64)
    games = decisions = truncations = draws = 0
    start = time.perf_counter()
    for finished in core.play(
        players,
        config.games,
        seed=config.seed,
        config=rules_config,
        batch_size=config.batch_size,
        record=writer is not None,
    ):
        if writer is not None:
            writer.write(records.build_jsonl(finished, seed=config.seed, sources=sources), len(finished.log["game"]))
        won = finished.winner[finished.winner >= 0]
        wins += np.bincount(won, minlength=n)
        games += len(finished.game)
        decisions += int(finished.decisions.sum())
        truncations += int(finished.truncated.sum())
        draws += int(((finished.winner < 0) & ~finished.truncated).sum())
        if progress is not None:
            progress(Progress(games, config.games, "games"))
    if writer is not None:
        writer.close()
    seconds = time.perf_counter() - start
    per_type = {}
    for name in dict.fromkeys(config.players):
        seats = [i for i, p in enumerate(config.players) if p == name]
        per_type[name] = round(float(wins[seats].sum()) / (games * len(seats)), 4)
    return SimulateResult(
        games=games,
        decisions=decisions,
        seconds=round(seconds, 3),
        decisions_per_second=round(decisions / max(seconds, 1e-9), 1),
        wins_per_seat=wins.tolist(),
        win_rate_per_seat=[round(float(w) / games, 4) for w in wins],
        win_rate_per_player_type=per_type,
        draws=draws,
        truncations=truncations,
        files=writer.files if writer is not None else [],
    )
