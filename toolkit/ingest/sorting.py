"""Sorting a chunk's lines, the step after reading: which lines the fast path parses as one block, which go
to the per-row path, and which are rejected unread (a line over the length limit).

A chunk of clean lines (bare JSON objects) goes to the fast path whole. A
chunk with a few other lines (blank, padded, too long, or showing a fault the
file has shown before) goes whole too, those lines to be blanked in it by the
parse step (see :func:`toolkit.ingest.parse.blank_lines`) and looked at one by
one; a chunk with many goes line by line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from toolkit.ingest.config import ReadOptions
from toolkit.ingest.fastpath import PLACEHOLDER_ID, looks_like_object
from toolkit.ingest.parts import FileReport, Reject
from toolkit.ingest.reader import LONG_LINE_HEAD_BYTES, UTF8_BOM, Chunk
from toolkit.ingest.rowpath import Problem

_OPEN, _CLOSE = ord("{"), ord("}")
# A chunk with at most this share of lines the fast parse must not read is
# parsed whole, those lines blanked in place; with more, line by line.
_BLANK_SHARE = 0.1


def clean_line(line: bytes) -> bytes:
    """A line without the ``\\r`` of a CRLF ending."""
    return line[:-1] if line.endswith(b"\r") else line


@dataclass
class SortedChunk:
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


class LineSorter:
    """Sorts one file's chunks, counting their lines (and blank lines, a BOM) in ``report``."""

    def __init__(self, options: ReadOptions, report: FileReport, name: str) -> None:
        self.options = options
        self.report = report
        self.name = name

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

    def sort(self, chunk: Chunk, fast: bool, patterns: tuple[bytes, ...]) -> SortedChunk:
        """Sort a chunk's lines (see the module's note): fast-path candidates, per-row lines, early rejects.
        ``fast``: the file takes the fast path; ``patterns``: the faults the file has shown so far (see
        :class:`~toolkit.ingest.suspects.Suspects`), for the parse step to look for."""
        report = self.report
        report.lines += chunk.n_lines
        report.ends_without_newline = chunk.ends_open
        if chunk.long_line is not None:
            return SortedChunk(
                chunk, None, [], np.empty(0, dtype=np.int64), [], [self._too_long(chunk, 0, chunk.long_line)]
            )
        clean = self._clean_lines(chunk) if fast else np.zeros(chunk.n_lines, dtype=bool)
        ids = np.arange(chunk.first_line, chunk.first_line + chunk.n_lines, dtype=np.int64)
        if clean.all():
            return SortedChunk(chunk, chunk.body, [], ids, [], [], patterns)
        others = np.flatnonzero(~clean)
        whole = fast and len(others) <= _BLANK_SHARE * chunk.n_lines and _blankable(chunk, others)
        fast_lines, fast_ids = [], ids[clean].tolist()
        slow: list[tuple[int, bytes]] = []
        rejects: list[Reject] = []
        for i in others.tolist():
            line = chunk.first_line + i
            text = clean_line(chunk.line(i))
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
            return SortedChunk(chunk, chunk.body, [], ids, slow, rejects, patterns, blank=others)
        lines = chunk.lines
        fast_lines = [lines[i] for i in np.flatnonzero(clean).tolist()] + fast_lines
        if len(fast_ids) > int(clean.sum()):  # padded objects joined the clean lines: back to line order
            order = np.argsort(fast_ids, kind="stable").tolist()
            fast_lines, fast_ids = [fast_lines[j] for j in order], [fast_ids[j] for j in order]
        return SortedChunk(chunk, None, fast_lines, np.asarray(fast_ids, dtype=np.int64), slow, rejects, patterns)

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
