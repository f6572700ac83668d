"""The native rules (``toolkit/game/_rules.c``) play exactly the numpy rules: the same masks, the same state after
every decision, the same rewards, cards and targets, on random play of every pod size, with eliminations, turn
limits, held removal and attack targets of every kind (the rule's, a chosen live opponent, oneself, an eliminated
seat, out of range)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from toolkit.game import rules
from toolkit.game.players import TUNED, DecisionBatch, HeuristicPlayer


def test_the_native_rules_are_built() -> None:
    # Built by `pip install -e .` (setup.py) wherever a C compiler is; without one Distill falls back to numpy.
    assert rules.native is not None, "toolkit/game/_rules.c was not built: install a C compiler and run `make setup`"


def _assert_same(a: rules.GameState, b: rules.GameState, where: str) -> None:
    for field in dataclasses.fields(rules.GameState):
        left, right = getattr(a, field.name), getattr(b, field.name)
        if isinstance(left, np.ndarray):
            assert left.dtype == right.dtype and np.array_equal(left, right), f"{field.name} differs {where}"


def _targets(rng: np.random.Generator, n_games: int, n_seats: int) -> np.ndarray:
    """Attack targets of every kind: -1 (the rule), any seat (itself, eliminated ones included), out of range."""
    return rng.integers(-2, n_seats + 2, size=n_games)


@pytest.mark.parametrize(
    ("n_seats", "life", "max_rounds", "seed"),
    [(4, 40, 30, 0), (2, 12, 40, 1), (3, 20, 8, 2), (5, 40, 25, 3), (6, 15, 30, 4), (4, 8, 50, 5)],
)
def test_native_and_numpy_rules_play_the_same_games(n_seats: int, life: int, max_rounds: int, seed: int) -> None:
    assert rules.native is not None
    config = rules.RulesConfig(n_seats=n_seats, starting_life=life, max_rounds=max_rounds)
    n_games = 48
    native = rules.new_state(n_games, config)
    rules.deal(native, np.arange(n_games), [np.random.default_rng([seed, k]) for k in range(n_games)], config)
    numpy = rules.copy_state(native)
    rng = np.random.default_rng(seed)
    # a mix of deciders so that every action is taken: random, the heuristic and the tuned one (holds removal)
    players = [HeuristicPlayer(), HeuristicPlayer(TUNED)]
    kinds = np.zeros(rules.N_ACTIONS, int)
    steps = 0
    while not numpy.done.all():
        g = np.flatnonzero(~numpy.done)
        mask = rules.legal_mask_numpy(numpy, g)
        assert np.array_equal(rules.legal_mask(native, g), mask), f"masks differ at step {steps}"
        choice = rng.integers(3)
        if choice == 2:
            actions = (rng.random(mask.shape) + mask).argmax(1)
        else:
            seats = numpy.seat[g].astype(np.intp)
            actions, _ = players[choice].act(DecisionBatch(numpy, g, seats, mask, rng))
        targets = _targets(rng, len(g), n_seats) if rng.random() < 0.7 else None
        expected = rules.apply_numpy(numpy, g, actions, targets)
        found = rules.apply(native, g, actions, targets, mask)
        for name in ("reward", "card", "target"):
            left, right = getattr(found, name), getattr(expected, name)
            assert left.dtype == right.dtype and np.array_equal(left, right), f"{name} differs at step {steps}"
        _assert_same(native, numpy, f"after step {steps}")
        kinds += np.bincount(actions, minlength=rules.N_ACTIONS)
        steps += 1
    assert (kinds > 0).all(), kinds  # every action was played
    assert numpy.winner.max() >= 0  # games were won ...
    if max_rounds <= 8:
        assert numpy.truncated.any()  # ... and cut at the turn limit


def test_the_native_rules_refuse_a_state_of_the_wrong_shape_or_type() -> None:
    config = rules.RulesConfig()
    state = rules.new_state(4, config)
    rules.deal(state, np.arange(4), [np.random.default_rng([0, k]) for k in range(4)], config)
    with pytest.raises(IndexError, match="game slot 4"):
        rules.legal_mask(state, np.array([0, 4]))
    wrong = dataclasses.replace(state, life=state.life.astype(np.int32))
    with pytest.raises(ValueError, match="wrong type or shape"):
        rules.legal_mask(wrong, np.arange(4))
    short = dataclasses.replace(state, hand=state.hand[:, :, :-1].copy())
    with pytest.raises(ValueError, match="wrong type or shape"):
        rules.apply(short, np.arange(4), np.full(4, rules.PASS), None, np.ones((4, rules.N_ACTIONS), bool))
    view = dataclasses.replace(state, pool=state.pool[:, ::-1])  # not contiguous: refused, never misread
    with pytest.raises((ValueError, BufferError)):
        rules.legal_mask(view, np.arange(4))
