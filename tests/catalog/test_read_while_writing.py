"""Reading never waits for a writer, and readers never hold one up (the catalog's read snapshot).

A second process holds the catalog the way a long ingest does; ``distill
sql`` and every read-only open still answer, with what is committed; and a
writer still gets the catalog while a reader has it open.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from tests.factories import make_snapshot
from toolkit.catalog import Catalog, Lake
from toolkit.cli.main import app
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

# Holds the catalog open for writing; on each line read, marks one more batch rejected (a commit); exits on EOF.
WRITER = textwrap.dedent("""
    import sys
    from toolkit.catalog import Lake
    from toolkit.layout import Layout
    with Lake.open(Layout.at(sys.argv[1]), write=True) as lake:
        batches = sorted(lake.view.committed_batches())
        print("holding", flush=True)
        for line in sys.stdin:
            lake.review(batches.pop(), "rejected", line.strip())
            print("committed", flush=True)
""")


@pytest.fixture
def home(write_log, layout: Layout) -> Layout:
    for n in range(3):
        records = [make_snapshot(game_id=f"f{n}-g{i // 4}", seat=i % 4, decision_index=i) for i in range(8)]
        ingest_paths([write_log(f"log-{n}.jsonl", records)], layout)
    return layout


def sql(layout: Layout, query: str) -> str:
    result = CliRunner().invoke(app, ["--home", str(layout.home), "sql", query, "--json"])
    assert result.exit_code == 0, result.output
    return result.output


def rejected(layout: Layout) -> int:
    with Catalog.open(layout) as catalog:
        return catalog.con.sql("SELECT count(*) FROM batches WHERE status = 'rejected'").fetchall()[0][0]


def test_readers_answer_while_another_process_holds_the_catalog_and_see_each_commit(home: Layout) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home.home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "holding"
        assert '"n": 24' in sql(home, "SELECT count(*) AS n FROM decisions")
        assert rejected(home) == 0
        for expected in (1, 2):
            writer.stdin.write(f"commit {expected}\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "committed"
            assert rejected(home) == expected  # the writer's last commit, while it still holds the catalog
        assert '"n": 24' in sql(home, "SELECT count(*) AS n FROM decisions")  # rejected batches stay queryable
    finally:
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0


def test_a_writer_gets_the_catalog_while_a_reader_holds_it_open(home: Layout) -> None:
    with Catalog.open(home) as reader:
        writer = subprocess.run(
            [sys.executable, "-c", WRITER, str(home.home)],
            input="while read\n",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert writer.returncode == 0, writer.stderr
        assert writer.stdout.split() == ["holding", "committed"]
        assert reader.con.sql("SELECT count(*) FROM batches").fetchall() == [(3,)]
    assert rejected(home) == 1


def test_a_snapshot_left_stale_by_a_killed_writer_is_not_read_once_the_catalog_is_free(home: Layout) -> None:
    lake = Lake.open(home, write=True)  # a change of the index whose snapshot refresh never happened
    lake.writer.con.execute(
        "UPDATE batch_states SET status = 'rejected' WHERE batch_id = (SELECT min(batch_id) FROM batch_states)"
    )
    lake.writer.con.close()  # not lake.close(), which refreshes it: as if killed right after
    assert rejected(home) == 1


def test_publishing_the_snapshot_keeps_the_writers_lock(home: Layout) -> None:
    """POSIX record locks go with the first close of any descriptor of the file: the snapshot must not open the
    live catalog from Python, or a second process could open it for writing (and clear the first one's staging)."""
    with Lake.open(home, write=True) as lake:
        lake.review(sorted(lake.view.committed_batches())[0], "accepted")  # a commit: a refresh
        other = subprocess.run(
            [sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1])", str(home.catalog)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode != 0 and "lock" in other.stderr.lower(), other.stderr
