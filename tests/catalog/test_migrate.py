"""A data root of lake format 1 (plain Parquet files and a DuckDB catalog) moved onto the versioned lake."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from toolkit.catalog import Catalog, Lake
from toolkit.catalog.lifecycle import history
from toolkit.catalog.migrate import migrate
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.errors import CatalogError
from toolkit.failpoints import ENV
from toolkit.layout import Layout

V1_LAKE = Path(__file__).parents[1] / "data" / "lake_v1"
# The catalog's tables as Distill wrote them at lake format 1 (toolkit/catalog/store.py before the versioned lake).
FORMAT_1_TABLES = """
CREATE TABLE catalog_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE batches (
    batch_id VARCHAR PRIMARY KEY, created_at TIMESTAMP NOT NULL, file_sha256 VARCHAR NOT NULL,
    rows_valid BIGINT NOT NULL, rows_rejected BIGINT NOT NULL, rows_duplicate BIGINT NOT NULL,
    sources VARCHAR[] NOT NULL, generations INTEGER[] NOT NULL, source_override VARCHAR, dialect_override VARCHAR,
    status VARCHAR NOT NULL DEFAULT 'ingested', status_reason VARCHAR, distill_version VARCHAR NOT NULL
);
CREATE TABLE files (
    file_sha256 VARCHAR PRIMARY KEY, path VARCHAR NOT NULL, size_bytes BIGINT NOT NULL, batch_id VARCHAR NOT NULL,
    lines BIGINT NOT NULL, blank_lines BIGINT NOT NULL, rows_valid BIGINT NOT NULL, rows_rejected BIGINT NOT NULL,
    dialects VARCHAR NOT NULL, ingested_at TIMESTAMP NOT NULL
);
INSERT INTO catalog_meta VALUES ('format_version', '1');
"""
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def format_1_root(tmp_path: Path) -> Layout:
    """A format-1 data root: the v1 writer's Parquet files in their folders, a format-1 catalog recording them
    (the records taken from the fixture lake's log), a logged file's path absolute inside the root."""
    source = Layout.at(tmp_path / "v1")
    source.home.mkdir(parents=True)
    for folder in ("lake", "quarantine"):
        shutil.copytree(V1_LAKE / folder, source.home / folder)
    migrate(source)
    with Lake.open(source, write=True) as lake:
        batches = lake.view.read("SELECT * FROM batches").to_pylist()
        files = lake.view.read("SELECT * FROM files").to_pylist()
    layout = Layout.at(tmp_path / "home")
    shutil.copytree(V1_LAKE / "lake", layout.lake, ignore=shutil.ignore_patterns("_delta_log"))
    shutil.copytree(source.quarantine, layout.quarantine)
    con = duckdb.connect(str(layout.catalog))
    con.execute(FORMAT_1_TABLES)
    for batch in batches:
        con.execute(
            "INSERT INTO batches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [batch[k] for k in ("batch_id", "created_at", "file_sha256", "rows_valid", "rows_rejected")]
            + [batch[k] for k in ("rows_duplicate", "sources", "generations", "source_override", "dialect_override")]
            + ["accepted", "gate passed", batch["distill_version"]],
        )
    for i, file in enumerate(files):
        path = str(layout.home / "runs" / "old" / f"log-{i}.jsonl")  # absolute, as format 1 recorded it
        con.execute(
            "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                file["file_sha256"],
                path,
                *[
                    file[k]
                    for k in (
                        "size_bytes",
                        "batch_id",
                        "lines",
                        "blank_lines",
                        "rows_valid",
                        "rows_rejected",
                        "dialects",
                    )
                ],
                file["ingested_at"],
            ],
        )
    con.close()
    return layout


def test_a_format_1_root_is_refused_with_the_command_that_migrates_it(format_1_root: Layout) -> None:
    for write in (False, True):
        with pytest.raises(CatalogError, match="format version 1") as error:
            Lake.open(format_1_root, write=write).view
        assert "distill lake migrate" in (error.value.hint or "")


def test_migrating_commits_the_files_as_they_are_in_one_version(format_1_root: Layout) -> None:
    files = {p: p.read_bytes() for p in format_1_root.lake.rglob("*.parquet")}
    result = migrate(format_1_root)
    assert (result.from_format, result.to_format, result.version, result.batches, result.files) == (1, 3, 0, 3, 3)
    assert {p: p.read_bytes() for p in files} == files  # nothing rewritten: the files are linked into hive folders
    with Catalog.open(format_1_root) as catalog:
        live = [f.path for f in catalog.lake_files()]
    assert len(live) == 3 and all(any(p.samefile(old) for old in files) for p in live)
    with Lake.open(format_1_root, write=True) as lake:
        assert [(v.version, v.operation) for v in lake.history()] == [(0, "migrate")]
        assert lake.view.read("SELECT count(*) AS n FROM decisions")["n"].to_pylist() == [24]
        assert {(b.status, b.status_reason, b.retired) for b in lake.view.batches()} == {
            ("accepted", "gate passed", False)
        }
        assert sorted(f.path for f in lake.view.files()) == [f"runs/old/log-{i}.jsonl" for i in range(3)]
        assert lake.view.read("SELECT count(*) AS n FROM rejects")["n"].to_pylist() == [1]
        lake.retire([lake.view.batches()[0].batch_id], "works on a migrated lake")
    assert build_dataset(format_1_root, BuildConfig(name="after")).manifest.lake_version == 1
    assert migrate(format_1_root).version is None  # a second run has nothing to do


def test_a_migration_killed_between_its_commit_and_the_catalog_is_finished_by_a_rerun(format_1_root: Layout) -> None:
    code = (
        "from toolkit.catalog.migrate import migrate; from toolkit.layout import Layout; "
        f"migrate(Layout.at({str(format_1_root.home)!r}))"
    )
    killed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, ENV: "migrate.after_commit"})
    assert killed.returncode == -signal.SIGKILL
    with pytest.raises(CatalogError, match="format version 1"):  # the catalog still says format 1
        Catalog.open(format_1_root)
    assert migrate(format_1_root).version == 0
    with Catalog.open(format_1_root) as catalog:
        assert catalog.read("SELECT count(*) AS n FROM decisions")["n"].to_pylist() == [24]
        assert [v.operation for v in history(catalog)] == ["migrate"]
