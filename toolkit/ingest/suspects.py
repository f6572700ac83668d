"""Lines to keep out of the whole-chunk parse, learned from a file's own dirt.

Arrow's JSON reader parses a chunk in one go, and one bad line spoils the
whole parse: the lines around it are read again while the bad one is
isolated. A dirty file tends to repeat its faults (a writer that prints a
number as text, adds a field the contract lacks, writes NaN). Every line the
per-row path rejects that did not parse (or was kept from the parse) teaches
:class:`Suspects` a byte pattern that would have found it (``"turn":"`` for a
number written as text, ``"extra":`` for an unknown field, ``NaN`` where an
integer belongs); a line that parsed and failed the column checks only (NaN
as a float) broke nothing and teaches nothing. The later chunks of the file
are searched for those patterns (in place, ~3 ms per pattern and 16 MB chunk)
before they are parsed: a matching line goes straight to the per-row path, which
judges it exactly (a false alarm only costs that line a slower check). A
clean file learns nothing and pays nothing. A pattern that would set aside
more than :data:`MAX_SHARE` of a chunk is forgotten: it is not a fault but
the file's normal shape.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import numpy as np

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

    The places of the patterns in the chunk's bytes (see :func:`_occurrences`) are mapped to
    lines: a few vectorised passes over the chunk per pattern, ~3 ms per pattern and 16 MB
    (one RE2 search for them all, through Arrow, took ~25 ms). A pattern is matched byte for
    byte, whatever its bytes (RE2 was given it as text and never matched one that is not ASCII).
    """
    marked = np.zeros(n_lines, dtype=bool)
    patterns = [p for p in patterns if p and b"\n" not in p]  # a line never holds a newline
    if not patterns:
        return marked, []
    breaks = breaks[: n_lines - 1]
    limit = max(32, int(MAX_SHARE * n_lines))
    common = []
    for pattern, places in zip(patterns, _occurrences(body, patterns), strict=True):
        lines = np.unique(np.searchsorted(breaks, places))
        if len(lines) > limit:
            common.append(pattern)
        else:
            marked[lines] = True
    return marked, common


# The bytes of a chunk's start that tell which byte runs of a pattern are rare in the file.
_SAMPLE_BYTES: Final = 1 << 14
# Bytes searched at a time (a multiple of every word width): the stretch and the comparisons' results stay in cache.
_STRETCH_BYTES: Final = 1 << 19


def _occurrences(body: bytes | bytearray | memoryview, patterns: list[bytes]) -> list[np.ndarray]:
    """Where each of ``patterns`` starts in ``body`` (sorted offsets).

    The chunk is read as words of ``width`` bytes (4; 2 or 1 for a short pattern). Wherever
    a pattern starts, the chunk's words cut it at one of ``width`` shifts, each leaving some
    of its words whole: for each shift, the rarest of those (counted in the chunk's first
    bytes) is compared with every word of the chunk, a cache-sized stretch at a time, and
    each place one matched is checked byte by byte, the pattern's rarest bytes first.
    """
    octets = np.frombuffer(body, dtype=np.uint8)
    sample = octets[:_SAMPLE_BYTES].tobytes()
    plans = [_words(pattern, sample) for pattern in patterns]
    views = {width: np.frombuffer(body, dtype=f"<u{width}", count=len(octets) // width) for width, _ in plans}
    scratch = {width: np.empty(min(_STRETCH_BYTES // width, len(view)), dtype=bool) for width, view in views.items()}
    found: list[list[np.ndarray]] = [[np.empty(0, dtype=np.int64)] for _ in patterns]
    for start in range(0, len(octets), _STRETCH_BYTES):
        for (width, words), places in zip(plans, found, strict=True):
            first = start // width
            stretch = views[width][first : first + _STRETCH_BYTES // width]
            equal = scratch[width][: len(stretch)]
            for at, word in words:
                if np.equal(stretch, word, out=equal).any():
                    places.append((np.flatnonzero(equal) + first) * width - at)
    result = []
    for pattern, places in zip(patterns, found, strict=True):
        candidates = np.concatenate(places)
        candidates = candidates[(candidates >= 0) & (candidates <= len(octets) - len(pattern))]
        for offset in sorted(range(len(pattern)), key=lambda k: sample.count(pattern[k : k + 1])):  # rarest first
            if not len(candidates):
                break
            candidates = candidates[octets[candidates + offset] == pattern[offset]]
        result.append(np.sort(candidates))
    return result


def _words(pattern: bytes, sample: bytes) -> tuple[int, list[tuple[int, int]]]:
    """The word width to look for ``pattern`` with, and for each shift its rarest whole word:
    the word's offset in the pattern and its value."""
    width = 4 if len(pattern) >= 7 else 2 if len(pattern) >= 3 else 1
    offsets = [
        min(range(shift, len(pattern) - width + 1, width), key=lambda at: sample.count(pattern[at : at + width]))
        for shift in range(width)
    ]
    return width, [(at, int.from_bytes(pattern[at : at + width], "little")) for at in offsets]
