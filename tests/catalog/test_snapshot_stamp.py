"""The catalog snapshot's stamp is a versioned file: today's and an older Distill's (no version) read as fresh, a
newer Distill's or a broken one as not fresh (a reader then reads the live catalog)."""

from __future__ import annotations

import json
from pathlib import Path

from toolkit.catalog import Lake, snapshot
from toolkit.layout import STAMP_FORMAT_VERSION, Layout


def test_the_stamp_is_versioned_and_an_unknown_one_is_never_taken_for_fresh(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    with Lake.open(layout, write=True):
        pass
    path = layout.catalog_snapshot_stamp
    written = json.loads(path.read_text())
    assert written["format_version"] == STAMP_FORMAT_VERSION and snapshot.is_fresh(layout)
    path.write_text(json.dumps({"stamp": written["stamp"]}))  # as Distill wrote it before the stamp had a version
    assert snapshot.is_fresh(layout)
    for body in ({**written, "format_version": 2}, {**written, "stamp": "x"}, [written], {**written, "more": 1}):
        path.write_text(json.dumps(body))
        assert not snapshot.is_fresh(layout), body
    path.write_text("{")
    assert not snapshot.is_fresh(layout)


def test_a_writer_copies_the_catalog_for_readers_only_when_it_changed(tmp_path: Path) -> None:
    from tests.datasets.conftest import game_records
    from toolkit.ingest.ingest import ingest_paths

    layout = Layout.at(tmp_path / "home")
    with Lake.open(layout, write=True):
        pass
    taken = layout.catalog_snapshot.stat()
    with Lake.open(layout, write=True):  # nothing written: the snapshot stays the one taken, and fresh
        pass
    again = layout.catalog_snapshot.stat()
    assert (again.st_ino, again.st_mtime_ns) == (taken.st_ino, taken.st_mtime_ns) and snapshot.is_fresh(layout)
    log = tmp_path / "forge.jsonl"
    log.write_bytes(b"\n".join(json.dumps(r).encode() for r in game_records("g-1", "forge")) + b"\n")
    ingest_paths([log], layout)  # a commit: a new snapshot, holding it
    assert layout.catalog_snapshot.stat().st_ino != taken.st_ino and snapshot.is_fresh(layout)
    with Lake.open(layout) as lake:  # read from the snapshot: the commit is in it
        assert [b.rows_valid > 0 for b in lake.batches()] == [True]
