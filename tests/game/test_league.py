"""The league's rules: PFSP weights follow the measured win rates; which past models it keeps; the tally."""

from __future__ import annotations

import numpy as np

from toolkit.game.league import OpponentTally, keep_past, pairwise_win_rate, pfsp_weights


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
