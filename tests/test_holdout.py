"""The holdout rule: pure, stable, the same in Python and SQL."""

from __future__ import annotations

import duckdb
import pytest

from toolkit.holdout import HoldoutRule, holdout_sql, in_holdout

RULE = HoldoutRule(salt="distill-holdout-v1", fraction=0.12)


def test_python_and_sql_agree_on_every_game() -> None:
    ids = [f"sim-7-{i}" for i in range(5000)] + ["game-7-1849302231", "ppo-0a1b2c3d-12", "o'brien"]
    with duckdb.connect() as con:
        con.execute("CREATE TABLE g AS SELECT unnest(?) AS game_id", [ids])
        sql = dict(con.sql(f"SELECT game_id, {holdout_sql('game_id', RULE)} FROM g").fetchall())
    assert sql == {game: in_holdout(game, RULE) for game in ids}


def test_the_fraction_held_out_is_close_to_the_target() -> None:
    share = sum(in_holdout(f"g-{i}", RULE) for i in range(20_000)) / 20_000
    assert abs(share - 0.12) < 0.01


def test_a_games_side_depends_only_on_its_id_and_the_salt() -> None:
    before = {g: in_holdout(g, RULE) for g in (f"g-{i}" for i in range(1000))}
    after = {g: in_holdout(g, RULE) for g in reversed([f"g-{i}" for i in range(3000)])}
    assert all(after[g] == side for g, side in before.items())
    other = HoldoutRule(salt="another", fraction=0.12)
    assert any(in_holdout(g, other) != side for g, side in before.items())


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1])
def test_a_fraction_outside_zero_one_is_refused(fraction: float) -> None:
    with pytest.raises(ValueError):
        HoldoutRule(salt="s", fraction=fraction)
