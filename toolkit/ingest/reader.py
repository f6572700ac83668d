"""Read decision-log files as chunks of raw lines, byte for byte, in bounded memory.

Supports ``.jsonl``, ``.jsonl.gz`` and ``.jsonl.zst`` (by suffix). A chunk holds
whole lines only, each with its original terminator, so a rejected line can be
quarantined exactly as it was in the file and the lines of a file concatenate
back to the file, but for one kind: a line longer than the limit
(``ReadOptions.max_line_bytes``) is skipped to its newline unread, and only its
length and its first :data:`LONG_LINE_HEAD_BYTES` bytes are kept (a chunk of
its own). Memory is bounded whatever the input: a chunk holds at most
``chunk_bytes`` plus the limit, and at most :data:`MAX_CHUNK_LINES` lines;
decompression yields a bounded number of bytes at a time, so a small
compressed file that expands to gigabytes without a newline is one long line,
skipped like any other.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

import numpy as np
import pyarrow as pa

from toolkit.errors import FileReadError
from toolkit.ingest.config import CHUNK_BYTES, MAX_LINE_BYTES
from toolkit.ingest.memory import memory_pool

SUFFIXES: Final[tuple[str, ...]] = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson", ".ndjson.gz", ".ndjson.zst")
UTF8_BOM: Final[bytes] = b"\xef\xbb\xbf"
# Of a line over the limit, the bytes kept (what the quarantine shows of it).
LONG_LINE_HEAD_BYTES: Final[int] = 4096
# Lines of a chunk at most. Each line of a chunk becomes a row or a reject at
# once, and a reject weighs ~1-3 KB in Python: 16 MB of 3-byte ``{}`` lines
# (5.6M) took 14 GB. Canonical records (~2 KB) fill a chunk's bytes first
# (~8,000 lines), so this only ever cuts chunks of short lines.
MAX_CHUNK_LINES: Final[int] = 16_384


@dataclass
class Chunk:
    """Consecutive whole lines of one file; ``first_line`` is 1-based.

    ``body`` holds the lines joined by ``\n`` without the final terminator
    (a view of the buffer the file was read into: no copy is made of it);
    ``lines`` (split on first use) each line's bytes without its ``\n`` (a
    ``\r`` of a CRLF ending stays). Every line ended with ``\n`` except, when
    ``ends_open`` is true, the last one: the file's final line had no newline.

    A line over the length limit is a chunk of its own, with ``long_line``
    set to its length in bytes (without its ``\n``) and ``body`` holding only
    its first :data:`LONG_LINE_HEAD_BYTES` bytes.
    """

    first_line: int
    body: bytes | memoryview
    ends_open: bool = False
    long_line: int | None = None
    _lines: list[bytes] | None = None
    _breaks: np.ndarray | None = None
    _released: bool = False

    @property
    def breaks(self) -> np.ndarray:
        """Offsets of the ``\\n`` between lines in ``body`` (found once, vectorised)."""
        if self._breaks is None:
            self._breaks = _find_newlines(self.body)
        return self._breaks

    @property
    def n_lines(self) -> int:
        return len(self.breaks) + 1

    @property
    def lines(self) -> list[bytes]:
        if self._released:
            raise RuntimeError(f"the bytes of lines {self.first_line}..{self.last_line} were released")
        if self._lines is None:
            self._lines = bytes(self.body).split(b"\n")
        return self._lines

    @property
    def last_line(self) -> int:
        return self.first_line + self.n_lines - 1

    def release_bytes(self) -> None:
        """Drop the lines' bytes, keeping the count and place of the lines.
        Only for a chunk whose lines will not be looked at again: reading them
        afterwards raises."""
        _ = self.breaks
        self.body, self._lines, self._released = b"", None, True

    def line(self, index: int) -> bytes:
        """Line ``index`` of this chunk without its ``\n``: cut out alone when the chunk was not split in lines."""
        if self._lines is not None or self._released:
            return self.lines[index]
        breaks = self.breaks
        start = int(breaks[index - 1]) + 1 if index else 0
        stop = int(breaks[index]) if index < len(breaks) else len(self.body)
        return bytes(self.body[start:stop])

    def raw(self, index: int) -> bytes:
        """The exact bytes of line ``index`` of this chunk as stored in the file (of a line over the
        length limit: its first bytes only)."""
        if self.long_line is not None:
            return bytes(self.body)
        open_end = self.ends_open and index == self.n_lines - 1
        return self.line(index) if open_end else self.line(index) + b"\n"


# Newlines are searched this many bytes at a time: the comparison's mask stays
# in cache instead of being a fresh buffer as big as the chunk.
_SCAN_BYTES = 1 << 18


def _find_newlines(data: bytes | memoryview | np.ndarray) -> np.ndarray:
    """Offsets of every ``\\n`` in ``data`` (numpy releases the GIL for the scan)."""
    octets = np.frombuffer(data, dtype=np.uint8)
    found = [np.flatnonzero(octets[at : at + _SCAN_BYTES] == 10) + at for at in range(0, len(octets), _SCAN_BYTES)]
    return np.concatenate(found) if found else np.empty(0, dtype=np.int64)


def _first_newline(octets: np.ndarray) -> int:
    """Offset of the first ``\\n`` in ``octets``, or -1."""
    for at in range(0, len(octets), _SCAN_BYTES):
        found = np.flatnonzero(octets[at : at + _SCAN_BYTES] == 10)
        if len(found):
            return at + int(found[0])
    return -1


def is_log_file(path: Path) -> bool:
    """Whether ``path`` has a decision-log suffix we read."""
    return path.name.endswith(SUFFIXES)


def open_decompressed(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading, decompressing by suffix (a read yields a bounded number of bytes)."""
    name = path.name
    if name.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if name.endswith(".zst"):
        return io.BufferedReader(_ZstdFrames(open(path, "rb")), buffer_size=1 << 20)
    return open(path, "rb")


class _ZstdFrames(io.RawIOBase):
    """Zstandard frames one after another, decompressed; a stream that ends inside a frame raises ``EOFError``.

    (zstandard's own ``stream_reader`` stops quietly at a cut-short frame, which
    would pass a truncated file off as a complete one.) The decompressor is fed
    :data:`_FEED` compressed bytes at a time, and fed again only once what they
    gave was read: zstd expands a few bytes into a block of up to 128 KB (a
    2 GiB stream fits in 64 KB), so a feed yields at most ~32 MB, whatever the
    file. (Its ``decompress`` has no bound on what one call returns.) Small
    feeds cost nothing measurable: ~4 GB/s either way.
    """

    _READ = 1 << 20
    _FEED = 1024

    def __init__(self, raw: BinaryIO) -> None:
        import zstandard

        self._raw, self._new = raw, zstandard.ZstdDecompressor().decompressobj
        self._frame = self._new()
        self._compressed = memoryview(b"")  # read from the file, not fed yet
        self._pending = memoryview(b"")  # decompressed, not read yet
        self._started = False  # bytes of the current frame were fed

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        while not self._pending:
            if not self._compressed:
                compressed = self._raw.read(self._READ)
                if not compressed:
                    if self._started and not self._frame.eof:
                        raise EOFError("the last zstd frame ends before its end marker")
                    return 0
                self._compressed = memoryview(compressed)
            feed, self._compressed = self._compressed[: self._FEED], self._compressed[self._FEED :]
            self._pending = memoryview(self._feed(feed))
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _feed(self, compressed: memoryview | bytes) -> bytes:
        out = []
        while compressed:
            self._started = True
            out.append(self._frame.decompress(compressed))
            if not self._frame.eof:
                break
            compressed = self._frame.unused_data  # the next frame starts here
            self._frame, self._started = self._new(), False
        return out[0] if len(out) == 1 else b"".join(out)

    def close(self) -> None:
        self._raw.close()
        super().close()


def _fill(handle: BinaryIO, block: np.ndarray, start: int) -> int:
    """Read into ``block[start:]`` until it is full or the file ends; returns bytes read."""
    got = 0
    while start + got < len(block):
        n = handle.readinto(block[start + got :])  # type: ignore[arg-type]
        if not n:
            break
        got += n
    return got


def read_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Chunk]:
    """Yield the file's lines in chunks of about ``chunk_bytes`` and at most :data:`MAX_CHUNK_LINES` lines.

    Each block is read straight into the (unzeroed) buffer that becomes the
    body of its chunks; only the partial line at its end is copied, to start
    the next block. A last line without a newline is yielded as it is
    (``ends_open``). A line that does not fit in a block is yielded whole if
    it is at most ``max_line_bytes`` long (plus a BOM and a CR); a longer one
    is skipped to its newline unread (see :attr:`Chunk.long_line`).

    Raises:
        FileReadError: the file's compressed stream is cut short or is not of
            the kind its name says (the lines yielded before it were real).
    """
    with _read_errors(path):
        yield from _read_chunks(path, chunk_bytes, max_line_bytes)


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of the file, decompressed (fewer if it is shorter).

    Raises:
        FileReadError: as :func:`read_chunks`.
    """
    with _read_errors(path), open_decompressed(path) as handle:
        block = np.empty(size, dtype=np.uint8)
        return block[: _fill(handle, block, 0)].tobytes()


@contextmanager
def _read_errors(path: Path) -> Iterator[None]:
    """Errors of reading ``path`` as :class:`FileReadError`."""
    try:
        yield
    except (OSError, EOFError, zlib.error) as error:
        raise FileReadError(str(path), _why_unreadable(path, error)) from error
    except Exception as error:
        if type(error).__module__.startswith("zstandard"):  # ZstdError, imported lazily
            raise FileReadError(str(path), _why_unreadable(path, error)) from error
        raise


def _why_unreadable(path: Path, error: BaseException) -> str:
    kind = "gzip" if path.name.endswith(".gz") else "zstd" if path.name.endswith(".zst") else None
    if isinstance(error, EOFError) or "incomplete" in str(error).lower() or "truncated" in str(error).lower():
        return f"the {kind or 'compressed'} stream is cut short: the file is incomplete ({error})"
    if kind is not None and not isinstance(error, FileNotFoundError | PermissionError | IsADirectoryError):
        return f"not valid {kind} data, though the name ends in .{'gz' if kind == 'gzip' else 'zst'} ({error})"
    return f"cannot be read: {error}"


def _block(size: int) -> np.ndarray:
    """An unzeroed buffer from ingest's memory pool."""
    return np.frombuffer(pa.allocate_buffer(size, memory_pool=memory_pool()), dtype=np.uint8)


def _read_chunks(path: Path, chunk_bytes: int, max_line_bytes: int) -> Iterator[Chunk]:
    line_no = 1
    tail = b""
    longest = max_line_bytes + len(UTF8_BOM) + 1  # a longer line is over the limit, whatever its BOM and CR
    with open_decompressed(path) as handle:
        while True:
            block = _block(len(tail) + chunk_bytes)
            block[: len(tail)] = np.frombuffer(tail, dtype=np.uint8)
            got = _fill(handle, block, len(tail))
            data = block[: len(tail) + got]
            breaks = _find_newlines(data)
            if not len(breaks):  # no newline yet: a long line, or the last one
                if not got:
                    break
                if len(data) <= longest:
                    tail = data.tobytes()  # keep reading it
                    continue
                chunk, tail = _skip_long_line(handle, block, len(data), line_no)
                yield chunk
                line_no += 1
                continue
            for chunk in _cut(data, breaks, line_no):
                line_no += chunk.n_lines
                yield chunk
            tail = data[int(breaks[-1]) + 1 :].tobytes()
    if tail:
        yield Chunk(line_no, tail, ends_open=True, _breaks=np.empty(0, dtype=np.int64))


def _cut(data: np.ndarray, breaks: np.ndarray, first_line: int) -> Iterator[Chunk]:
    """The lines of ``data`` up to its last newline (at ``breaks[-1]``), as chunks of at most
    :data:`MAX_CHUNK_LINES` lines: views of ``data``, no copy."""
    if len(breaks) <= MAX_CHUNK_LINES:  # the usual case: one chunk
        yield Chunk(first_line, memoryview(data[: int(breaks[-1])]), _breaks=breaks[:-1])
        return
    start = 0
    for first in range(0, len(breaks), MAX_CHUNK_LINES):
        last = min(first + MAX_CHUNK_LINES, len(breaks)) - 1  # the chunk's last line ends at breaks[last]
        stop = int(breaks[last])
        yield Chunk(first_line + first, memoryview(data[start:stop]), _breaks=breaks[first:last] - start)
        start = stop + 1


def _skip_long_line(handle: BinaryIO, block: np.ndarray, filled: int, line_no: int) -> tuple[Chunk, bytes]:
    """Skip the line that fills ``block[:filled]`` (and goes on in the file) to its newline, reading into
    ``block`` again; returns its chunk (its head and its length) and the bytes read after its newline."""
    head, length = block[: min(filled, LONG_LINE_HEAD_BYTES)].tobytes(), filled
    empty = np.empty(0, dtype=np.int64)
    while got := _fill(handle, block, 0):
        at = _first_newline(block[:got])
        if len(head) < LONG_LINE_HEAD_BYTES:  # a line over the limit may start in a short block
            head += block[: min(got if at < 0 else at, LONG_LINE_HEAD_BYTES - len(head))].tobytes()
        if at >= 0:
            return Chunk(line_no, head, long_line=length + at, _breaks=empty), block[at + 1 : got].tobytes()
        length += got
    return Chunk(line_no, head, ends_open=True, long_line=length, _breaks=empty), b""


def read_chunks_ahead(
    path: Path, chunk_bytes: int = CHUNK_BYTES, max_line_bytes: int = MAX_LINE_BYTES, depth: int = 2
) -> Iterator[Chunk]:
    """:func:`read_chunks` run ``depth`` chunks ahead on a reader thread: reading
    and finding newlines release the GIL, so they overlap the consumer's work
    instead of adding to it."""
    chunks = read_chunks(path, chunk_bytes, max_line_bytes)

    def next_chunk() -> Chunk | None:
        return next(chunks, None)

    # One reader thread: the generator is never advanced by two threads at once.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="distill-read") as reader:
        ahead = deque(reader.submit(next_chunk) for _ in range(depth))
        try:
            while (chunk := ahead.popleft().result()) is not None:
                ahead.append(reader.submit(next_chunk))
                yield chunk
        finally:
            for future in ahead:
                future.cancel()
    chunks.close()


def read_raw_lines(path: Path, wanted: Iterable[int], max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The exact bytes of the ``wanted`` (1-based, ascending) lines of ``path``, one by one, in that order:
    one chunk in memory at a time, whatever the number of lines wanted. Lines past the file's end are
    not yielded."""
    lines = iter(wanted)
    line = next(lines, None)
    for chunk in read_chunks(path, max_line_bytes=max_line_bytes):
        while line is not None and line <= chunk.last_line:
            yield chunk.raw(line - chunk.first_line)
            line = next(lines, None)
        if line is None:
            return
