"""The lake's lifecycle: versions, time travel, retire and restore, compaction, vacuum, and the index's truth."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from tests.factories import make_snapshot
from toolkit.catalog import Catalog, Lake
from toolkit.catalog.lifecycle import select_batches
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.errors import UsageError
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

pytestmark = pytest.mark.usefixtures("either_lake")  # on the data root's own lake, and on one shared on S3


def decisions(game: str, games: int = 3, **fields: object) -> list[dict]:
    """Four seats' decisions of ``games`` games (seat 0 wins each)."""
    rows = []
    for g in range(games):
        for i in range(8):
            record = make_snapshot(game_id=f"{game}-{g}", seat=i % 4, decision_index=i)
            record.update(winner_seat=0, seat_won=i % 4 == 0, **fields)
            rows.append(record)
    return rows


def delta_rs_files(layout: Layout, version: int) -> set[str]:
    """The files delta-rs's own reading of the log lists at ``version``."""
    from deltalake import DeltaTable

    actions = DeltaTable(str(layout.lake), version=version).get_add_actions(flatten=True)
    return set(pa.table(actions)["path"].to_pylist())


@pytest.fixture
def lake(write_log, layout: Layout):
    """Ingest one log per (name, records) and return the batch ids, in order."""

    def add(*logs: tuple[str, list]) -> list[str]:
        result = ingest_paths([write_log(name, records) for name, records in logs], layout)
        return result.batches

    return add


def count(layout: Layout, sql: str = "SELECT count(*) FROM decisions", as_of: object = None) -> int:
    with Catalog.open(layout, as_of=as_of) as catalog:
        return int(catalog.con.execute(sql).fetchall()[0][0])


def rows(layout: Layout, as_of: object = None) -> list[tuple]:
    with Catalog.open(layout, as_of=as_of) as catalog:
        return catalog.con.execute(
            "SELECT batch_id, game_id, seat, decision_index FROM decisions ORDER BY ALL"
        ).fetchall()


def test_every_change_is_one_version_with_its_operation_batches_and_reason(layout: Layout, lake) -> None:
    a, b = lake(("a.jsonl", decisions("a")), ("b.jsonl", decisions("b")))
    with Lake.open(layout, write=True) as lake:
        lake.review([a, b], "accepted", "gate passed")
        lake.retire([b], "wrong seats")
        lake.restore([b])
        versions = lake.history()
    assert [(v.version, v.operation, v.batches) for v in versions] == [
        (0, "create", []),
        (1, "ingest", [a]),
        (2, "ingest", [b]),
        (3, "review", [a, b]),
        (4, "retire", [b]),
        (5, "restore", [b]),
    ]
    assert (versions[4].reason, versions[4].rows_removed, versions[5].rows_added) == ("wrong seats", 24, 24)
    assert all(v.distill_version for v in versions)


def test_the_index_lists_at_every_version_exactly_the_files_the_log_does(layout: Layout, lake) -> None:
    a, b, c = lake(("a.jsonl", decisions("a")), ("b.jsonl", decisions("b")), ("c.jsonl", decisions("c")))
    with Lake.open(layout, write=True) as lake:
        lake.retire([b], "bad")
        lake.compact()
        lake.retire([a], "also bad")  # inside the compacted file: rewritten without it
        lake.restore([a, b])
        latest = lake.view.latest_version
        for version in range(latest + 1):
            indexed = {f.path.relative_to(layout.lake).as_posix() for f in lake.view.lake_files(version=version)}
            assert indexed == delta_rs_files(layout, version), version
    assert rows(layout) == rows(layout, as_of=3)  # every row back, none twice


def test_a_retired_batch_is_gone_from_every_view_and_build_and_back_after_a_restore(
    layout: Layout, lake, write_log
) -> None:
    good, bad = lake(("good.jsonl", decisions("g")), ("bad.jsonl", [*decisions("x"), {"broken": 1}]))
    before = build_dataset(layout, BuildConfig(name="mix")).manifest
    with Lake.open(layout, write=True) as lake:
        lake.retire(lake.select_batches(files=[write_log("bad.jsonl", [*decisions("x"), {"broken": 1}])]), "x")
    assert count(layout, "SELECT count(*) FROM decisions WHERE batch_id = 'b'") == 0
    assert count(layout, f"SELECT count(*) FROM decisions WHERE batch_id = '{bad}'") == 0
    assert count(layout, f"SELECT count(*) FROM games WHERE list_contains(batches, '{bad}')") == 0
    assert count(layout, "SELECT count(*) FROM rejects") == 0
    assert count(layout, "SELECT count(*) FROM batches WHERE retired") == 1
    after = build_dataset(layout, BuildConfig(name="mix")).manifest
    assert [i.batch_id for i in after.inputs] == [good] and {i.batch_id for i in before.inputs} == {good, bad}
    with Lake.open(layout, write=True) as lake:
        lake.restore([bad], reason="the seats were right after all")
    assert count(layout, "SELECT count(*) FROM rejects") == 1
    assert build_dataset(layout, BuildConfig(name="mix")).manifest.fingerprint == before.fingerprint


def test_time_travel_by_version_and_by_time(layout: Layout, lake) -> None:
    [a] = lake(("a.jsonl", decisions("a")))
    with Catalog.open(layout) as catalog:
        ingested_at = catalog.con.execute("SELECT committed_at FROM versions WHERE version = 1").fetchall()[0][0]
    [b] = lake(("b.jsonl", decisions("b")))
    with Lake.open(layout, write=True) as lake:
        lake.retire([a], "bad")
    assert count(layout) == 24 and count(layout, as_of=2) == 48 and count(layout, as_of="1") == 24
    assert count(layout, as_of=ingested_at.isoformat()) == 24
    assert count(layout, as_of=(ingested_at.replace(tzinfo=dt.UTC) + dt.timedelta(microseconds=1)).isoformat()) == 24
    assert count(layout, "SELECT count(*) FROM batches", as_of=1) == 1
    assert count(layout, "SELECT count(*) FROM batches WHERE retired", as_of=2) == 0
    with pytest.raises(UsageError, match="no version 9"):
        Catalog.open(layout, as_of=9)
    with pytest.raises(UsageError, match="no version yet"):
        Catalog.open(layout, as_of="2000-01-01T00:00:00")
    with pytest.raises(UsageError, match="neither a version number nor a time"):
        Catalog.open(layout, as_of="yesterday")
    assert b


def test_refusals_change_nothing(layout: Layout, lake) -> None:
    [a] = lake(("a.jsonl", decisions("a")))
    with Lake.open(layout, write=True) as lake:
        with pytest.raises(UsageError, match="no batch 'nope'"):
            lake.retire(["nope"], "why")
        with pytest.raises(UsageError, match="say why"):
            lake.retire([a], " ")
        with pytest.raises(UsageError, match="not retired"):
            lake.restore([a])
        lake.retire([a], "bad")
        with pytest.raises(UsageError, match="retired already"):
            lake.retire([a], "bad again")
        with pytest.raises(UsageError, match="--generation needs --source"):
            lake.select_batches(generation=1)
        with pytest.raises(UsageError, match="no batch holds rows of source 'ppo'"):
            lake.select_batches(source="ppo")
        assert lake.view.latest_version == 2


def test_select_batches_by_source_and_generation(layout: Layout, lake) -> None:
    forge, ppo1, ppo2 = lake(
        ("f.jsonl", decisions("f")),
        ("p1.jsonl", decisions("p", source="ppo", model_version="gen-001", generation=1)),
        ("p2.jsonl", decisions("q", source="ppo", model_version="gen-002", generation=2)),
    )
    with Catalog.open(layout) as catalog:
        assert sorted(select_batches(catalog, source="ppo")) == sorted([ppo1, ppo2])
        assert select_batches(catalog, source="ppo", generation=2) == [ppo2]
        assert select_batches(catalog, [forge], source="ppo", generation=1) == [forge, ppo1]


def test_compaction_merges_small_neighbours_and_changes_no_build(layout: Layout, lake) -> None:
    lake(*[(f"{g}.jsonl", decisions(g)) for g in "abcd"])
    lake(("p.jsonl", decisions("p", source="ppo", model_version="gen-001", generation=1)))
    build = build_dataset(layout, BuildConfig(name="all")).dataset
    first = {p.name: p.read_bytes() for p in build.files("train")}
    with Lake.open(layout, write=True) as lake:
        record = lake.compact()
        assert record is not None and (record.files_removed, record.files_added) == (4, 1)  # ppo stays alone
        assert record.rows_added == record.rows_removed == 96
        assert lake.compact() is None
    assert count(layout) == 120
    (layout.builds / "all").rename(layout.home / "old-builds")
    again = build_dataset(layout, BuildConfig(name="all")).dataset
    assert again.fingerprint == build.fingerprint
    assert {p.name: p.read_bytes() for p in again.files("train")} == first


def test_vacuum_deletes_what_no_version_in_the_retention_needs(layout: Layout, lake) -> None:
    a, b = lake(("a.jsonl", decisions("a")), ("b.jsonl", decisions("b")))
    stray = layout.lake / "source=forge" / "generation=__HIVE_DEFAULT_PARTITION__" / "stray.parquet"
    stray.write_bytes(b"not listed by any version")
    with Lake.open(layout, write=True) as lake:
        lake.retire([a], "bad")
        kept = lake.vacuum(retain_days=7)  # the retirement is minutes old: only the stray file goes
        assert (kept.files_deleted, kept.horizon) == (1, 0)
        gone = lake.vacuum(retain_days=0)
        assert (gone.files_deleted, gone.horizon) == (1, 3)
        assert lake.vacuum(retain_days=0).version is None  # nothing left to delete
    assert not stray.exists() and count(layout) == 24
    assert count(layout, as_of=3) == 24
    with pytest.raises(UsageError, match="oldest readable version is 3"):
        Catalog.open(layout, as_of=2)
    with Lake.open(layout, write=True) as lake, pytest.raises(UsageError, match="a vacuum deleted its files"):
        lake.restore([a])


def test_a_vacuumed_batch_comes_back_by_ingesting_its_file_again(layout: Layout, lake, write_log) -> None:
    [a] = lake(("a.jsonl", decisions("a")))
    again = ingest_paths([write_log("a.jsonl", decisions("a"))], layout)
    assert again.files[0].status == "already_ingested"
    with Lake.open(layout, write=True) as lake:
        lake.retire([a], "bad")
    note = ingest_paths([write_log("a.jsonl", decisions("a"))], layout).files[0].note
    assert f"distill lake restore {a}" in note
    with Lake.open(layout, write=True) as lake:
        lake.vacuum(retain_days=0)
    back = ingest_paths([write_log("a.jsonl", decisions("a"))], layout)
    assert back.files[0].status == "ingested" and back.batches == [a]
    assert count(layout) == 24 and count(layout, "SELECT count(*) FROM batches WHERE NOT retired") == 1


def test_a_build_reads_the_version_it_started_from_while_a_batch_is_retired(layout: Layout, lake, monkeypatch) -> None:
    from toolkit.datasets import build as build_module

    a, b = lake(("a.jsonl", decisions("a", games=6)), ("b.jsonl", decisions("b", games=6)))
    quiet = build_dataset(layout, BuildConfig(name="quiet")).manifest
    summary = build_module.episode_summary

    def retire_meanwhile(*args: object, **kwargs: object) -> object:
        with Lake.open(layout, write=True) as lake:
            lake.retire([b], "retired while the build ran")
        return summary(*args, **kwargs)

    monkeypatch.setattr(build_module, "episode_summary", retire_meanwhile)
    busy = build_dataset(layout, BuildConfig(name="busy")).manifest
    assert (busy.lake_version, quiet.lake_version) == (2, 2)
    assert busy.splits["train"].rows == quiet.splits["train"].rows
    assert [i.batch_id for i in busy.inputs] == [a, b]


def test_build_as_of_reproduces_an_earlier_build_after_later_changes(layout: Layout, lake, tmp_path: Path) -> None:
    a, b = lake(("a.jsonl", decisions("a", games=5)), ("b.jsonl", decisions("b", games=5)))
    original = build_dataset(layout, BuildConfig(name="mix")).dataset
    saved = {p.name: p.read_bytes() for p in (*original.files("train"), *original.files("holdout"))}
    version = original.manifest.lake_version
    lake(("c.jsonl", decisions("c")))
    with Lake.open(layout, write=True) as lake:
        lake.retire([a], "bad")
        lake.compact()
    (layout.builds / "mix").rename(tmp_path / "gone")
    assert build_dataset(layout, BuildConfig(name="mix")).manifest.fingerprint != original.fingerprint
    (layout.builds / "mix").rename(tmp_path / "gone-too")
    again = build_dataset(layout, BuildConfig(name="mix"), as_of=version).dataset
    assert again.fingerprint == original.fingerprint and again.manifest.lake_version == version
    assert {p.name: p.read_bytes() for p in (*again.files("train"), *again.files("holdout"))} == saved
    assert b


def test_a_writers_views_are_made_when_first_read_and_show_the_newest_version(
    layout: Layout, lake, monkeypatch
) -> None:
    """A writer shows each version it commits (and the one it opened at), but makes the views only when something
    reads them: most writers commit and close unread. Read, they are of the newest version, made once a version."""
    from toolkit.catalog import views

    (batch,) = lake(("a.jsonl", decisions("a")))
    made: list[int] = []
    register = views.register

    def counted(con, layout_, version: int, **options: object) -> None:
        made.append(version)
        register(con, layout_, version, **options)

    monkeypatch.setattr(views, "register", counted)
    with Lake.open(layout, write=True) as writer:
        opened_at = writer.version()
        assert made == []  # opened and asked its version: no view made
        assert [b.status for b in writer.batches()] == ["ingested"]
        assert [b.status for b in writer.batches()] == ["ingested"] and made == [opened_at]  # made once
        writer.review(batch, "accepted", "a gate")
        assert made == [opened_at]  # committed: shown, not made
        assert [b.status for b in writer.batches()] == ["accepted"] and made == [opened_at, opened_at + 1]
        writer.review(batch, "rejected", "another gate")  # shown, unread: then the connection itself is asked
        assert writer.view.con.execute("SELECT status FROM batches").fetchall() == [("rejected",)]
    assert made == [opened_at, opened_at + 1, opened_at + 2]
    assert count(layout) == len(decisions("a")) and made[-1] == opened_at + 2  # a reader makes its own at open
    made.clear()
    with Lake.open(layout, write=True) as writer:
        writer.vacuum(retain_days=0)  # reads the index's tables alone
        writer.compact(target_mb=1)
    assert made == []
