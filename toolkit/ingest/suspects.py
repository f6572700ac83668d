"""Lines to keep out of the whole-chunk parse, learned from a file's own dirt.

Arrow's JSON reader parses a chunk in one go, and one bad line spoils the
whole parse: the lines around it are read again while the bad one is
isolated. A dirty file tends to repeat its faults (a writer that prints a
number as text, adds a field the contract lacks, writes NaN). Every line the
per-row path rejects teaches :class:`Suspects` a byte pattern that would have
found it (``"turn":"`` for a number written as text, ``"extra":`` for an
unknown field, ``NaN``), and the later chunks of the file are searched for
those patterns (one automaton search in place, ~25 ms per 16 MB chunk) before
they are parsed: a matching line goes straight to the per-row path, which
judges it exactly (a false alarm only costs that line a slower check). A
clean file learns nothing and pays nothing. A pattern that would set aside
more than :data:`MAX_SHARE` of a chunk is forgotten: it is not a fault but
the file's normal shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAX_SHARE: Final = 0.02  # of a chunk's lines
MAX_PATTERNS: Final = 16
_NON_FINITE: Final = (b"NaN", b"Infinity")
_VALUE_STARTS: Final = frozenset(b'"tfn[{')  # a value's first byte that tells a wrong JSON type
_TYPE_CODES: Final = (
    "int_type",
    "float_type",
    "bool_type",
    "string_type",
    "list_type",
    "dict_type",
    "model_type",
    "int_from_float",
    "none_required",
)


class Suspects:
    """The byte patterns of a file's known faults, and the lines of a chunk that show one."""

    def __init__(self) -> None:
        self.patterns: dict[bytes, None] = {}  # insertion-ordered set

    def snapshot(self) -> tuple[bytes, ...]:
        """The patterns as they stand, for a worker to look for in a chunk."""
        return tuple(self.patterns)

    def forget(self, patterns: Iterable[bytes]) -> None:
        """Drop patterns found too common to be faults."""
        for pattern in patterns:
            self.patterns.pop(pattern, None)

    def learn(self, text: bytes, problems: Iterable[tuple[str, str]]) -> None:
        """Learn the patterns that would have found ``text``, rejected for ``problems`` ((field, code) pairs)."""
        for field, code in problems:
            key = field.rsplit(".", 1)[-1]
            if code == "invalid_json":
                for word in _NON_FINITE:
                    if word in text:
                        self._add(word)
            elif not key or key.isdigit():
                continue
            elif code == "extra_forbidden":
                self._add(b'"' + key.encode() + b'":')
            elif code in _TYPE_CODES:
                name = b'"' + key.encode() + b'":'
                at = text.find(name)
                if at >= 0 and text[at + len(name) : at + len(name) + 1] and text[at + len(name)] in _VALUE_STARTS:
                    self._add(text[at : at + len(name) + 1])

    def _add(self, pattern: bytes) -> None:
        if len(self.patterns) < MAX_PATTERNS:
            self.patterns[pattern] = None


def find_suspects(
    body: bytes | bytearray | memoryview, breaks: np.ndarray, n_lines: int, patterns: Iterable[bytes]
) -> tuple[np.ndarray, list[bytes]]:
    """Per line of a chunk, whether it shows one of ``patterns``; and the patterns found on
    more than :data:`MAX_SHARE` of the lines (not faults but the file's shape: they mark nothing).

    One search for all patterns (RE2's automaton, via Arrow: its cost hardly grows with
    the patterns); a pattern found too often is then counted on its own.
    """
    patterns = list(patterns)
    marked = np.zeros(n_lines, dtype=bool)
    if not patterns:
        return marked, []
    lines = _lines_array(body, breaks, n_lines)
    hits = pc.match_substring_regex(lines, "|".join(re.escape(p.decode("latin-1")) for p in patterns)).to_numpy(
        zero_copy_only=False
    )
    limit = max(32, int(MAX_SHARE * n_lines))
    if hits.sum() <= limit:
        return hits, []
    common = [p for p in patterns if pc.sum(pc.match_substring(lines, p.decode("latin-1"))).as_py() > limit]
    rest = [p for p in patterns if p not in common]
    if rest:
        marked = pc.match_substring_regex(lines, "|".join(re.escape(p.decode("latin-1")) for p in rest)).to_numpy(
            zero_copy_only=False
        )
    return marked, common


def _lines_array(body: bytes | bytearray | memoryview, breaks: np.ndarray, n_lines: int) -> pa.Array:
    """The chunk's lines as an Arrow binary array over its own bytes (no copy)."""
    data = pa.py_buffer(body)
    offsets = np.empty(n_lines + 1, dtype=np.int64)
    offsets[0], offsets[1:-1], offsets[-1] = 0, breaks[: n_lines - 1] + 1, len(data)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), n_lines, [None, pa.py_buffer(offsets), data])
