"""The decision exporter: a learning agent's decisions -> canonical JSONL for the lake.

After training, PPO's final policy plays games against its league
(:func:`export_league_games`, a game job: its shards run in-process, on a
process pool or on Ray) and hands them to a :class:`DecisionExporter`: its
greedy choices are the labels the next student learns from. Evaluation
hands it the games it played through ``core.play``; a user of the
single-game env can hand it each finished episode (the env's
``info["episode_record"]``). Only the agent's seats are kept. The exporter
filters episodes (by default: every episode of at least 3 decisions; wins
only on request), renumbers the kept games, and writes them with the game's
own decision logger (``records.build_jsonl``) through a ``DecisionWriter``:

    <out>/ml-decisions-<source>-<batch>-part-0000.jsonl

``source`` is ``ppo`` for the teacher's games and ``ppo-eval`` for evaluation
games, so the two never mix in the lake; ``model_version`` is
``gen-NNN`` and ``generation`` NNN; game ids are
``<source>-<batch>-<seed>-<k>``, unique per batch (and batches are unique per
run). Rows carry the per-step reward and episode return as the env gave them
(shaping included), the ``outcome`` (+1 the learner's seat won, -1 it did
not), the game's ``lineup`` (the learner, kind ``ppo`` or the checkpoint's,
at its seats; the league entry that held each other seat), legal mask,
placement and terminal / truncation flags, and ``action.requested_index``
where the policy's illegal request was replaced by ``pass``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from pydantic import BaseModel, Field

from toolkit.engine.config import EngineConfig
from toolkit.engine.driver import EngineGame
from toolkit.game import DEFAULT_MAX_ROUNDS, core, records, rules
from toolkit.game.core import Finished
from toolkit.game.env import EpisodeRecord
from toolkit.game.league import check_mirror, draw_opponents, league_probabilities
from toolkit.game.lineup import UNKNOWN, Entrant, entrant_of
from toolkit.ingest.handover import ShardStaging, StagedShard
from toolkit.jobs.config import BackendConfig
from toolkit.jobs.plan import Shard, shards
from toolkit.jobs.run import run_shards
from toolkit.layout import generation_label
from toolkit.train.agents import PlayerRef, entrant, player_from_ref
from toolkit.train.config import SELF, ExportConfig
from toolkit.train.engine_export import engine_records

_GAME_FIELDS = ("game", "winner", "truncated", "placement", "archetype", "commander", "decisions")


class ExportCounts(BaseModel):
    """What an exporter wrote and skipped (episodes: one agent seat of one game)."""

    source: str
    exported_episodes: int = 0
    exported_decisions: int = 0
    skipped_loss: int = Field(0, description="Episodes not won (the turn limit included), when only wins are kept.")
    skipped_short: int = 0
    files: list[Path] = Field(default_factory=list)
    staged: list[StagedShard] = Field(
        default_factory=list, description="The files staged at a shared lake's location by the workers (staging)."
    )


@dataclass
class _Pending:
    finished: Finished
    keep: np.ndarray  # [R] rows to write
    requested: np.ndarray  # [R]
    seating: np.ndarray  # [G, N] the exporter's entrant codes of each game's seats


class DecisionExporter:
    """Filters episodes of one agent and writes the kept ones as canonical decision records."""

    def __init__(
        self,
        out: Path,
        *,
        batch: str,
        generation: int,
        seed: int,
        source: str = "ppo",
        config: ExportConfig | None = None,
        kind: str = "ppo",
        name: str | None = None,
    ) -> None:
        """Args:
        out: folder of the JSONL files.
        batch: names this export (the run id, plus a suffix per evaluation if needed).
        generation: the loop generation (``model_version`` ``gen-NNN``).
        seed: the run's seed, part of every game id.
        source: the rows' source role (``ppo``, ``ppo-eval``).
        config: filters and writing options.
        kind, name: the learner as the rows' lineup names it (its checkpoint's kind and stem).
        """
        self.config = config or ExportConfig()
        self.counts = ExportCounts(source=source)
        self.generation, self.seed, self.source = generation, seed, source
        self.model_version = generation_label(generation)
        self.learner = Entrant(kind, name, self.model_version)
        self._entrants: dict[Entrant, int] = {}
        self.game_prefix = f"{source}-{batch}"
        self.writer = records.DecisionWriter(out, f"ml-decisions-{source}-{batch}", self.config.compression)
        self._pending: list[_Pending] = []
        self._next_game = 0

    def add_episode(self, record: EpisodeRecord) -> bool:
        """Offer one env episode of the learner; returns whether it will be written."""
        f = record.finished
        rows = len(f.log["game"])
        won = bool(f.winner[0] == record.learner_seat and not f.truncated[0])
        if not self._accept(np.array([won]), np.array([rows]))[0]:
            return False
        names = record.seat_names or (None,) * f.placement.shape[1]
        table = [UNKNOWN if name is None else entrant_of(name) for name in names]
        table[record.learner_seat] = self.learner
        self._queue(_Pending(f, np.ones(rows, bool), record.requested, np.array([[self._code(e) for e in table]])))
        return True

    def add_games(
        self,
        finished: Finished,
        mine: np.ndarray,
        entrants: Sequence[Entrant] = (),
        seating: np.ndarray | None = None,
    ) -> int:
        """Offer games from ``core.play(record=True)``; ``mine`` [G,N] marks the agent's seats; returns episodes kept.

        Each (game, seat) of the agent is one episode, filtered on its own.
        ``seating`` [G,N] says which of ``entrants`` held each other seat (the
        lineup of the rows); without it those seats are ``unknown``.
        """
        log, n = finished.log, mine.shape[1]
        row_game = np.searchsorted(finished.game, log["game"])
        row_seat = log["seat"].astype(np.intp)
        counts = np.bincount(row_game * n + row_seat, minlength=mine.size).reshape(mine.shape)
        won = (finished.winner[:, None] == np.arange(n)[None, :]) & ~finished.truncated[:, None]
        accepted = np.zeros_like(mine)
        accepted[mine] = self._accept(won[mine], counts[mine])
        games = accepted.any(1)
        if not games.any():
            return 0
        rows = games[row_game]
        sub = Finished(
            **{k: getattr(finished, k)[games] for k in _GAME_FIELDS}, log={k: v[rows] for k, v in log.items()}
        )
        keep = accepted[row_game[rows], row_seat[rows]]
        codes = np.array([self._code(e) for e in [*entrants, UNKNOWN, self.learner]])
        table = np.full(mine.shape, len(entrants)) if seating is None else np.asarray(seating)
        table = np.where(mine, len(entrants) + 1, table)[games]
        self._queue(_Pending(sub, keep, np.full(int(rows.sum()), -1, np.int64), codes[table]))
        return int(accepted.sum())

    def add_engine_game(self, result: EngineGame, seats: Sequence[int], lineup: Sequence[Entrant]) -> int:
        """Offer one game played in an engine with ``record=True`` (:mod:`toolkit.train.engine_export`); ``seats``
        are the agent's, each one episode filtered on its own, ``lineup`` who held every seat (the agent's seats are
        the learner). Returns the episodes kept."""
        counts = {seat: 0 for seat in seats}
        for row, _ in result.played:
            if row.get("seat") in counts:
                counts[row["seat"]] += 1
        winner = None if result.truncated else result.winner_seat
        accepted = self._accept(np.array([winner == s for s in seats]), np.array([counts[s] for s in seats]))
        kept = [s for s, ok in zip(seats, accepted.tolist(), strict=True) if ok]
        if not kept:
            return 0
        self.flush()  # the games buffered first take the numbers before this one
        table = [self.learner if seat in seats else entrant for seat, entrant in enumerate(lineup)]
        rows = engine_records(
            result,
            kept,
            game_id=records.game_id(self.seed, self._next_game, self.game_prefix),
            source=self.source,
            model_version=self.model_version,
            generation=self.generation,
            lineup=table,
        )
        self._next_game += 1
        self.writer.write([b"".join(orjson.dumps(row) + b"\n" for row in rows)], len(rows))
        self.counts.exported_episodes += len(kept)
        self.counts.exported_decisions += len(rows)
        return len(kept)

    def _code(self, player: Entrant) -> int:
        """The position of ``player`` among the entrants this exporter has seen (added when new)."""
        return self._entrants.setdefault(player, len(self._entrants))

    def _accept(self, won: np.ndarray, decisions: np.ndarray) -> np.ndarray:
        """Which episodes pass the filters (counting those that do not, by reason)."""
        short = decisions < self.config.min_decisions
        lost = ~short & ~won if self.config.only_wins else np.zeros_like(short)
        self.counts.skipped_short += int(short.sum())
        self.counts.skipped_loss += int(lost.sum())
        return ~short & ~lost

    def _queue(self, pending: _Pending) -> None:
        self._pending.append(pending)
        if sum(len(p.finished.game) for p in self._pending) >= self.config.episodes_per_flush:
            self.flush()

    def flush(self) -> None:
        """Build and queue the rows of every buffered episode."""
        if not self._pending:
            return
        parts, self._pending = self._pending, []
        games, logs = [], []
        for part in parts:  # renumber: games of the export are 0, 1, 2... in the order they were kept
            f = part.finished
            numbers = np.arange(self._next_game, self._next_game + len(f.game))
            self._next_game += len(f.game)
            games.append(Finished(**{k: getattr(f, k) for k in _GAME_FIELDS if k != "game"}, game=numbers))
            logs.append({**f.log, "game": numbers[np.searchsorted(f.game, f.log["game"])]})
        merged = Finished(
            **{k: np.concatenate([getattr(g, k) for g in games]) for k in _GAME_FIELDS},
            log={k: np.concatenate([log[k] for log in logs]) for k in logs[0]},
        )
        keep = np.concatenate([p.keep for p in parts])
        requested = np.concatenate([p.requested for p in parts])
        n_seats = merged.placement.shape[1]
        blocks = records.build_jsonl(
            merged,
            seed=self.seed,
            sources=[self.source] * n_seats,
            model_version=self.model_version,
            generation=self.generation,
            keep=keep,
            requested=requested,
            game_prefix=self.game_prefix,
            entrants=list(self._entrants),
            seating=np.concatenate([p.seating for p in parts]),
        )
        rows = int(keep.sum())
        self.writer.write(blocks, rows)
        self.counts.exported_episodes += len(np.unique(merged.log["game"][keep] * n_seats + merged.log["seat"][keep]))
        self.counts.exported_decisions += rows

    def close(self) -> ExportCounts:
        """Write what is buffered, publish the files and return the counts."""
        self.flush()
        self.writer.close()
        self.counts.files = list(self.writer.files)
        return self.counts


"""A league entry that is the teacher itself (self-play: those seats are exported too)."""


def export_league_games(
    teacher: PlayerRef,
    league: Sequence[PlayerRef],
    out: Path,
    *,
    games: int,
    seed: int,
    batch: str,
    generation: int,
    weights: Sequence[float] | None = None,
    mirror: float = 0.0,
    source: str = "ppo",
    config: ExportConfig | None = None,
    pod_size: int = 4,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    batch_size: int = 512,
    backend: BackendConfig | None = None,
    engine: EngineConfig | None = None,
    staging: ShardStaging | None = None,
) -> ExportCounts:
    """``teacher`` plays ``games`` games against ``league``; every seat it holds is exported to ``out``.

    Game ``k`` seats the teacher at ``k % pod_size`` and draws each other seat
    from the league's ``weights`` (none: a fixed table, seat by seat; a share
    ``mirror`` of the games seat one drawn entry in every other seat); an entry
    :data:`SELF` is the teacher. The games are cut into shards (``backend``),
    each exported by its own :class:`DecisionExporter` (batch
    ``<batch>-s<j>`` when there are several), so the files and their rows do
    not depend on where the shards ran, and a repeated shard rewrites the same
    files. With ``engine`` the games are played in that engine instead (one exporter, batch ``<batch>``):
    league player types sit as its own AI profiles, checkpoints and the teacher as Distill's seats; game ``k`` is
    dealt ``game_seed(seed, k)``. With ``staging`` (a loop on a shared lake, games on Distill's own engine), each
    worker writes its files to its own disk and stages them at the lake's location (:mod:`toolkit.ingest.shards`).

    Raises:
        ConfigError: weights that do not fit the league, or a fixed table of the wrong size.
        JobError: a shard's worker died more often than the back end retries.
        EngineError: the engine failed past its restart budget, or sent a row that makes no contract record.
    """
    lineups = draw_lineups(len(league), weights, games=games, seed=seed, pod_size=pod_size, mirror=mirror)
    out = out.resolve()  # workers elsewhere (Ray) resolve a relative path against their own folder
    job = _LeagueJob(
        teacher,
        list(league),
        lineups,
        out,
        batch,
        generation,
        seed,
        source,
        config or ExportConfig(),
        max_rounds,
        batch_size,
        staging if engine is None else None,
    )
    if engine is not None:
        return _export_on_engine(job, engine)
    parts: list[ExportCounts] = run_shards(
        _export_shard, shards(games, (backend or BackendConfig()).shard_games), job, backend
    )
    records.DecisionWriter.discard_unfinished(out, f"ml-decisions-{source}-{batch}")
    return ExportCounts(
        source=source,
        exported_episodes=sum(p.exported_episodes for p in parts),
        exported_decisions=sum(p.exported_decisions for p in parts),
        skipped_loss=sum(p.skipped_loss for p in parts),
        skipped_short=sum(p.skipped_short for p in parts),
        files=[f for p in parts for f in p.files],
        staged=[s for p in parts for s in p.staged],
    )


def draw_lineups(
    entries: int, weights: Sequence[float] | None, *, games: int, seed: int, pod_size: int, mirror: float = 0.0
) -> np.ndarray:
    """[games, pod_size] indices: 0 the teacher (at seat ``k % pod_size``), ``1 + i`` league entry ``i``."""
    p = league_probabilities(weights, entries)
    mirror = check_mirror(mirror)
    rng = np.random.default_rng([seed, 1])
    lineups = np.empty((games, pod_size), np.int64)
    for k in range(games):
        lineups[k] = np.insert(1 + draw_opponents(rng, p, entries, pod_size - 1, mirror), k % pod_size, 0)
    return lineups


@dataclass(frozen=True)
class _LeagueJob:
    teacher: PlayerRef
    league: list[PlayerRef]
    lineups: np.ndarray
    out: Path
    batch: str
    generation: int
    seed: int
    source: str
    config: ExportConfig
    max_rounds: int
    batch_size: int
    staging: ShardStaging | None = None


def _export_on_engine(job: _LeagueJob, engine: EngineConfig) -> ExportCounts:
    """The league export's games played in an engine, exported in game order (see :func:`export_league_games`)."""
    from toolkit.engine.driver import Decider, EngineDriver, GameSpec, decider, game_seed

    me = entrant(job.teacher)
    deciders: dict[str, Decider] = {"teacher": decider(player_from_ref(job.teacher, job.source))}
    seat_of: list[dict[str, Any]] = [{"player": "distill", "name": me.name}]
    keys: list[str | None] = ["teacher"]
    for i, ref in enumerate(job.league):
        if ref == SELF:
            seat_of.append({"player": "distill", "name": me.name})
            keys.append("teacher")
        elif isinstance(ref, str):
            seat_of.append({"player": "engine", "profile": ref})
            keys.append(None)
        else:
            deciders[f"league-{i}"] = decider(player_from_ref(ref))
            seat_of.append({"player": "distill", "name": ref.name})
            keys.append(f"league-{i}")
    entrants = [me, *[me if ref == SELF else entrant(ref) for ref in job.league]]
    specs = [
        GameSpec(
            f"{job.batch}-{k}",
            game_seed(job.seed, k),
            tuple(seat_of[i] for i in row),
            job.max_rounds,
            {seat: keys[i] for seat, i in enumerate(row) if keys[i] is not None},  # type: ignore[misc]
        )
        for k, row in enumerate(job.lineups.tolist())
    ]
    exporter = DecisionExporter(
        job.out,
        batch=job.batch,
        generation=job.generation,
        seed=job.seed,
        source=job.source,
        config=job.config,
        kind=me.kind,
        name=me.name,
    )
    try:
        with EngineDriver(engine) as driver:
            for result in driver.play(specs, deciders, record=True, ordered=True):
                row = job.lineups[int(result.spec.game.rsplit("-", 1)[1])]
                mine = [seat for seat, k in enumerate(row.tolist()) if keys[k] == "teacher"]
                exporter.add_engine_game(result, mine, [entrants[k] for k in row.tolist()])
    except BaseException:
        exporter.writer.abandon()  # no half-written part published
        raise
    return exporter.close()


def _export_shard(shard: Shard, job: _LeagueJob) -> ExportCounts:
    """Games ``shard.start..stop-1`` of the league export: played, filtered, written (staged, with staging)."""
    if job.staging is None:
        return _export_games(shard, job, job.out)
    with job.staging.output(job.out) as folder:
        counts = _export_games(shard, job, folder)
        files, staged = job.staging.hand_over(counts.files, job.out)
    return counts.model_copy(update={"files": files, "staged": staged})


def _export_games(shard: Shard, job: _LeagueJob, out: Path) -> ExportCounts:
    teacher = player_from_ref(job.teacher, job.source)
    players = [teacher, *[teacher if ref == SELF else player_from_ref(ref) for ref in job.league]]
    is_teacher = np.array([p is teacher for p in players])
    me = entrant(job.teacher)
    entrants = [me, *[me if ref == SELF else entrant(ref) for ref in job.league]]  # the teacher's seats: the learner
    exporter = DecisionExporter(
        out,
        batch=job.batch if shard.of == 1 else f"{job.batch}-{shard.name}",
        generation=job.generation,
        seed=job.seed,
        source=job.source,
        config=job.config,
        kind=me.kind,
        name=me.name,
    )
    lineups = job.lineups[shard.start : shard.stop]
    for finished in core.play(
        players,
        shard.size,
        seed=job.seed,
        config=rules.RulesConfig(n_seats=lineups.shape[1], max_rounds=job.max_rounds),
        batch_size=job.batch_size,
        record=True,
        lineups=lineups,
        deals=np.arange(shard.start, shard.stop),
        stream=shard.index or None,
    ):
        seating = lineups[finished.game]
        exporter.add_games(finished, is_teacher[seating], entrants, seating)
    return exporter.close()
