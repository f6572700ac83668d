"""The manifest's record of when, from which lake version and by which Distill a build was made, and what the
fingerprint leaves out of it."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil

import orjson

from tests.datasets.conftest import game_records, restamp
from toolkit import __version__
from toolkit.datasets.build import FINGERPRINT_CHARS, build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import HOLDOUT, MANIFEST_FILE, TRAIN, UNFINGERPRINTED, open_dataset, read_manifest
from toolkit.datasets.inventory import list_inventory
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout


def _fill(lake, name: str = "a") -> None:
    lake(f"{name}.jsonl", *[game_records(f"{name}-{i}") for i in range(30)])


def _new_version(layout: Layout) -> None:
    """A change of the lake that changes nothing a forge-only build reads (another source's batch)."""
    path = layout.home.parent / "ppo.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in game_records("p-0", "ppo", generation=1)))
    ingest_paths([path], layout)


def _fingerprint(body: dict) -> str:
    text = json.dumps(body, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    return hashlib.sha256(text.encode()).hexdigest()[:FINGERPRINT_CHARS]


def test_a_manifest_records_when_from_which_lake_version_and_by_which_distill_it_was_built(
    layout: Layout, lake
) -> None:
    _fill(lake)
    _fill(lake, "b")
    manifest = build_dataset(layout, BuildConfig(name="d")).manifest
    assert manifest.lake_version == 2 and manifest.distill_version == __version__  # versions: create, 2 ingests
    assert manifest.created_at is not None and manifest.created_at.utcoffset() == dt.timedelta(0)
    written = json.loads((layout.build_dir("d", manifest.fingerprint) / MANIFEST_FILE).read_text())
    assert written["created_at"].endswith("Z") and written["lake_version"] == 2
    assert read_manifest(layout.build_dir("d", manifest.fingerprint)) == manifest


def test_the_fingerprint_and_the_split_files_do_not_depend_on_the_time_or_the_lake_version(
    layout: Layout, lake, tmp_path
) -> None:
    _fill(lake)
    first = build_dataset(layout, BuildConfig(name="d", sources=["forge"])).manifest
    other = Layout.at(tmp_path / "other")
    shutil.copytree(layout.home, other.home, ignore=shutil.ignore_patterns("builds"))
    _new_version(other)
    second = build_dataset(other, BuildConfig(name="d", sources=["forge"])).manifest
    assert (first.lake_version, second.lake_version) == (1, 2)
    assert second.fingerprint == first.fingerprint
    assert [f.sha256 for s in (TRAIN, HOLDOUT) for f in second.splits[s].files] == [
        f.sha256 for s in (TRAIN, HOLDOUT) for f in first.splits[s].files
    ]
    assert _fingerprint(second.fingerprint_body()) == second.fingerprint
    assert not UNFINGERPRINTED & second.fingerprint_body().keys()


def test_a_reused_build_keeps_its_first_created_at_and_lake_version(layout: Layout, lake) -> None:
    _fill(lake)
    first = build_dataset(layout, BuildConfig(name="d", sources=["forge"]))
    _new_version(layout)
    again = build_dataset(layout, BuildConfig(name="d", sources=["forge"]))
    assert again.reused and again.manifest.fingerprint == first.manifest.fingerprint
    assert (again.manifest.created_at, again.manifest.lake_version) == (first.manifest.created_at, 1)


def test_a_manifest_written_before_these_fields_still_reads_and_lists_by_its_folder_time(layout: Layout, lake) -> None:
    _fill(lake)
    dataset = build_dataset(layout, BuildConfig(name="d")).dataset
    old = restamp(dataset, None, drop=["created_at", "lake_version"])
    assert "created_at" not in (old.root / MANIFEST_FILE).read_text()
    assert (old.manifest.created_at, old.manifest.lake_version) == (None, None)
    assert _fingerprint(old.manifest.fingerprint_body()) == dataset.fingerprint  # it hashes what it always did
    assert open_dataset(layout, "d").manifest == old.manifest
    (entry,) = list_inventory(layout).builds
    assert not entry.created_recorded and entry.lake_version is None
    assert entry.created_at == dt.datetime.fromtimestamp(old.root.stat().st_mtime, dt.UTC)
