"""Validate one decision-log file: a stream of accepted Arrow parts and byte-exact rejects.

Canonical files take the vectorised fast path (chunks parsed on worker
threads); other dialects, and lines the fast path could not pass, take the
per-row path in file order. Nothing is written here.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from toolkit.dialects import detect_dialect
from toolkit.errors import DialectError
from toolkit.ingest.config import ReadOptions
from toolkit.ingest.fastpath import (
    PLACEHOLDER_ID,
    FastResult,
    looks_like_object,
    read_schema,
    validate_block,
    validate_lines,
)
from toolkit.ingest.parts import FileReport, Part, Reject, group_by_partition
from toolkit.ingest.reader import LONG_LINE_HEAD_BYTES, UTF8_BOM, Chunk, read_chunks, read_chunks_ahead, read_head
from toolkit.ingest.rowpath import Problem, RowOutcome, RowValidator
from toolkit.ingest.suspects import Suspects, find_suspects
from toolkit.schema import columns as col

_SNIFF_LINES = 50
_OPEN, _CLOSE, _SPACE = ord("{"), ord("}"), ord(" ")
# A chunk with at most this share of lines the fast parse must not read is
# parsed whole, those lines blanked in place; with more, line by line.
_BLANK_SHARE = 0.1
# Chunks in flight per parse worker: while this thread stages one part, each
# worker parses a later chunk. A deeper queue only held more chunks (16 MB
# each, plus their parsed rows) in memory, at no gain in speed.
_QUEUE_PER_WORKER = 1


def _clean(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


def _sniff_canonical(path: Path, options: ReadOptions) -> bool:
    """Whether the file should take the fast path: canonical by force, or by its
    first parseable record among its first ``chunk_bytes`` (the fast path hands
    lines of other dialects to the per-row path, so a wrong guess costs speed only)."""
    if options.dialect is not None:
        return options.dialect == "canonical"
    head = read_head(path, options.chunk_bytes)
    seen = start = 0
    while seen < _SNIFF_LINES and start < len(head):
        stop = head.find(b"\n", start)
        if stop < 0:
            if len(head) == options.chunk_bytes:  # a line cut short by the sniff's end
                break
            stop = len(head)
        text = _clean(head[start:stop]).removeprefix(UTF8_BOM).strip()
        start = stop + 1
        if not text or len(text) > options.max_line_bytes:
            continue
        seen += 1
        try:
            return detect_dialect(orjson.loads(text)) == "canonical"
        except (orjson.JSONDecodeError, DialectError):
            continue
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
    blanked: dict[int, bytes] = field(default_factory=dict)  # the lines blanked in the block, as they were
    kept: dict[int, bytes] | None = None  # the lines looked at again, once the chunk's bytes are let go of

    def release_bytes(self, keep: Iterable[int] = ()) -> None:
        """Let go of the chunk's raw bytes (16 MB) once no line of it but ``keep`` is looked at again."""
        chunk = self.chunk
        self.kept = {
            line: self.blanked[line] if line in self.blanked else chunk.line(line - chunk.first_line) for line in keep
        }
        self.block = None
        chunk.release_bytes()

    def fast_text(self, line: int) -> bytes:
        if self.kept is not None:
            return self.kept[line]
        if self.block is not None:
            return self.chunk.line(line - self.chunk.first_line)
        return self.fast_lines[int(np.searchsorted(self.fast_ids, line))]

    def raw(self, line: int) -> bytes:
        """The exact bytes of ``line`` as stored in the file."""
        chunk = self.chunk
        if self.kept is None:
            return chunk.raw(line - chunk.first_line)
        open_end = chunk.ends_open and line == chunk.last_line
        return self.kept[line] if open_end else self.kept[line] + b"\n"


def _blankable(chunk: Chunk, lines: np.ndarray) -> bool:
    """Whether each of ``lines`` is at least 2 bytes long. (Blanked to spaces, a line of any length
    would do; the rule dates from when lines were blanked to ``{}``, and is kept so that each line
    takes the path it always took.)"""
    starts = np.concatenate(([0], chunk.breaks + 1))[lines]
    stops = np.concatenate((chunk.breaks, [len(chunk.body)]))[lines]
    return bool((stops - starts >= 2).all())


def blank_lines(block: bytearray | memoryview, breaks: np.ndarray, lines: np.ndarray) -> None:
    """Overwrite ``lines`` of ``block`` (writable) with spaces, in place: Arrow's reader skips a line
    of whitespace, so the block parses as if they were not there (and needs no copy)."""
    octets = np.frombuffer(block, dtype=np.uint8)
    starts = np.concatenate(([0], breaks + 1))[lines]
    stops = np.concatenate((breaks, [len(octets)]))[lines]
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        octets[start:stop] = _SPACE


def _fast_job(prepared: _Prepared) -> FastResult:
    """Worker-thread job: set aside the lines showing a known fault, validate the
    fast-path lines, and group the passing rows by partition (the searches and
    the copies this needs are made here, in parallel)."""
    if prepared.block is not None:
        block, ids, suspects = _without_suspects(prepared)
        result = validate_block(block, ids)
        if len(suspects):
            result.fallback = np.union1d(result.fallback, suspects)
        # Only the lines for the per-row path are looked at again: they are kept, the rest let go of.
        prepared.release_bytes(keep=[*result.fallback.tolist(), *(line for line, _ in prepared.slow)])
    else:
        keep = [not any(p in line for p in prepared.patterns) for line in prepared.fast_lines]
        kept_ids = prepared.fast_ids[np.asarray(keep, dtype=bool)] if prepared.fast_lines else prepared.fast_ids
        result = validate_lines([line for line, k in zip(prepared.fast_lines, keep, strict=True) if k], kept_ids)
        result.fallback = np.union1d(result.fallback, np.setdiff1d(prepared.fast_ids, kept_ids))
    return result


def _without_suspects(prepared: _Prepared) -> tuple[bytes | bytearray | memoryview, np.ndarray, np.ndarray]:
    """The block with the lines the parse must not read blanked (in place: the chunk's bytes are
    let go of after the parse, the lines looked at again kept as they were): the chunk's other
    lines and those showing a known fault; the ids of the block's lines, theirs replaced by
    :data:`PLACEHOLDER_ID`; and the ids of the latter."""
    chunk, block, ids = prepared.chunk, prepared.block, prepared.fast_ids
    blank = prepared.blank if prepared.blank is not None else np.empty(0, dtype=np.int64)
    suspects = np.empty(0, dtype=np.int64)
    if prepared.patterns:
        marked, prepared.common = find_suspects(block, chunk.breaks, chunk.n_lines, prepared.patterns)
        lines = np.flatnonzero(marked & (ids != PLACEHOLDER_ID))
        if len(lines):
            suspects = ids[lines]
            blank = np.union1d(blank, lines)
    if len(blank):
        prepared.blanked = {chunk.first_line + i: chunk.line(i) for i in blank.tolist()}  # as they were
        if memoryview(block).readonly:  # not a buffer of the reader's (the last line, say): a copy
            block = bytearray(block)
        blank_lines(block, chunk.breaks, blank)
        ids = ids.copy()
        ids[blank] = PLACEHOLDER_ID
    return block, ids, suspects


class _FileValidation:
    """State of one file's validation across its chunks."""

    def __init__(self, path: Path, options: ReadOptions, report: FileReport, name: str) -> None:
        self.path = path
        self.name = name
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
        blanked in it (see :func:`blank_lines`), and they are looked at one
        by one; a chunk with many goes line by line.
        """
        report = self.report
        report.lines += chunk.n_lines
        report.ends_without_newline = chunk.ends_open
        if chunk.long_line is not None:
            return _Prepared(
                chunk, None, [], np.empty(0, dtype=np.int64), [], [self._too_long(chunk, 0, chunk.long_line)]
            )
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
                rejects.append(self._too_long(chunk, i, len(text)))
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

    def _too_long(self, chunk: Chunk, index: int, length: int) -> Reject:
        """The reject of line ``index`` of ``chunk``, ``length`` bytes long, over the length limit: only its first
        bytes are kept."""
        problem = Problem(
            "",
            "line_too_long",
            f"line of {length:,} bytes exceeds the limit of {self.options.max_line_bytes:,} bytes "
            f"(--max-line-bytes); only its first {LONG_LINE_HEAD_BYTES:,} bytes are kept",
        )
        return Reject(self.name, chunk.first_line + index, chunk.raw(index)[:LONG_LINE_HEAD_BYTES], [problem])

    def complete(self, prepared: _Prepared, fast: FastResult | None) -> Part:
        """Run the per-row path on what the fast path left, and assemble the part."""
        chunk, slow = prepared.chunk, prepared.slow
        if fast is not None and len(fast.fallback):
            slow.extend((line, prepared.fast_text(line)) for line in fast.fallback.tolist())
            slow.sort()
        outcomes: list[RowOutcome] = []
        for line, text in slow:
            self.pending_raw[line] = prepared.raw(line)
            outcomes.extend(self.rows.feed(line, text, at_open_end=chunk.ends_open and line == chunk.last_line))
        if fast is not None:  # what broke this chunk's parse is looked for before the next chunks are parsed
            self.suspects.forget(prepared.common)
            texts = dict(slow)
            parsed = set(fast.refused.tolist())  # these broke no parse (NaN as a float, say): nothing to learn
            for outcome in outcomes:
                if outcome.record is None and outcome.line in texts and outcome.line not in parsed:
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

    def _assemble(
        self, tables: list[pa.Table], ids: list[np.ndarray], outcomes: list[RowOutcome], rejects: list[Reject]
    ) -> Part:
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
# ``toolkit.ingest.ingest``), so a hasher starved by the workers stalls them all.
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


def validate_file(path: Path, options: ReadOptions, report: FileReport, name: str | None = None) -> Iterator[Part]:
    """Validate ``path`` chunk by chunk; counts accumulate in ``report``.

    Yields parts in file order; rows held back by a dialect adapter arrive
    in a final part. Duplicate decisions are not judged here (see
    ``toolkit.ingest.dedup``): they need every file of the run. ``name``: the
    file as rejects name it (default: its path).
    """
    state = _FileValidation(path, options, report, str(path) if name is None else name)
    if not _sniff_canonical(path, options):
        for chunk in read_chunks(path, options.chunk_bytes, options.max_line_bytes):
            yield state.complete(state.prepare(chunk, fast=False), None)
        yield state.finish()
        return
    in_flight: deque[tuple[Future[FastResult], _Prepared]] = deque()
    with ThreadPoolExecutor(
        max_workers=options.workers, thread_name_prefix="distill-parse", initializer=_yield_to_other_threads
    ) as pool:
        try:
            for chunk in read_chunks_ahead(path, options.chunk_bytes, options.max_line_bytes, depth=1):
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
