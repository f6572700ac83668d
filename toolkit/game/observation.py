"""The public state of every seat, and the policy observation built from it.

:func:`seat_features` computes, for every seat, exactly the counts a canonical
record's ``players[i]`` carries (life, commander damage taken, mana
available, commander tax, hand size, graveyard size, creatures, lands,
permanents, total power, eliminated). The logger writes them; the
observation scales them. So a feature encoder reading canonical records can
rebuild the observation from a row, with no train/serve skew.

Observation layout (float32, length ``11 * n_seats + 17``), seat-relative:

- ``11`` features for each seat, the acting seat first, then the opponents
  in turn order: life/40, commander damage taken/21, mana available/10,
  commander tax/10, hand size/10, graveyard size/20, creatures/10, lands/20,
  permanents/30, total power/30, eliminated (0/1);
- the acting seat's hand by role, /5: lands, creatures, removal, draw, ramp;
- commander in the command zone (0/1);
- turn / turn limit, phase one-hot (main_1, main_2);
- the 8-long legal-action mask.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from toolkit.game import cards as C
from toolkit.game import rules

SEAT_FIELDS: Final = (
    "life", "commander_damage_taken", "mana_available", "commander_tax", "hand_size", "graveyard_size",
    "creatures", "lands", "permanents", "total_power", "eliminated",
)
SEAT_SCALE: Final = np.array([40, 21, 10, 10, 10, 20, 10, 20, 30, 30, 1], np.float32)
HAND_KINDS: Final = (C.LAND, C.CREATURE, C.REMOVAL, C.DRAW, C.RAMP)
_KIND_ONEHOT = np.stack([(C.KIND[:-1] == k) for k in HAND_KINDS], axis=1).astype(np.int16)  # [C,5]
_IS_LAND = (C.KIND[:-1] == C.LAND).astype(np.int16)


def observation_size(n_seats: int) -> int:
    """Length of the observation vector for a pod of ``n_seats``."""
    return len(SEAT_FIELDS) * n_seats + len(HAND_KINDS) + 1 + 3 + 8


def seat_features(state: rules.GameState, g: np.ndarray) -> np.ndarray:
    """The record's per-seat counts for every seat of each game in ``g``, [M,N,11] int16 (order: SEAT_FIELDS)."""
    creatures = state.creatures[g]
    perms = state.permanents[g].astype(np.int16)
    on_board = (creatures >= 0).sum(-1)
    lands = perms @ _IS_LAND
    return np.stack(
        [
            state.life[g],
            state.cmd_damage[g].sum(-1),
            state.pool[g],
            rules.TAX_STEP * state.commander_casts[g],
            state.hand[g].sum(-1, dtype=np.int16),
            state.graveyard[g].sum(-1, dtype=np.int16),
            on_board,
            lands,
            perms.sum(-1) + on_board,
            C.POWER[creatures].sum(-1),
            state.eliminated[g],
        ],
        axis=-1,
    ).astype(np.int16)


def observe(state: rules.GameState, g: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The observation of the acting seat of each game in ``g``, [M, observation_size] float32."""
    m, n = len(g), state.n_seats
    s = state.seat[g].astype(np.intp)
    order = (s[:, None] + np.arange(n)[None, :]) % n  # me first, then opponents in turn order
    seats = seat_features(state, g)[np.arange(m)[:, None], order] / SEAT_SCALE
    hand = (state.hand[g, s].astype(np.int16) @ _KIND_ONEHOT) / 5.0
    extra = np.stack(
        [
            state.in_command_zone[g, s],
            state.turn[g] / state.max_turn,
            state.phase[g] == rules.MAIN_1,
            state.phase[g] == rules.MAIN_2,
        ],
        axis=1,
    )
    return np.concatenate([seats.reshape(m, -1), hand, extra, mask], axis=1).astype(np.float32)
