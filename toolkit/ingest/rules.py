"""Vectorised checks of parsed canonical records: the fast filter of ingest.

Every constraint of the Pydantic models is applied column-wise to an Arrow
table: null/required, numeric ranges, allowed values, string lengths and
patterns (all read off the models by ``toolkit.schema.arrow``), plus the
vectorised twin of :func:`toolkit.schema.models.cross_field_errors`.

Each rule is first judged on whole-column summaries (null count, min and
max, count of failed matches): on clean data that is one reduction per
check. Only a column whose summary fails is checked row by row, to flag
the rows that may break the rule.

This is a filter, not the judge: a row it passes is accepted; a row it flags
goes to per-row Pydantic validation, which words the errors (and would accept
a row flagged by mistake). So it must never pass a row Pydantic rejects; a
property test feeds both the same mutated records to keep them in agreement.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.schema import columns as col
from toolkit.schema.arrow import FieldRule, snapshot_rules
from toolkit.schema.vocab import ACTION_INDEX, MODEL_VERSION_PATTERN, N_ACTIONS


def _np(array: pa.Array, fill: object) -> np.ndarray:
    """A numpy copy of ``array`` with nulls replaced by ``fill``."""
    if array.null_count:
        array = pc.fill_null(array, fill)
    return array.to_numpy(zero_copy_only=False)


def _flag(bad: np.ndarray, rows: np.ndarray, mask: np.ndarray) -> None:
    if mask.any():
        bad[rows[mask]] = True


def _not_allowed(array: pa.Array, allowed: tuple[object, ...]) -> pa.Array:
    """Per element, whether it is a value outside ``allowed`` (a null is not: nullability is its own rule)."""
    outside = pc.invert(pc.is_in(array, value_set=pa.array(allowed, type=array.type)))
    return pc.and_(outside, pc.is_valid(array)) if array.null_count else outside


def _check_scalar(array: pa.Array, rule: FieldRule, rows: np.ndarray, bad: np.ndarray) -> None:
    checks: list[pa.Array] = []
    if rule.ge is not None:
        checks.append(pc.less(array, rule.ge))
    if rule.le is not None:
        checks.append(pc.greater(array, rule.le))
    if rule.kind is float:
        checks.append(pc.invert(pc.is_finite(array)))
    if rule.allowed is not None:
        checks.append(_not_allowed(array, rule.allowed))
    if rule.kind is str:
        if rule.min_length is not None or rule.max_length is not None:
            length = pc.utf8_length(array)
            if rule.min_length is not None:
                checks.append(pc.less(length, rule.min_length))
            if rule.max_length is not None:
                checks.append(pc.greater(length, rule.max_length))
        if rule.pattern is not None:
            checks.append(pc.invert(pc.match_substring_regex(array, rule.pattern)))
    for check in checks:
        _flag(bad, rows, _np(check, False))


def _check(array: pa.Array, rule: FieldRule, rows: np.ndarray, present: np.ndarray, bad: np.ndarray) -> None:
    """Check ``array`` (one element per entry of ``rows``) against ``rule``.

    ``present`` marks elements whose parent exists: a child of a null struct is
    not "missing". A child that passes on its summaries (:func:`_passes`) is not
    looked at row by row: one bad value checks its own column, not its siblings.
    """
    is_null = _np(array.is_null(), True)
    if not rule.nullable:
        _flag(bad, rows, is_null & present)
    valid = present & ~is_null
    if rule.kind is list:
        lengths = _np(pc.list_value_length(array), 0).astype(np.int64)
        if rule.list_min is not None:
            _flag(bad, rows, valid & (lengths < rule.list_min))
        if rule.list_max is not None:
            _flag(bad, rows, valid & (lengths > rule.list_max))
        values = array.flatten()
        if not _passes(values, rule.children[0]):
            child_rows = np.repeat(rows, np.where(valid, lengths, 0))
            _check(values, rule.children[0], child_rows, np.ones(len(values), dtype=bool), bad)
    elif rule.kind is dict:
        for index, child in enumerate(rule.children):
            field = array.field(index)
            if not _passes(field, child):
                _check(field, child, rows, valid, bad)
    else:
        _check_scalar(array, rule, rows, bad)


def _within(values: pa.Array, low: float | None, high: float | None) -> bool:
    """Whether every non-null value lies in [low, high] (None: unbounded), from one min/max."""
    if low is None and high is None:
        return True
    bounds = pc.min_max(values).as_py()
    if bounds["min"] is None:  # all null: nothing to judge
        return True
    return (low is None or bounds["min"] >= low) and (high is None or bounds["max"] <= high)


def _scalar_passes(array: pa.Array, rule: FieldRule) -> bool:
    if not _within(array, rule.ge, rule.le):
        return False
    # min_max skips NaN: finiteness needs its own count.
    if rule.kind is float and pc.is_finite(array).false_count:
        return False
    if rule.allowed is not None and _not_allowed(array, rule.allowed).true_count:
        return False
    if rule.kind is str:
        if (rule.min_length is not None or rule.max_length is not None) and not _within(
            pc.utf8_length(array), rule.min_length, rule.max_length
        ):
            return False
        if rule.pattern is not None and pc.match_substring_regex(array, rule.pattern).false_count:
            return False
    return True


def _passes(array: pa.Array, rule: FieldRule) -> bool:
    """Whether every element of ``array`` certainly meets ``rule``, judged from
    column summaries. False means "check row by row", not "bad": any null where
    the rule wants a value, for one, is left to :func:`_check`, which knows
    whether its parent is there."""
    if array.null_count and not rule.nullable:
        return False
    if rule.kind is list:
        return _within(pc.list_value_length(array), rule.list_min, rule.list_max) and _passes(
            array.flatten(), rule.children[0]
        )
    if rule.kind is dict:
        return all(_passes(array.field(index), child) for index, child in enumerate(rule.children))
    return _scalar_passes(array, rule)


def _model_generation(model_version: pa.Array) -> np.ndarray:
    digits = pc.extract_regex(model_version, MODEL_VERSION_PATTERN.replace("(\\d", "(?P<n>\\d"))
    number = pc.cast(pc.struct_field(digits, "n"), pa.int64(), safe=False)
    return _np(number, -1)


def _cross_field(table: dict[str, pa.Array], bad: np.ndarray) -> None:
    """The vectorised twin of ``cross_field_errors`` over single-chunk columns."""
    n = _np(table[col.POD_SIZE], 0)
    seat = _np(table[col.SEAT], 0)
    players = table[col.PLAYERS]
    n_players = _np(pc.list_value_length(players), 0)
    bad |= seat >= n
    bad |= n_players != n
    player_seats = _np(pc.struct_field(players.flatten(), "seat"), -1)
    offsets = np.repeat(np.cumsum(n_players) - n_players, n_players)
    wrong_seat = player_seats != (np.arange(len(player_seats)) - offsets)
    rows = np.repeat(np.arange(len(n)), n_players)
    _flag(bad, rows, wrong_seat)

    action = table[col.ACTION]
    index = _np(pc.struct_field(action, col.ACTION_INDEX), 0)
    macro = pc.struct_field(action, col.ACTION_MACRO)
    expected = _np(pc.index_in(macro, value_set=pa.array(list(ACTION_INDEX))), -1)
    bad |= index != expected

    legal = table[col.LEGAL_ACTIONS]
    legal_len = _np(pc.list_value_length(legal), 0)
    full = legal_len == N_ACTIONS
    legal_flat = _np(legal.flatten(), False).astype(bool)
    starts = np.cumsum(legal_len) - legal_len
    safe_index = np.clip(index, 0, N_ACTIONS - 1)
    chosen_legal = np.ones(len(n), dtype=bool)
    if full.any():
        chosen_legal[full] = legal_flat[starts[full] + safe_index[full]]
    bad |= ~chosen_legal

    target = _np(pc.struct_field(action, col.ACTION_TARGET_SEAT), -1)
    bad |= (target >= 0) & ((target >= n) | (target == seat))

    winner = _np(table[col.WINNER_SEAT], -1)
    has_winner = winner >= 0
    draw = _np(table[col.IS_DRAW], False).astype(bool)
    timed_out = _np(table[col.TIMED_OUT], False).astype(bool)
    terminal = _np(table[col.IS_TERMINAL], False).astype(bool)
    truncated = _np(table[col.TRUNCATED], False).astype(bool)
    seat_won_col = table[col.SEAT_WON]
    seat_won_known = ~_np(seat_won_col.is_null(), True)
    seat_won = _np(seat_won_col, False).astype(bool)
    bad |= has_winner & (winner >= n)
    bad |= draw & has_winner
    bad |= timed_out & (has_winner | draw)
    bad |= timed_out & terminal
    bad |= terminal & truncated
    bad |= has_winner & seat_won_known & (seat_won != (winner == seat))
    bad |= (draw | timed_out) & seat_won

    placement = _np(table[col.PLACEMENT], 0)
    bad |= placement > n

    model_version = table[col.MODEL_VERSION]
    has_version = ~_np(model_version.is_null(), True)
    if has_version.any():
        generation = _np(table[col.GENERATION], -1)
        bad |= has_version & (_model_generation(model_version) != generation)
    _version_rules(table, n, seat, seat_won_known, seat_won, bad)


def _version_rules(
    table: dict[str, pa.Array], n: np.ndarray, seat: np.ndarray, won_known: np.ndarray, won: np.ndarray, bad: np.ndarray
) -> None:
    """The vectorised twin of ``models.version_errors``: no version-2 field in a version-1 row; in a
    version-2 row, the outcome is ``seat_won`` as +1/-1 (null when unknown) and the lineup is the pod's."""
    v1 = _np(table[col.SCHEMA_VERSION], 0) == 1
    lineup = table[col.LINEUP]
    lineup_known = ~_np(lineup.is_null(), True)
    outcome_col = table[col.OUTCOME]
    outcome_known = ~_np(outcome_col.is_null(), True)
    bad |= v1 & (lineup_known | outcome_known)
    v2 = ~v1
    outcome = _np(outcome_col, 0)
    bad |= v2 & (outcome_known != won_known)
    bad |= v2 & outcome_known & won_known & (outcome != np.where(won, 1, -1))
    if not (v2 & lineup_known).any():
        return
    n_entries = _np(pc.list_value_length(lineup), 0)
    bad |= lineup_known & (n_entries != n)
    entries = lineup.flatten()
    starts = np.cumsum(n_entries) - n_entries
    entry_seats = _np(pc.struct_field(entries, col.LINEUP_SEAT), -1)
    _flag(
        bad,
        np.repeat(np.arange(len(n)), n_entries),
        entry_seats != np.arange(len(entry_seats)) - np.repeat(starts, n_entries),
    )
    # The acting seat's entry is the acting player: the same model version (both null included).
    acting = lineup_known & (seat < n_entries)
    rows = np.flatnonzero(acting)
    if len(rows):
        versions = pc.struct_field(entries, col.LINEUP_MODEL_VERSION).take(pa.array(starts[rows] + seat[rows]))
        own = table[col.MODEL_VERSION].take(pa.array(rows))
        differ = _np(pc.not_equal(versions, own), False) | (_np(versions.is_null(), True) != _np(own.is_null(), True))
        _flag(bad, rows, differ)


def find_bad_rows(table: pa.Table) -> np.ndarray:
    """Boolean mask of the rows of ``table`` that may break the contract.

    ``table`` must have the (nullable) schema of ``snapshot_schema()``.
    """
    bad = np.zeros(table.num_rows, dtype=bool)
    if table.num_rows == 0:
        return bad
    table = table.combine_chunks()
    rows = np.arange(table.num_rows)
    everywhere = np.ones(table.num_rows, dtype=bool)
    for rule in snapshot_rules():
        array = table[rule.path].chunk(0)
        if not _passes(array, rule):
            _check(array, rule, rows, everywhere, bad)
    _cross_field({name: table[name].chunk(0) for name in table.column_names}, bad)
    return bad
