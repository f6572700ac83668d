"""Bounds on a line's structure, checked before a parser that could be hurt by it sees the line.

A hostile line can nest values thousands of levels deep: Arrow's JSON reader,
when it infers the type of an unknown field, recurses into such a value until
the process crashes. Every line that could reach that reader, or the per-row
parser, is measured here first: :func:`too_deep` counts the line's ``{`` and
``[`` (C speed; a real record has fewer than 40) and only a line with more
than :data:`MAX_NESTING` of them gets the exact, string-aware depth
(:func:`nesting_depth`, vectorised, so even a 4 MB line takes milliseconds).
The whole-chunk parse of the fast path needs no such check: it reads against
the contract's schema, iteratively, and fails cleanly on any value deeper
than the schema (measured up to 4 million levels).
"""

from __future__ import annotations

from typing import Final

import numpy as np

MAX_NESTING: Final = 64  # the contract's records nest 4 levels deep
_OPEN_BRACE, _OPEN_BRACKET, _CLOSE_BRACE, _CLOSE_BRACKET = 123, 91, 125, 93
_QUOTE, _BACKSLASH = 34, 92


def nesting_depth(text: bytes) -> int:
    """The deepest nesting of objects and arrays in ``text``, ignoring brackets inside strings."""
    octets = np.frombuffer(text, dtype=np.uint8)
    if not len(octets):
        return 0
    positions = np.arange(len(octets))
    backslash = octets == _BACKSLASH
    # a quote is escaped when an odd run of backslashes stands right before it
    last_plain = np.maximum.accumulate(np.where(backslash, -1, positions))
    run_before = np.concatenate(([0], positions[:-1] - last_plain[:-1]))
    quote = (octets == _QUOTE) & (run_before % 2 == 0)
    outside = np.cumsum(quote) % 2 == 0  # a quote itself counts as inside; brackets are never quotes
    step = ((octets == _OPEN_BRACE) | (octets == _OPEN_BRACKET)).astype(np.int32) - (
        (octets == _CLOSE_BRACE) | (octets == _CLOSE_BRACKET)
    )
    return int(np.cumsum(np.where(outside, step, 0)).max(initial=0))


def too_deep(text: bytes, limit: int = MAX_NESTING) -> int | None:
    """The depth of ``text`` if it nests deeper than ``limit``, else None (cheap for every ordinary line)."""
    if text.count(b"{") + text.count(b"[") <= limit:
        return None
    depth = nesting_depth(text)
    return depth if depth > limit else None
