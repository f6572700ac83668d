"""What ingest reads: regular files (pipes and devices refused by name, or skipped in folders), and standard input,
read once. Commands that could block or never end run in a subprocess with a timeout: a regression fails its test."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from tests.conftest import encode
from tests.factories import make_snapshot
from toolkit.catalog import Catalog
from toolkit.errors import UsageError
from toolkit.ingest.dry_run import validate_paths
from toolkit.ingest.inputs import STDIN_NAME, find_inputs, spooled_stdin
from toolkit.layout import Layout

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, devices and /dev/fd are POSIX")


def log(lines: int = 8, bad: int = 1) -> bytes:
    good = b"".join(encode(make_snapshot(decision_index=i, seat=i % 4)) + b"\n" for i in range(lines))
    return good + b"{nope\n" * bad


def distill(home: Path, *args: str, **run: object) -> subprocess.CompletedProcess[bytes]:
    """``distill --home HOME ARGS...`` in a fresh process that may not run past a minute."""
    return subprocess.run(
        [sys.executable, "-m", "toolkit", "--home", str(home), *args],
        cwd=REPO,
        capture_output=True,
        timeout=60,
        **run,  # type: ignore[arg-type]
    )


def query(home: Path, sql: str) -> list[tuple]:
    with Catalog.open(Layout.at(home)) as catalog:
        return catalog.con.execute(sql).fetchall()


def test_a_fifo_named_as_a_path_is_refused_by_name_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    for command in ("ingest", "validate"):
        run = distill(tmp_path / "home", command, str(fifo))
        assert run.returncode == 2, run.stderr
        assert f"{fifo}: a pipe" in run.stderr.decode() and b"Traceback" not in run.stderr


def test_a_device_behind_a_log_name_is_refused_as_a_device(tmp_path: Path) -> None:
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    run = distill(tmp_path / "home", "ingest", str(zero))
    assert run.returncode == 2 and f"{zero}: a character device, not a regular file" in run.stderr.decode()
    assert not (tmp_path / "home" / "catalog.duckdb").exists()  # refused before the catalog was opened


def test_a_process_substitution_is_refused_naming_its_pipe(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, log())
        name = f"/dev/fd/{read_end}"
        run = distill(tmp_path / "home", "ingest", name, pass_fds=(read_end,))
    finally:
        os.close(read_end)
        os.close(write_end)
    assert run.returncode == 2 and f"{name}: a pipe" in run.stderr.decode() and b"Traceback" not in run.stderr


def test_entries_of_a_folder_that_are_not_regular_files_are_skipped_and_reported(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(log())
    os.mkfifo(folder / "b.jsonl")
    (folder / "c.jsonl").symlink_to("/dev/zero")
    (folder / "d.jsonl").symlink_to(tmp_path / "gone.jsonl")
    run = distill(tmp_path / "home", "ingest", "--json", str(folder))
    assert run.returncode == 0, run.stderr
    files = {Path(f["path"]).name: f for f in json.loads(run.stdout)["files"]}
    assert files["a.jsonl"]["status"] == "ingested"
    assert {name: files[name]["status"] for name in ("b.jsonl", "c.jsonl", "d.jsonl")} == dict.fromkeys(
        ("b.jsonl", "c.jsonl", "d.jsonl"), "skipped"
    )
    assert "a pipe" in files["b.jsonl"]["note"] and "character device" in files["c.jsonl"]["note"]
    skipped = {Path(s.path).name for s in validate_paths([folder]).skipped}
    assert skipped == {"b.jsonl", "c.jsonl", "d.jsonl"}


def test_a_folder_with_only_a_fifo_reports_it_rather_than_saying_it_is_empty(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "only.jsonl")
    found = find_inputs([tmp_path])
    assert found.paths == [] and [Path(s.path).name for s in found.skipped] == ["only.jsonl"]


@pytest.mark.parametrize("compression", ["plain", "gzip", "zstd"])
def test_standard_input_is_read_once_and_recorded_as_stdin(tmp_path: Path, compression: str) -> None:
    data = log()
    stream = {"plain": data, "gzip": gzip.compress(data), "zstd": zstandard.ZstdCompressor().compress(data)}[
        compression
    ]
    home = tmp_path / "home"
    run = distill(home, "ingest", "--json", "-", input=stream)
    assert run.returncode == 0, run.stderr
    [file] = json.loads(run.stdout)["files"]
    assert (file["path"], file["status"], file["valid"], file["invalid"]) == (STDIN_NAME, "ingested", 8, 1)
    assert query(home, "SELECT DISTINCT source_file FROM decisions") == [(STDIN_NAME,)]
    assert query(home, "SELECT source_file, source_line, raw FROM rejects") == [(STDIN_NAME, 9, b"{nope\n")]
    assert query(home, "SELECT path, size_bytes FROM files") == [(STDIN_NAME, len(stream))]
    assert not any((home / "spool").iterdir())  # the spool is gone
    again = distill(home, "ingest", "--json", "/dev/stdin", input=stream)  # the same bytes: the same batch
    assert json.loads(again.stdout)["files"][0]["status"] == "already_ingested"


def test_standard_input_and_files_ingest_together(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(log(4, 0))
    run = distill(tmp_path / "home", "ingest", "--json", str(path), "-", input=path.read_bytes())
    files = json.loads(run.stdout)["files"]
    assert [(f["path"], f["status"]) for f in files] == [(str(path), "ingested"), (STDIN_NAME, "already_ingested")]


def test_validate_reads_standard_input_too(tmp_path: Path) -> None:
    run = distill(tmp_path / "home", "validate", "--json", "-", input=log())
    result = json.loads(run.stdout)
    assert run.returncode == 1 and [(p["file"], p["line"]) for p in result["problems"]] == [(STDIN_NAME, 9)]
    assert not (tmp_path / "home").exists()  # validate writes nothing to the data root


def test_standard_input_from_a_terminal_is_refused(tmp_path: Path) -> None:
    controller, terminal = os.openpty()
    try:
        run = distill(tmp_path / "home", "ingest", "-", stdin=terminal)
    finally:
        os.close(controller)
        os.close(terminal)
    assert run.returncode == 2 and b"standard input is a terminal" in run.stderr


def test_standard_input_longer_than_the_bound_is_refused_and_its_spool_deleted(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="more than 1,000 bytes"):
        with spooled_stdin(tmp_path, 1000, io.BytesIO(b"{}\n" * 1000)):
            pass
    assert not list(tmp_path.iterdir())


def test_spools_of_dead_processes_are_deleted(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = tmp_path / f"stdin-{dead.stdout.strip()}-0a1b2c3d.jsonl"
    left.write_bytes(b"{}\n")
    with spooled_stdin(tmp_path, 1 << 20, io.BytesIO(b"{}\n")) as path:
        assert path.read_bytes() == b"{}\n" and not left.exists()
