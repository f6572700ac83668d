"""The fast parse, the step after sorting: each sorted chunk's fast-path lines parsed and checked on worker
threads (see :mod:`toolkit.ingest.fastpath`), a few chunks ahead of the per-row step, handed on in file order.

The lines the parse must not read (the chunk's other lines, and those showing a
fault the file has shown before: :mod:`toolkit.ingest.suspects`) are blanked
to spaces in the block first, so that it still parses in one go.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from toolkit.ingest.fastpath import PLACEHOLDER_ID, FastResult, validate_block, validate_lines
from toolkit.ingest.sorting import SortedChunk
from toolkit.ingest.suspects import find_suspects

_SPACE = ord(" ")
# Chunks in flight per parse worker: while the per-row step works on one chunk, each
# worker parses a later chunk. A deeper queue only held more chunks (16 MB
# each, plus their parsed rows) in memory, at no gain in speed.
_QUEUE_PER_WORKER = 1


def blank_lines(block: bytearray | memoryview, breaks: np.ndarray, lines: np.ndarray) -> None:
    """Overwrite ``lines`` of ``block`` (writable) with spaces, in place: Arrow's reader skips a line
    of whitespace, so the block parses as if they were not there (and needs no copy)."""
    octets = np.frombuffer(block, dtype=np.uint8)
    starts = np.concatenate(([0], breaks + 1))[lines]
    stops = np.concatenate((breaks, [len(octets)]))[lines]
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        octets[start:stop] = _SPACE


def parse_sorted(prepared: SortedChunk) -> FastResult:
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


def _without_suspects(prepared: SortedChunk) -> tuple[bytes | bytearray | memoryview, np.ndarray, np.ndarray]:
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


def parse_ahead(chunks: Iterable[SortedChunk], workers: int) -> Iterator[tuple[SortedChunk, FastResult]]:
    """Each of ``chunks`` with its fast parse, in order, parsed on ``workers`` threads up to
    ``_QUEUE_PER_WORKER`` chunks per worker ahead of the one handed on (a chunk is sorted when it is
    taken from ``chunks``). Closed early (the file was ingested before, say), the queued work is dropped."""
    in_flight: deque[tuple[Future[FastResult], SortedChunk]] = deque()
    with ThreadPoolExecutor(
        max_workers=workers, thread_name_prefix="distill-parse", initializer=_yield_to_other_threads
    ) as pool:
        try:
            for chunk in chunks:
                in_flight.append((pool.submit(parse_sorted, chunk), chunk))
                if len(in_flight) > _QUEUE_PER_WORKER * workers:
                    future, done = in_flight.popleft()
                    yield done, future.result()
            while in_flight:
                future, done = in_flight.popleft()
                yield done, future.result()
        finally:
            for future, _ in in_flight:
                future.cancel()
