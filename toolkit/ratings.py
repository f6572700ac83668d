"""Ratings across generations: seat-rotated tournaments in 4-player pods, one persistent rating pool.

The pool (a JSON file) holds an OpenSkill Plackett-Luce rating (mu, sigma,
and the conservative ``ordinal`` mu - 3 sigma) and a pairwise Elo for every
player that ever played, updated game by game and never reset: a new
tournament starts from everything the pool has seen. Each tournament has an
id; rating one that the pool already holds is a no-op, so a loop resumed
after a crash never counts the same games twice.

A tournament plays every lineup of 4 entrants that includes at least one of
the ``focus`` players (the new generation), each lineup on the same deals
with the seats rotated, so no player gains from its seat or its cards.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ConfigError
from toolkit.game import core, rules
from toolkit.game.players import Player
from toolkit.storage import write_text_atomic

POD: Final = 4
ELO_START: Final = 1500.0
ELO_K: Final = 16.0
ORDINAL_Z: Final = 3.0


class Rating(BaseModel):
    """One player's standing in the pool."""

    model_config = ConfigDict(extra="forbid")

    name: str
    mu: float
    sigma: float
    elo: float = ELO_START
    games: int = 0
    wins: int = 0

    @property
    def ordinal(self) -> float:
        """The conservative estimate mu - 3 sigma (what leaderboards sort by)."""
        return self.mu - ORDINAL_Z * self.sigma


class PoolFile(BaseModel):
    """The pool on disk."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = 1
    ratings: dict[str, Rating] = Field(default_factory=dict)
    tournaments: list[str] = Field(default_factory=list, description="Ids of the tournaments rated, in order.")
    games: int = 0


class TournamentConfig(BaseModel):
    """How a tournament is played."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deals_per_lineup: int = Field(4, ge=1, description="Deals per lineup; each is played once per seat rotation.")
    max_rounds: int = Field(30, ge=1, le=1000, description="Rounds before a game is truncated.")
    seed: int = Field(0, ge=0, description="Seed of the deals.")
    batch_size: int = Field(256, ge=1, description="Games stepped at once.")


@dataclass(frozen=True)
class GameResult:
    """One rated game: who sat where and their ranks (1 best; equal ranks tie)."""

    players: tuple[str, ...]
    ranks: tuple[int, ...]


class RatingPool:
    """The persistent pool; :meth:`save` writes it atomically."""

    def __init__(self, path: Path) -> None:
        from openskill.models import PlackettLuce

        self.path = path
        self.model = PlackettLuce()
        self.data = PoolFile.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else PoolFile()

    def has(self, tournament: str) -> bool:
        return tournament in self.data.tournaments

    def rate(self, tournament: str, games: Sequence[GameResult]) -> None:
        """Fold a tournament's games into the pool (a no-op for a tournament already rated)."""
        if self.has(tournament):
            return
        for game in games:
            self._rate_game(game)
        self.data.tournaments.append(tournament)
        self.data.games += len(games)

    def _rate_game(self, game: GameResult) -> None:
        entries = [self._entry(name) for name in game.players]
        teams = [[self.model.rating(mu=e.mu, sigma=e.sigma)] for e in entries]
        rated = self.model.rate(teams, ranks=list(game.ranks))
        elo = _elo_deltas([e.elo for e in entries], game.ranks)
        for entry, (new,), delta, rank in zip(entries, rated, elo, game.ranks, strict=True):
            entry.mu, entry.sigma = float(new.mu), float(new.sigma)
            entry.elo += delta
            entry.games += 1
            entry.wins += int(rank == 1 and list(game.ranks).count(1) == 1)

    def _entry(self, name: str) -> Rating:
        if name not in self.data.ratings:
            fresh = self.model.rating()
            self.data.ratings[name] = Rating(name=name, mu=float(fresh.mu), sigma=float(fresh.sigma))
        return self.data.ratings[name]

    def table(self) -> list[Rating]:
        """Every rating, best conservative estimate first."""
        return sorted(self.data.ratings.values(), key=lambda r: (-r.ordinal, r.name))

    def save(self) -> None:
        write_text_atomic(self.path, self.data.model_dump_json(indent=1))


def _elo_deltas(elos: list[float], ranks: Sequence[int]) -> list[float]:
    """Pairwise Elo: every pair of a pod is one game (win, draw or loss by rank), K split over the pairs."""
    n = len(elos)
    k = ELO_K / (n - 1)
    deltas = [0.0] * n
    for i, j in itertools.combinations(range(n), 2):
        expected = 1.0 / (1.0 + 10 ** ((elos[j] - elos[i]) / 400))
        score = 1.0 if ranks[i] < ranks[j] else 0.5 if ranks[i] == ranks[j] else 0.0
        deltas[i] += k * (score - expected)
        deltas[j] -= k * (score - expected)
    return deltas


def lineups(entrants: Sequence[str], focus: Sequence[str]) -> list[tuple[str, ...]]:
    """Every set of 4 entrants including at least one focus player, in a fixed order."""
    if len(entrants) < POD:
        raise ConfigError(f"a tournament needs at least {POD} entrants, got {len(entrants)}", hint="add baselines")
    return [c for c in itertools.combinations(entrants, POD) if set(c) & set(focus)]


def play_tournament(
    entrants: dict[str, Callable[[], Player]], focus: Sequence[str], config: TournamentConfig
) -> list[GameResult]:
    """Play every lineup on the same deals in every seat rotation; return the games with their ranks."""
    rules_config = rules.RulesConfig(n_seats=POD, max_rounds=config.max_rounds)
    results: list[GameResult] = []
    for number, lineup in enumerate(lineups(list(entrants), focus)):
        for shift in range(POD):
            seated = lineup[shift:] + lineup[:shift]
            players = [entrants[name]() for name in seated]
            seed = config.seed * 100_003 + number
            for finished in core.play(players, config.deals_per_lineup, seed=seed, config=rules_config,
                                      batch_size=config.batch_size):
                results += [GameResult(seated, ranks_of(finished.placement[g])) for g in range(len(finished.game))]
    return results


def ranks_of(placement: np.ndarray) -> tuple[int, ...]:
    """Ranks from a game's placements: 0 (still alive at a truncation) ties for first, ahead of the eliminated."""
    return tuple(int(p) if p > 0 else 1 for p in placement.tolist())


def standings(pool: RatingPool) -> list[dict[str, Any]]:
    """The pool as rows for reports: name, mu, sigma, ordinal, elo, games, wins."""
    return [
        {"name": r.name, "mu": round(r.mu, 3), "sigma": round(r.sigma, 3), "ordinal": round(r.ordinal, 3),
         "elo": round(r.elo, 1), "games": r.games, "wins": r.wins}
        for r in pool.table()
    ]
