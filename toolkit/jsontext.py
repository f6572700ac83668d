"""JSON text read safely: a shape that could hurt the parser or mislead the reader is refused with a reason.

Two bounds, one for each way a JSON text can be hostile while still
parsing:

- **Nesting.** A value nested thousands of levels deep makes a recursive
  parser exhaust its stack (Python's ``json`` raises ``RecursionError``;
  Arrow's JSON reader, inferring an unknown field's type, recurses until
  the process crashes). The depth is measured before any parser sees the
  text: :func:`too_deep` counts the text's ``{`` and ``[`` (C speed; a
  real record has fewer than 40) and only a text with more than
  :data:`MAX_NESTING` of them gets the exact, string-aware depth
  (:func:`nesting_depth`, vectorised: a 4 MB line takes milliseconds).
- **Repeated keys.** An object holding a key twice parses, and every parser
  keeps one of the values without a word: such a text is ambiguous.

:func:`loads_strict` applies both; :func:`toolkit.storage.read_versioned`
reads every versioned file of Distill's own with it (manifests, checkpoint
cards, loop state, the rating pool). Ingest applies the same two rules to
log lines with :func:`too_deep` and its own repeated-key check on the
per-row path (``toolkit.ingest.rowpath``); the fast path's whole-chunk
parse reads against the contract's schema, iteratively, and fails cleanly
on anything deeper. This module sits below every stage, so any can use it.
"""

from __future__ import annotations

import json
from typing import Any, Final

import numpy as np

MAX_NESTING: Final = 64  # Distill's files nest under 10 levels deep, the contract's records 4
_OPEN_BRACE, _OPEN_BRACKET, _CLOSE_BRACE, _CLOSE_BRACKET = 123, 91, 125, 93
_QUOTE, _BACKSLASH = 34, 92


class JSONShapeError(ValueError):
    """JSON text that parses but is refused: nested too deep, or an object holding a key twice."""


def loads_strict(text: str | bytes, *, max_nesting: int = MAX_NESTING) -> Any:
    """``text`` parsed as JSON, refused when nested deeper than ``max_nesting`` or when an object repeats a key.

    Raises:
        JSONShapeError: too deep (measured before parsing), or a key twice in one object (naming the key).
        json.JSONDecodeError: not JSON at all (a ``ValueError`` too).
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    depth = too_deep(data, max_nesting)
    if depth is not None:
        raise JSONShapeError(f"values nested {depth} levels deep; the limit is {max_nesting}")
    return json.loads(data, object_pairs_hook=_object_of_unique_keys)


def _object_of_unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise JSONShapeError(f"key {key!r} appears twice in one object: the text is ambiguous")
        found[key] = value
    return found


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
    """The depth of ``text`` if it nests deeper than ``limit``, else None (cheap for every ordinary text)."""
    if text.count(b"{") + text.count(b"[") <= limit:
        return None
    depth = nesting_depth(text)
    return depth if depth > limit else None
