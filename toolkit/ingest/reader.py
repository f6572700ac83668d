"""Read decision-log files as chunks of raw lines, byte for byte.

Supports ``.jsonl``, ``.jsonl.gz`` and ``.jsonl.zst`` (by suffix). A chunk holds
whole lines only, each with its original terminator, so a rejected line can be
quarantined exactly as it was in the file and the lines of a file concatenate
back to the file.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

import numpy as np
import pyarrow as pa

from toolkit.errors import FileReadError, UsageError
from toolkit.ingest.memory import memory_pool

SUFFIXES: Final[tuple[str, ...]] = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson", ".ndjson.gz", ".ndjson.zst")
# Bytes of lines per chunk (~8,000 canonical records): each chunk is one part
# handed between threads, with a fixed cost (column checks, partition runs,
# lineage) that larger chunks spread thinner; 16 MB took ~6% less CPU than 8 MB.
CHUNK_BYTES: Final[int] = 16 << 20
UTF8_BOM: Final[bytes] = b"\xef\xbb\xbf"


@dataclass
class Chunk:
    """Consecutive whole lines of one file; ``first_line`` is 1-based.

    ``body`` holds the lines joined by ``\n`` without the final terminator
    (a view of the buffer the file was read into: no copy is made of it);
    ``lines`` (split on first use) each line's bytes without its ``\n`` (a
    ``\r`` of a CRLF ending stays). Every line ended with ``\n`` except, when
    ``ends_open`` is true, the last one: the file's final line had no newline.
    """

    first_line: int
    body: bytes | memoryview
    ends_open: bool = False
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
        """The exact bytes of line ``index`` of this chunk as stored in the file."""
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


def is_log_file(path: Path) -> bool:
    """Whether ``path`` has a decision-log suffix we read."""
    return path.name.endswith(SUFFIXES)


def expand_paths(paths: list[Path]) -> list[Path]:
    """Files named, plus log files found (recursively, sorted) under folders named.

    Raises:
        UsageError: a path does not exist, or a folder holds no log file.
    """
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder", hint="check the path, or quote a glob")
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and is_log_file(p))
            if not files:
                raise UsageError(f"{path}: folder holds no {', '.join(SUFFIXES[:3])} file")
            found.extend(files)
        else:
            found.append(path)
    return list(dict.fromkeys(p.resolve() for p in found))


def open_decompressed(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading, decompressing by suffix."""
    name = path.name
    if name.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if name.endswith(".zst"):
        return io.BufferedReader(_ZstdFrames(open(path, "rb")), buffer_size=1 << 20)
    return open(path, "rb")


class _ZstdFrames(io.RawIOBase):
    """Zstandard frames one after another, decompressed; a stream that ends inside a frame raises ``EOFError``.

    (zstandard's own ``stream_reader`` stops quietly at a cut-short frame, which
    would pass a truncated file off as a complete one.)
    """

    _READ = 1 << 20

    def __init__(self, raw: BinaryIO) -> None:
        import zstandard

        self._raw, self._new = raw, zstandard.ZstdDecompressor().decompressobj
        self._frame = self._new()
        self._pending = b""
        self._started = False  # bytes of the current frame were fed

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        while not self._pending:
            compressed = self._raw.read(self._READ)
            if not compressed:
                if self._started and not self._frame.eof:
                    raise EOFError("the last zstd frame ends before its end marker")
                return 0
            self._feed(compressed)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _feed(self, compressed: bytes) -> None:
        while compressed:
            self._started = True
            self._pending += self._frame.decompress(compressed)
            if not self._frame.eof:
                return
            compressed = self._frame.unused_data  # the next frame starts here
            self._frame, self._started = self._new(), False

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


def read_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield the file's lines in chunks of about ``chunk_bytes``.

    Each block is read straight into the (unzeroed) buffer that becomes the
    chunk's body; only the partial line at its end is copied, to start the
    next block. A last line without a newline is yielded as it is
    (``ends_open``); a line longer than a chunk is yielded whole.

    Raises:
        FileReadError: the file's compressed stream is cut short or is not of
            the kind its name says (the lines yielded before it were real).
    """
    try:
        yield from _read_chunks(path, chunk_bytes)
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


def _read_chunks(path: Path, chunk_bytes: int) -> Iterator[Chunk]:
    line_no = 1
    tail = b""
    with open_decompressed(path) as handle:
        while True:
            block = np.frombuffer(
                pa.allocate_buffer(len(tail) + chunk_bytes, memory_pool=memory_pool()), dtype=np.uint8
            )
            block[: len(tail)] = np.frombuffer(tail, dtype=np.uint8)
            got = _fill(handle, block, len(tail))
            if not got:
                break
            data = block[: len(tail) + got]
            breaks = _find_newlines(data)
            if not len(breaks):  # no newline yet: a long line, keep reading
                tail = data.tobytes()
                continue
            cut = int(breaks[-1])
            tail = data[cut + 1 :].tobytes()
            chunk = Chunk(line_no, memoryview(data[:cut]), _breaks=breaks[:-1])
            yield chunk
            line_no += chunk.n_lines
    if tail:
        yield Chunk(line_no, tail, ends_open=True, _breaks=np.empty(0, dtype=np.int64))


def read_chunks_ahead(path: Path, chunk_bytes: int = CHUNK_BYTES, depth: int = 2) -> Iterator[Chunk]:
    """:func:`read_chunks` run ``depth`` chunks ahead on a reader thread: reading
    and finding newlines release the GIL, so they overlap the consumer's work
    instead of adding to it."""
    chunks = read_chunks(path, chunk_bytes)

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
