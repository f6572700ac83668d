"""The rules, scenario by scenario, on one hand-set game."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit.errors import GameError
from toolkit.game import cards as C
from toolkit.game import rules

G = np.zeros(1, np.intp)


@pytest.fixture(autouse=True, params=["native", "numpy"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every scenario on both rules: the C loops and the numpy definition they follow."""
    if request.param == "numpy":
        monkeypatch.setattr(rules, "native", None)
    else:
        assert rules.native is not None, "toolkit/game/_rules.c was not built (see test_native_rules.py)"
    return str(request.param)


def _game(n_seats: int = 4, max_rounds: int = 30) -> rules.GameState:
    """A dealt game with empty hands and boards, seat 0 to act in its first main phase."""
    config = rules.RulesConfig(n_seats=n_seats, max_rounds=max_rounds)
    state = rules.new_state(1, config)
    rules.deal(state, G, [np.random.default_rng(0)], config)
    state.hand[:] = 0
    state.seat[:] = 0
    return state


def _put(state: rules.GameState, seat: int, name: str, *, ready: bool = True) -> None:
    slot = int(np.argmax(state.creatures[0, seat] < 0))
    state.creatures[0, seat, slot] = C.CARD_ID[name]
    state.sick[0, seat, slot] = not ready
    if C.KIND[C.CARD_ID[name]] == C.COMMANDER:
        state.in_command_zone[0, seat] = False


def _act(state: rules.GameState, action: int, target: int = -1) -> rules.StepResult:
    return rules.apply(state, G, np.array([action]), np.array([target]))


def _mask(state: rules.GameState) -> np.ndarray:
    return rules.legal_mask(state, G)[0]


def test_twenty_one_commander_damage_from_one_commander_is_lethal() -> None:
    state = _game()
    state.commander[0, 0] = C.CARD_ID["Kenrith, the Returned King"]  # 5 power
    _put(state, 0, "Kenrith, the Returned King")
    state.cmd_damage[0, 1, 0] = 16
    _act(state, rules.ATTACK, target=1)
    assert state.cmd_damage[0, 1, 0] == 21
    assert state.life[0, 1] == 35
    assert state.eliminated[0, 1] and state.placement[0, 1] == 4


def test_commander_damage_from_different_commanders_does_not_add_up() -> None:
    state = _game()
    state.commander[0, 0] = C.CARD_ID["Kenrith, the Returned King"]
    _put(state, 0, "Kenrith, the Returned King")
    state.cmd_damage[0, 1, 2] = 20
    _act(state, rules.ATTACK, target=1)
    assert state.cmd_damage[0, 1].sum() == 25 and not state.eliminated[0, 1]


def test_commander_tax_rises_by_two_per_cast() -> None:
    state = _game()
    commander = C.CARD_ID["Atraxa, Praetors' Voice"]  # costs 4
    state.commander[0, :] = commander
    state.pool[0, 0] = 4
    assert _mask(state)[rules.CAST_COMMANDER]
    _act(state, rules.CAST_COMMANDER)
    assert not state.in_command_zone[0, 0] and state.pool[0, 0] == 0
    state.seat[:] = 1  # an opponent removes it: it goes home, and now costs 6
    state.hand[0, 1, C.CARD_ID["Swords to Plowshares"]] = 1
    state.pool[0, 1] = 1
    _act(state, rules.CAST_REMOVAL)
    assert state.in_command_zone[0, 0]
    state.seat[:] = 0
    state.pool[0, 0] = 5
    assert not _mask(state)[rules.CAST_COMMANDER]
    state.pool[0, 0] = 6
    assert _mask(state)[rules.CAST_COMMANDER]
    assert rules.commander_cost(state, G, np.zeros(1, np.intp))[0] == 6


def test_lands_and_rocks_really_add_mana() -> None:
    state = _game()
    state.hand[0, 0, C.CARD_ID["Forest"]] = 2
    state.hand[0, 0, C.CARD_ID["Sol Ring"]] = 1
    _act(state, rules.CAST_RAMP)  # the land drop first
    assert state.pool[0, 0] == 1 and state.sources[0, 0] == 1 and state.land_played[0]
    _act(state, rules.CAST_RAMP)  # second ramp: Sol Ring, costs 1, taps for 2
    assert state.pool[0, 0] == 2 and state.sources[0, 0] == 3
    assert not _mask(state)[rules.CAST_RAMP]  # no second land drop, no rock left
    for _ in range(4):  # round the table: next turn seat 0 untaps with 3 mana
        _act(state, rules.PASS)
    assert state.seat[0] == 0 and state.pool[0, 0] == 3


def test_a_blocker_that_survives_blocks_and_kills() -> None:
    state = _game()
    _put(state, 0, "Watchwolf")  # 3/3
    _put(state, 1, "Tarmogoyf")  # 3/4
    _act(state, rules.ATTACK, target=1)
    assert state.life[0, 1] == 40
    assert (state.creatures[0, 0] < 0).all() and state.graveyard[0, 0, C.CARD_ID["Watchwolf"]] == 1
    assert state.creatures[0, 1, 0] == C.CARD_ID["Tarmogoyf"]


def test_chump_blocks_happen_only_against_lethal_damage() -> None:
    state = _game()
    _put(state, 0, "Baneslayer Angel")  # 5/5
    _put(state, 1, "Savannah Lions")  # 2/1: neither survives nor trades
    _act(state, rules.ATTACK, target=1)
    assert state.life[0, 1] == 35 and state.creatures[0, 1, 0] >= 0  # no block at 40 life
    state = _game()
    _put(state, 0, "Baneslayer Angel")
    _put(state, 1, "Savannah Lions")
    state.life[0, 1] = 5
    _act(state, rules.ATTACK, target=1)
    assert state.life[0, 1] == 5 and (state.creatures[0, 1] < 0).all()  # the chump block saves the seat


def test_summoning_sickness_stops_attacks_until_the_next_turn() -> None:
    state = _game()
    state.hand[0, 0, C.CARD_ID["Watchwolf"]] = 1
    state.pool[0, 0] = 2
    _act(state, rules.CAST_CREATURE)
    assert not _mask(state)[rules.ATTACK]
    with pytest.raises(GameError):
        _act(state, rules.ATTACK)
    for _ in range(4):
        _act(state, rules.PASS)
    assert state.seat[0] == 0 and _mask(state)[rules.ATTACK]


def test_removal_destroys_the_strongest_threat() -> None:
    state = _game()
    _put(state, 1, "Watchwolf")
    _put(state, 2, "Terastodon")  # 9 power
    _put(state, 3, "Baneslayer Angel")
    _put(state, 0, "Ulamog's Crusher")  # the caster's own creature is never a target
    state.hand[0, 0, C.CARD_ID["Vindicate"]] = 1
    state.pool[0, 0] = 3
    result = _act(state, rules.CAST_REMOVAL)
    assert result.target[0] == 2 and (state.creatures[0, 2] < 0).all()
    assert state.creatures[0, 0, 0] == C.CARD_ID["Ulamog's Crusher"]


def test_held_mana_and_removal_answer_an_attack() -> None:
    state = _game()
    _put(state, 0, "Baneslayer Angel")
    state.hand[0, 1, C.CARD_ID["Path to Exile"]] = 1
    state.holding[0, 1], state.pool[0, 1] = True, 2
    _act(state, rules.ATTACK, target=1)
    assert state.life[0, 1] == 40 and (state.creatures[0, 0] < 0).all()


def test_the_turn_limit_is_a_truncation_not_a_loss() -> None:
    state = _game(max_rounds=2)
    for _ in range(8):
        assert not state.done[0]
        _act(state, rules.PASS)
    assert state.done[0] and state.truncated[0] and state.winner[0] == -1
    assert (state.placement[0] == 0).all() and not state.eliminated[0].any()


def test_placement_follows_the_order_of_elimination() -> None:
    state = _game()
    _put(state, 0, "Terastodon")
    for victim, place in ((2, 4), (1, 3), (3, 2)):
        state.life[0, victim] = 1
        state.tapped[0, 0] = False
        state.phase[:] = rules.MAIN_1
        _act(state, rules.ATTACK, target=victim)
        assert state.placement[0, victim] == place
    assert state.done[0] and state.winner[0] == 0 and state.placement[0, 0] == 1


def test_an_illegal_action_is_refused() -> None:
    state = _game()
    with pytest.raises(GameError):
        _act(state, rules.CAST_CREATURE)
