"""The state encoder: one fixed-length, seat-relative float vector per decision.

One encoder serves the dataset builder (from lake rows), the game's policy
observation (from a live game state) and any later serving path, so a model
sees exactly the numbers at play time that it was trained on. Both callers
reduce their input to :class:`StateArrays` and call :func:`encode` (rows of
the lake through :mod:`toolkit.features_arrow`, so that a game or an engine
that encodes live states never imports pyarrow); a test encodes logged
records and live observations of the same decisions and requires them to be
identical.

Layout, version 1 (float32, :data:`FEATURE_SIZE` = 117):

- :data:`MAX_SEATS` (8) seat slots of 12 features each. Slot 0 is the acting
  seat, slot ``k`` the seat ``k`` places after it in turn order
  (``(seat + k) % pod_size``), so a learner sees the same slots whatever its
  seat and whatever the pod size. Each slot holds ``present`` (1 for a seat
  of the pod, 0 for padding) and the record's :data:`SEAT_FIELDS` scaled by
  :data:`SEAT_SCALE`. Nullable counts a writer did not know are 0.
- The acting seat's hand by role (:data:`HAND_ROLES`), counts / 5, from its
  card names: lands by name, removal / draw / ramp by the card-role table
  shipped with the dialects, anything else ``creature_or_other``. A record
  without hand names has zeros here (``hand_size`` still counts the cards).
- The acting seat's commander in the command zone (0/1).
- turn / 100, pod size / 8.
- The phase, one-hot over the contract's phases.
- The legal-action mask (8), and ``mask_known`` (0 when the record has no
  mask; the mask slots are then 0).

Changing any of this is a new :data:`FEATURE_VERSION`: datasets record the
version and the full spec (:func:`feature_spec`) in their manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np
from pydantic import BaseModel, ConfigDict

from toolkit.dialects.labels import load_card_roles
from toolkit.schema.vocab import MACRO_ACTIONS, MAX_POD_SIZE, N_ACTIONS, PHASES

FEATURE_VERSION: Final = 1
MAX_SEATS: Final = MAX_POD_SIZE

SEAT_FIELDS: Final = (
    "life",
    "commander_damage_taken",
    "mana_available",
    "commander_tax",
    "hand_size",
    "graveyard_size",
    "creatures",
    "lands",
    "permanents",
    "total_power",
    "eliminated",
)
SEAT_SCALE: Final = np.array([40, 21, 10, 10, 10, 20, 10, 20, 30, 30, 1], np.float32)
HAND_ROLES: Final = ("land", "creature_or_other", "removal", "draw", "ramp")
HAND_SCALE: Final = 5.0
TURN_SCALE: Final = 100.0
HAND: Final = "hand"
COMMAND_ZONE: Final = "command_zone"

# Lands are not in the card-role table (it lists spells); these names cover
# the basics and the land every Commander deck plays.
LAND_NAMES: Final = frozenset(
    name.casefold()
    for name in (
        "Plains",
        "Island",
        "Swamp",
        "Mountain",
        "Forest",
        "Wastes",
        "Command Tower",
        "Snow-Covered Plains",
        "Snow-Covered Island",
        "Snow-Covered Swamp",
        "Snow-Covered Mountain",
        "Snow-Covered Forest",
    )
)
_LAND, _OTHER = 0, 1
_ROLE_INDEX: Final = {"removal": 2, "draw": 3, "ramp": 4}

SLOT_SIZE: Final = 1 + len(SEAT_FIELDS)
# Offsets of the blocks after the seat slots.
_HAND: Final = MAX_SEATS * SLOT_SIZE
_ZONE: Final = _HAND + len(HAND_ROLES)
_TURN: Final = _ZONE + 1
_POD: Final = _TURN + 1
_PHASE: Final = _POD + 1
_LEGAL: Final = _PHASE + len(PHASES)
_KNOWN: Final = _LEGAL + N_ACTIONS
FEATURE_SIZE: Final = _KNOWN + 1
_INV_SEAT_SCALE: Final = (1.0 / SEAT_SCALE).astype(np.float32)
# Up to this many rows of one pod size (a game round: PPO's 512 envs, a simulation's 1,024 games) the seat slots are
# filled in one gather (37 rows: 12 vs 35 us; 4,096: 0.63 vs 0.78 ms); a build's batches of 200k rows ran the gather
# slower than the loop over slots (262 vs 196 ms), so they keep the loop. The same bits either way (a test).
_GATHER_ROWS: Final = 4096


@dataclass(frozen=True)
class StateArrays:
    """The numbers the encoder reads for M decisions, in absolute seat order.

    Attributes:
        seats: [M, P, 11] the record's SEAT_FIELDS per seat (P >= every pod size; padding ignored).
        seat: [M] the acting seat.
        pod_size: [M] seats in the pod.
        hand_roles: [M, 5] the acting seat's hand counted by HAND_ROLES.
        in_command_zone: [M] the acting seat's commander is in the command zone.
        turn: [M] the game's turn counter.
        phase: [M] index into the contract's PHASES.
        mask: [M, 8] legal actions (False where unknown).
        mask_known: [M] whether the record carried a mask.
    """

    seats: np.ndarray
    seat: np.ndarray
    pod_size: np.ndarray
    hand_roles: np.ndarray
    in_command_zone: np.ndarray
    turn: np.ndarray
    phase: np.ndarray
    mask: np.ndarray
    mask_known: np.ndarray


def encode(state: StateArrays) -> np.ndarray:
    """The feature vectors of M decisions, [M, FEATURE_SIZE] float32 (layout: module docstring)."""
    m = len(state.seat)
    out = np.zeros((m, FEATURE_SIZE), np.float32)
    seat = state.seat.astype(np.intp)
    pod = state.pod_size.astype(np.intp)
    slots = out[:, : MAX_SEATS * SLOT_SIZE].reshape(m, MAX_SEATS, SLOT_SIZE)
    seats = state.seats.astype(np.float32, copy=False)  # float32 math whatever the caller's dtype: equal bits
    if 0 < m <= _GATHER_ROWS and (pod == pod[0]).all():  # a game round's rows: every slot in one gather
        n = int(pod[0])
        slots[:, :n, 0] = 1.0
        slots[:, :n, 1:] = seats[np.arange(m)[:, None], (seat[:, None] + np.arange(n)) % n] * _INV_SEAT_SCALE
    else:
        for k in range(MAX_SEATS):  # slot k: the seat k places after the acting seat, if the pod has one
            rows = np.flatnonzero(k < pod)
            if not len(rows):
                break
            slots[rows, k, 0] = 1.0
            slots[rows, k, 1:] = seats[rows, (seat[rows] + k) % pod[rows]] * _INV_SEAT_SCALE
    known = state.mask_known.astype(bool)
    out[:, _HAND : _HAND + len(HAND_ROLES)] = state.hand_roles.astype(np.float32) * np.float32(1.0 / HAND_SCALE)
    out[:, _ZONE] = state.in_command_zone
    out[:, _TURN] = state.turn.astype(np.float32) * np.float32(1.0 / TURN_SCALE)
    out[:, _POD] = pod.astype(np.float32) * np.float32(1.0 / MAX_SEATS)
    out[np.arange(m), _PHASE + state.phase.astype(np.intp)] = 1.0
    out[:, _LEGAL : _LEGAL + N_ACTIONS] = state.mask & known[:, None]
    out[:, _KNOWN] = known
    return out


def hand_role(card: str) -> int:
    """The HAND_ROLES index of a card name (case-insensitive)."""
    name = card.strip().casefold()
    if name in LAND_NAMES:
        return _LAND
    return _ROLE_INDEX.get(load_card_roles().get(name, ""), _OTHER)


def feature_names() -> list[str]:
    """The name of every position of the vector, in order."""
    names = [f"slot{k}.{f}" for k in range(MAX_SEATS) for f in ("present", *SEAT_FIELDS)]
    names += [f"hand.{r}" for r in HAND_ROLES]
    names += ["commander_in_command_zone", "turn", "pod_size"]
    names += [f"phase.{p}" for p in PHASES]
    names += [f"legal.{a}" for a in MACRO_ACTIONS]
    return [*names, "mask_known"]


class FeatureNormalisation(BaseModel):
    """How each feature group is scaled, in words (the manifest is read by people too)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seat_fields: dict[str, str]
    hand: str
    turn: str
    pod_size: str


class FeatureSpec(BaseModel):
    """The versioned feature spec a dataset manifest carries: names, order and normalisation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    size: int
    dtype: str
    names: list[str]
    max_seats: int
    slot_order: str
    normalisation: FeatureNormalisation
    nulls: str


@cache
def feature_spec() -> FeatureSpec:
    """This code's feature spec (the one every new build records)."""
    scales = dict(zip(SEAT_FIELDS, SEAT_SCALE.tolist(), strict=True))
    return FeatureSpec(
        version=FEATURE_VERSION,
        size=FEATURE_SIZE,
        dtype="float32",
        names=feature_names(),
        max_seats=MAX_SEATS,
        slot_order="slot k is the seat k places after the acting seat in turn order: (seat + k) % pod_size",
        normalisation=FeatureNormalisation(
            seat_fields={name: f"x / {scale:g}" for name, scale in scales.items()},
            hand=f"count by role / {HAND_SCALE:g}; roles: lands by name, removal/draw/ramp by the card-role "
            "table, else creature_or_other",
            turn=f"turn / {TURN_SCALE:g}",
            pod_size=f"pod_size / {MAX_SEATS}",
        ),
        nulls="unknown counts are 0; no hand names: hand roles 0; no legal_actions: mask 0, mask_known 0",
    )
