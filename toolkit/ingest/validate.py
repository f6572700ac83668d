"""Validate one decision-log file: a stream of accepted Arrow parts and byte-exact rejects.

Canonical files take the vectorised fast path (chunks parsed on worker
threads); other dialects, and lines the fast path could not pass, take the
per-row path in file order. Nothing is written here.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.dialects import detect_dialect
from toolkit.errors import ConfigError, DialectError
from toolkit.ingest.fastpath import PLACEHOLDER_ID, FastResult, looks_like_object, read_schema, validate_block, validate_lines
from toolkit.ingest.memory import memory_pool
from toolkit.ingest.reader import CHUNK_BYTES, UTF8_BOM, Chunk, read_chunks, read_chunks_ahead
from toolkit.ingest.rowpath import Problem, RowOutcome, RowValidator
from toolkit.ingest.suspects import Suspects, find_suspects
from toolkit.schema import columns as col
from toolkit.schema.vocab import DIALECTS, SOURCE_PATTERN

_SNIFF_LINES = 50
_OPEN, _CLOSE, _SPACE = ord("{"), ord("}"), ord(" ")
# A chunk with at most this share of lines the fast parse must not read is
# parsed whole, those lines blanked in a copy; with more, line by line.
_BLANK_SHARE = 0.1
# Chunks in flight per parse worker: while this thread stages one part, each
# worker parses a later chunk. A deeper queue only held more chunks (16 MB
# each, plus their parsed rows) in memory, at no gain in speed.
_QUEUE_PER_WORKER = 1


class ReadOptions(BaseModel):
    """How to read decision-log files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dialect: str | None = Field(default=None, description="Force this dialect for every line (default: detect).")
    source: str | None = Field(default=None, description="Force this source role on every row.")
    max_line_bytes: int = Field(default=4 << 20, ge=1024, description="Longer lines are rejected unread.")
    chunk_bytes: int = Field(default=CHUNK_BYTES, ge=1 << 10, description="Bytes of lines parsed per chunk.")
    workers: int = Field(default=2, ge=1, le=64, description="Threads parsing chunks on the fast path.")

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, value: str | None) -> str | None:
        if value is not None and value not in DIALECTS:
            raise ConfigError(f"--dialect {value!r} is unknown", hint=f"use one of {', '.join(DIALECTS)}")
        return value

    @field_validator("source")
    @classmethod
    def _source_slug(cls, value: str | None) -> str | None:
        if value is not None and not re.match(SOURCE_PATTERN, value):
            raise ConfigError(
                f"--source {value!r} is not a lowercase slug", hint="use e.g. forge, sim, ppo (a-z, 0-9, _ or -)"
            )
        return value


@dataclass(frozen=True)
class Reject:
    """A rejected line: where it was, its exact bytes, and why."""

    file: str
    line: int
    raw: bytes
    problems: list[Problem]


@dataclass
class Part:
    """Accepted rows of a stretch of the file (schema ``read_schema()``) with
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
        return Part(ipc.open_stream(self.data, options=options, memory_pool=memory_pool()).read_all(),
                    self.lines, self.rejects)


@dataclass
class FileReport:
    """Counts for one file."""

    path: str
    lines: int = 0
    blank: int = 0
    valid: int = 0
    invalid: int = 0
    bom: bool = False
    ends_without_newline: bool = False
    reasons: Counter[str] = field(default_factory=Counter)
    dialects: Counter[str] = field(default_factory=Counter)

    def add_reject(self, reject: Reject) -> None:
        self.invalid += 1
        self.reasons.update({problem.code for problem in reject.problems})

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": self.lines,
            "blank": self.blank,
            "valid": self.valid,
            "invalid": self.invalid,
            "bom": self.bom,
            "ends_without_newline": self.ends_without_newline,
            "reasons": dict(sorted(self.reasons.items())),
            "dialects": dict(sorted(self.dialects.items())),
        }


def _clean(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def _sniff_canonical(path: Path, options: ReadOptions) -> bool:
    """Whether the file should take the fast path: canonical by force, or by its
    first parseable record."""
    if options.dialect is not None:
        return options.dialect == "canonical"
    seen = 0
    for chunk in read_chunks(path, options.chunk_bytes):
        for raw in chunk.lines:
            text = _clean(raw).removeprefix(UTF8_BOM).strip()
            if not text or len(text) > options.max_line_bytes:
                continue
            seen += 1
            try:
                return detect_dialect(orjson.loads(text)) == "canonical"
            except (orjson.JSONDecodeError, DialectError):
                if seen >= _SNIFF_LINES:
                    return True
    return True


@dataclass
class _Prepared:
    """A chunk sorted for validation: a clean chunk goes to the fast path whole
    (``block``); otherwise its lines are sorted one by one."""

    chunk: Chunk
    block: bytes | bytearray | memoryview | None
    fast_lines: list[bytes]
    fast_ids: np.ndarray
    slow: list[tuple[int, bytes]]
    rejects: list[Reject]
    patterns: tuple[bytes, ...] = ()  # the file's known faults (see Suspects), looked for by the worker
    blank: np.ndarray | None = None  # lines of the block the parse must not read (blanked by the worker)
    common: list[bytes] = field(default_factory=list)  # patterns the worker found too common to be faults

    def release_bytes(self) -> None:
        """Let go of the chunk's raw bytes (16 MB) once no line of it is looked at again."""
        self.block = None
        self.chunk.release_bytes()

    def fast_text(self, line: int) -> bytes:
        if self.block is not None:
            return self.chunk.line(line - self.chunk.first_line)
        return self.fast_lines[int(np.searchsorted(self.fast_ids, line))]


def _blankable(chunk: Chunk, lines: np.ndarray) -> bool:
    """Whether each of ``lines`` is long enough to be blanked to ``{}`` (see :func:`blank_lines`)."""
    starts = np.concatenate(([0], chunk.breaks + 1))[lines]
    stops = np.concatenate((chunk.breaks, [len(chunk.body)]))[lines]
    return bool((stops - starts >= 2).all())


def blank_lines(block: bytearray, breaks: np.ndarray, lines: np.ndarray) -> None:
    """Overwrite ``lines`` of ``block`` (each at least 2 bytes long) with ``{}`` and spaces, in place."""
    octets = np.frombuffer(block, dtype=np.uint8)
    starts = np.concatenate(([0], breaks + 1))[lines]
    stops = np.concatenate((breaks, [len(octets)]))[lines]
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        octets[start:stop] = _SPACE
        octets[start], octets[start + 1] = _OPEN, _CLOSE


def _fast_job(prepared: _Prepared) -> FastResult:
    """Worker-thread job: set aside the lines showing a known fault, validate the
    fast-path lines, then group the passing rows by partition (the searches and
    the copies this needs are made here, in parallel)."""
    if prepared.block is not None:
        block, ids, suspects = _without_suspects(prepared)
        result = validate_block(block, ids)
        if len(suspects):
            result.fallback = np.union1d(result.fallback, suspects)
        if not len(result.fallback) and not prepared.slow:  # no line is looked at again: let the bytes go
            prepared.release_bytes()
    else:
        keep = [not any(p in line for p in prepared.patterns) for line in prepared.fast_lines]
        kept_ids = prepared.fast_ids[np.asarray(keep, dtype=bool)] if prepared.fast_lines else prepared.fast_ids
        result = validate_lines([line for line, k in zip(prepared.fast_lines, keep, strict=True) if k], kept_ids)
        result.fallback = np.union1d(result.fallback, np.setdiff1d(prepared.fast_ids, kept_ids))
    result.table, result.ids = group_by_partition(result.table, result.ids)
    return result


def _without_suspects(prepared: _Prepared) -> tuple[bytes | bytearray | memoryview, np.ndarray, np.ndarray]:
    """The block with the lines the parse must not read blanked (one copy, made here in the worker): the
    chunk's other lines and those showing a known fault; the ids with theirs replaced; and the latter's ids."""
    chunk, block, ids = prepared.chunk, prepared.block, prepared.fast_ids
    blank = prepared.blank if prepared.blank is not None else np.empty(0, dtype=np.int64)
    suspects = np.empty(0, dtype=np.int64)
    if prepared.patterns:
        marked, prepared.common = find_suspects(block, chunk.breaks, chunk.n_lines, prepared.patterns)
        lines = np.flatnonzero(marked & (ids != PLACEHOLDER_ID))
        if len(lines):
            suspects = ids[lines]
            ids = ids.copy()
            ids[lines] = PLACEHOLDER_ID
            blank = np.union1d(blank, lines)
    if len(blank):
        block = bytearray(block)
        blank_lines(block, chunk.breaks, blank)
    return block, ids, suspects


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
    codes, generations, names = _partition_codes(table)
    change = np.flatnonzero((codes[1:] != codes[:-1]) | (generations[1:] != generations[:-1])) + 1
    bounds = [0, *change.tolist(), table.num_rows]
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


def group_by_partition(table: pa.Table, lines: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    """``table`` (rows labelled by ``lines``) in line order, with the rows of
    each partition made one run when partitions interleave finely."""
    if table.num_rows < 2:
        return table, lines
    if not bool((np.diff(lines) > 0).all()):  # slow-path rows joined the part: back to line order
        order = np.argsort(lines, kind="stable")
        table, lines = table.take(pa.array(order)), lines[order]
    runs = partition_runs(table)
    if len(runs) * _MIN_MEAN_RUN <= table.num_rows:
        return table, lines
    by_key: dict[PartitionKey, list[tuple[int, int]]] = {}
    for key, start, stop in runs:
        by_key.setdefault(key, []).append((start, stop))
    spans = [span for key in by_key for span in by_key[key]]  # partitions in order of first appearance
    grouped = pa.concat_tables([table.slice(start, stop - start) for start, stop in spans])
    positions = np.concatenate([np.arange(start, stop) for start, stop in spans])
    return grouped.combine_chunks(memory_pool=memory_pool()), lines[positions]


class _FileValidation:
    """State of one file's validation across its chunks."""

    def __init__(self, path: Path, options: ReadOptions, report: FileReport) -> None:
        self.path = path
        self.name = str(path)
        self.options = options
        self.report = report
        self.rows = RowValidator(dialect=options.dialect, source=options.source)
        self.pending_raw: dict[int, bytes] = {}
        self.suspects = Suspects()

    def _clean_lines(self, chunk: Chunk) -> np.ndarray:
        """Per line, whether it is a bare JSON object line (not blank, no BOM, CR
        or padding, within the length limit), checked at memory speed: such
        lines need no per-line work. A CR of a CRLF ending fails the check; one
        inside a line is JSON whitespace to both paths."""
        octets = np.frombuffer(chunk.body, dtype=np.uint8)
        starts = np.concatenate(([0], chunk.breaks + 1))
        stops = np.concatenate((chunk.breaks, [len(octets)]))
        lengths = stops - starts
        clean = (lengths > 0) & (lengths <= self.options.max_line_bytes)
        clean[clean] = (octets[starts[clean]] == _OPEN) & (octets[stops[clean] - 1] == _CLOSE)
        return clean

    def prepare(self, chunk: Chunk, fast: bool) -> _Prepared:
        """Sort a chunk's lines: fast-path candidates, per-row lines, early rejects.

        A chunk of clean lines goes to the fast path whole. A chunk with a few
        other lines (blank, padded, too long, or showing a fault the file has
        shown before: see :class:`Suspects`) goes whole too, those lines
        blanked to ``{}`` in a copy (their rows are dropped after the parse),
        and they are looked at one by one; a chunk with many goes line by line.
        """
        report = self.report
        report.lines += chunk.n_lines
        report.ends_without_newline = chunk.ends_open
        clean = self._clean_lines(chunk) if fast else np.zeros(chunk.n_lines, dtype=bool)
        ids = np.arange(chunk.first_line, chunk.first_line + chunk.n_lines, dtype=np.int64)
        patterns = self.suspects.snapshot()
        if clean.all():
            return _Prepared(chunk, chunk.body, [], ids, [], [], patterns)
        others = np.flatnonzero(~clean)
        whole = fast and len(others) <= _BLANK_SHARE * chunk.n_lines and _blankable(chunk, others)
        fast_lines, fast_ids = [], ids[clean].tolist()
        slow: list[tuple[int, bytes]] = []
        rejects: list[Reject] = []
        for i in others.tolist():
            line = chunk.first_line + i
            text = _clean(chunk.line(i))
            if line == 1 and text.startswith(UTF8_BOM):
                text = text[len(UTF8_BOM) :]
                report.bom = True
            if len(text) > self.options.max_line_bytes:
                problem = Problem("", "line_too_long", f"line of {len(text)} bytes exceeds the limit of "
                                  f"{self.options.max_line_bytes} bytes (--max-line-bytes)")
                rejects.append(Reject(self.name, line, chunk.raw(i), [problem]))
                continue
            text = text.strip()
            if not text:
                report.blank += 1
            elif fast and not whole and looks_like_object(text):
                fast_lines.append(text)
                fast_ids.append(line)
            else:
                slow.append((line, text))
        if whole:
            ids[others] = PLACEHOLDER_ID
            return _Prepared(chunk, chunk.body, [], ids, slow, rejects, patterns, blank=others)
        lines = chunk.lines
        fast_lines = [lines[i] for i in np.flatnonzero(clean).tolist()] + fast_lines
        if len(fast_ids) > int(clean.sum()):  # padded objects joined the clean lines: back to line order
            order = np.argsort(fast_ids, kind="stable").tolist()
            fast_lines, fast_ids = [fast_lines[j] for j in order], [fast_ids[j] for j in order]
        return _Prepared(chunk, None, fast_lines, np.asarray(fast_ids, dtype=np.int64), slow, rejects, patterns)

    def complete(self, prepared: _Prepared, fast: FastResult | None) -> Part:
        """Run the per-row path on what the fast path left, and assemble the part."""
        chunk, slow = prepared.chunk, prepared.slow
        if fast is not None and len(fast.fallback):
            slow.extend((line, prepared.fast_text(line)) for line in fast.fallback.tolist())
            slow.sort()
        outcomes: list[RowOutcome] = []
        for line, text in slow:
            self.pending_raw[line] = chunk.raw(line - chunk.first_line)
            outcomes.extend(self.rows.feed(line, text, at_open_end=chunk.ends_open and line == chunk.last_line))
        if fast is not None:  # what broke this chunk's parse is looked for before the next chunks are parsed
            self.suspects.forget(prepared.common)
            texts = dict(slow)
            for outcome in outcomes:
                if outcome.record is None and outcome.line in texts:
                    self.suspects.learn(texts[outcome.line], [(p.field, p.code) for p in outcome.problems])
        tables, ids = [], []
        if fast is not None:
            self.report.dialects["canonical"] += fast.table.num_rows
            tables.append(self._force_source(fast.table))
            ids.append(fast.ids)
        return self._assemble(tables, ids, outcomes, prepared.rejects)

    def _force_source(self, table: pa.Table) -> pa.Table:
        if self.options.source is None:
            return table
        forced = pa.repeat(pa.scalar(self.options.source, pa.string()), table.num_rows)
        return table.set_column(table.schema.get_field_index(col.SOURCE), col.SOURCE, forced)

    def finish(self) -> Part:
        part = self._assemble([], [], self.rows.finish(), [])
        self.report.dialects.update(self.rows.dialects_seen)
        return part

    def _assemble(self, tables: list[pa.Table], ids: list[np.ndarray], outcomes: list[RowOutcome],
                  rejects: list[Reject]) -> Part:
        accepted = [o for o in outcomes if o.record is not None]
        for outcome in outcomes:
            raw = self.pending_raw.pop(outcome.line)
            if outcome.record is None:
                rejects.append(Reject(self.name, outcome.line, raw, outcome.problems))
        if accepted:
            tables.append(pa.Table.from_pylist([o.record for o in accepted], schema=read_schema()))
            ids.append(np.asarray([o.line for o in accepted], dtype=np.int64))
        table = pa.concat_tables(tables) if tables else read_schema().empty_table()
        lines = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
        if len(tables) > 1:
            table, lines = group_by_partition(table, lines)
        rejects.sort(key=lambda r: r.line)
        self.report.valid += table.num_rows
        for reject in rejects:
            self.report.add_reject(reject)
        return Part(table, lines, rejects)


# Parse workers yield the CPU to the file's other threads (its hasher, the
# reader, the Parquet writers, the coordinating thread): the parse is the bulk
# of the work and can always wait, while those threads are each on the critical
# path. While a file is hashed, validation only runs ahead a bounded way (see
# ``toolkit.catalog.ingest``), so a hasher starved by the workers stalls them all.
# A thread a worker starts would inherit the niceness for good: none does
# (Arrow's JSON reader runs on the worker itself, with use_threads=False).
_WORKER_NICENESS = 5


def _yield_to_other_threads() -> None:
    """Lower this (worker) thread's priority; Linux gives each thread its own niceness."""
    if sys.platform != "linux":
        return
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + _WORKER_NICENESS)
    except OSError:  # not permitted here: run at the usual priority
        pass


def validate_file(path: Path, options: ReadOptions, report: FileReport) -> Iterator[Part]:
    """Validate ``path`` chunk by chunk; counts accumulate in ``report``.

    Yields parts in file order; rows held back by a dialect adapter arrive
    in a final part. Duplicate decisions are not judged here (see
    ``toolkit.ingest.dedup``): they need every file of the run.
    """
    state = _FileValidation(path, options, report)
    if not _sniff_canonical(path, options):
        for chunk in read_chunks(path, options.chunk_bytes):
            yield state.complete(state.prepare(chunk, fast=False), None)
        yield state.finish()
        return
    in_flight: deque[tuple[Future[FastResult], _Prepared]] = deque()
    with ThreadPoolExecutor(max_workers=options.workers, thread_name_prefix="distill-parse",
                            initializer=_yield_to_other_threads) as pool:
        try:
            for chunk in read_chunks_ahead(path, options.chunk_bytes, depth=1):
                prepared = state.prepare(chunk, fast=True)
                in_flight.append((pool.submit(_fast_job, prepared), prepared))
                if len(in_flight) > _QUEUE_PER_WORKER * options.workers:
                    future, done = in_flight.popleft()
                    yield state.complete(done, future.result())
            while in_flight:
                future, done = in_flight.popleft()
                yield state.complete(done, future.result())
        finally:  # closed early (e.g. the file was ingested before): drop queued work
            for future, _ in in_flight:
                future.cancel()
    yield state.finish()
