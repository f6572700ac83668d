"""The simulate stage: play games with chosen players and write canonical decision logs.

``simulate(SimulateConfig(...))`` plays ``games`` games in batches, writes
every decision as a canonical JSON line (rows are built as games finish and
written on a background thread while the next games play) and returns a
:class:`SimulateResult` with the win rate of every seat and every player
type. Progress goes through a callback; nothing is printed. The games are
played in shards on the back end a :class:`~toolkit.jobs.config.BackendConfig`
names (in-process, a process pool, Ray): same seed, same games, same bytes,
wherever they ran.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from toolkit.errors import ConfigError
from toolkit.game import core, records, rules
from toolkit.game.config import SimulateConfig
from toolkit.game.lineup import entrant_of
from toolkit.game.players import make_player
from toolkit.jobs.config import BackendConfig
from toolkit.jobs.handoff import Handoff
from toolkit.jobs.plan import Shard, shards
from toolkit.jobs.run import run_shards
from toolkit.progress import ProgressFn


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
    staged: list[Any] = Field(
        default_factory=list, description="What the workers handed over for the logs (with a handoff; see simulate)."
    )


def simulate(
    config: SimulateConfig,
    progress: ProgressFn | None = None,
    backend: BackendConfig | None = None,
    handoff: Handoff | None = None,
) -> SimulateResult:
    """Play ``config.games`` games and write their decisions.

    The games are cut into shards of ``backend.shard_games`` (one plan for
    every back end), played where ``backend`` says; shard ``j`` of several
    writes ``sim-<seed>-s<j>-part-*`` (a single shard ``sim-<seed>-part-*``),
    each file published by an atomic rename, so a repeated shard rewrites
    the same bytes under the same name. Game ``k`` is dealt from ``[seed, k]``
    whatever shard it is in. With a ``handoff`` (a loop on a shared lake:
    :class:`toolkit.ingest.handover.ShardStaging`), each shard writes its logs
    where the handoff says and hands them over: the result's ``files`` are as
    the handoff records them, its ``staged`` what it handed over.

    Raises:
        ConfigError: if the output folder already holds decision logs of this seed.
        JobError: a shard's worker died more often than the back end retries.
    """
    if config.out is not None and any(config.out.glob(f"sim-{config.seed}-*part-*")):
        raise ConfigError(
            f"{config.out} already holds logs of seed {config.seed}", hint="choose another --out folder or --seed"
        )
    if config.out is not None:  # workers elsewhere (Ray) resolve a relative path against their own folder
        config = config.model_copy(update={"out": config.out.resolve()})
    start = time.perf_counter()
    plan = shards(config.games, (backend or BackendConfig()).shard_games)
    job = _SimulateJob(config, handoff)
    parts: list[_ShardPlayed] = run_shards(_play_shard, plan, job, backend, progress=progress)
    seconds = time.perf_counter() - start
    if config.out is not None:
        records.DecisionWriter.discard_unfinished(config.out, f"sim-{config.seed}-")
    n = len(config.players)
    wins = np.sum([p.wins for p in parts], axis=0).astype(np.int64) if parts else np.zeros(n, np.int64)
    return simulate_result(
        config,
        wins,
        games=sum(p.games for p in parts),
        decisions=sum(p.decisions for p in parts),
        seconds=seconds,
        draws=sum(p.draws for p in parts),
        truncations=sum(p.truncations for p in parts),
        files=[f for p in parts for f in p.files],
    ).model_copy(update={"staged": [s for p in parts for s in p.staged]})


def simulate_result(
    config: SimulateConfig,
    wins: np.ndarray,
    *,
    games: int,
    decisions: int,
    seconds: float,
    draws: int,
    truncations: int,
    files: list[Path],
) -> SimulateResult:
    """A simulation's result from its counts (in process or in an engine): the win rates per seat and per player
    type, the speed."""
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
        files=files,
    )


@dataclass(frozen=True)
class _ShardPlayed:
    games: int
    decisions: int
    wins: list[int]
    draws: int
    truncations: int
    files: list[Path]
    staged: list[Any]


@dataclass(frozen=True)
class _SimulateJob:
    config: SimulateConfig
    handoff: Handoff | None


def _play_shard(shard: Shard, job: _SimulateJob) -> _ShardPlayed:
    """Games ``shard.start..stop-1`` of the run: played, written (and handed over, with a handoff), counted."""
    config = job.config
    if config.out is None or job.handoff is None:
        return _play(shard, config, config.out)
    with job.handoff.output(config.out) as folder:
        played = _play(shard, config, folder)
        files, staged = job.handoff.hand_over(played.files, config.out)
    return dataclasses.replace(played, files=files, staged=staged)


def _play(shard: Shard, config: SimulateConfig, out: Path | None) -> _ShardPlayed:
    """The shard's games played, their logs written to ``out`` (a pure function of its inputs)."""
    players = [make_player(name) for name in config.players]
    n = len(players)
    writer = None
    if out is not None:
        prefix = f"sim-{config.seed}" if shard.of == 1 else f"sim-{config.seed}-{shard.name}"
        writer = records.DecisionWriter(out, prefix, config.compression, config.rows_per_file)
    sources = [p.source for p in players]
    entrants = [entrant_of(name) for name in config.players]
    wins = np.zeros(n, np.int64)
    decisions = truncations = draws = 0
    for finished in core.play(
        players,
        shard.size,
        seed=config.seed,
        config=rules.RulesConfig(n_seats=n, max_rounds=config.max_rounds),
        batch_size=config.batch_size,
        record=writer is not None,
        deals=np.arange(shard.start, shard.stop),
        stream=shard.index or None,
    ):
        finished.game += shard.start  # the run's game numbers, which name the games
        if writer is not None:
            assert finished.log is not None
            finished.log["game"] += shard.start
            blocks = records.build_jsonl(finished, seed=config.seed, sources=sources, entrants=entrants)
            writer.write(blocks, len(finished.log["game"]))
        won = finished.winner[finished.winner >= 0]
        wins += np.bincount(won, minlength=n)
        decisions += int(finished.decisions.sum())
        truncations += int(finished.truncated.sum())
        draws += int(((finished.winner < 0) & ~finished.truncated).sum())
    if writer is not None:
        writer.close()
    return _ShardPlayed(
        games=shard.size,
        decisions=decisions,
        wins=wins.tolist(),
        draws=draws,
        truncations=truncations,
        files=writer.files if writer is not None else [],
        staged=[],
    )
