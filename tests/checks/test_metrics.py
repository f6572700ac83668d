"""Data-quality metrics on small inputs whose answers are known by hand."""

from __future__ import annotations

import math

import duckdb
import pytest

from toolkit.checks.metrics import ALL, attach_drift, compute_metrics
from toolkit.stats import wilson_interval


def _relation(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE q (source VARCHAR, generation INTEGER, action_index INTEGER, reward DOUBLE, "
        "episode_return DOUBLE, seat_won BOOLEAN, game_id VARCHAR, seat INTEGER, decision_index INTEGER)"
    )
    if rows:
        con.executemany("INSERT INTO q VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return con


def _uniform_game() -> list[tuple]:
    """One 2-seat game, 8 decisions per seat, one of each action; seat 0 wins; returns 1 / -1 at the end."""
    rows = []
    for d in range(16):
        seat = d % 2
        last = d >= 14
        rows.append(
            (
                "ppo",
                3,
                d // 2,
                float(d),
                (1.0 if seat == 0 else -1.0) if last else 0.0,
                seat == 0 if last else None,
                "g1",
                seat,
                d,
            )
        )
    return rows


def test_a_uniform_8_way_action_distribution_has_3_bits_and_ratio_1() -> None:
    ppo, everything = compute_metrics(_relation(_uniform_game()), "q")
    assert (ppo.source, ppo.generation, everything.source) == ("ppo", 3, ALL)
    assert ppo.entropy_bits == pytest.approx(3.0) and ppo.entropy_ratio == pytest.approx(1.0)
    assert set(ppo.actions.values()) == {2}


def test_a_single_action_has_0_bits_and_two_equal_actions_1_bit() -> None:
    rows = [("forge", None, 7, 0.0, 0.0, None, "g", 0, d) for d in range(10)]
    (single, _) = compute_metrics(_relation(rows), "q")
    assert single.entropy_bits == 0.0 and single.generation is None
    rows = [("forge", None, d % 2, 0.0, 0.0, None, "g", 0, d) for d in range(10)]
    (two, _) = compute_metrics(_relation(rows), "q")
    assert two.entropy_bits == pytest.approx(1.0) and two.entropy_ratio == pytest.approx(1 / 3)


def test_rewards_returns_lengths_and_win_rate_are_per_decision_and_per_episode() -> None:
    (m, _) = compute_metrics(_relation(_uniform_game()), "q")
    rewards = [float(d) for d in range(16)]
    assert m.reward.count == 16 and m.reward.mean == pytest.approx(7.5) and m.reward.min == 0 and m.reward.max == 15
    assert m.reward.std == pytest.approx(math.sqrt(sum((r - 7.5) ** 2 for r in rewards) / 15))
    assert m.reward.p50 == pytest.approx(7.5) and m.reward.p25 == pytest.approx(3.75)
    # two episodes: returns 1 and -1 read at each seat's last decision, 8 decisions each
    assert m.episodes == 2 and m.games == 1
    assert m.episode_return.count == 2 and m.episode_return.mean == pytest.approx(0.0) and m.episode_return.max == 1.0
    assert m.episode_decisions.mean == 8 and m.episode_decisions.std == 0
    assert (m.wins, m.episodes_with_result, m.win_rate) == (1, 2, 0.5)
    assert m.win_rate_interval == pytest.approx(wilson_interval(1, 2))


def test_groups_split_by_source_and_generation_and_the_star_group_holds_everything() -> None:
    rows = _uniform_game() + [("forge", None, 0, 1.0, 0.0, False, "g2", 0, 0)]
    metrics = compute_metrics(_relation(rows), "q")
    assert [m.key for m in metrics] == ["forge/gen=-", "ppo/gen=3", "*/gen=-"]
    assert metrics[-1].rows == 17 and metrics[-1].episodes == 3 and metrics[-1].win_rate == pytest.approx(1 / 3)


def test_drift_is_attached_where_a_reference_exists() -> None:
    metrics = compute_metrics(_relation(_uniform_game()), "q")
    same = attach_drift(metrics, {("ppo", 3): ("previous", [2] * 8)})
    assert same[0].drift is not None and same[0].drift.js_bits == pytest.approx(0.0) and same[1].drift is None
    disjoint = attach_drift(metrics, {("ppo", 3): ("previous", [0] * 8)})  # no mass: nothing to compare
    assert disjoint[0].drift is None
