"""One truth for the lake: the Delta log holds everything, the catalog is a cache any process rebuilds from it.

The issue's own sequence first (a lost catalog after a vacuum read 0 rows without a word), then a copy of the
table alone, a reader catching up with another tool's commit, a corrupt catalog, ``lake reindex``, the declared
partitions, and readers racing a reindex.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.datasets.conftest import game_records
from toolkit.catalog import Lake
from toolkit.catalog.lake import reindex
from toolkit.cli.main import app
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.layout import Layout

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def distill(layout: Layout, *args: str):
    return runner.invoke(app, ["--home", str(layout.home), *args])


def as_json(layout: Layout, *args: str):
    result = distill(layout, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def count(layout: Layout) -> int:
    return as_json(layout, "sql", "SELECT count(*) AS n FROM decisions")[0]["n"]


def lose_catalog(layout: Layout) -> None:
    for path in layout.home.glob("catalog*"):
        path.unlink()


@pytest.fixture
def logs(write_log) -> dict[str, Path]:
    """Three logs: two Forge ones (a, b) and one of PPO's generation 2 (p)."""
    return {
        "a": write_log("a.jsonl", [row for i in range(6) for row in game_records(f"a-{i}")]),
        "b": write_log("b.jsonl", [row for i in range(4) for row in game_records(f"b-{i}")]),
        "p": write_log("p.jsonl", [row for i in range(3) for row in game_records(f"p-{i}", "ppo", generation=2)]),
    }


def test_a_lost_catalog_after_a_vacuum_is_rebuilt_from_the_log_and_answers_as_before(
    layout: Layout, logs: dict[str, Path]
) -> None:
    a = as_json(layout, "ingest", str(logs["a"]))["batches"][0]
    b = as_json(layout, "ingest", str(logs["b"]))["batches"][0]
    as_json(layout, "lake", "retire", b, "--reason", "test")
    as_json(layout, "lake", "vacuum", "--retain", "0")
    rows, history = count(layout), as_json(layout, "lake", "history")
    assert rows == 72 and [v["operation"] for v in history] == ["create", "ingest", "ingest", "retire", "vacuum"]
    lose_catalog(layout)
    assert count(layout) == rows  # was 0, without a word
    assert as_json(layout, "lake", "history") == history  # was version 0 alone
    again = as_json(layout, "ingest", str(logs["b"]))  # was a traceback naming the vacuumed Parquet file
    assert again["files"][0]["status"] == "ingested" and again["batches"] == [b]
    assert count(layout) == rows + 48
    batches = as_json(layout, "sql", "SELECT batch_id, retired FROM batches ORDER BY batch_id")
    assert batches == sorted([{"batch_id": a, "retired": False}, {"batch_id": b, "retired": False}], key=str)


def test_a_copy_of_the_table_alone_answers_as_the_original_and_takes_new_ingests(
    tmp_path: Path, layout: Layout, logs: dict[str, Path]
) -> None:
    a, b, p = (as_json(layout, "ingest", str(logs[n]))["batches"][0] for n in ("a", "b", "p"))
    as_json(layout, "lake", "retire", b, "--reason", "test")
    as_json(layout, "lake", "compact")
    as_json(layout, "lake", "vacuum", "--retain", "0")
    copy = Layout.at(tmp_path / "copy")
    copy.home.mkdir()
    shutil.copytree(layout.lake, copy.lake)
    query = "SELECT batch_id, game_id, seat, decision_index FROM decisions ORDER BY ALL"
    assert as_json(copy, "sql", query) == as_json(layout, "sql", query)
    assert as_json(copy, "lake", "history") == as_json(layout, "lake", "history")
    fingerprints = [build_dataset(root, BuildConfig(name="same")).manifest.fingerprint for root in (layout, copy)]
    assert fingerprints[0] == fingerprints[1]
    assert as_json(copy, "ingest", str(logs["b"]))["batches"] == [b]
    assert count(copy) == count(layout) + 48
    assert {r["batch_id"] for r in as_json(copy, "sql", "SELECT batch_id FROM batches")} == {a, b, p}


def test_readers_catch_up_by_themselves_with_a_commit_another_tool_made(layout: Layout, logs: dict[str, Path]) -> None:
    from deltalake import DeltaTable, write_deltalake

    as_json(layout, "ingest", str(logs["a"]))
    before = count(layout)
    rows = DeltaTable(str(layout.lake)).to_pyarrow_table().slice(0, 10)
    rows = rows.set_column(rows.schema.get_field_index("batch_id"), "batch_id", [["bforeign"] * 10])
    write_deltalake(str(layout.lake), rows, mode="append")  # as another engine would
    assert count(layout) == before + 10  # no Distill writer ran in between
    history = as_json(layout, "lake", "history")
    assert (history[-1]["operation"], history[-1]["rows_added"]) == ("write", 10)
    foreign = as_json(
        layout, "sql", "SELECT source, count(*) AS n FROM decisions WHERE batch_id = 'bforeign' GROUP BY 1"
    )
    assert foreign == [{"source": "forge", "n": 10}]  # delta-rs left the partition column out of its file: the log's


def test_after_delta_rs_compacts_the_lake_distill_reads_the_same_rows(layout: Layout, logs: dict[str, Path]) -> None:
    from deltalake import DeltaTable

    for name in ("a", "b", "p"):
        as_json(layout, "ingest", str(logs[name]))
    query = "SELECT batch_id, source, generation, game_id, seat, decision_index FROM decisions ORDER BY ALL"
    before = as_json(layout, "sql", query)
    DeltaTable(str(layout.lake)).optimize.compact()  # files without the partition columns, batches mixed
    assert as_json(layout, "sql", query) == before
    assert as_json(layout, "sql", "SELECT count(*) AS n FROM decisions WHERE source IS NULL") == [{"n": 0}]
    build_dataset(layout, BuildConfig(name="after-delta-rs"))


def test_a_corrupt_catalog_is_rebuilt_by_the_first_reader(layout: Layout, logs: dict[str, Path]) -> None:
    as_json(layout, "ingest", str(logs["a"]))
    rows = count(layout)
    for path in layout.home.glob("catalog*.duckdb"):
        path.write_bytes(b"not a database" * 1000)
    assert count(layout) == rows


def test_reindex_says_what_it_found_and_rebuilds_from_the_log(layout: Layout, logs: dict[str, Path]) -> None:
    as_json(layout, "ingest", str(logs["a"]))
    as_json(layout, "ingest", str(logs["p"]))
    current = as_json(layout, "lake", "reindex")
    assert current["found"] == "current (version 2)" and (current["versions"], current["batches"]) == (3, 2)
    assert (current["live_files"], current["live_rows"]) == (2, 72 + 36)
    lose_catalog(layout)
    assert reindex(layout).found == "missing"
    shown = distill(layout, "lake", "reindex")
    assert shown.exit_code == 0 and "current (version 2)" in shown.stdout and "108 rows" in shown.stdout


def test_the_table_declares_its_partitions_and_other_readers_prune_on_them(
    layout: Layout, logs: dict[str, Path]
) -> None:
    import polars as pl
    from deltalake import DeltaTable

    for name in ("a", "p"):
        as_json(layout, "ingest", str(logs[name]))
    assert DeltaTable(str(layout.lake)).metadata().partition_columns == ["source", "generation"]
    ppo = pl.scan_delta(str(layout.lake)).filter(pl.col("generation") == 2).collect()
    assert ppo.height == 36 and set(ppo["source"]) == {"ppo"}
    forge = pl.scan_delta(str(layout.lake)).filter(pl.col("generation").is_null()).collect()
    assert forge.height == 72 and set(forge["source"]) == {"forge"}


def test_readers_racing_a_reindex_always_see_the_whole_lake(layout: Layout, logs: dict[str, Path]) -> None:
    for name in ("a", "b", "p"):
        as_json(layout, "ingest", str(logs[name]))
    expected = count(layout)
    code = (
        "import sys; from toolkit.catalog.lake import reindex; from toolkit.layout import Layout\n"
        "for _ in range(15): reindex(Layout.at(sys.argv[1]))"
    )
    rebuilder = subprocess.Popen([sys.executable, "-c", code, str(layout.home)], cwd=ROOT)
    seen: list[int] = []
    try:
        while rebuilder.poll() is None:
            seen.append(count(layout))
    finally:
        assert rebuilder.wait(timeout=120) == 0
    assert seen and set(seen) == {expected}


# Holds the data root's catalog for writing until its standard input closes.
HOLD = (
    "import sys; from toolkit.catalog import Lake; from toolkit.layout import Layout\n"
    "with Lake.open(Layout.at(sys.argv[1]), write=True):\n"
    "    print('holding', flush=True); sys.stdin.read()"
)


def test_a_reader_builds_a_private_index_while_a_writer_holds_a_stale_catalog(
    layout: Layout, logs: dict[str, Path]
) -> None:
    from deltalake import DeltaTable, write_deltalake

    as_json(layout, "ingest", str(logs["a"]))
    rows = count(layout)
    writer = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(layout.home)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "holding"
        table = DeltaTable(str(layout.lake)).to_pyarrow_table().slice(0, 5)
        write_deltalake(str(layout.lake), table, mode="append")  # the held catalog is now behind the log
        with Lake.open(layout).at() as view:
            assert view.read("SELECT count(*) AS n FROM decisions")["n"].to_pylist() == [rows + 5]
            assert view.latest_version == 2
    finally:
        writer.communicate(timeout=60)
    assert writer.returncode == 0


@pytest.mark.parametrize("point", ["reindex.before", "reindex.dropped", "reindex.after"])
def test_a_reindex_killed_mid_way_leaves_every_answer_as_it_was(
    layout: Layout, logs: dict[str, Path], point: str
) -> None:
    import os
    import signal

    from toolkit.failpoints import ENV

    for name in ("a", "p"):
        as_json(layout, "ingest", str(logs[name]))
    answers = (count(layout), as_json(layout, "lake", "history"), as_json(layout, "sql", "FROM batches"))
    code = "import sys; from toolkit.catalog.lake import reindex; from toolkit.layout import Layout; "
    code += "reindex(Layout.at(sys.argv[1]))"
    killed = subprocess.run([sys.executable, "-c", code, str(layout.home)], cwd=ROOT, env={**os.environ, ENV: point})
    assert killed.returncode == -signal.SIGKILL
    assert (count(layout), as_json(layout, "lake", "history"), as_json(layout, "sql", "FROM batches")) == answers
    assert as_json(layout, "lake", "reindex")["found"] == "current (version 2)"


def test_a_reader_that_found_no_table_while_a_first_writer_made_it_reads_the_empty_lake(
    layout: Layout, logs: dict[str, Path]
) -> None:
    """The moment after a reader found a catalog but no table (``connect_reader``) and a first writer committed the
    table: the reader's checks ran on its read-only connection and failed writing the index ("Cannot execute
    statement of type UPDATE ... read-only"; seen by the dashboard as a loop's first ingest landed)."""
    from toolkit.catalog import connect

    with Lake.open(layout, write=True):  # the first writer's catalog, before its first batch
        pass
    before = layout.catalog.read_bytes()
    assert distill(layout, "ingest", str(logs["a"])).exit_code == 0
    for path in layout.home.glob("catalog*"):  # the reader holds the catalog as it was when it looked
        path.unlink()
    layout.catalog.write_bytes(before)
    empty = connect._without_table(layout)  # what the reader does next, the table now made
    try:
        assert empty.execute("SELECT count(*) FROM lake_files").fetchone() == (0,)
    finally:
        empty.close()
    assert count(layout) > 0  # and the next reader sees the table
