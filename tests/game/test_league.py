"""The league's rules: PFSP weights follow the measured win rates; which past models it keeps; the tally; mirror
tables."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit.errors import ConfigError
from toolkit.game.league import (
    OpponentPool,
    OpponentTally,
    draw_opponents,
    keep_past,
    league_probabilities,
    pairwise_win_rate,
    pfsp_weights,
)


def test_pfsp_weighs_the_opponents_the_learner_beats_least_the_most() -> None:
    weights = pfsp_weights([0.9, 0.5, 0.2, None], power=2.0)
    assert np.isclose(weights.sum(), 1.0)
    assert weights[2] > weights[1] == weights[3] > weights[0]  # unmeasured counts as even
    assert np.allclose(weights / weights[1], [0.01 / 0.25, 1.0, 0.64 / 0.25, 1.0])  # (1 - x)^2, relative


def test_pfsp_weights_move_when_the_measured_win_rates_move() -> None:
    before = pfsp_weights([0.5, 0.5])
    after = pfsp_weights([pairwise_win_rate(wins=60, games=100), pairwise_win_rate(wins=10, games=100)])
    assert np.allclose(before, [0.5, 0.5]) and after[1] > 0.8 > after[0]
    sharper = pfsp_weights([0.3, 0.6], power=4.0)
    assert sharper[0] / sharper[1] > pfsp_weights([0.3, 0.6], power=1.0)[0] / pfsp_weights([0.3, 0.6], power=1.0)[1]
    assert np.allclose(pfsp_weights([1.0, 1.0]), [0.5, 0.5])  # an opponent always beaten never empties the league


def test_a_quarter_of_a_pod_is_an_even_pairwise_win_rate() -> None:
    assert np.isclose(pairwise_win_rate(25, 100), 0.5)
    assert pairwise_win_rate(50, 100) > 0.7 and pairwise_win_rate(5, 100) < 0.3
    assert np.isclose(pairwise_win_rate(0, 0), 0.5)  # never met: even
    assert pairwise_win_rate(1, 1) < pairwise_win_rate(100, 100)  # few games stay nearer even


def test_the_league_keeps_the_latest_models_and_a_seeded_sample_of_the_older_ones() -> None:
    models = [f"gen-{g:03d}" for g in range(10)]
    kept = keep_past(models, latest=3, older=2, rng=np.random.default_rng(1))
    assert kept[-3:] == models[-3:] and len(kept) == 5 and set(kept[:2]) <= set(models[:7])
    assert kept == keep_past(models, latest=3, older=2, rng=np.random.default_rng(1))  # a seed, the same league
    assert keep_past(models[:2], latest=3, older=2, rng=np.random.default_rng(1)) == models[:2]
    assert keep_past(models, latest=0, older=0, rng=np.random.default_rng(1)) == []


def test_the_tally_credits_a_game_once_to_every_opponent_at_its_table() -> None:
    tally = OpponentTally()
    tally.add(["a", "a", "b"], won=True)
    tally.add(["a", "c", "c"], won=False)
    assert tally.games == {"a": 2, "b": 1, "c": 1} and tally.wins == {"a": 1, "b": 1, "c": 0}


def test_a_mirror_share_of_tables_seats_one_drawn_player_in_every_opponent_seat() -> None:
    p = league_probabilities([1.0, 1.0, 1.0, 1.0], 4)
    rng = np.random.default_rng(3)
    tables = np.array([draw_opponents(rng, p, 4, 3, mirror=0.5) for _ in range(4000)])
    mirrored = (tables == tables[:, :1]).all(axis=1)
    # an independent draw is a mirror by chance 1 time in 16: 0.5 + 0.5 / 16 expected
    assert abs(mirrored.mean() - (0.5 + 0.5 / 16)) < 0.03
    assert np.allclose(np.bincount(tables[mirrored, 0], minlength=4) / mirrored.sum(), 0.25, atol=0.04)
    always = np.array([draw_opponents(np.random.default_rng(3), p, 4, 3, mirror=1.0) for _ in range(50)])
    assert (always == always[:, :1]).all()


def test_no_mirror_draws_the_same_tables_as_a_league_without_the_option() -> None:
    p = league_probabilities([1.0, 2.0, 1.0], 3)
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    for _ in range(20):
        assert (draw_opponents(a, p, 3, 3, mirror=0.0) == b.choice(3, size=3, p=p)).all()
    c, d = np.random.default_rng(4), np.random.default_rng(4)
    p = league_probabilities([0.5, 3.0, 1.0, 0.25, 2.0], 5)
    for _ in range(200):  # mirror tables too: the draws of numpy's choice, one uniform each
        mirror = d.random() < 0.5
        table = np.full(3, d.choice(5, p=p)) if mirror else d.choice(5, size=3, p=p)
        assert draw_opponents(c, p, 5, 3, mirror=0.5).tolist() == table.tolist()
    fixed = draw_opponents(np.random.default_rng(9), None, 3, 3, mirror=1.0)
    assert fixed.tolist() == [0, 1, 2]  # a fixed table is a fixed table
    with pytest.raises(ConfigError, match="share"):
        OpponentPool(["heuristic", "tuned"], weights=[1, 1], mirror=1.5)
