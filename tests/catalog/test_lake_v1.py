"""A lake written by the contract-v1 writer (lake format 2), migrated and read by today's code: no file rewritten,
v1 columns unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from toolkit.catalog import Catalog, Lake
from toolkit.catalog.migrate import migrate
from toolkit.errors import CatalogError
from toolkit.layout import Layout
from toolkit.schema.arrow import lake_schema

FIXTURE = Path(__file__).parents[1] / "data" / "lake_v1"


def _copy(tmp_path: Path) -> Layout:
    layout = Layout.at(tmp_path / "home")
    layout.home.mkdir(parents=True)
    for folder in ("lake", "quarantine"):
        shutil.copytree(FIXTURE / folder, layout.home / folder)
    return layout


@pytest.fixture
def v1_root(tmp_path: Path) -> Layout:
    layout = _copy(tmp_path)
    migrate(layout)
    return layout


def test_a_format_2_lake_is_refused_with_the_command_that_migrates_it(tmp_path: Path) -> None:
    layout = _copy(tmp_path)
    for write in (False, True):
        with pytest.raises(CatalogError, match="format 2") as error:
            Lake.open(layout, write=write).view
        assert "distill lake migrate" in (error.value.hint or "")


def _v1_files(layout: Layout) -> list[Path]:
    return sorted(layout.lake.rglob("part-*.parquet"))


def test_the_catalog_is_rebuilt_from_the_log_alone(v1_root: Layout) -> None:
    with Lake.open(v1_root, write=True) as lake:
        versions = lake.history()
        batches = {b.batch_id: b for b in lake.view.batches()}
    assert [v.operation for v in versions] == [
        *("create", "ingest", "ingest", "ingest", "review", "retire"),
        *("migrate", "evolve"),
    ]
    evolved = set(lake_schema().names) - set(pq.read_schema(_v1_files(v1_root)[0]).names)
    assert evolved and versions[-1].detail == {"columns": sorted(evolved, key=lake_schema().names.index)}
    assert (versions[-1].files_added, versions[-1].files_removed) == (0, 0)  # no file rewritten
    assert sorted((b.status, b.retired) for b in batches.values()) == [
        ("accepted", False),
        ("ingested", False),
        ("ingested", True),
    ]
    assert [b.retired_reason for b in batches.values() if b.retired] == ["a broken engine build"]


def test_v1_rows_read_with_their_v1_columns_unchanged_and_no_file_rewritten(v1_root: Layout) -> None:
    before = {p: p.read_bytes() for p in _v1_files(v1_root)}
    v1_columns = pq.read_schema(next(iter(before))).names
    with Lake.open(v1_root, write=True) as lake:
        live = sorted(f.path for f in lake.view.lake_files())
        read = lake.view.read("SELECT * FROM decisions ORDER BY batch_id, source_line")
    expected = (
        pads.dataset([str(p) for p in live], format="parquet")
        .to_table()
        .sort_by([("batch_id", "ascending"), ("source_line", "ascending")])
    )
    assert read.num_rows == expected.num_rows == 20  # the retired batch's rows are not there
    assert read.select(v1_columns).to_pylist() == expected.select(v1_columns).to_pylist()
    assert read.column_names == lake_schema().names
    for added in set(lake_schema().names) - set(v1_columns):
        assert read[added].null_count == read.num_rows, added
    assert {p: p.read_bytes() for p in _v1_files(v1_root)} == before


def test_the_v1_lake_takes_new_batches_and_old_versions_stay_readable(v1_root: Layout, write_log) -> None:
    from tests.factories import make_snapshot
    from toolkit.ingest.ingest import ingest_paths

    ingest_paths(
        [write_log("new.jsonl", [make_snapshot(game_id="n0", seat=s, decision_index=s) for s in range(4)])], v1_root
    )
    with Catalog.open(v1_root) as catalog:
        assert catalog.read("SELECT count(*) AS n FROM decisions")["n"].to_pylist() == [24]
    with Catalog.open(v1_root, as_of=3) as catalog:  # before the review and the retirement
        assert catalog.read("SELECT count(*) AS n FROM decisions")["n"].to_pylist() == [24]


@pytest.mark.parametrize("point", ["evolve.before_commit", "evolve.after_commit"])
def test_the_schema_evolution_killed_mid_way_is_finished_by_the_next_writer(v1_root: Layout, point: str) -> None:
    import os
    import signal
    import subprocess
    import sys

    from toolkit.failpoints import ENV

    code = (
        "from toolkit.catalog import Lake; from toolkit.layout import Layout; "
        f"Lake.open(Layout.at({str(v1_root.home)!r}), write=True)"
    )
    root = Path(__file__).resolve().parents[2]
    killed = subprocess.run([sys.executable, "-c", code], cwd=root, env={**os.environ, ENV: point})
    assert killed.returncode == -signal.SIGKILL
    with Lake.open(v1_root, write=True) as lake:
        assert [v.operation for v in lake.history()].count("evolve") == 1
        assert lake.view.read("SELECT count(*) AS n FROM decisions WHERE outcome IS NULL")["n"].to_pylist() == [20]
