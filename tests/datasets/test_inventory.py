"""Listing builds: every build or each name's latest, the models that name them, and never failing on one build."""

from __future__ import annotations

import shutil

import pytest

from tests.datasets.conftest import game_records, restamp
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import MANIFEST_FILE, Dataset, list_builds, list_names, open_dataset
from toolkit.datasets.inventory import ModelRef, list_inventory
from toolkit.errors import BuildError
from toolkit.layout import Layout


def _builds(layout: Layout, lake, name: str = "d", seeds: tuple[int, ...] = (0, 1, 2)) -> list[Dataset]:
    """Builds of ``name`` that differ by seed, dated a day apart in seed order (the last one is the latest)."""
    lake("a.jsonl", *[game_records(f"f-{i}") for i in range(20)])
    built = [build_dataset(layout, BuildConfig(name=name, seed=seed)).dataset for seed in seeds]
    return [restamp(d, f"2030-01-0{i + 1}T00:00:00Z") for i, d in enumerate(built)]


def test_every_build_is_listed_newest_first_and_the_latest_is_marked(layout: Layout, lake) -> None:
    oldest, middle, newest = _builds(layout, lake)
    every = list_inventory(layout).builds
    assert [e.fingerprint for e in every] == [newest.fingerprint, middle.fingerprint, oldest.fingerprint]
    assert [e.latest for e in every] == [True, False, False]
    assert [e.fingerprint for e in list_inventory(layout, every=False).builds] == [newest.fingerprint]
    assert [d.fingerprint for d in list_builds(layout, "d")] == [e.fingerprint for e in reversed(every)]
    assert every[0].train.rows == newest.manifest.splits["train"].rows and every[0].distill_version


def test_a_build_lists_the_promoted_models_whose_cards_name_it(layout: Layout, lake) -> None:
    oldest, _, newest = _builds(layout, lake)
    models = [
        ModelRef(dataset="d", fingerprint=oldest.fingerprint, run="nightly", model="gen-000-student"),
        ModelRef(dataset="d", fingerprint=oldest.fingerprint, run="nightly", model="gen-001-ppo"),
        ModelRef(dataset="other", fingerprint=newest.fingerprint, run="x", model="gen-000-student"),
    ]
    by_fingerprint = {e.fingerprint: e.models for e in list_inventory(layout, models=models).builds}
    assert by_fingerprint[oldest.fingerprint] == ["nightly/gen-000-student", "nightly/gen-001-ppo"]
    assert by_fingerprint[newest.fingerprint] == []


def test_a_vanished_latest_build_is_a_warning_and_the_rest_are_listed(layout: Layout, lake, tmp_path) -> None:
    oldest, middle, newest = _builds(layout, lake)
    shutil.move(newest.root, tmp_path / "elsewhere")
    listed = list_inventory(layout)
    assert [e.fingerprint for e in listed.builds] == [middle.fingerprint, oldest.fingerprint]
    (warning,) = listed.warnings
    assert f"the latest build of 'd', {newest.fingerprint}" in warning and middle.fingerprint in warning
    assert list_inventory(layout, every=False).builds == [] and list_names(layout) == ["d"]
    with pytest.raises(BuildError, match=f"latest build of dataset 'd', {newest.fingerprint}.*is gone") as error:
        open_dataset(layout, "d")
    assert oldest.fingerprint in (error.value.hint or "") and middle.fingerprint in (error.value.hint or "")
    assert open_dataset(layout, "d", middle.fingerprint).fingerprint == middle.fingerprint


def test_an_unreadable_manifest_is_a_warning_and_the_rest_are_listed(layout: Layout, lake) -> None:
    oldest, middle, newest = _builds(layout, lake)
    (middle.root / MANIFEST_FILE).write_text("{not json", encoding="utf-8")
    listed = list_inventory(layout)
    assert [e.fingerprint for e in listed.builds] == [newest.fingerprint, oldest.fingerprint]
    assert len(listed.warnings) == 1 and f"skipped build {middle.fingerprint}" in listed.warnings[0]


def test_a_missing_build_names_the_builds_that_exist(layout: Layout, lake) -> None:
    oldest, *_ = _builds(layout, lake, seeds=(0,))
    with pytest.raises(BuildError, match="no build 0123456789abcdef of dataset 'd'") as error:
        open_dataset(layout, "d", "0123456789abcdef")
    assert oldest.fingerprint in (error.value.hint or "")
