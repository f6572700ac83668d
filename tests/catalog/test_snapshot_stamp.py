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
