"""The public state of every seat, and the policy observation built from it.

:func:`seat_features` computes, for every seat, exactly the counts a canonical
record's ``players[i]`` carries (life, commander damage taken, mana
available, commander tax, hand size, graveyard size, creatures, lands,
permanents, total power, eliminated). The logger writes them; the
observation hands them, with the rest of the live state, to the one feature
encoder (:mod:`toolkit.features`) that also encodes logged records for
training, so play and training see identical vectors (a test holds them
equal).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from toolkit import features
from toolkit.features import FEATURE_SIZE, SEAT_FIELDS
from toolkit.game import rules
from toolkit.game.cards import CREATURE, DRAW, KIND, LAND, POWER, RAMP, REMOVAL
from toolkit.schema.vocab import PHASES

__all__ = ["FEATURE_SIZE", "SEAT_FIELDS", "observe", "seat_features"]

# The encoder's hand roles, in order, as card kinds (commanders never sit in a hand).
HAND_KINDS: Final = (LAND, CREATURE, REMOVAL, DRAW, RAMP)
_KIND_ONEHOT = np.stack([(KIND[:-1] == k) for k in HAND_KINDS], axis=1).astype(np.int16)  # [C,5]
_IS_LAND = (KIND[:-1] == LAND).astype(np.int16)
_PHASE_CODE = np.array([PHASES.index("main_1"), PHASES.index("main_2")])  # indexed by rules.MAIN_1 / MAIN_2


def seat_features(state: rules.GameState, g: np.ndarray) -> np.ndarray:
    """The record's per-seat counts for every seat of each game in ``g``, [M,N,11] int16 (order: SEAT_FIELDS)."""
    if rules.native is None:
        return seat_features_numpy(state, g)
    out = np.empty((len(g), state.n_seats, len(SEAT_FIELDS)), np.int16)
    rules.native.seat_features(  # type: ignore[attr-defined]
        rules.native_arrays(state), state.max_turn, np.ascontiguousarray(g, np.intp), out
    )
    return out


def seat_features_numpy(state: rules.GameState, g: np.ndarray) -> np.ndarray:
    """:func:`seat_features` in numpy: the definition the native loop follows."""
    # einsum sums over these short last axes several times faster than .sum(-1), to the same counts
    creatures = state.creatures[g]
    perms = state.permanents[g].astype(np.int16)
    on_board = np.einsum("mnk->mn", (creatures >= 0).view(np.uint8)).astype(np.int16)
    lands = perms @ _IS_LAND
    return np.stack(
        [
            state.life[g],
            np.einsum("mnk->mn", state.cmd_damage[g]),
            state.pool[g],
            rules.TAX_STEP * state.commander_casts[g],
            np.einsum("mnc->mn", state.hand[g].astype(np.int16)),
            np.einsum("mnc->mn", state.graveyard[g].astype(np.int16)),
            on_board,
            lands,
            np.einsum("mnc->mn", perms) + on_board,
            np.einsum("mnk->mn", POWER[creatures.astype(np.intp)]),
            state.eliminated[g],
        ],
        axis=-1,
    ).astype(np.int16)


def observe(state: rules.GameState, g: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The feature vector of the acting seat of each game in ``g``, [M, FEATURE_SIZE] float32."""
    if rules.native is None:
        return observe_numpy(state, g, mask)
    out = np.empty((len(g), FEATURE_SIZE), np.float32)
    rules.native.observe(  # type: ignore[attr-defined]
        rules.native_arrays(state),
        state.max_turn,
        np.ascontiguousarray(g, np.intp),
        np.ascontiguousarray(mask, bool),
        out,
    )
    return out


def observe_numpy(state: rules.GameState, g: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """:func:`observe` in numpy, through the one encoder (:func:`features.encode`): the definition the native loop
    follows (a test holds the two equal bit for bit)."""
    m, s = len(g), state.seat[g].astype(np.intp)
    return features.encode(
        features.StateArrays(
            seats=seat_features_numpy(state, g),
            seat=s,
            pod_size=np.full(m, state.n_seats),
            hand_roles=state.hand[g, s].astype(np.int16) @ _KIND_ONEHOT,
            in_command_zone=state.in_command_zone[g, s],
            turn=state.turn[g],
            phase=_PHASE_CODE[state.phase[g]],
            mask=mask,
            mask_known=np.ones(m, bool),
        )
    )


if rules.native is not None:  # the encoder's layout and float32 scales, handed to the native observation once
    rules.native.init_features(  # type: ignore[attr-defined]
        np.ascontiguousarray(features._INV_SEAT_SCALE, np.float32),
        (
            features._HAND,
            features._ZONE,
            features._TURN,
            features._POD,
            features._PHASE,
            features._LEGAL,
            features._KNOWN,
            FEATURE_SIZE,
            features.SLOT_SIZE,
            features.MAX_SEATS,
        ),
        tuple(
            float(np.float32(x))
            for x in (1.0 / features.HAND_SCALE, 1.0 / features.TURN_SCALE, 1.0 / features.MAX_SEATS)
        ),
        tuple(int(c) for c in _PHASE_CODE),
        HAND_KINDS,
    )
