"""Evaluation in 4-player pods: a policy rotated through every seat against fixed opponents.

``evaluate(policy, config)`` plays ``games / n`` deals with the policy at
each seat ``0..n-1`` in turn, so the same deals are replayed once per seat
(the 4-player analogue of colour-swapped pairs). The deals are cut into
shards, each one run of the batched core (``core.play`` with a lineup per
game), played in-process, on a process pool or on Ray (``toolkit.jobs``)
with the same result.

Results: win rate with a Wilson 95% interval, the placement score (1st 1,
2nd 2/3, 3rd 1/3, 4th 0; for a pod of n, ``(n - place) / (n - 1)``), the mean
placement, per-seat figures, truncations, illegal actions (recurrent policies
only; flat ones are masked) and decisions per second. A truncated game has
no places for the seats still alive: such a seat scores the mean of the
places they share. ``outcomes`` lists every game in (deal, seat) order, for a
sequential test (the loop's SPRT) to consume rotation group by rotation group.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field, computed_field

from toolkit.errors import ConfigError
from toolkit.game import core, rules
from toolkit.game.lineup import UNKNOWN, Entrant
from toolkit.game.players import Player
from toolkit.jobs.config import BackendConfig
from toolkit.jobs.plan import Shard, shards
from toolkit.jobs.run import run_shards
from toolkit.layout import EVALUATION_FORMAT_VERSION
from toolkit.stats import Z95, wilson_interval
from toolkit.storage import read_versioned, write_text_atomic
from toolkit.train.agents import PlayerRef, PolicyBlob, entrant, player_from_ref, player_refs, ref_name
from toolkit.train.config import EvaluateConfig
from toolkit.train.export import DecisionExporter

if TYPE_CHECKING:
    from toolkit.engine.config import EngineConfig
    from toolkit.engine.driver import Decider


class Outcome(BaseModel):
    """One game of the policy."""

    deal: int
    seat: int
    won: bool
    score: float = Field(description="Placement score in [0, 1].")
    placement: float = Field(description="Final place (mean of the shared places at a truncation).")
    truncated: bool


class SeatResult(BaseModel):
    seat: int
    games: int
    wins: int
    win_rate: float
    placement_score: float
    truncations: int = Field(0, description="Games at this seat that ended at the turn limit (nobody's win).")


class EvaluationResult(BaseModel):
    """What an evaluation measured; the loop's gates read it."""

    opponents: list[str]
    games: int
    wins: int
    win_rate: float
    win_low: float = Field(description="Wilson 95% interval of the win rate.")
    win_high: float
    placement_score: float
    placement_low: float = Field(description="Normal 95% interval of the mean placement score.")
    placement_high: float
    mean_placement: float
    truncations: int = Field(description="Games that ended at the turn limit: nobody's win, the policy's neither.")
    illegal_actions: int
    engine_faults: list[str] = Field(
        default_factory=list, description="Engine faults recovered (games voided and played again), when --engine."
    )
    decisions: int
    seconds: float
    decisions_per_second: float
    games_per_second: float
    per_seat: list[SeatResult]
    outcomes: list[Outcome]

    @computed_field(description="The win rate of a player no better than the others: 1 / seats.")  # type: ignore[prop-decorator]
    @property
    def chance(self) -> float:
        return round(1 / (len(self.opponents) + 1), 4)

    @computed_field(description="Share of the games that ended at the turn limit.")  # type: ignore[prop-decorator]
    @property
    def truncation_share(self) -> float:
        return round(self.truncations / self.games, 4) if self.games else 0.0


class EvaluationFile(EvaluationResult):
    """An evaluation as its file holds it (the loop's evaluations, an ablation variant's): the result, versioned."""

    format_version: int = Field(EVALUATION_FORMAT_VERSION, ge=1, le=EVALUATION_FORMAT_VERSION)


def write_evaluation(path: Path, result: EvaluationResult) -> None:
    """Write ``result`` to ``path`` (atomically), with its format version first."""
    body = {"format_version": EVALUATION_FORMAT_VERSION, **result.model_dump(mode="json")}
    write_text_atomic(path, json.dumps(body))


def read_evaluation(path: Path) -> EvaluationResult:
    """An evaluation's file, as :func:`write_evaluation` wrote it (or an older Distill, without its version).

    Raises:
        ConfigError: missing, not an evaluation, or of a format version this Distill does not read.
    """
    found = read_versioned(
        path,
        EvaluationFile,
        EVALUATION_FORMAT_VERSION,
        what="saved evaluation",
        error=ConfigError,
        hint="delete it and run the evaluation again (a loop or an ablation re-runs it when resumed)",
        upgrades={1: dict},  # version 1: the same result, without its version
        unversioned=1,
    )
    return EvaluationResult.model_validate(found.model_dump(exclude={"format_version"}))


def evaluate(
    policy: Callable[[], Player] | PlayerRef,
    config: EvaluateConfig,
    exporter: DecisionExporter | None = None,
    opponents: Sequence[Player | PlayerRef] | None = None,
    backend: BackendConfig | None = None,
    engine: EngineConfig | None = None,
) -> EvaluationResult:
    """Play the policy in every seat against ``config.opponents`` and measure it.

    Deal ``d`` is played once with the policy at each seat; the deals are
    cut into shards (``backend.shard_games`` games each) played on the back
    end ``backend`` names, and the outcomes come back in (deal, seat) order:
    the same result wherever the shards ran.

    Args:
        policy: a checkpoint (:class:`~toolkit.train.agents.PolicyBlob`) or a
            player type, which any back end can play; or a function giving a
            fresh player of a live policy, played in this process.
        config: opponents (player types and checkpoint paths), games, seed, turn limit.
        exporter: if given, the policy's decisions are offered to it (its filters apply; in this process).
        opponents: players to use instead of the names in ``config.opponents``: live players (played in this
            process), or player types and checkpoints (:data:`~toolkit.train.agents.PlayerRef`, which any back
            end can play: a model against copies of another, the loop's head-to-head gate).
        backend: where the shards run (default: ``auto``).
        engine: play the games in this engine instead (:mod:`toolkit.engine`): the same deals and seatings;
            player types are the engine's own AI profiles of those names (``ai:PROFILE`` any other of its
            profiles), checkpoints are Distill's seats.

    Raises:
        ConfigError: an unknown opponent name, or too many opponents.
        TrainError: an opponent's checkpoint that does not load.
        JobError: a shard's worker died more often than the back end retries.
    """
    others: list[Player | PlayerRef] = list(
        opponents
        if opponents is not None
        else player_refs(config.opponents, option="opponents", engine_ai=engine is not None)
    )  # an unknown name fails here, before any worker starts
    n = len(others) + 1
    if n > 6:
        raise ConfigError(f"a pod of {n} seats is too big", hint="give at most 5 opponents (--vs)")
    if engine is not None:
        return _evaluate_on_engine(policy, others, config, engine, exporter)
    backend = backend or BackendConfig()
    refs = all(isinstance(o, (str, PolicyBlob)) for o in others)
    portable = isinstance(policy, (str, PolicyBlob)) and refs and exporter is None
    if not portable:  # live players and the exporter stay here; the shard plan is the same
        backend = backend.model_copy(update={"kind": "inprocess"})
    per_seat = math.ceil(config.games / n)
    job = _EvalJob(policy, others, config, exporter)
    start = time.perf_counter()
    parts: list[_DealsPlayed] = run_shards(
        _play_deals, shards(per_seat, max(1, backend.shard_games // n)), job, backend
    )
    seconds = time.perf_counter() - start
    outcomes = sorted((o for p in parts for o in p.outcomes), key=lambda o: (o.deal, o.seat))
    return _summarise(
        outcomes,
        [ref_name(o) if isinstance(o, (str, PolicyBlob)) else o.source for o in others],
        sum(p.decisions for p in parts),
        sum(p.illegal for p in parts),
        seconds,
    )


@dataclass(frozen=True)
class _EvalJob:
    policy: Callable[[], Player] | PlayerRef
    others: Sequence[Player | PlayerRef]
    config: EvaluateConfig
    exporter: DecisionExporter | None


@dataclass(frozen=True)
class _DealsPlayed:
    outcomes: list[Outcome]
    decisions: int
    illegal: int


def _play_deals(shard: Shard, job: _EvalJob) -> _DealsPlayed:
    """Deals ``shard.start..stop-1``, each with the policy at every seat in turn: game ``k`` of the shard is
    deal ``start + k % size`` with the policy at seat ``k // size``."""
    player = job.policy() if callable(job.policy) else player_from_ref(job.policy)
    loaded: dict[str, Player] = {}  # copies of one checkpoint are one player: asked once for all its seats
    others = [
        p
        if not isinstance(p, (str, PolicyBlob))
        else loaded.setdefault(p if isinstance(p, str) else p.sha256, player_from_ref(p))
        for p in job.others
    ]
    n = len(others) + 1
    size = shard.size
    seat_of_game = np.repeat(np.arange(n), size)
    lineups = np.array([[0 if s == seat else 1 + s - (s > seat) for s in range(n)] for seat in range(n)])[seat_of_game]
    deals = np.tile(np.arange(shard.start, shard.stop), n)
    outcomes: list[Outcome] = []
    decisions = 0
    for finished in core.play(
        [player, *others],
        n * size,
        seed=job.config.seed,
        config=rules.RulesConfig(n_seats=n, max_rounds=job.config.max_rounds),
        batch_size=job.config.batch_size,
        record=job.exporter is not None,
        lineups=lineups,
        deals=deals,
        stream=shard.index or None,
    ):
        seats = seat_of_game[finished.game]
        outcomes += _outcomes(finished, seats, deals[finished.game], n)
        decisions += int(finished.decisions.sum())
        if job.exporter is not None:
            seating = lineups[finished.game]
            job.exporter.add_games(finished, seating == 0, [UNKNOWN, *_entrants(job.others)], seating)
    return _DealsPlayed(outcomes, decisions, int(getattr(player, "illegal", 0)))


def _evaluate_on_engine(
    policy: Callable[[], Player] | PlayerRef,
    others: Sequence[Player | PlayerRef],
    config: EvaluateConfig,
    engine: EngineConfig,
    exporter: DecisionExporter | None,
) -> EvaluationResult:
    """The evaluation's games played in an engine: deal ``d`` with the policy at seat ``s`` is game
    ``eval-<seed>-<d>-<s>``, seeded ``game_seed(seed, d)`` (below 2**32: what the built-in engine deals as the
    in-process core deals deal ``d``); player types sit as the engine's AI profiles, checkpoints as Distill's seats."""
    from toolkit.engine.driver import EngineDriver, GameSpec, decider, game_seed

    deciders: dict[str, Decider] = {"policy": decider(policy() if callable(policy) else player_from_ref(policy))}
    seats: list[dict[str, Any]] = []
    for k, other in enumerate(others):
        if isinstance(other, str):
            seats.append({"player": "engine", "profile": other})
        else:
            deciders[f"opponent-{k}"] = decider(other if not isinstance(other, PolicyBlob) else player_from_ref(other))
            seats.append({"player": "distill", "name": ref_name(other) if isinstance(other, PolicyBlob) else None})
    n = len(others) + 1
    per_seat = math.ceil(config.games / n)
    games = []
    for deal in range(per_seat):
        for seat in range(n):
            table = seats[:seat] + [{"player": "distill", "name": "policy"}] + seats[seat:]
            keys = {s: "policy" if s == seat else f"opponent-{s - (s > seat)}" for s in range(n)}
            policies = {s: k for s, k in keys.items() if table[s]["player"] == "distill"}
            games.append(
                GameSpec(
                    f"eval-{config.seed}-{deal}-{seat}",
                    game_seed(config.seed, deal),
                    tuple(table),
                    config.max_rounds,
                    policies,
                )
            )
    start = time.perf_counter()
    outcomes: list[Outcome] = []
    decisions = 0
    others_at = _entrants(others)
    with EngineDriver(engine) as driver:
        for result in driver.play(games, deciders, record=exporter is not None, ordered=exporter is not None):
            deal, seat = (int(x) for x in result.spec.game.rsplit("-", 2)[1:])
            if exporter is not None:  # the policy's seat is the learner's in the lineup
                exporter.add_engine_game(result, [seat], [*others_at[:seat], UNKNOWN, *others_at[seat:]])
            outcomes.append(_outcome(result.placements, result.winner_seat, result.truncated, deal, seat, n))
            decisions += result.decisions
        faults = list(driver.faults)
    seconds = time.perf_counter() - start
    outcomes.sort(key=lambda o: (o.deal, o.seat))
    names = [o if isinstance(o, str) else ref_name(o) if isinstance(o, PolicyBlob) else o.source for o in others]
    result = _summarise(outcomes, names, decisions, 0, seconds)
    return result.model_copy(update={"engine_faults": faults})


def _outcome(
    placements: Sequence[int | None], winner: int | None, truncated: bool, deal: int, seat: int, n: int
) -> Outcome:
    """One game's outcome for the policy at ``seat`` (as :func:`_outcomes` reads the in-process core's)."""
    place = placements[seat] or 0
    if place:
        placement, score = float(place), (n - place) / (n - 1)
    else:  # alive at a truncation: the places 1..k still to share
        k = sum(1 for p in placements if not p)
        placement, score = (k + 1) / 2, sum((n - p) / (n - 1) for p in range(1, k + 1)) / k
    return Outcome(
        deal=deal,
        seat=seat,
        won=bool(winner == seat and not truncated),
        score=round(score, 6),
        placement=placement,
        truncated=truncated,
    )


def _entrants(others: Sequence[Player | PlayerRef]) -> list[Entrant]:
    """The opponents as the exported rows' lineup names them (a live player: an unknown one, named by its source)."""
    return [entrant(o) if isinstance(o, (str, PolicyBlob)) else Entrant(UNKNOWN.kind, o.source) for o in others]


def _outcomes(finished: core.Finished, seats: np.ndarray, deals: np.ndarray, n: int) -> list[Outcome]:
    return [
        _outcome(
            [int(p) or None for p in finished.placement[g].tolist()],
            int(finished.winner[g]),
            bool(finished.truncated[g]),
            int(deals[g]),
            seat,
            n,
        )
        for g, seat in enumerate(seats.tolist())
    ]


def _summarise(
    outcomes: list[Outcome], opponents: list[str], decisions: int, illegal: int, seconds: float
) -> EvaluationResult:
    games = len(outcomes)
    wins = sum(o.won for o in outcomes)
    low, high = wilson_interval(wins, games)
    scores = np.array([o.score for o in outcomes])
    half = Z95 * float(scores.std(ddof=1)) / math.sqrt(games) if games > 1 else 1.0
    seats = sorted({o.seat for o in outcomes})
    per_seat = []
    for s in seats:
        mine = [o for o in outcomes if o.seat == s]
        won = sum(o.won for o in mine)
        per_seat.append(
            SeatResult(
                seat=s,
                games=len(mine),
                wins=won,
                win_rate=round(won / len(mine), 4),
                placement_score=round(float(np.mean([o.score for o in mine])), 4),
                truncations=sum(o.truncated for o in mine),
            )
        )
    return EvaluationResult(
        opponents=opponents,
        games=games,
        wins=wins,
        win_rate=round(wins / games, 4),
        win_low=round(low, 4),
        win_high=round(high, 4),
        placement_score=round(float(scores.mean()), 4),
        placement_low=round(max(0.0, float(scores.mean()) - half), 4),
        placement_high=round(min(1.0, float(scores.mean()) + half), 4),
        mean_placement=round(float(np.mean([o.placement for o in outcomes])), 4),
        truncations=sum(o.truncated for o in outcomes),
        illegal_actions=illegal,
        decisions=decisions,
        seconds=round(seconds, 3),
        decisions_per_second=round(decisions / max(seconds, 1e-9), 1),
        games_per_second=round(games / max(seconds, 1e-9), 1),
        per_seat=per_seat,
        outcomes=outcomes,
    )


class Comparison(BaseModel):
    """Two policies on the same deals: the difference of win rates and placement scores, with 95% intervals.

    The intervals treat each deal (played in every seat by both) as one
    unit, since games on one deal are not independent. Differences are in
    the unit of what they compare: win rates as fractions (0.032 is 3.2
    percentage points, as the CLI prints it), placement scores in [0, 1].
    """

    a: EvaluationResult
    b: EvaluationResult
    deals: int
    win_rate_diff: float = Field(description="a's win rate minus b's, a fraction (0.032 = +3.2 percentage points).")
    win_rate_diff_low: float = Field(description="95% interval of win_rate_diff, a fraction.")
    win_rate_diff_high: float
    score_diff: float = Field(description="a's placement score minus b's (scores are in [0, 1]).")
    score_diff_low: float = Field(description="95% interval of score_diff.")
    score_diff_high: float


def compare(a: EvaluationResult, b: EvaluationResult) -> Comparison:
    """``a - b`` on paired games (same deal, same seat): means per game, intervals over deal units."""
    pairs = {(o.deal, o.seat): o for o in b.outcomes}
    wins: dict[int, list[float]] = {}
    scores: dict[int, list[float]] = {}
    for x in a.outcomes:
        y = pairs.get((x.deal, x.seat))
        if y is not None:
            wins.setdefault(x.deal, []).append(float(x.won) - float(y.won))
            scores.setdefault(x.deal, []).append(x.score - y.score)

    def interval(by_deal: dict[int, list[float]]) -> tuple[float, float, float]:
        units = np.array([np.mean(v) for v in by_deal.values()])
        if not len(units):
            return 0.0, -1.0, 1.0
        mean = float(units.mean())
        half = Z95 * float(units.std(ddof=1)) / math.sqrt(len(units)) if len(units) > 1 else 1.0
        return round(mean, 4), round(mean - half, 4), round(mean + half, 4)

    w, s = interval(wins), interval(scores)
    return Comparison(
        a=a,
        b=b,
        deals=len(wins),
        win_rate_diff=w[0],
        win_rate_diff_low=w[1],
        win_rate_diff_high=w[2],
        score_diff=s[0],
        score_diff_low=s[1],
        score_diff_high=s[2],
    )
