"""Ingest's memory stays flat whatever a file holds: each hostile input is ingested in a subprocess under a small
address-space limit (``RLIMIT_AS``), so a blow-up fails its test (a MemoryError, or an allocator's abort) instead
of taking the runner down, and its peak RSS is held to the peak of a tiny clean file plus a margin.

Each input class is sized so that the code before the bounds needed far more than the margin: 200k rejected lines
took ~480 MB more (~2.6 KB a reject), a 256 MB line ~3x its size, a 512 MB decompressed stream ~2x its size,
a 1 MB line of 100k unknown keys ~700 MB (a parsed column per key).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard

from tests.conftest import encode
from tests.factories import make_snapshot
from toolkit.catalog import Catalog
from toolkit.layout import Layout

REPO = Path(__file__).resolve().parents[2]
# Allowed above a tiny clean file's peak RSS: a chunk in flight, a row group of rejects, a decompressed burst.
MARGIN_MB = 320
# Address space allowed above a tiny clean file's (its reservations: thread stacks, allocator arenas).
LIMIT_MARGIN_MB = 512
MB = 1 << 20

_CHILD = """
import json, resource, sys
limit = int(sys.argv[1])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from pathlib import Path
from toolkit.ingest.config import IngestConfig, ReadOptions
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout
config = IngestConfig(read=ReadOptions(**json.loads(sys.argv[4])))
result = ingest_paths([Path(sys.argv[2])], Layout.at(sys.argv[3]), config)
status = dict(line.split(":", 1) for line in open("/proc/self/status") if line.startswith(("VmPeak", "VmHWM")))
print(json.dumps({
    "result": result.model_dump(mode="json"),
    "peak_rss_mb": int(status["VmHWM"].split()[0]) / 1024,
    "vm_peak_mb": int(status["VmPeak"].split()[0]) / 1024,
}))
"""

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="address-space limits and /proc are Linux's")


def ingest_bounded(path: Path, home: Path, limit_mb: float = 0, **options: Any) -> dict[str, Any]:
    """Ingest ``path`` in a fresh process limited to ``limit_mb`` of address space (0: no limit); its result
    and peak memory. A process that died (killed, out of memory) fails the calling test here."""
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, str(int(limit_mb * MB)), str(path), str(home), json.dumps(options)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"the ingest process died ({run.returncode}): {run.stderr[-3000:]}"
    return json.loads(run.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """The peak RSS and address space of ingesting a tiny clean file, and the limit the hostile runs get."""
    folder = tmp_path_factory.mktemp("baseline")
    path = folder / "tiny.jsonl"
    path.write_bytes(b"".join(encode(make_snapshot(decision_index=i, seat=i % 4)) + b"\n" for i in range(8)))
    tiny = ingest_bounded(path, folder / "home")
    return {"rss_mb": tiny["peak_rss_mb"], "limit_mb": tiny["vm_peak_mb"] + LIMIT_MARGIN_MB}


def good(i: int) -> bytes:
    return encode(make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i))


def assert_flat(run: dict[str, Any], baseline: dict[str, float]) -> None:
    assert run["peak_rss_mb"] <= baseline["rss_mb"] + MARGIN_MB, (run["peak_rss_mb"], baseline)


def quarantine(home: Path) -> list[tuple]:
    with Catalog.open(Layout.at(home)) as catalog:
        sql = "SELECT source_line, octet_length(raw), problems[1].code, reason FROM rejects ORDER BY 1"
        return catalog.con.execute(sql).fetchall()


# Bad lines of every path: parsed and refused by the column checks, breaking the parse, not objects, not JSON.
# ``{}`` (the cheapest to judge) most of the time; one of the others every 16th line.
OTHER_BAD_LINES = [b'{"schema_version":1}', b'{"schema_version":1,"turn":"x"}', b"[]", b"x", b"   {", b"null"]


def test_two_hundred_thousand_rejected_lines_stream_to_the_quarantine_in_flat_memory(tmp_path: Path, baseline) -> None:
    # Short bad lines of every kind (a chunk of them would be millions of rejects at once), one good line among them.
    n = 200_000
    path = tmp_path / "dirty.jsonl"
    with open(path, "wb") as out:
        out.write(good(0) + b"\n")
        for i in range(n):
            out.write((OTHER_BAD_LINES[i // 16 % len(OTHER_BAD_LINES)] if i % 16 == 0 else b"{}") + b"\n")
    run = ingest_bounded(path, tmp_path / "home", baseline["limit_mb"])
    assert_flat(run, baseline)
    assert (run["result"]["rows_valid"], run["result"]["rows_rejected"]) == (1, n)
    with Catalog.open(Layout.at(tmp_path / "home")) as catalog:
        counted = catalog.con.execute("SELECT count(*), min(source_line), max(source_line) FROM rejects").fetchall()
    assert counted == [(n, 2, n + 1)]


def _long_line_file(path: Path, length: int) -> None:
    """A good line, a line of ``length`` bytes (a sparse hole of NULs inside a JSON string: no disk used), a good
    line, and a last line as long, without a newline."""
    with open(path, "wb") as out:
        out.write(good(0) + b"\n" + b'{"a":"')
        out.seek(length - 8, 1)
        out.write(b'"}\n' + good(1) + b'\n{"a":"')
        out.seek(length - 8, 1)
        out.write(b'"}')


def test_a_line_of_256_megabytes_is_skipped_unread_and_its_head_quarantined(tmp_path: Path, baseline) -> None:
    path = tmp_path / "long.jsonl"
    _long_line_file(path, 256 * MB)
    run = ingest_bounded(path, tmp_path / "home", baseline["limit_mb"])
    assert_flat(run, baseline)
    [file] = run["result"]["files"]
    assert (file["valid"], file["invalid"], file["lines"]) == (2, 2, 4)
    rejects = quarantine(tmp_path / "home")
    assert [r[:3] for r in rejects] == [(2, 4096, "line_too_long"), (4, 4096, "line_too_long")]
    assert f"line of {256 * MB:,} bytes" in rejects[0][3]


@pytest.mark.parametrize("max_line_bytes", [4 << 10, 1 << 16])
def test_the_line_limit_holds_for_any_setting(tmp_path: Path, baseline, max_line_bytes: int) -> None:
    path = tmp_path / "long.jsonl"
    _long_line_file(path, 32 * MB)
    run = ingest_bounded(path, tmp_path / "home", baseline["limit_mb"], max_line_bytes=max_line_bytes)
    assert_flat(run, baseline)
    assert [r[:3] for r in quarantine(tmp_path / "home")] == [(2, 4096, "line_too_long"), (4, 4096, "line_too_long")]


def _zstd_bomb(path: Path, size: int, byte: bytes) -> None:
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    piece = byte * (16 * MB)
    with open(path, "wb") as out:
        out.write(compressor.compress(good(0) + b"\n"))
        for _ in range(size // len(piece)):
            out.write(compressor.compress(piece))
        out.write(compressor.flush())


def _gzip_bomb(path: Path, size: int, byte: bytes) -> None:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: a gzip container
    piece = byte * (16 * MB)
    with open(path, "wb") as out:
        out.write(compressor.compress(good(0) + b"\n"))
        for _ in range(size // len(piece)):
            out.write(compressor.compress(piece))
        out.write(compressor.flush())


@pytest.mark.parametrize("kind", ["zst", "gz"])
def test_a_small_compressed_file_that_expands_to_512_megabytes_without_a_newline_is_one_long_line(
    tmp_path: Path, baseline, kind: str
) -> None:
    path = tmp_path / f"bomb.jsonl.{kind}"
    (_zstd_bomb if kind == "zst" else _gzip_bomb)(path, 512 * MB, b"x")
    assert path.stat().st_size < 4 * MB
    run = ingest_bounded(path, tmp_path / "home", baseline["limit_mb"])
    assert_flat(run, baseline)
    [file] = run["result"]["files"]
    assert (file["status"], file["valid"], file["invalid"]) == ("ingested", 1, 1)
    [(line, head, code, reason)] = quarantine(tmp_path / "home")
    assert (line, head, code) == (2, 4096, "line_too_long") and f"{512 * MB:,} bytes" in reason


def test_a_megabyte_line_of_a_hundred_thousand_unknown_keys_is_judged_in_flat_memory(tmp_path: Path, baseline) -> None:
    path = tmp_path / "wide.jsonl"
    wide = good(1)[:-1] + b"".join(b',"k%d":0' % i for i in range(100_000)) + b"}"
    path.write_bytes(good(0) + b"\n" + wide + b"\n" + good(2) + b"\n")
    run = ingest_bounded(path, tmp_path / "home", baseline["limit_mb"])
    assert_flat(run, baseline)
    assert [r[:3] for r in quarantine(tmp_path / "home")] == [(2, len(wide) + 1, "extra_forbidden")]
