"""What validation hands on: parts of accepted rows with their rejects, per-file counts, and the lake partitions
rows fall in."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pydantic import BaseModel, Field, field_serializer

from toolkit.ingest.memory import memory_pool
from toolkit.ingest.rowpath import MORE_PROBLEMS, Problem
from toolkit.schema import columns as col
from toolkit.schema.arrow import snapshot_schema


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


@dataclass(frozen=True)
class Reject:
    """A rejected line: where it was, its exact bytes, and why."""

    file: str
    line: int
    raw: bytes
    problems: list[Problem]


@dataclass
class Part:
    """Accepted rows of a stretch of the file (schema :func:`read_schema`) with
    their line numbers, and the rejects found in that stretch. Rows are in line
    order, except that rows of finely interleaved lake partitions (source,
    generation) are grouped by partition, in line order within each."""

    table: pa.Table
    lines: np.ndarray
    rejects: list[Reject]


@dataclass
class PackedPart:
    """A part held compressed: its rows as an Arrow IPC stream (lz4), ~210
    bytes per canonical record instead of ~830 as Arrow arrays. For parts that
    must wait a while (e.g. for the file's hash) without weighing on memory;
    packing and unpacking cost ~1.3 us per row."""

    data: pa.Buffer
    lines: np.ndarray
    rejects: list[Reject]
    rows: int

    @classmethod
    def pack(cls, part: Part) -> PackedPart:
        sink = pa.BufferOutputStream(memory_pool=memory_pool())
        options = ipc.IpcWriteOptions(compression="lz4", use_threads=False)
        with ipc.new_stream(sink, part.table.schema, options=options) as writer:
            writer.write_table(part.table)
        return cls(sink.getvalue(), part.lines, part.rejects, part.table.num_rows)

    def unpack(self) -> Part:
        options = ipc.IpcReadOptions(use_threads=False)
        return Part(
            ipc.open_stream(self.data, options=options, memory_pool=memory_pool()).read_all(), self.lines, self.rejects
        )


class FileReport(BaseModel):
    """Counts for one file (``reasons``: rejected lines by problem code; ``dialects``: rows read per dialect)."""

    path: str
    lines: int = 0
    blank: int = 0
    valid: int = 0
    invalid: int = 0
    bom: bool = False
    ends_without_newline: bool = False
    reasons: Counter[str] = Field(default_factory=Counter)
    dialects: Counter[str] = Field(default_factory=Counter)

    def add_reject(self, reject: Reject) -> None:
        self.invalid += 1
        self.reasons.update({problem.code for problem in reject.problems if problem.code != MORE_PROBLEMS})

    def demote(self, problem: Problem) -> None:
        """A row counted valid turned out bad (a duplicate, found once the file is read): count it rejected."""
        self.valid -= 1
        self.invalid += 1
        self.reasons[problem.code] += 1

    @field_serializer("reasons", "dialects")
    def _sorted(self, counts: Counter[str]) -> dict[str, int]:
        return dict(sorted(counts.items()))


def _partition_codes(table: pa.Table) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per row, a code for its source and its generation (-1 for none), plus the
    source names the codes index; codes, not Python strings, on the hot path."""
    sources = pc.dictionary_encode(table[col.SOURCE]).combine_chunks()
    codes = sources.indices.to_numpy(zero_copy_only=False)
    generations = table[col.GENERATION].fill_null(-1).to_numpy(zero_copy_only=False)
    return codes, generations, sources.dictionary.to_pylist()


PartitionKey = tuple[str, int | None]


def partition_runs(table: pa.Table) -> list[tuple[PartitionKey, int, int]]:
    """The runs of consecutive rows of one lake partition: ((source, generation), start, stop)."""
    if table.num_rows == 0:
        return []
    return _runs(*_partition_codes(table))


def _runs(codes: np.ndarray, generations: np.ndarray, names: list[str]) -> list[tuple[PartitionKey, int, int]]:
    change = np.flatnonzero((codes[1:] != codes[:-1]) | (generations[1:] != generations[:-1])) + 1
    bounds = [0, *change.tolist(), len(codes)]
    runs = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        generation = int(generations[start])
        runs.append(((names[codes[start]], None if generation < 0 else generation), start, stop))
    return runs


# Rows of one partition that follow each other form a run; the lake writer
# takes runs as zero-copy slices, and the Parquet encoder pays per slice
# (~140 us each: 100-row runs cost ~1.5 us/row more to encode than 4000-row
# ones). Parts whose runs are shorter than this on average are regrouped so
# each partition is one run: a concatenation of the runs (~0.75 us/row for
# 100-row runs), made on the parse workers. ``take`` would cost ~3 us/row.
_MIN_MEAN_RUN = 512


def group_by_partition(
    table: pa.Table, lines: np.ndarray, keep: np.ndarray | None = None
) -> tuple[pa.Table, np.ndarray]:
    """``table`` (rows labelled by ``lines``) in line order, with the rows of
    each partition made one run when partitions interleave finely.

    ``keep``: the rows to keep (the others are dropped first); the same as
    filtering ``table`` and ``lines`` beforehand, with one copy of the rows instead of two."""
    if keep is not None and not keep.all():
        kept = np.flatnonzero(keep)
        if kept.size < 2 or not bool((np.diff(lines[kept]) > 0).all()):
            return group_by_partition(table.filter(pa.array(keep)), lines[kept])
        runs = _runs(*_partition_codes(table.select([col.SOURCE, col.GENERATION]).take(pa.array(kept))))
        if len(runs) * _MIN_MEAN_RUN <= kept.size:
            return table.filter(pa.array(keep)), lines[kept]
        return _grouped(table, lines, runs, kept)
    if table.num_rows < 2:
        return table, lines
    if not bool((np.diff(lines) > 0).all()):  # slow-path rows joined the part: back to line order
        order = np.argsort(lines, kind="stable")
        table, lines = table.take(pa.array(order)), lines[order]
    runs = partition_runs(table)
    if len(runs) * _MIN_MEAN_RUN <= table.num_rows:
        return table, lines
    return _grouped(table, lines, runs, np.arange(table.num_rows))


def _grouped(
    table: pa.Table, lines: np.ndarray, runs: list[tuple[PartitionKey, int, int]], rows: np.ndarray
) -> tuple[pa.Table, np.ndarray]:
    """The ``rows`` of ``table`` (ascending), each partition's runs (over ``rows``) made one, partitions in
    order of first appearance: one concatenation of zero-copy slices of ``table``."""
    by_key: dict[PartitionKey, list[tuple[int, int]]] = {}
    for key, start, stop in runs:
        by_key.setdefault(key, []).append((start, stop))
    spans = [span for key in by_key for span in by_key[key]]
    positions = rows[np.concatenate([np.arange(start, stop) for start, stop in spans])]
    # The slices: stretches of consecutive rows of ``table`` (a dropped row or a change of partition ends one).
    cuts = np.flatnonzero(np.diff(positions) != 1) + 1
    starts, stops = positions[np.r_[0, cuts]], positions[np.r_[cuts - 1, len(positions) - 1]] + 1
    grouped = pa.concat_tables(
        [table.slice(start, stop - start) for start, stop in zip(starts.tolist(), stops.tolist(), strict=True)]
    )
    return grouped.combine_chunks(memory_pool=memory_pool()), lines[positions]


@dataclass
class CheckedRows:
    """What the row step hands on for a stretch of a file: its accepted rows as tables (schema
    :func:`read_schema`; the fast path's, then the per-row path's) with their line numbers, and its rejects."""

    tables: list[pa.Table]
    ids: list[np.ndarray]
    rejects: list[Reject]


def make_part(checked: CheckedRows, report: FileReport) -> Part:
    """The part of ``checked``: its tables as one, grouped by partition when it has several, its rejects in line
    order; counted in ``report``."""
    tables, ids, rejects = checked.tables, checked.ids, checked.rejects
    table = pa.concat_tables(tables) if tables else read_schema().empty_table()
    lines = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
    if len(tables) > 1:
        table, lines = group_by_partition(table, lines)
    rejects.sort(key=lambda r: r.line)
    report.valid += table.num_rows
    for reject in rejects:
        report.add_reject(reject)
    return Part(table, lines, rejects)
