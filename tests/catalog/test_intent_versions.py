"""A staging intent is read through the versioned reader: one of today's format is read, one an older Distill wrote
(format 2, its version under ``format``) is migrated, and one of a newer format is not acted on."""

from __future__ import annotations

import json
from pathlib import Path

from toolkit.catalog import intent
from toolkit.layout import INTENT_FORMAT_VERSION

FILES = [{"name": "lake/source=forge/generation=0/batch-b1.parquet", "size": 10, "tail_sha256": "0" * 64}]


def _written(folder: Path, body: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / intent.INTENT_FILE).write_text(json.dumps(body), encoding="utf-8")
    return folder


def test_todays_intent_reads_back_as_written(tmp_path: Path) -> None:
    written = intent.Intent(token="t" * 32, base_version=4, files=[intent.MovedFile(**FILES[0])])
    intent.write(tmp_path, written)
    assert json.loads((tmp_path / intent.INTENT_FILE).read_text())["format_version"] == INTENT_FORMAT_VERSION
    assert intent.read(tmp_path) == written


def test_a_format_2_intent_is_migrated_and_acted_on(tmp_path: Path) -> None:
    body = {"format": 2, "token": "t" * 32, "base_version": 4, "files": FILES}
    found = intent.read(_written(tmp_path / "two", body))
    assert found is not None and (found.token, found.base_version, found.files[0].name) == (
        "t" * 32,
        4,
        FILES[0]["name"],
    )
    unversioned = {key: value for key, value in body.items() if key != "format"}  # the same, with no version at all
    assert intent.read(_written(tmp_path / "none", unversioned)) == found


def test_a_newer_or_broken_intent_is_not_acted_on(tmp_path: Path) -> None:
    newer = {"format_version": INTENT_FORMAT_VERSION + 1, "token": "t", "base_version": 0, "files": FILES}
    assert intent.read(_written(tmp_path / "newer", newer)) is None
    assert intent.read(_written(tmp_path / "extra", {**newer, "format_version": 3, "undo": "rm -rf"})) is None
    for other in (3, 99, "2", None, 2.0):  # the old field naming another format than 2: another Distill's
        older = {"format": other, "token": "t", "base_version": 0, "files": FILES}
        assert intent.read(_written(tmp_path / f"format-{other}", older)) is None, other
    (tmp_path / "text" / intent.INTENT_FILE).parent.mkdir()
    (tmp_path / "text" / intent.INTENT_FILE).write_text("not json")
    assert intent.read(tmp_path / "text") is None and intent.read(tmp_path / "missing") is None
