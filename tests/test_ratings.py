"""Ratings: winner-vs-rest, fitted from every game at once, so they recover a known order in any feed order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolkit.errors import ConfigError
from toolkit.ratings import NOBODY, GameResult, RatingPool, TournamentConfig, lineups, play_tournament


def _synthetic_games(strengths: dict[str, float], n: int, seed: int, nobody: float = 0.1) -> list[GameResult]:
    """4-player games whose winner is drawn with probability proportional to strength (or nobody, at the limit)."""
    rng = np.random.default_rng(seed)
    names = list(strengths)
    games = []
    for _ in range(n):
        table = list(rng.choice(names, 4, replace=False))
        weights = np.array([strengths[p] for p in table] + [nobody])
        won = int(rng.choice(5, p=weights / weights.sum()))
        games.append(GameResult(tuple(table), NOBODY if won == 4 else won))
    return games


STRENGTHS = {"a": 8.0, "b": 4.0, "c": 2.0, "d": 1.0, "e": 0.5, "f": 0.25}


def test_a_synthetic_pool_recovers_the_true_order_whatever_the_feed_order(tmp_path: Path) -> None:
    games = _synthetic_games(STRENGTHS, 1200, seed=1)
    tables = []
    for order in (games, games[::-1], [games[i] for i in np.random.default_rng(7).permutation(len(games))]):
        pool = RatingPool(tmp_path / f"ratings-{len(tables)}.json")
        pool.rate("t1", order)
        tables.append(pool.table())
    assert tables[0] == tables[1] == tables[2]
    table = tables[0]
    assert [r.name for r in table] == list(STRENGTHS)  # by Elo
    assert [r.name for r in sorted(table, key=lambda r: -r.mu)] == list(STRENGTHS)
    elo = {r.name: r.elo for r in table}
    # a factor 2 in strength is ln 2 nats = 120 Elo points apart, within a few standard errors
    assert all(abs((elo[x] - elo[y]) - 120.4) < 4 * table[0].elo_se for x, y in zip("abcde", "bcdef"))


def test_the_pool_persists_and_a_tournament_is_never_counted_twice(tmp_path: Path) -> None:
    path = tmp_path / "ratings.json"
    games = _synthetic_games({"a": 2.0, "b": 1.0, "c": 1.0, "d": 0.5}, 50, seed=3)
    pool = RatingPool(path)
    pool.rate("gen-001", games)
    pool.save()
    again = RatingPool(path)
    before = again.table()
    again.rate("gen-001", games)  # a resumed loop re-playing the same tournament
    assert again.table() == before
    again.rate("gen-002", games[:10])
    assert again.data.tournaments == ["gen-001", "gen-002"] and len(again.data.games) == 60


def test_a_game_at_the_turn_limit_is_a_loss_for_all() -> None:
    from toolkit.ratings import RatedGame, fit_ratings

    table = ["a", "b", "c", "d"]
    limit = [RatedGame(tournament="t", players=table[i:] + table[:i], winner=NOBODY) for i in range(4)] * 10
    only = fit_ratings(limit)
    assert len({r.elo for r in only}) == 1 and all(r.wins == 0 and r.games == 40 for r in only)  # no one gains
    won = [RatedGame(tournament="t", players=table, winner=s) for s in (0, 0, 0, 1)]
    mixed = {r.name: r for r in fit_ratings(won + limit)}
    assert mixed["a"].elo > mixed["b"].elo > mixed["c"].elo == mixed["d"].elo and mixed["a"].wins == 3


def test_lineups_always_include_a_new_player() -> None:
    found = lineups(["h", "t", "r", "new", "old"], focus=["new"])
    assert found and all("new" in lineup for lineup in found) and len(found) == 4
    with pytest.raises(ConfigError):
        lineups(["a", "b", "c"], focus=["a"])


def test_a_tournament_plays_every_lineup_in_every_seat_rotation_and_rates_random_heuristic_tuned_in_order(
    tmp_path: Path,
) -> None:
    entrants = {name: name for name in ("heuristic", "tuned", "random")}  # the default loader: player types
    entrants["heuristic-2"] = "heuristic"
    entrants["tuned-2"] = "tuned"
    games = play_tournament(entrants, ["random", "tuned"], TournamentConfig(deals_per_lineup=40))
    assert len(games) == 5 * 4 * 40  # every lineup of 5 entrants has random or tuned
    seats = {name: {g.players.index(name) for g in games if name in g.players} for name in entrants}
    assert all(s == {0, 1, 2, 3} for s in seats.values())
    again = play_tournament(entrants, ["random", "tuned"], TournamentConfig(deals_per_lineup=40))
    assert again == games  # same seed, same games
    pool = RatingPool(tmp_path / "r.json")
    pool.rate("t", games)
    elo = {r.name: r.elo for r in pool.table()}
    assert elo["random"] < elo["heuristic"] < elo["tuned"] and elo["heuristic"] == 1500.0


def test_neighbours_say_how_sure_the_order_of_the_standings_is() -> None:
    from toolkit.ratings import Standing, neighbours

    def player(name: str, elo: float, se: float) -> Standing:
        return Standing(name=name, elo=elo, elo_se=se, mu=0, sigma=0, ordinal=0, games=10, wins=1)

    clear, close = neighbours([player("a", 1800, 30), player("b", 1600, 40), player("c", 1590, 40)])
    assert (clear.above, clear.below, clear.elo_diff) == ("a", "b", 200.0)
    assert clear.low == pytest.approx(200 - 1.96 * 50, abs=0.1) and clear.verdict == "better"
    assert clear.p_stronger > 0.9999
    assert close.verdict == "no detectable difference" and close.p_stronger == pytest.approx(0.5702, abs=1e-3)
    [tie] = neighbours([player("x", 1500, 0), player("y", 1500, 0)])
    assert tie.p_stronger == 0.5 and tie.verdict == "no detectable difference"
