"""Ratings: the persistent pool recovers a known order, never double-counts, and tournaments rotate seats."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolkit.errors import ConfigError
from toolkit.game.players import make_player
from toolkit.ratings import GameResult, RatingPool, TournamentConfig, lineups, play_tournament, ranks_of


def _synthetic_games(strengths: dict[str, float], n: int, seed: int) -> list[GameResult]:
    """4-player games whose finishing order is drawn by Plackett-Luce from the true strengths."""
    rng = np.random.default_rng(seed)
    names = list(strengths)
    games = []
    for _ in range(n):
        table = list(rng.choice(names, 4, replace=False))
        keys = np.log([strengths[p] for p in table]) + rng.gumbel(size=4)  # Gumbel-max = Plackett-Luce order
        ranks = np.empty(4, int)
        ranks[np.argsort(-keys)] = np.arange(1, 5)
        games.append(GameResult(tuple(table), tuple(int(r) for r in ranks)))
    return games


def test_a_synthetic_pool_recovers_the_true_order(tmp_path: Path) -> None:
    strengths = {"a": 8.0, "b": 4.0, "c": 2.0, "d": 1.0, "e": 0.5, "f": 0.25}
    pool = RatingPool(tmp_path / "ratings.json")
    pool.rate("t1", _synthetic_games(strengths, 300, seed=1))
    pool.rate("t2", _synthetic_games(strengths, 300, seed=2))
    by_mu = [r.name for r in sorted(pool.table(), key=lambda r: -r.mu)]
    by_elo = [r.name for r in sorted(pool.table(), key=lambda r: -r.elo)]
    assert by_mu == list(strengths) and by_elo == list(strengths)
    assert all(r.sigma < 8.333 for r in pool.table())


def test_the_pool_persists_and_a_tournament_is_never_counted_twice(tmp_path: Path) -> None:
    path = tmp_path / "ratings.json"
    games = _synthetic_games({"a": 2.0, "b": 1.0, "c": 1.0, "d": 0.5}, 50, seed=3)
    pool = RatingPool(path)
    pool.rate("gen-001", games)
    pool.save()
    again = RatingPool(path)
    before = {r.name: (r.mu, r.elo, r.games) for r in again.table()}
    again.rate("gen-001", games)  # a resumed loop re-playing the same tournament
    assert {r.name: (r.mu, r.elo, r.games) for r in again.table()} == before
    again.rate("gen-002", games[:10])
    assert again.data.tournaments == ["gen-001", "gen-002"] and again.data.games == 60


def test_ranks_put_survivors_of_a_truncation_first_and_tied() -> None:
    assert ranks_of(np.array([1, 3, 2, 4])) == (1, 3, 2, 4)
    assert ranks_of(np.array([0, 4, 0, 3])) == (1, 4, 1, 3)


def test_lineups_always_include_a_new_player() -> None:
    found = lineups(["h", "t", "r", "new", "old"], focus=["new"])
    assert found and all("new" in lineup for lineup in found) and len(found) == 4
    with pytest.raises(ConfigError):
        lineups(["a", "b", "c"], focus=["a"])


def test_a_tournament_plays_every_lineup_in_every_seat_rotation() -> None:
    entrants = {name: (lambda n=name: make_player(n)) for name in ("heuristic", "tuned", "random")}
    entrants["heuristic-2"] = lambda: make_player("heuristic")
    games = play_tournament(entrants, ["tuned"], TournamentConfig(deals_per_lineup=2, max_rounds=15))
    assert len(games) == 1 * 4 * 2
    seats = {name: {g.players.index(name) for g in games} for name in entrants}
    assert all(s == {0, 1, 2, 3} for s in seats.values())
    assert all(len(g.ranks) == 4 and min(g.ranks) == 1 for g in games)
