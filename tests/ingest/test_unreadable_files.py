"""Compressed files that cannot be read: one clear error each, the other files of the folder still ingested."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import zstandard
from typer.testing import CliRunner

from tests.conftest import encode
from tests.factories import make_snapshot
from toolkit.cli.main import app
from toolkit.ingest.dry_run import validate_paths
from toolkit.ingest.ingest import ingest_paths
from toolkit.ingest.reader import read_chunks
from toolkit.layout import Layout


def _lines(game: str) -> bytes:
    return b"".join(encode(make_snapshot(game_id=game, seat=i % 4, decision_index=i)) + b"\n" for i in range(40))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    gz = gzip.compress(_lines("g1"))
    zst = zstandard.ZstdCompressor().compress(_lines("g2"))
    (logs / "a-cut.jsonl.gz").write_bytes(gz[: len(gz) // 2])
    (logs / "b-plain.jsonl.gz").write_bytes(_lines("g3"))
    (logs / "c-cut.jsonl.zst").write_bytes(zst[: len(zst) // 2])
    (logs / "d-plain.jsonl.zst").write_bytes(_lines("g4"))
    (logs / "e-good.jsonl.gz").write_bytes(gzip.compress(_lines("g5")))
    (logs / "f-good.jsonl").write_bytes(_lines("g6"))
    (logs / "g-frames.jsonl.zst").write_bytes(
        b"".join(zstandard.ZstdCompressor().compress(_lines(g)) for g in ("g7", "g8"))
    )
    return logs


BAD = {
    "a-cut.jsonl.gz": "cut short",
    "b-plain.jsonl.gz": "not valid gzip",
    "c-cut.jsonl.zst": "cut short",
    "d-plain.jsonl.zst": "not valid zstd",
}


def test_each_unreadable_file_fails_alone_and_the_others_are_ingested(folder: Path, tmp_path: Path) -> None:
    result = ingest_paths([folder], Layout.at(tmp_path / "home"))
    status = {Path(f.path).name: f for f in result.files}
    assert {name for name, f in status.items() if f.status == "failed"} == set(BAD)
    for name, why in BAD.items():
        assert why in status[name].note
    assert {status[n].status for n in ("e-good.jsonl.gz", "f-good.jsonl", "g-frames.jsonl.zst")} == {"ingested"}
    assert result.rows_valid == 4 * 40 and result.rows_rejected == 0  # every frame of the multi-frame file too


def test_the_cli_names_each_failed_file_once_and_exits_1(folder: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "ingest", str(folder)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    for name in BAD:
        assert result.stderr.count(name) == 1
    assert "Aborted" not in result.output + result.stderr


def test_validate_reports_an_unreadable_file_as_a_problem_and_reads_the_rest(folder: Path) -> None:
    result = validate_paths([folder])
    unreadable = {Path(p.file).name for p in result.problems if p.code == "unreadable_file"}
    assert unreadable == set(BAD)
    assert sum(r.valid for r in result.reports) == 4 * 40


def test_a_complete_multi_frame_zstd_file_reads_byte_for_byte(folder: Path) -> None:
    chunks = list(read_chunks(folder / "g-frames.jsonl.zst"))
    assert b"".join(bytes(c.body) + b"\n" for c in chunks) == _lines("g7") + _lines("g8")
