"""The vectorised path for canonical records: Arrow's JSON reader plus column checks.

Lines are parsed in bulk by ``pyarrow.json`` against an explicit schema
derived from the models (it rejects every type mismatch and unknown field),
then filtered by :func:`toolkit.ingest.rules.find_bad_rows`. Lines known
not to parse (blank, padded, or showing a fault the file has shown before:
see :mod:`toolkit.ingest.suspects`) are blanked to spaces in the block
(:data:`PLACEHOLDER_ID`): Arrow skips a line of whitespace, so the block
still parses in one go, without them and without a copy. A block that fails
to parse is split around the lines that broke it, so bad lines cost a few
re-parses of their neighbourhood rather than the whole chunk falling to the
slow path: Arrow names the row of most parse errors, an unknown field is
found by its name, and anything else is found by splitting the block in
parts. Lines that fail here are handed back for per-row validation; the rows
that fail the checks are dropped as the rows are grouped by lake partition.

Finding a bad line is only ever a guess that picks lines to set aside: rows
are accepted only from a block that parsed whole with the strict options.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.json as pj

from toolkit.ingest.memory import memory_pool
from toolkit.ingest.parts import group_by_partition, read_schema
from toolkit.ingest.rules import find_bad_rows
from toolkit.jsontext import too_deep

# A failing block is split in this many parts (down to single lines, which then
# go to the per-row path), after setting aside the line Arrow names, if any.
# Arrow reads a whole block before it reports some errors (a field changing
# type), so peeling bad lines off one at a time would re-read the rest of the
# block once per bad line: with 1% bad lines, ~11 reads of every line. Split
# in parts, a block with e bad lines is read ~2 + log8(e) times.
_FANOUT = 8
# Lines of the part after a named bad line that is re-parsed whole; a longer
# rest is split (it likely holds more bad lines).
_REST_WHOLE = 256
# Unknown fields are looked for by name (one more parse, unknown fields
# allowed) only in blocks this small; larger ones are split first.
_NAME_UNKNOWN_MAX = 512
# Keys (counted as ``":``) of a line whose unknown fields are looked for by inferring its types: Arrow builds a
# column per distinct field (~9 KB each), so a 1 MB line of 100k unknown keys took ~700 MB. A canonical record
# has ~200; a line with more goes to the per-row path unread here.
_INFER_KEYS_MAX = 4096
# Parsed pieces of a split block held before they are combined into one table. A
# very dirty chunk splits down to many one-line tables, each with buffers for every
# column of the schema (~20 KB): 16k lines of short bad lines interleaved with
# parseable ones held ~200 MB of them per chunk in flight.
_PIECES_HELD = 64
# Arrow ends some parse errors with the (0-based) row of the block that failed.
_ERROR_ROW = re.compile(r" in row (\d+)$")
_UNKNOWN_FIELD = "unexpected field"
# The id of a line blanked to spaces in a block (see ``parse.blank_lines``): it gives no row.
PLACEHOLDER_ID = -1


def looks_like_object(line: bytes) -> bool:
    """Cheap pre-filter: only lines that start and end like a JSON object reach Arrow
    (Arrow's reader is not robust to every top-level value)."""
    return line[:1] == b"{" and line[-1:] == b"}"


def _parse(lines: list[bytes], *, unknown: str = "error") -> pa.Table | str:
    return _parse_block(b"\n".join(lines), len(lines), unknown=unknown)


def _parse_block(data: bytes | bytearray, n_lines: int, *, unknown: str = "error") -> pa.Table | str:
    """The parsed table, or why the block failed. ``unknown="infer"`` reads
    unknown fields as extra columns instead of failing (to find them)."""
    try:
        table = pj.read_json(
            pa.BufferReader(data),  # zero-copy, unlike a Python file object
            read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pj.ParseOptions(explicit_schema=read_schema(), unexpected_field_behavior=unknown),
            memory_pool=memory_pool(),
        )
        # Arrow's JSON reader does not check UTF-8 in string values (bytes
        # outside strings or in keys fail the parse); a full validation of the
        # parsed table does, over the string data only: ~8x cheaper than
        # decoding the whole block with CPython.
        table.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        return str(error)
    except UnicodeDecodeError as error:  # a field name inferred from invalid UTF-8 bytes
        return f"invalid UTF-8 in a field name: {error}"
    # Two JSON values on one line parse as two rows: then rows and lines no
    # longer align, and the block is treated as failed.
    return table if table.num_rows == n_lines else "rows and lines do not align"


def _extra_names(data_type: pa.DataType, expected: pa.DataType) -> set[str]:
    """Names of the fields in ``data_type`` (a parsed type) that ``expected`` lacks, at any depth."""
    if pa.types.is_list(data_type):
        return _extra_names(data_type.value_type, expected.value_type)
    if not pa.types.is_struct(data_type):
        return set()
    known = {f.name: f.type for f in expected}
    names: set[str] = set()
    for child in data_type:
        if child.name in known:
            names |= _extra_names(child.type, known[child.name])
        else:
            names.add(child.name)
    return names


def _lines_naming_unknown_fields(lines: list[bytes]) -> np.ndarray | str:
    """Which lines mention a field the schema lacks (by its name as JSON text), or
    why the block failed even with unknown fields allowed.

    Inferring types recurses into every value and makes a column of every
    field: a line nested too deep or with too many keys is set aside first,
    unread (the per-row path rejects it with the reason).
    """
    unfit = np.fromiter(
        (line.count(b'":') > _INFER_KEYS_MAX or too_deep(line) is not None for line in lines),
        dtype=bool,
        count=len(lines),
    )
    if unfit.any():
        return unfit
    table = _parse(lines, unknown="infer")
    if isinstance(table, str):
        return table
    schema_type = pa.struct(list(read_schema()))
    try:
        keys = [orjson.dumps(name) for name in _extra_names(pa.struct(list(table.schema)), schema_type)]
    except UnicodeDecodeError as error:  # a nested field name of invalid UTF-8 bytes
        return f"invalid UTF-8 in a field name: {error}"
    return np.fromiter((any(key in line for key in keys) for line in lines), dtype=bool, count=len(lines))


def _error_row(error: str, n_lines: int) -> int | None:
    found = _ERROR_ROW.search(error)
    return int(found.group(1)) if found and int(found.group(1)) < n_lines else None


Block = tuple[list[bytes], np.ndarray]


class _Pieces:
    """What parsing a chunk's lines gives: parsed tables with their line ids, and failed ids."""

    def __init__(self) -> None:
        self.tables: list[pa.Table] = []
        self.kept: list[np.ndarray] = []
        self.failed: list[np.ndarray] = []

    def parse(self, lines: list[bytes], ids: np.ndarray, error: str | None = None) -> None:
        """Parse ``lines``, setting aside the lines that break the parse. ``error``:
        the block is known to fail, for this reason. A stack, not recursion:
        a very dirty chunk splits many times."""
        pending: list[tuple[list[bytes], np.ndarray, str | None]] = [(lines, ids, error)]
        while pending:
            lines, ids, error = pending.pop()
            parsed = _parse(lines) if error is None else error
            if not isinstance(parsed, str):
                self._keep(parsed, ids)
            elif len(lines) == 1:
                self.failed.append(ids)
            else:
                blocks = [(part, part_ids, None) for part, part_ids in self._split(lines, ids, parsed) if part]
                pending.extend(reversed(blocks))

    def _keep(self, table: pa.Table, ids: np.ndarray) -> None:
        self.tables.append(table)
        self.kept.append(ids)
        if len(self.tables) >= _PIECES_HELD:  # combined, in order: one set of buffers instead of many
            self.tables = [pa.concat_tables(self.tables).combine_chunks(memory_pool=memory_pool())]
            self.kept = [np.concatenate(self.kept)]

    def _split(self, lines: list[bytes], ids: np.ndarray, error: str) -> list[Block]:
        """Blocks to parse next (maybe empty), after setting aside the lines guessed to break the block."""
        row = _error_row(error, len(lines))
        if row is None and error.endswith(_UNKNOWN_FIELD) and len(lines) <= _NAME_UNKNOWN_MAX:
            suspects = _lines_naming_unknown_fields(lines)
            if not isinstance(suspects, str):
                if suspects.any():
                    self.failed.append(ids[suspects])
                    return [([line for line, bad in zip(lines, suspects) if not bad], ids[~suspects])]
            else:
                row = _error_row(suspects, len(lines))
        if row is None:
            return _parts(lines, ids)
        # The rows before the named one most likely parsed; the rest is unknown.
        self.failed.append(ids[row : row + 1])
        rest, rest_ids = lines[row + 1 :], ids[row + 1 :]
        after = [(rest, rest_ids)] if len(rest) <= _REST_WHOLE else _parts(rest, rest_ids)
        return [(lines[:row], ids[:row]), *after]


def _parts(lines: list[bytes], ids: np.ndarray) -> list[Block]:
    step = -(-len(lines) // _FANOUT)
    return [(lines[start : start + step], ids[start : start + step]) for start in range(0, len(lines), step)]


@dataclass
class FastResult:
    """Rows that passed every check (in line order, or grouped by lake partition as
    :func:`~toolkit.ingest.parts.group_by_partition` does), and the ids of the lines that did not;
    ``refused``: those of the latter that parsed and failed the column checks only."""

    table: pa.Table
    ids: np.ndarray
    fallback: np.ndarray
    refused: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


def validate_block(block: bytes | bytearray | memoryview, ids: np.ndarray) -> FastResult:
    """Like :func:`validate_lines` for lines already joined by ``\\n`` (a clean
    chunk): parsed as one block, split into lines only if that fails. ``ids``:
    one per line of the block, :data:`PLACEHOLDER_ID` for a line blanked to
    spaces (it gives no row: Arrow skips a line of whitespace)."""
    real = ids != PLACEHOLDER_ID
    row_ids = ids[real]
    if not len(row_ids):
        return _check([], [], [])
    parsed = _parse_block(block, len(row_ids))
    if not isinstance(parsed, str):
        return _check([parsed], [row_ids], [])
    lines = bytes(block).split(b"\n")
    if len(row_ids) < len(ids):
        lines = [line for line, kept in zip(lines, real.tolist(), strict=True) if kept]
    pieces = _Pieces()
    pieces.parse(lines, row_ids, parsed)
    return _check(pieces.tables, pieces.kept, pieces.failed)


def validate_lines(lines: list[bytes], ids: np.ndarray) -> FastResult:
    """Parse and check ``lines`` (cleaned JSON objects); ``ids`` label them.

    Returns the passing rows (schema: :func:`read_schema`) with their ids,
    and the ids of lines for the per-row path.
    """
    pieces = _Pieces()
    if lines:
        pieces.parse(lines, ids)
    return _check(pieces.tables, pieces.kept, pieces.failed)


def _check(tables: list[pa.Table], kept: list[np.ndarray], failed: list[np.ndarray]) -> FastResult:
    if tables:
        # One chunk per column: the lake writer pays per chunk, and a split
        # block leaves many small ones.
        table = pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0]
        table_ids = np.concatenate(kept)
        bad = find_bad_rows(table)
        refused = table_ids[bad]
        if len(refused):
            failed.append(refused)
        # The bad rows are dropped as the rows are grouped: one copy of the table, not two.
        table, table_ids = group_by_partition(table, table_ids, keep=~bad if len(refused) else None)
    else:
        table = read_schema().empty_table()
        table_ids = refused = np.empty(0, dtype=np.int64)
    fallback = np.sort(np.concatenate(failed)) if failed else np.empty(0, dtype=np.int64)
    return FastResult(table, table_ids, fallback, np.sort(refused))
