"""Nothing outside the data root is read or deleted because of what a lake log or a staging folder contains, and a
log that cannot be trusted stops every command with an error naming the version and the file (hardening 4,
items 1 and 2; one truth for the lake, its bad input)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.datasets.conftest import game_records
from toolkit.cli.main import app
from toolkit.layout import Layout

runner = CliRunner()
LOG = "_delta_log"


def distill(layout: Layout, *args: str):
    return runner.invoke(app, ["--home", str(layout.home), *args])


def commit_file(layout: Layout, version: int) -> Path:
    return layout.lake / LOG / f"{version:020d}.json"


@pytest.fixture
def lake(layout: Layout, write_log, tmp_path: Path) -> tuple[Layout, Path]:
    """A data root with two ingested batches (versions 0-2), and a file outside it that nothing may touch."""
    for name in ("a", "b"):
        path = write_log(f"{name}.jsonl", [row for i in range(3) for row in game_records(f"{name}-{i}")])
        assert distill(layout, "ingest", str(path)).exit_code == 0
    victim = tmp_path / "outside" / "victim.parquet"
    victim.parent.mkdir()
    victim.write_bytes(next(layout.lake.rglob("*.parquet")).read_bytes())  # a real Parquet file, outside the root
    return layout, victim


def append_commit(layout: Layout, version: int, *actions: dict) -> None:
    lines = [{"commitInfo": {"timestamp": 1_800_000_000_000, "operation": "WRITE"}}, *actions]
    commit_file(layout, version).write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def add(path: str) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True}}


def truncate(layout: Layout, victim: Path) -> tuple[int, str]:
    data = commit_file(layout, 2).read_bytes()
    commit_file(layout, 2).write_bytes(data[: len(data) // 2])
    return 2, "not JSON"


def garbage(layout: Layout, victim: Path) -> tuple[int, str]:
    commit_file(layout, 3).write_text("{garbage\n")
    return 3, "not JSON"


def gap(layout: Layout, victim: Path) -> tuple[int, str]:
    append_commit(layout, 4, add("source=forge/x.parquet"))
    return 3, "no version 3"


def relative_outside(layout: Layout, victim: Path) -> tuple[int, str]:
    append_commit(layout, 3, add(os.path.relpath(victim, layout.lake)), {"remove": {"path": "x", "dataChange": True}})
    return 3, "outside the table"


def absolute_outside(layout: Layout, victim: Path) -> tuple[int, str]:
    append_commit(layout, 3, add(str(victim)))
    return 3, "outside the table"


def uri_outside(layout: Layout, victim: Path) -> tuple[int, str]:
    append_commit(layout, 3, add(victim.as_uri()))
    return 3, "outside the table"


def removed_outside(layout: Layout, victim: Path) -> tuple[int, str]:
    append_commit(layout, 3, {"remove": {"path": "../../outside/victim.parquet", "dataChange": True}})
    return 3, "outside the table"


def checkpoint_missing(layout: Layout, victim: Path) -> tuple[int, str]:
    (layout.lake / LOG / "_last_checkpoint").write_text(json.dumps({"version": 2, "size": 3}))
    return 2, "checkpoint"


def deletion_vector(layout: Layout, victim: Path) -> tuple[int, str]:
    dv = {"storageType": "u", "pathOrInlineDv": "x", "offset": 1, "sizeInBytes": 1, "cardinality": 1}
    append_commit(layout, 3, {"add": {**add("source=forge/x.parquet")["add"], "deletionVector": dv}})
    return 3, "deletion vector"


def added_twice(layout: Layout, victim: Path) -> tuple[int, str]:
    append_commit(layout, 3, add("source=forge/x.parquet"), add("source=forge/x.parquet"))
    return 3, "twice"


TAMPERS: dict[str, Callable[[Layout, Path], tuple[int, str]]] = {
    f.__name__: f
    for f in (
        truncate,
        garbage,
        gap,
        relative_outside,
        absolute_outside,
        uri_outside,
        removed_outside,
        checkpoint_missing,
        deletion_vector,
        added_twice,
    )
}


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_tampered_log_stops_every_command_naming_the_version_and_file(
    lake: tuple[Layout, Path], tamper: str, write_log
) -> None:
    layout, victim = lake
    before = victim.read_bytes()
    version, what = TAMPERS[tamper](layout, victim)
    new_log = write_log("c.jsonl", game_records("c-0"))
    for args in (
        ("sql", "SELECT count(*) FROM decisions"),
        ("lake", "history"),
        ("lake", "vacuum", "--retain", "0"),
        ("lake", "compact"),
        ("lake", "reindex"),
        ("ingest", str(new_log)),
        ("build", "--name", "x"),
    ):
        result = distill(layout, *args)
        assert result.exit_code == 1, (args, result.output)
        assert f"version {version}" in result.output and what in result.output, (args, result.output)
        assert "Traceback" not in result.output
        assert victim.read_bytes() == before, args  # never deleted, never rewritten
    assert f"{version:020d}" in distill(layout, "sql", "SELECT 1").output or tamper == "checkpoint_missing"


def test_a_leftover_intent_never_deletes_outside_the_lake_and_a_reader_never_recovers(
    lake: tuple[Layout, Path],
) -> None:
    layout, victim = lake
    inside = next(layout.lake.rglob("*.parquet"))
    tail = hashlib.sha256(victim.read_bytes()[-65_536:]).hexdigest()
    link = layout.lake / "source=forge" / "link.parquet"
    link.symlink_to(victim)
    intents = {
        "old-format": {"token": "t", "base_version": 0, "targets": [str(victim), "../outside/victim.parquet"]},
        "outside": {
            "token": "t",
            "base_version": 0,
            "files": [
                {"name": n, "size": victim.stat().st_size, "tail_sha256": tail}
                for n in ("../outside/victim.parquet", "lake/../../outside/victim.parquet", str(victim))
            ],
        },
        "symlink": {
            "token": "t",
            "base_version": 0,
            "files": [{"name": link.relative_to(layout.home).as_posix(), "size": 0, "tail_sha256": tail}],
        },
        "not-its-own": {  # a live lake file the intent does not prove it wrote (another size and hash)
            "token": "t",
            "base_version": 0,
            "files": [{"name": inside.relative_to(layout.home).as_posix(), "size": 1, "tail_sha256": "0" * 64}],
        },
    }
    for name, intent in intents.items():
        folder = layout.staging / name
        folder.mkdir(parents=True)
        (folder / "intent.json").write_text(json.dumps(intent))
    assert distill(layout, "sql", "SELECT count(*) FROM decisions").exit_code == 0
    assert sorted(p.name for p in layout.staging.iterdir()) == sorted(intents)  # a reader recovers nothing
    assert distill(layout, "lake", "compact").exit_code == 0  # a writer settles them
    assert not any(layout.staging.iterdir())
    assert victim.exists() and link.is_symlink()
    rows = json.loads(distill(layout, "sql", "SELECT count(*) AS n FROM decisions", "--json").stdout)
    assert rows == [{"n": 72}]  # and every live file stayed


def test_a_symlink_inside_the_table_leading_out_is_neither_read_nor_deleted(lake: tuple[Layout, Path]) -> None:
    layout, victim = lake
    live = sorted(layout.lake.rglob("*.parquet"))[0]
    live.unlink()
    live.symlink_to(victim)  # a live file replaced by a link to a file outside
    result = distill(layout, "sql", "SELECT count(*) FROM decisions")
    assert result.exit_code == 1 and "symlink leads outside" in result.output
    batch = live.stem.removeprefix("batch-")
    assert distill(layout, "lake", "retire", batch, "--reason", "moved out").exit_code == 0
    assert distill(layout, "lake", "vacuum", "--retain", "0").exit_code == 0
    assert victim.exists() and not live.is_symlink()  # the link is gone, what it led to is not


def test_a_live_file_lost_on_disk_gives_one_clear_error_and_retiring_its_batch_recovers(
    lake: tuple[Layout, Path], write_log
) -> None:
    layout, _ = lake
    lost = sorted(layout.lake.rglob("*.parquet"))[0]
    lost.unlink()
    batch = lost.stem.removeprefix("batch-")
    for args in (
        ("sql", "SELECT count(*) FROM decisions"),
        ("build", "--name", "x"),
        ("ingest", str(write_log("c.jsonl", game_records("c-0")))),
    ):
        result = distill(layout, *args)
        assert result.exit_code == 1 and "not on disk" in result.output, (args, result.output)
        assert f"distill lake retire {batch}" in result.output and "Traceback" not in result.output
    assert distill(layout, "lake", "retire", batch, "--reason", "file lost").exit_code == 0
    assert distill(layout, "sql", "SELECT count(*) FROM decisions").exit_code == 0
