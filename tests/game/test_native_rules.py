"""The native rules (``toolkit/game/_rules.c``) play exactly the numpy rules: the same masks, the same state after
every decision, the same rewards, cards and targets, the same observations and seat counts, the same heuristic
decisions, on random play of every pod size, with eliminations, turn
limits, held removal and attack targets of every kind (the rule's, a chosen live opponent, oneself, an eliminated
seat, out of range)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from toolkit.game import rules
from toolkit.game.observation import observe, observe_numpy, seat_features, seat_features_numpy
from toolkit.game.players import TUNED, DecisionBatch, HeuristicParams, HeuristicPlayer

# a third heuristic: never holds, never ramps or draws on purpose, keeps its removal, commander last (its attack
# threshold is the default's: the vectorised env asks as one only heuristics that share it)
PLAIN = HeuristicParams(hold_when_behind=False, commander_first=False, ramp_until=0, draw_below=0, removal_min_power=50)


def test_the_native_rules_are_built() -> None:
    # Built by `pip install -e .` (setup.py) wherever a C compiler is; without one Distill falls back to numpy.
    assert rules.native is not None, "toolkit/game/_rules.c was not built: install a C compiler and run `make setup`"


def _assert_same(a: rules.GameState, b: rules.GameState, where: str) -> None:
    for field in dataclasses.fields(rules.GameState):
        left, right = getattr(a, field.name), getattr(b, field.name)
        if isinstance(left, np.ndarray):
            assert left.dtype == right.dtype and np.array_equal(left, right), f"{field.name} differs {where}"


def _shake(rng: np.random.Generator, g: np.ndarray, states: tuple[rules.GameState, ...]) -> None:
    """Set life, commander damage, mana, held mana, tapped and sick creatures, commander tax and phase of the
    games ``g`` at random (lethal and commander-lethal combats, held removal, chump blocks)."""
    shape = (len(g), states[0].n_seats)
    values = {
        "life": rng.integers(-3, 61, shape).astype(np.int16),
        "cmd_damage": rng.integers(0, 25, (*shape, shape[1])).astype(np.int16),
        "pool": rng.integers(0, 16, shape).astype(np.int16),
        "holding": rng.random(shape) < 0.5,
        "tapped": rng.random((*shape, rules.SLOTS)) < 0.3,
        "sick": rng.random((*shape, rules.SLOTS)) < 0.3,
        "commander_casts": rng.integers(0, 9, shape).astype(np.int16),
        "phase": rng.integers(0, 2, len(g)).astype(np.int8),
    }
    for state in states:
        for name, value in values.items():
            getattr(state, name)[g] = value


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
    # (the plain one attacks only for a kill or 3 points of worth)
    players = [
        HeuristicPlayer(),
        HeuristicPlayer(TUNED),
        HeuristicPlayer(PLAIN.model_copy(update={"attack_min_value": 3.0})),
    ]
    kinds = np.zeros(rules.N_ACTIONS, int)
    steps = 0
    while not numpy.done.all():
        g = np.flatnonzero(~numpy.done)
        if rng.random() < 0.2:  # states play seldom reaches: the same shake on both copies
            _shake(rng, g, (native, numpy))
        mask = rules.legal_mask_numpy(numpy, g)
        assert np.array_equal(rules.legal_mask(native, g), mask), f"masks differ at step {steps}"
        # what a policy sees and what a record logs: the same vectors, bit for bit
        observed, expected_observed = observe(native, g, mask), observe_numpy(numpy, g, mask)
        assert observed.dtype == np.float32 and np.array_equal(
            observed.view(np.uint32), expected_observed.view(np.uint32)
        )
        counts, expected_counts = seat_features(native, g), seat_features_numpy(numpy, g)
        assert counts.dtype == expected_counts.dtype and np.array_equal(counts, expected_counts)
        seats = numpy.seat[g].astype(np.intp)
        chosen = []
        for player in players:  # the heuristic's C loop decides as its numpy definition does
            batch = DecisionBatch(numpy, g, seats, mask, rng)
            expected_choice, found_choice = player.act_numpy(batch), player.act(batch)
            for left, right in zip(found_choice, expected_choice, strict=True):
                assert np.array_equal(left, right), f"the heuristic's choices differ at step {steps}"
            chosen.append(expected_choice[0])
        choice = rng.integers(len(players) + 1)
        actions = (rng.random(mask.shape) + mask).argmax(1) if choice == len(players) else chosen[choice]
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


def test_native_heuristics_asked_as_one_with_a_parameter_per_row_decide_as_each_alone() -> None:
    # the vectorised env's league asks several heuristics in one call, each row with its own parameters
    config = rules.RulesConfig()
    state = rules.new_state(64, config)
    rules.deal(state, np.arange(64), [np.random.default_rng([9, k]) for k in range(64)], config)
    rng = np.random.default_rng(9)
    variants = [HeuristicPlayer(), HeuristicPlayer(TUNED), HeuristicPlayer(PLAIN)]
    for _ in range(300):
        g = np.flatnonzero(~state.done)
        if not len(g):
            break
        mask, seats = rules.legal_mask(state, g), state.seat[g].astype(np.intp)
        which = rng.integers(len(variants), size=len(g))
        alone = [v.act(DecisionBatch(state, g, seats, mask, rng)) for v in variants]
        mixed = HeuristicPlayer()
        mixed.params = SimpleNamespace(  # type: ignore[assignment]
            **{
                name: np.array([getattr(variants[w].params, name) for w in which])
                if name in ("ramp_until", "removal_min_power", "draw_below", "commander_first", "hold_when_behind")
                else getattr(variants[0].params, name)
                for name in type(variants[0].params).model_fields
            }
        )
        actions, targets = mixed.act(DecisionBatch(state, g, seats, mask, rng))
        numpy_actions, numpy_targets = mixed.act_numpy(DecisionBatch(state, g, seats, mask, rng))
        assert np.array_equal(actions, numpy_actions) and np.array_equal(targets, numpy_targets)
        assert np.array_equal(actions, np.choose(which, [a[0] for a in alone]))
        assert np.array_equal(targets, np.choose(which, [a[1] for a in alone]))
        rules.apply(state, g, actions, targets, mask)


def test_the_native_loops_refuse_what_no_game_holds_never_reading_past_an_array() -> None:
    config = rules.RulesConfig()
    state = rules.new_state(4, config)
    rules.deal(state, np.arange(4), [np.random.default_rng([1, k]) for k in range(4)], config)
    g, mask = np.arange(4), rules.legal_mask(state, np.arange(4))
    passing = np.full(4, rules.PASS)
    with pytest.raises(IndexError, match="given twice"):
        rules.legal_mask(state, np.array([1, 1]))
    broken = rules.copy_state(state)
    broken.seat[2] = config.n_seats
    with pytest.raises(IndexError, match="acting seat outside the pod"):
        observe(broken, g, mask)
    broken = rules.copy_state(state)
    broken.creatures[3, 1, 0] = 500
    with pytest.raises(IndexError, match="creature that is no card"):
        rules.apply(broken, g, passing, None, mask)
    broken = rules.copy_state(state)
    broken.library[:, :, :] = 99  # the next turn's draw reads a value no card has
    with pytest.raises(IndexError, match="no card"):
        rules.apply(broken, g, passing, None, mask)
    with pytest.raises(ValueError, match="wrong type or length"):  # an output too short
        rules.native.legal_mask(rules.native_arrays(state), state.max_turn, g, np.empty((3, 8), bool))
    with pytest.raises(ValueError, match="ramp_until has the wrong type or length"):  # int64 where int32 is due
        rules.native.heuristic_act(
            rules.native_arrays(state),
            state.max_turn,
            g,
            g,
            mask,
            (np.arange(2), 0, 0, 0, 0, 0.5),
            tuple(range(8)),
            np.empty(4, np.intp),
            np.empty(4, np.intp),
        )
    with pytest.raises(OverflowError):
        rules.native.heuristic_act(
            rules.native_arrays(state),
            state.max_turn,
            g,
            g,
            mask,
            (2**40, 0, 0, 0, 0, 0.5),
            tuple(range(8)),
            np.empty(4, np.intp),
            np.empty(4, np.intp),
        )
    readonly = rules.copy_state(state)
    for array in rules.native_arrays(readonly):
        array.flags.writeable = False
    assert np.array_equal(rules.legal_mask(readonly, g), mask)  # reading needs no write access ...
    with pytest.raises((ValueError, BufferError)):
        rules.apply(readonly, g, passing, None, mask)  # ... a change does
