"""Ratings across generations: seat-rotated tournaments in 4-player pods, one persistent pool of games.

Success is a win, and only a win: every game is rated winner-vs-rest (the
winner first, the three others tied behind it); a game that hits the turn
limit is a loss for all. The pool (a JSON file) keeps every rated game, and
the ratings are refitted from all of them each time, so they never depend
on the order games were fed in:

- ``elo``: the maximum a-posteriori fit of the winner model
  ``P(i wins a pod S) = e^θi / (e^θ0 + Σ_{j∈S} e^θj)``, where ``θ0`` is the
  turn limit's own strength (how often nobody wins), with a weak Gaussian
  prior; on the Elo scale (``θ · 400 / ln 10``, so a 400-point gap is 10:1
  odds head to head), anchored at 1500 for the ``heuristic`` baseline when
  it is in the pool, and ``elo_se`` its standard error.
- ``mu``, ``sigma``, ``ordinal`` (mu - 3 sigma): OpenSkill Plackett-Luce
  over the same winner-vs-rest ranks, averaged over ``SHUFFLES`` shuffled
  orders of the games (fixed seed, games first put in a canonical order).
  Games at the turn limit carry no ranking there and are left out.

Each tournament has an id; rating one the pool already holds is a no-op, so
a loop resumed after a crash never counts the same games twice. A
tournament plays every lineup of 4 entrants that includes at least one of
the ``focus`` players (the new generation), each lineup on the same deals
in every seat rotation: one table of games, cut into shards played
in-process, on a process pool or on Ray (``toolkit.jobs``) with the same
games wherever they ran.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ConfigError
from toolkit.game import core, rules
from toolkit.game.config import TournamentConfig
from toolkit.game.players import Player, make_player
from toolkit.jobs.config import BackendConfig
from toolkit.jobs.plan import Shard, shards
from toolkit.jobs.run import run_shards
from toolkit.layout import POOL_FORMAT_VERSION
from toolkit.stats import Z95, interval_verdict, probability_above_zero
from toolkit.storage import read_versioned, write_text_atomic

if TYPE_CHECKING:
    from toolkit.engine.config import EngineConfig

POD: Final = 4
ELO_ANCHOR: Final = 1500.0
ANCHOR_PLAYER: Final = "heuristic"
ELO_PER_NAT: Final = 400.0 / math.log(10.0)
PRIOR_SD: Final = 3.0  # nats: weak, it only keeps an unbeaten player's rating finite
ORDINAL_Z: Final = 3.0
SHUFFLES: Final = 8
NOBODY: Final = -1  # the winner of a game that hit the turn limit


class Rating(BaseModel):
    """One player's standing in the pool."""

    model_config = ConfigDict(extra="forbid")

    name: str
    mu: float
    sigma: float
    elo: float
    elo_se: float = Field(description="Standard error of the Elo estimate.")
    games: int
    wins: int
    truncated: int = Field(0, description="Of its games, those that ended at the turn limit (nobody won).")

    @property
    def ordinal(self) -> float:
        """The conservative estimate mu - 3 sigma (what leaderboards sort by)."""
        return self.mu - ORDINAL_Z * self.sigma


@dataclass(frozen=True)
class GameResult:
    """One rated game: who sat where, and the winner's seat (:data:`NOBODY` at the turn limit)."""

    players: tuple[str, ...]
    winner: int

    @property
    def truncated(self) -> bool:
        """The game ended at the turn limit (the rules allow no draw: a game without a winner is a truncation)."""
        return self.winner == NOBODY


class RatedGame(BaseModel):
    """A game as the pool keeps it."""

    model_config = ConfigDict(extra="forbid")

    tournament: str
    players: list[str]
    winner: int


class PoolFile(BaseModel):
    """The pool on disk."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = POOL_FORMAT_VERSION
    tournaments: list[str] = Field(default_factory=list, description="Ids of the tournaments rated, in order.")
    games: list[RatedGame] = Field(default_factory=list)


class RatingPool:
    """The persistent pool of rated games (``path`` None: in memory only); :meth:`save` writes it atomically."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data = (
            PoolFile()
            if path is None or not path.exists()
            else read_versioned(
                path,
                PoolFile,
                POOL_FORMAT_VERSION,
                what="rating pool",
                error=ConfigError,
                hint="start a new loop run (ratings of older runs cannot be refitted)",
            )
        )

    def has(self, tournament: str) -> bool:
        return tournament in self.data.tournaments

    def rate(self, tournament: str, games: Sequence[GameResult]) -> None:
        """Add a tournament's games to the pool (a no-op for a tournament already rated)."""
        if self.has(tournament):
            return
        self.data.games += [RatedGame(tournament=tournament, players=list(g.players), winner=g.winner) for g in games]
        self.data.tournaments.append(tournament)

    def table(self) -> list[Rating]:
        """Every player's rating from all games, by Elo (best first)."""
        return fit_ratings(self.data.games)

    def save(self) -> None:
        if self.path is None:
            raise ConfigError("an in-memory rating pool has no file to save to", hint="give the pool a path")
        write_text_atomic(self.path, self.data.model_dump_json())


def fit_ratings(games: Sequence[RatedGame]) -> list[Rating]:
    """Ratings of every player in ``games`` (see the module docstring), best Elo first; order-independent."""
    games = sorted(games, key=lambda g: (g.tournament, g.players, g.winner))
    names = sorted({p for g in games for p in g.players})
    if not names:
        return []
    index = {name: i for i, name in enumerate(names)}
    seats = np.array([[index[p] for p in g.players] for g in games], np.int64)
    winner = np.array([g.winner for g in games], np.int64)
    anchor = index.get(ANCHOR_PLAYER)
    theta, se = _fit_winner_model(seats, winner, len(names), anchor)
    mu, sigma = _openskill_averaged(games, names)
    played = np.bincount(seats.ravel(), minlength=len(names))
    won = np.bincount(seats[winner >= 0, winner[winner >= 0]], minlength=len(names))
    truncated = np.bincount(seats[winner == NOBODY].ravel(), minlength=len(names))
    ratings = [
        Rating(
            name=n,
            mu=round(mu[i], 4),
            sigma=round(sigma[i], 4),
            elo=round(ELO_ANCHOR + ELO_PER_NAT * theta[i], 1),
            elo_se=round(ELO_PER_NAT * se[i], 1),
            games=int(played[i]),
            wins=int(won[i]),
            truncated=int(truncated[i]),
        )
        for i, n in enumerate(names)
    ]
    return sorted(ratings, key=lambda r: (-r.elo, r.name))


def _fit_winner_model(
    seats: np.ndarray, winner: np.ndarray, k: int, anchor: int | None, iterations: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """MAP strengths (nats) of ``k`` players relative to ``anchor`` (else to their mean), with standard errors.

    By Newton's method. Parameter ``k`` is the turn limit's strength: it sits
    in every game as a fifth entrant that "wins" when nobody does. Only
    differences of strengths are identified, so both the estimates and
    their standard errors are of the difference to the anchor (whose own
    error is then 0) or to the mean.
    """
    g, n = seats.shape
    entrants = np.concatenate([seats, np.full((g, 1), k)], axis=1)  # [G, n+1]
    outcome = np.where(winner >= 0, winner, n)
    theta = np.zeros(k + 1)
    prior = np.eye(k + 1) / PRIOR_SD**2
    hessian = prior
    for _ in range(iterations):
        logits = theta[entrants]
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        grad = -theta / PRIOR_SD**2
        np.add.at(grad, entrants[np.arange(g), outcome], 1.0)
        np.add.at(grad, entrants.ravel(), -p.ravel())
        hessian = prior.copy()
        np.add.at(hessian, (entrants.ravel(), entrants.ravel()), p.ravel())
        for a in range(n + 1):
            for b in range(n + 1):
                np.add.at(hessian, (entrants[:, a], entrants[:, b]), -p[:, a] * p[:, b])
        step = np.linalg.solve(hessian, grad)
        theta += step
        if np.abs(step).max() < 1e-9:
            break
    reference = np.zeros(k + 1)  # the contrast each estimate is measured against
    if anchor is None:
        reference[:k] = 1.0 / k
    else:
        reference[anchor] = 1.0
    contrast = np.eye(k + 1)[:k] - reference  # row i: theta_i - reference
    covariance = contrast @ np.linalg.inv(hessian) @ contrast.T
    return contrast @ theta, np.sqrt(np.maximum(np.diag(covariance), 0.0))


def _openskill_averaged(games: Sequence[RatedGame], names: list[str]) -> tuple[list[float], list[float]]:
    """OpenSkill mu and sigma per name, averaged over :data:`SHUFFLES` seeded orders of the won games."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    decided = [g for g in games if g.winner >= 0]
    mu_sum, sigma_sum = np.zeros(len(names)), np.zeros(len(names))
    index = {name: i for i, name in enumerate(names)}
    rng = np.random.default_rng(0)
    for _ in range(SHUFFLES):
        ratings = {name: model.rating() for name in names}
        for j in rng.permutation(len(decided)).tolist():
            game = decided[j]
            ranks = [1 if seat == game.winner else 2 for seat in range(len(game.players))]
            rated = model.rate([[ratings[p]] for p in game.players], ranks=ranks)
            for p, (new,) in zip(game.players, rated, strict=True):
                ratings[p] = new
        for name, r in ratings.items():
            mu_sum[index[name]] += r.mu
            sigma_sum[index[name]] += r.sigma
    return list(mu_sum / SHUFFLES), list(sigma_sum / SHUFFLES)


def lineups(entrants: Sequence[str], focus: Sequence[str]) -> list[tuple[str, ...]]:
    """Every set of 4 entrants including at least one focus player, in a fixed order."""
    if len(entrants) < POD:
        raise ConfigError(f"a tournament needs at least {POD} entrants, got {len(entrants)}", hint="add baselines")
    return [c for c in itertools.combinations(entrants, POD) if set(c) & set(focus)]


def play_tournament(
    entrants: dict[str, Any],
    focus: Sequence[str],
    config: TournamentConfig,
    *,
    load: Callable[[Any], Player] = make_player,
    backend: BackendConfig | None = None,
    engine: EngineConfig | None = None,
) -> list[GameResult]:
    """Play every lineup on the same deals in every seat rotation; return the games in table order.

    Args:
        entrants: each entrant's player as ``load`` takes it (a player type by
            default; the loop passes checkpoints with ``train.agents.player_from_ref``).
        focus: the entrants every lineup must include one of.
        config: deals per lineup, seed, turn limit.
        load: a module-level function making a fresh player of an entrant (workers import it by name).
        backend: where the games run; the table is cut into shards of
            ``backend.shard_games`` games, so the result is the same on every back end.
        engine: play the games in this engine instead (:mod:`toolkit.engine`), on the same deals and seatings:
            an entrant named by a string (a player type) sits as the engine's own AI profile of that name, a
            checkpoint as a Distill seat answered over the wire.
    """
    names = list(entrants)
    seatings = [lineup[shift:] + lineup[:shift] for lineup in lineups(names, focus) for shift in range(POD)]
    deals = config.deals_per_lineup
    table = np.repeat(np.array([[names.index(p) for p in seated] for seated in seatings]), deals, axis=0)
    deal_ids = np.array([(k // (POD * deals)) * deals + k % deals for k in range(len(table))])
    job = _TournamentJob(names, [entrants[name] for name in names], load, table, deal_ids, config)
    if engine is not None:
        return _play_on_engine(job, engine)
    plan = shards(len(table), (backend or BackendConfig()).shard_games)
    return [game for part in run_shards(_play_rows, plan, job, backend) for game in part]


@dataclass(frozen=True)
class _TournamentJob:
    names: list[str]
    entrants: list[Any]
    load: Callable[[Any], Player]
    table: np.ndarray  # [games, POD] entrant index per seat
    deals: np.ndarray  # [games]
    config: TournamentConfig


def _play_rows(shard: Shard, job: _TournamentJob) -> list[GameResult]:
    """Games ``shard.start..stop-1`` of the tournament table, in table order."""
    players = [job.load(entrant) for entrant in job.entrants]
    table = job.table[shard.start : shard.stop]
    results: list[GameResult | None] = [None] * shard.size
    for finished in core.play(
        players,
        shard.size,
        seed=job.config.seed,
        config=rules.RulesConfig(n_seats=POD, max_rounds=job.config.max_rounds),
        batch_size=job.config.batch_size,
        lineups=table,
        deals=job.deals[shard.start : shard.stop],
        stream=shard.index or None,
    ):
        for g, k in enumerate(finished.game.tolist()):
            won = int(finished.winner[g]) if not finished.truncated[g] else NOBODY
            results[k] = GameResult(tuple(job.names[i] for i in table[k]), won)
    return [r for r in results if r is not None]


def _play_on_engine(job: _TournamentJob, engine: EngineConfig) -> list[GameResult]:
    """The tournament table played in an engine: row ``k`` is game ``t-<k>``, dealt ``game_seed(seed, deal)`` (for
    seeds below 2**32 what the built-in engine deals as the in-process core deals that deal), in table order."""
    from toolkit.engine.driver import Decider, EngineDriver, GameSpec, decider, game_seed

    deciders: dict[str, Decider] = {}
    seat_of: list[dict[str, Any]] = []
    for k, entrant in enumerate(job.entrants):
        if isinstance(entrant, str):
            seat_of.append({"player": "engine", "profile": entrant})
        else:
            deciders[f"entrant-{k}"] = decider(job.load(entrant))
            seat_of.append({"player": "distill", "name": job.names[k]})
    specs = [
        GameSpec(
            f"t-{k}",
            game_seed(job.config.seed, int(job.deals[k])),
            tuple(seat_of[i] for i in row),
            job.config.max_rounds,
            {seat: f"entrant-{i}" for seat, i in enumerate(row) if seat_of[i]["player"] == "distill"},
        )
        for k, row in enumerate(job.table.tolist())
    ]
    results: list[GameResult | None] = [None] * len(specs)
    with EngineDriver(engine) as driver:
        for played in driver.play(specs, deciders):
            k = int(played.spec.game.removeprefix("t-"))
            won = NOBODY if played.truncated or played.winner_seat is None else played.winner_seat
            results[k] = GameResult(tuple(job.names[i] for i in job.table[k]), won)
    return [r for r in results if r is not None]


class Standing(BaseModel):
    """One player's rating in a pool, as reports and the loop's records carry it."""

    model_config = ConfigDict(frozen=True)

    name: str
    elo: float
    elo_se: float
    mu: float
    sigma: float
    ordinal: float
    games: int
    wins: int
    truncated: int = Field(0, description="Of its games, those that ended at the turn limit (nobody won).")


def standings(pool: RatingPool) -> list[Standing]:
    """The pool's players, best first: name, elo, elo_se, mu, sigma, ordinal, games, wins, truncated."""
    return [
        Standing(
            name=r.name,
            elo=r.elo,
            elo_se=r.elo_se,
            mu=round(r.mu, 3),
            sigma=round(r.sigma, 3),
            ordinal=round(r.ordinal, 3),
            games=r.games,
            wins=r.wins,
            truncated=r.truncated,
        )
        for r in pool.table()
    ]


class Pairing(BaseModel):
    """One player against the next below it in the standings: their Elo difference with its 95% interval, the
    probability that the one above is the stronger, and what the interval says."""

    model_config = ConfigDict(frozen=True)

    above: str
    below: str
    elo_diff: float
    low: float
    high: float
    p_stronger: float = Field(description="P(the player above is stronger), normal approximation of the fit.")
    verdict: str = Field(description="better (the interval lies above 0) or no detectable difference.")


def neighbours(table: Sequence[Standing]) -> list[Pairing]:
    """Each player of ``table`` (best first) against the next: is the order real? The difference's standard error
    takes the two ratings' as independent (the fit's covariance is left out: a slight overstatement where two
    players met often)."""
    pairs = []
    for above, below in itertools.pairwise(table):
        diff = above.elo - below.elo
        se = math.hypot(above.elo_se, below.elo_se)
        low, high = diff - Z95 * se, diff + Z95 * se
        pairs.append(
            Pairing(
                above=above.name,
                below=below.name,
                elo_diff=round(diff, 1),
                low=round(low, 1),
                high=round(high, 1),
                p_stronger=round(probability_above_zero(diff, se), 4),
                verdict=interval_verdict(low, high),
            )
        )
    return pairs


class LineupTruncations(BaseModel):
    """One lineup's games (all its seat rotations) and how many of them ended at the turn limit."""

    model_config = ConfigDict(frozen=True)

    players: list[str] = Field(description="The lineup's four entrants, in the tournament's order.")
    games: int
    truncated: int
    share: float = Field(description="truncated / games.")


class Truncations(BaseModel):
    """How many of a tournament's games ended at the turn limit: overall and per lineup.

    A truncated game is nobody's win: in the ratings it counts for the turn
    limit's own strength, so a large share means the ratings rest on few
    decided games (and players that stall each other look alike).
    """

    model_config = ConfigDict(frozen=True)

    max_rounds: int = Field(description="The turn limit the games were played at.")
    games: int
    truncated: int
    share: float = Field(description="truncated / games.")
    by_lineup: list[LineupTruncations] = Field(description="Per lineup, in the tournament's order.")


def count_truncations(games: Sequence[GameResult], max_rounds: int) -> Truncations:
    """The games of a tournament that ended at the turn limit (``games`` as :func:`play_tournament` returns
    them): overall and per lineup (a lineup is a set of entrants, whatever their seats)."""
    lineups: dict[frozenset[str], tuple[tuple[str, ...], list[int]]] = {}  # its first seating, [games, truncated]
    for game in games:
        _, count = lineups.setdefault(frozenset(game.players), (game.players, [0, 0]))
        count[0] += 1
        count[1] += game.truncated
    truncated = sum(g.truncated for g in games)
    return Truncations(
        max_rounds=max_rounds,
        games=len(games),
        truncated=truncated,
        share=round(truncated / len(games), 4) if games else 0.0,
        by_lineup=[
            LineupTruncations(players=list(players), games=n, truncated=t, share=round(t / n, 4))
            for players, (n, t) in lineups.values()
        ],
    )
