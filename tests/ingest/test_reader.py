"""The reader: whole lines in bounded chunks, lines over the limit skipped unread, decompression in bounded bursts."""

from __future__ import annotations

import io
from pathlib import Path

import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.ingest.reader import (
    LONG_LINE_HEAD_BYTES,
    MAX_CHUNK_LINES,
    UTF8_BOM,
    _ZstdFrames,
    read_chunks,
    read_raw_lines,
)


def lines_of(path: Path, **options: int) -> list[tuple[int, bytes, int | None]]:
    """(line number, bytes as read, length if over the limit) of every line of ``path``."""
    found = []
    for chunk in read_chunks(path, **options):
        for index in range(chunk.n_lines):
            found.append((chunk.first_line + index, chunk.line(index), chunk.long_line))
    return found


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 6000), min_size=1, max_size=12),
    final_newline=st.booleans(),
    chunk_bytes=st.sampled_from([1024, 1500, 4096]),
)
def test_every_line_is_read_whole_or_skipped_with_its_length_and_numbered_in_order(
    tmp_path_factory, lengths: list[int], final_newline: bool, chunk_bytes: int
) -> None:
    limit = 2048
    lines = [bytes([97 + i % 26]) * n for i, n in enumerate(lengths)]
    path = tmp_path_factory.mktemp("reader") / "lines.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    expected = lines if final_newline or lines[-1] else lines[:-1]  # a file ending in "\n" has no empty last line
    found = lines_of(path, chunk_bytes=chunk_bytes, max_line_bytes=limit)
    assert [number for number, _, _ in found] == list(range(1, len(expected) + 1))
    for (_, read, long_line), line in zip(found, expected, strict=True):
        if long_line is None:
            assert read == line  # a line the reader kept is whole (lines a little over the limit are judged later)
        else:
            assert len(line) > limit + len(UTF8_BOM) + 1 and long_line == len(line)
            assert read == line[:LONG_LINE_HEAD_BYTES]


def test_a_line_that_goes_on_past_the_limit_is_never_held_whole(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"{}\n" + b"x" * (1 << 20) + b"\n{}\n" + b"y" * (1 << 20))
    chunks = list(read_chunks(path, chunk_bytes=4096, max_line_bytes=8192))
    long_lines = [c for c in chunks if c.long_line is not None]
    assert [(c.first_line, c.long_line, len(c.body), c.ends_open) for c in long_lines] == [
        (2, 1 << 20, LONG_LINE_HEAD_BYTES, False),
        (4, 1 << 20, LONG_LINE_HEAD_BYTES, True),
    ]
    assert max(len(c.body) for c in chunks) <= 4096 + 8192 + 4


def test_a_chunk_holds_at_most_max_chunk_lines_lines_and_they_read_back_byte_for_byte(tmp_path: Path) -> None:
    data = b"".join(b"{}\n" if i % 3 else b"[1]\n" for i in range(2 * MAX_CHUNK_LINES + 17))
    path = tmp_path / "short.jsonl"
    path.write_bytes(data)
    chunks = list(read_chunks(path))
    assert [c.n_lines for c in chunks] == [MAX_CHUNK_LINES, MAX_CHUNK_LINES, 17]
    assert [c.first_line for c in chunks] == [1, MAX_CHUNK_LINES + 1, 2 * MAX_CHUNK_LINES + 1]
    assert b"".join(bytes(c.body) + b"\n" for c in chunks) == data


def test_raw_lines_are_read_again_one_chunk_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"".join(b'{"n":%d}\r\n' % i for i in range(1, 40_001)) + b'{"n":40001}')
    wanted = [1, 2, 17_000, 39_999, 40_001]
    assert list(read_raw_lines(path, iter(wanted))) == [b'{"n":%d}\r\n' % n for n in wanted[:-1]] + [b'{"n":40001}']


def test_zstd_is_decompressed_in_bounded_bursts_and_a_stream_of_frames_reads_whole() -> None:
    bomb = zstandard.ZstdCompressor(level=1).compress(b"x" * (256 << 20))  # 256 MB in a few KB
    frames = _ZstdFrames(io.BytesIO(bomb + zstandard.ZstdCompressor().compress(b"tail")))
    buffer = bytearray(64 << 20)
    total = largest = 0
    while n := frames.readinto(buffer):
        total += n
        largest = max(largest, len(frames._pending) + n)  # what one feed of the decompressor gave, at most
    assert total == (256 << 20) + 4
    assert largest <= 32 << 20
