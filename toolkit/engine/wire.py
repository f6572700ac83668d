"""Frames on the wire: one compact JSON object per line, at most ``MAX_FRAME_BYTES`` long.

:class:`FrameBuffer` cuts what a pipe delivered into frames (a partial line
waits for the rest; a line longer than the cap is an error, never buffered
without end); :func:`encode_frame` writes one. Both sides of the protocol use
them: the driver over its engine processes' pipes, the built-in engine over
its standard input and output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from toolkit.schema.engine import MAX_FRAME_BYTES


class FrameError(Exception):
    """A frame that is not one JSON object, or is longer than the cap."""


def encode_frame(message: dict[str, Any]) -> bytes:
    """One frame: the message as compact JSON and a newline."""
    return orjson.dumps(message) + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """The message of one frame.

    Raises:
        FrameError: not JSON, or not an object with a string ``type``.
    """
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise FrameError(f"not JSON ({error}): {_shown(line)}") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise FrameError(f"not a message (a JSON object with a type): {_shown(line)}")
    return message


class FrameBuffer:
    """Bytes read from a pipe, cut into frames."""

    def __init__(self, limit: int = MAX_FRAME_BYTES) -> None:
        self.limit = limit
        self._pending = bytearray()

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The complete frames ``data`` finishes, in order (blank lines skipped).

        Raises:
            FrameError: a frame longer than the limit.
        """
        self._pending += data
        start = 0
        while True:
            end = self._pending.find(b"\n", start)
            if end < 0:
                break
            if end - start > self.limit:
                raise FrameError(f"a frame of {end - start:,} bytes (the limit is {self.limit:,})")
            line = bytes(self._pending[start:end])
            start = end + 1
            if line.strip():
                yield line
        del self._pending[:start]
        if len(self._pending) > self.limit:
            raise FrameError(f"a frame longer than {self.limit:,} bytes, still without its newline")

    @property
    def partial(self) -> bool:
        """Whether part of a frame is waiting for the rest."""
        return bool(self._pending.strip())


def _shown(line: bytes, width: int = 120) -> str:
    text = line[:width].decode("utf-8", "replace")
    return repr(text + ("..." if len(line) > width else ""))
