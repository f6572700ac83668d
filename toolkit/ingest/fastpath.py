"""The vectorised path for canonical records: Arrow's JSON reader plus column checks.

Lines are parsed in bulk by ``pyarrow.json`` against an explicit schema
derived from the models (it rejects every type mismatch and unknown field),
then filtered by :func:`toolkit.ingest.checks.find_bad_rows`. A block that
fails to parse is split and re-parsed, so one bad line costs a few re-parses
of its neighbourhood rather than the whole chunk falling to the slow path.
Lines that fail here are handed back for per-row validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from toolkit.ingest.checks import find_bad_rows
from toolkit.schema.arrow import snapshot_schema

# A failing block is split in this many parts, down to single lines, which
# then go to the per-row path.
_FANOUT = 8


def _nullable(data_type: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(data_type):
        return pa.struct([pa.field(f.name, _nullable(f.type)) for f in data_type])
    if pa.types.is_list(data_type):
        return pa.list_(_nullable(data_type.value_type))
    return data_type


@cache
def read_schema() -> pa.Schema:
    """The snapshot schema with every field nullable: missing fields read as null,
    and the checks (not the reader) decide what is required."""
    return pa.schema([pa.field(f.name, _nullable(f.type)) for f in snapshot_schema()])


def looks_like_object(line: bytes) -> bool:
    """Cheap pre-filter: only lines that start and end like a JSON object reach Arrow
    (Arrow's reader is not robust to every top-level value)."""
    return line[:1] == b"{" and line[-1:] == b"}"


def _parse(lines: list[bytes]) -> pa.Table | None:
    return _parse_block(b"\n".join(lines), len(lines))


def _parse_block(data: bytes, n_lines: int) -> pa.Table | None:
    try:
        table = pj.read_json(
            pa.BufferReader(data),  # zero-copy, unlike a Python file object
            read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pj.ParseOptions(explicit_schema=read_schema(), unexpected_field_behavior="error"),
        )
        # Arrow's JSON reader does not check UTF-8 in string values (bytes
        # outside strings or in keys fail the parse); a full validation of the
        # parsed table does, over the string data only: ~8x cheaper than
        # decoding the whole block with CPython.
        table.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    # Two JSON values on one line parse as two rows: then rows and lines no
    # longer align, and the block is treated as failed.
    return table if table.num_rows == n_lines else None


def _parse_or_split(lines: list[bytes], ids: np.ndarray, tables: list[pa.Table], kept: list[np.ndarray],
                    failed: list[np.ndarray], *, known_bad: bool = False) -> None:
    table = None if known_bad else _parse(lines)
    if table is not None:
        tables.append(table)
        kept.append(ids)
        return
    if len(lines) == 1:
        failed.append(ids)
        return
    step = -(-len(lines) // _FANOUT)
    for start in range(0, len(lines), step):
        _parse_or_split(lines[start : start + step], ids[start : start + step], tables, kept, failed)


@dataclass
class FastResult:
    """Rows that passed every check, and the ids of the lines that did not."""

    table: pa.Table
    ids: np.ndarray
    fallback: np.ndarray


def validate_block(block: bytes, ids: np.ndarray) -> FastResult:
    """Like :func:`validate_lines` for lines already joined by ``\\n`` (a clean
    chunk): parsed as one block, split into lines only if that fails."""
    table = _parse_block(block, len(ids))
    if table is not None:
        return _check([table], [ids], [])
    tables: list[pa.Table] = []
    kept: list[np.ndarray] = []
    failed: list[np.ndarray] = []
    _parse_or_split(block.split(b"\n"), ids, tables, kept, failed, known_bad=True)
    return _check(tables, kept, failed)


def validate_lines(lines: list[bytes], ids: np.ndarray) -> FastResult:
    """Parse and check ``lines`` (cleaned JSON objects); ``ids`` label them.

    Returns the passing rows (schema: :func:`read_schema`) with their ids,
    and the ids of lines for the per-row path.
    """
    tables: list[pa.Table] = []
    kept: list[np.ndarray] = []
    failed: list[np.ndarray] = []
    if lines:
        _parse_or_split(lines, ids, tables, kept, failed)
    return _check(tables, kept, failed)


def _check(tables: list[pa.Table], kept: list[np.ndarray], failed: list[np.ndarray]) -> FastResult:
    if tables:
        table = pa.concat_tables(tables)
        table_ids = np.concatenate(kept)
        bad = find_bad_rows(table)
        if bad.any():
            failed.append(table_ids[bad])
            table = table.filter(pa.array(~bad))
            table_ids = table_ids[~bad]
    else:
        table = read_schema().empty_table()
        table_ids = np.empty(0, dtype=np.int64)
    fallback = np.sort(np.concatenate(failed)) if failed else np.empty(0, dtype=np.int64)
    return FastResult(table, table_ids, fallback)
