"""The reference heuristic: it foresees combat, finishes kills, and leaves no small board alone."""

from __future__ import annotations

import numpy as np

from tests.game.test_rules import G, _game, _put
from toolkit.game import rules
from toolkit.game.players import attack_target, attack_values


def test_a_lethal_attack_on_a_small_board_beats_damage_into_a_big_one() -> None:
    state = _game()
    for _ in range(3):
        _put(state, 0, "Thragtusk")  # 15 power ready
    for _ in range(3):
        _put(state, 1, "Wurmcoil Engine")  # three 6/6 blockers: the attack would trade badly
    state.life[0, 2] = 12  # no blockers, low life: killable now
    state.life[0, 3] = 40
    target, value = attack_target(state, G, np.zeros(1, np.intp))
    assert target[0] == 2 and value[0] >= 1000


def test_an_undefended_opponent_is_attacked_whatever_its_board_and_ties_go_next_in_turn_order() -> None:
    state = _game()
    _put(state, 0, "Watchwolf")
    _put(state, 1, "Tarmogoyf")  # a 3/4 blocker stops a 3/3 dead: nothing goes through
    values = attack_values(state, G, np.zeros(1, np.intp))[0]
    assert values[0] == -np.inf and values[1] < values[2]
    assert attack_target(state, G, np.zeros(1, np.intp))[0][0] == 2  # seats 2 and 3 take 3 each: seat 2 is next


def test_the_foreseen_combat_is_the_combat_that_happens() -> None:
    state = _game()
    for name in ("Thragtusk", "Watchwolf", "Savannah Lions"):
        _put(state, 0, name)
    for name in ("Tarmogoyf", "Goblin Guide"):
        _put(state, 1, name)
    foreseen = rules.resolve_combat(state, G, np.zeros(1, np.intp), np.ones(1, np.intp))
    life = int(state.life[0, 1])
    power_before = rules.seat_power(state, G)[0].copy()
    rules.apply(state, G, np.array([rules.ATTACK]), np.array([1]))
    assert life - int(state.life[0, 1]) == int(foreseen.damage[0])
    power_after = rules.seat_power(state, G)[0]
    assert power_before[0] - power_after[0] == int(foreseen.power_lost[0])
    assert power_before[1] - power_after[1] == int(foreseen.power_killed[0])
