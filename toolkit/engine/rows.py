"""Decision requests as the driver reads them: a typed fast reading of ``decisions`` frames, and the feature
vectors of their rows by the encoder the models were trained with.

A ``decisions`` frame is most of what crosses the wire (a contract row per
request: every player's counts and zones). :func:`read_decisions` reads one
straight into typed structs holding only what the encoder needs (the
battlefield and graveyard lists, the row's identity fields are skipped
without being built), which costs the driver about half of reading it into
dictionaries. A frame it cannot read that way (another message, a field of
another type, broken JSON) is read by the generic path
(:func:`toolkit.engine.wire.decode`), whose errors name what is wrong; both
paths give the encoder the same numbers (a test).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, Final

import msgspec
import numpy as np

from toolkit import features
from toolkit.schema.vocab import N_ACTIONS, PHASES


class WirePlayer(msgspec.Struct):
    """What the encoder reads of one player (its fields in :data:`toolkit.features.SEAT_FIELDS` order first)."""

    life: float | None = None
    commander_damage_taken: float | None = None
    mana_available: float | None = None
    commander_tax: float | None = None
    hand_size: float | None = None
    graveyard_size: float | None = None
    creatures: float | None = None
    lands: float | None = None
    permanents: float | None = None
    total_power: float | None = None
    eliminated: bool | None = None
    hand: list[str] | None = None
    command_zone: list[str] | None = None


class Row(msgspec.Struct):
    """What the encoder reads of a request's row."""

    seat: int
    pod_size: int
    turn: int
    phase: str
    players: list[WirePlayer]
    legal_actions: list[bool]


class WireRequest(msgspec.Struct):
    game: str
    request: int
    row: Row


class WireDecisions(msgspec.Struct, tag="decisions", tag_field="type"):
    requests: list[WireRequest]


_DECODER: Final = msgspec.json.Decoder(WireDecisions)


def read_decisions(frame: bytes) -> list[WireRequest] | None:
    """The requests of a well-formed ``decisions`` frame; None for any other frame (read it the generic way)."""
    try:
        return _DECODER.decode(frame).requests
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def encode_rows(rows: Sequence[Row | dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """The feature vectors and legal masks of decision requests' rows (typed :class:`Row` or the rows' JSON
    objects), by the encoder the models were trained with (:func:`toolkit.features.encode`; the same numbers its
    Arrow path gives for the same rows: a test).

    Raises:
        ValueError: a row that is not a decision state (a field missing or of the wrong type, players that are
            not the pod, a phase not of the contract, a mask that is not 8 booleans with one legal action at least).
    """
    m = len(rows)
    seat, pod, turn, phase = (np.zeros(m, np.int64) for _ in range(4))
    hand = np.zeros((m, len(features.HAND_ROLES)), np.float32)
    zone = np.zeros(m, bool)
    values: list[tuple[Any, ...]] = []  # every row's players' seat fields, in order
    legal_masks = []
    try:
        for i, row in enumerate(rows):
            typed = type(row) is Row
            fields = _ROW_ATTRS(row) if typed else _ROW_KEYS(row)
            seat[i], pod[i], turn[i] = int(fields[0]), int(fields[1]), int(fields[2])
            code = _PHASE_INDEX.get(fields[3])
            if code is None:
                raise ValueError(f"phase {fields[3]!r} is not one of {list(PHASES)}")
            phase[i] = code
            players = fields[4]
            if not 0 <= seat[i] < pod[i] <= features.MAX_SEATS or len(players) != pod[i]:
                raise ValueError(f"seat {fields[0]} and {len(players)} players for a pod of {fields[1]}")
            acting = players[seat[i]]
            if typed:
                values.extend(map(_SEAT_ATTRS, players))
                cards, commanders = acting.hand, acting.command_zone
            else:
                for player in players:
                    try:
                        values.append(_SEAT_KEYS(player))
                    except KeyError:  # a field left out is a null
                        values.append(tuple(player.get(name) for name in features.SEAT_FIELDS))
                cards, commanders = acting.get("hand"), acting.get("command_zone")
            for card in cards or ():
                hand[i, _hand_role(card)] += 1
            zone[i] = bool(commanders)
            legal = fields[5]
            if len(legal) != N_ACTIONS or set(map(type, legal)) != {bool}:
                raise ValueError(f"legal_actions is not {N_ACTIONS} booleans: {legal!r}")
            legal_masks.append(legal)
        seats = np.zeros((m, features.MAX_SEATS, len(features.SEAT_FIELDS)), np.float32)
        if m:
            place = np.arange(int(pod.sum())) - np.repeat(np.cumsum(pod) - pod, pod)
            counts = np.array(values, np.float32)  # a null reads as NaN here, and as 0 in the lake's encoder
            seats[np.repeat(np.arange(m), pod), place] = np.nan_to_num(counts, copy=False, nan=0.0)
    except KeyError as error:
        raise ValueError(f"a row without the field {error}") from None
    except (TypeError, AttributeError) as error:
        raise ValueError(f"a row of the wrong shape ({error})") from None
    mask = np.array(legal_masks, bool).reshape(m, N_ACTIONS)
    if not mask.any(axis=1).all():
        raise ValueError("a row with no legal action")
    state = features.StateArrays(
        seats=seats,
        seat=seat,
        pod_size=pod,
        hand_roles=hand,
        in_command_zone=zone,
        turn=turn,
        phase=phase,
        mask=mask,
        mask_known=np.ones(m, bool),
    )
    return features.encode(state), mask


_ROW_FIELDS: Final = ("seat", "pod_size", "turn", "phase", "players", "legal_actions")
_ROW_ATTRS: Final = operator.attrgetter(*_ROW_FIELDS)
_ROW_KEYS: Final = operator.itemgetter(*_ROW_FIELDS)
_SEAT_ATTRS: Final = operator.attrgetter(*features.SEAT_FIELDS)
_SEAT_KEYS: Final = operator.itemgetter(*features.SEAT_FIELDS)
_PHASE_INDEX: Final = {name: i for i, name in enumerate(PHASES)}
if WirePlayer.__struct_fields__[: len(features.SEAT_FIELDS)] != features.SEAT_FIELDS:  # pragma: no cover
    raise RuntimeError(f"the seat fields changed ({features.SEAT_FIELDS}): update toolkit.engine.rows.WirePlayer")


@functools.lru_cache(maxsize=4096)
def _hand_role(card: str) -> int:
    return features.hand_role(card)
