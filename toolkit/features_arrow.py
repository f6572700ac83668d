"""Canonical decision rows (lake or record columns, as Arrow) read into the encoder's :class:`StateArrays`.

The Arrow side of :mod:`toolkit.features`, apart so that what encodes live
game states (the game, an engine, a policy) does not import pyarrow.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.features import (
    COMMAND_ZONE,
    HAND,
    HAND_ROLES,
    MAX_SEATS,
    SEAT_FIELDS,
    StateArrays,
    encode,
    hand_role,
)
from toolkit.schema import columns as col
from toolkit.schema.vocab import N_ACTIONS, PHASES


def encode_arrow(batch: pa.RecordBatch | pa.Table) -> np.ndarray:
    """Encode canonical decision rows (lake or record columns), [M, FEATURE_SIZE] float32.

    Reads ``seat``, ``pod_size``, ``turn``, ``phase``, ``legal_actions`` and
    ``players`` (a list of structs with at least SEAT_FIELDS, ``hand`` and
    ``command_zone``; other fields are ignored).
    """
    return encode(state_arrays_from_arrow(batch))


def state_arrays_from_arrow(batch: pa.RecordBatch | pa.Table) -> StateArrays:
    """The encoder's input from canonical decision rows (see :func:`encode_arrow`)."""
    if isinstance(batch, pa.Table):
        batch = (
            batch.combine_chunks().to_batches()[0] if batch.num_rows else pa.RecordBatch.from_pylist([], batch.schema)
        )
    m = batch.num_rows
    seat = _ints(batch.column(col.SEAT))
    pod = _ints(batch.column(col.POD_SIZE))
    players = batch.column(col.PLAYERS)
    starts = players.offsets.to_numpy()[:-1].astype(np.intp)
    entries = players.values  # the offsets index this child array
    fields = dict(zip([f.name for f in entries.type], entries.flatten(), strict=True))
    seats = np.zeros((m, MAX_SEATS, len(SEAT_FIELDS)), np.float32)
    entry = np.column_stack([_ints(_entries(fields[name], starts, pod)) for name in SEAT_FIELDS])
    if m and (pod == pod[0]).all():  # one pod size: a reshape, no scatter
        seats[:, : pod[0]] = entry.reshape(m, pod[0], len(SEAT_FIELDS))
    elif m:
        rows = np.repeat(np.arange(m), pod)
        seats[rows, np.arange(len(rows)) - np.repeat(np.cumsum(pod) - pod, pod)] = entry
    acting = pa.array(starts + seat)
    mask, known = _mask(batch.column(col.LEGAL_ACTIONS), m)
    return StateArrays(
        seats=seats,
        seat=seat,
        pod_size=pod,
        hand_roles=_hand_roles(fields[HAND].take(acting), m),
        in_command_zone=_ints(pc.list_value_length(fields[COMMAND_ZONE].take(acting))) > 0,
        turn=_ints(batch.column(col.TURN)),
        phase=_phase_codes(batch.column(col.PHASE)),
        mask=mask,
        mask_known=known,
    )


def _entries(values: pa.Array, starts: np.ndarray, pod: np.ndarray) -> pa.Array:
    """Every row's player entries in order: a slice when they are contiguous (they are in the lake)."""
    total = int(pod.sum())
    if not len(starts) or int(starts[-1]) + int(pod[-1]) - int(starts[0]) == total:
        return values.slice(int(starts[0]) if len(starts) else 0, total)
    within = np.arange(total) - np.repeat(np.cumsum(pod) - pod, pod)
    return values.take(pa.array(np.repeat(starts, pod) + within))


def _ints(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An integer or boolean column as numpy, nulls as 0."""
    if values.null_count:
        values = pc.fill_null(values, False if pa.types.is_boolean(values.type) else 0)
    return values.to_numpy(zero_copy_only=False)


def _hand_roles(hands: pa.Array, m: int) -> np.ndarray:
    """[m, 5] counts of the acting seat's hand by role."""
    counts = np.zeros((m, len(HAND_ROLES)), np.float32)
    names = pc.dictionary_encode(pc.list_flatten(hands))  # null hands contribute nothing
    if len(names) == 0:
        return counts
    role_of = np.array([hand_role(name) for name in names.dictionary.to_pylist()], np.intp)
    row = np.repeat(np.arange(m), _ints(pc.list_value_length(hands)))
    cells = row * len(HAND_ROLES) + role_of[names.indices.to_numpy()]
    counts[:] = np.bincount(cells, minlength=m * len(HAND_ROLES)).reshape(m, len(HAND_ROLES))
    return counts


def _mask(legal: pa.Array, m: int) -> tuple[np.ndarray, np.ndarray]:
    """[m, 8] legal mask (False where unknown) and [m] whether each row has one."""
    known = ~_ints(legal.is_null()).astype(bool)
    mask = np.zeros((m, N_ACTIONS), bool)
    if known.any():
        flat = pc.list_flatten(legal.filter(pa.array(known)))
        mask[known] = _ints(flat).astype(bool).reshape(-1, N_ACTIONS)
    return mask, known


def _phase_codes(phase: pa.Array) -> np.ndarray:
    """Index of each row's phase in PHASES."""
    return _ints(pc.index_in(phase, value_set=pa.array(PHASES)))
