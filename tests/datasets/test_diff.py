"""Comparing two builds of a name: rows by source, generation and batch; labels; config; versions; holdout."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.datasets.conftest import game_records
from toolkit.catalog import Catalog, Lake
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig, HoldoutConfig
from toolkit.datasets.dataset import HOLDOUT, LABEL, TRAIN
from toolkit.datasets.diff import diff_builds
from toolkit.errors import BuildError
from toolkit.layout import Layout
from toolkit.schema import columns as col


def _lake(lake) -> None:
    """Forge games without generation, PPO games of generation 1 (12 decisions each); batch id per source."""
    lake("forge.jsonl", *[game_records(f"f-{i}") for i in range(30)])
    lake("ppo.jsonl", *[game_records(f"p-{i}", "ppo", generation=1) for i in range(10)])


def _batches(layout: Layout) -> dict[str, str]:
    with Catalog.open(layout) as catalog:
        return {b.sources[0]: b.batch_id for b in catalog.batches()}


def test_added_rows_are_counted_by_split_source_generation_and_batch(layout: Layout, lake) -> None:
    _lake(lake)
    forge = build_dataset(layout, BuildConfig(name="d", sources=["forge"])).dataset
    with Lake.open(layout, write=True) as lake:  # a new version of the lake between the two builds
        lake.review(list(_batches(layout).values()), "accepted")
    both = build_dataset(layout, BuildConfig(name="d")).dataset
    diff = diff_builds(layout, "d", forge.fingerprint, both.fingerprint)
    (change,) = diff.rows
    assert change.model_dump() == {
        "split": TRAIN,
        "source": "ppo",
        "generation": 1,
        "batch_id": _batches(layout)["ppo"],
        "added": 120,
        "removed": 0,
    }
    assert (diff.added, diff.removed, diff.rows_after - diff.rows_before) == (120, 0, 120)
    assert [(c.field, c.before, c.after) for c in diff.config] == [("sources", ["forge"], None)]
    assert [(c.field, c.before, c.after) for c in diff.versions] == [("lake_version", 2, 3)]
    assert diff.holdout.identical and diff.holdout.same_files and diff.holdout.settings == []
    back = diff_builds(layout, "d", both.fingerprint, forge.fingerprint)
    assert (back.added, back.removed, back.rows[0].removed) == (0, 120, 120)


def test_label_distribution_per_source_counts_each_builds_training_rows(layout: Layout, lake) -> None:
    _lake(lake)
    forge = build_dataset(layout, BuildConfig(name="d", sources=["forge"])).dataset
    both = build_dataset(layout, BuildConfig(name="d")).dataset
    diff = diff_builds(layout, "d", forge.fingerprint, both.fingerprint)
    for dataset, side in ((forge, "before"), (both, "after")):
        rows = dataset.read(TRAIN, [col.SOURCE, LABEL]).to_pylist()
        expected = Counter((r[col.SOURCE], r[LABEL]) for r in rows)
        found = {(s.source, s.label): getattr(s, side) for s in diff.labels if getattr(s, side)}
        assert found == dict(expected)
    ppo = [s for s in diff.labels if s.source == "ppo"]
    assert ppo and all(s.before == 0 and s.share_before == 0.0 for s in ppo)
    assert sum(s.share_after for s in ppo) == pytest.approx(1.0)
    forge_shifts = [s for s in diff.labels if s.source == "forge"]
    assert all(s.share_change == 0.0 for s in forge_shifts)  # forge's training rows did not change


def test_another_holdout_salt_moves_games_between_splits_and_says_so(layout: Layout, lake) -> None:
    _lake(lake)
    a = build_dataset(layout, BuildConfig(name="d")).dataset
    b = build_dataset(layout, BuildConfig(name="d", holdout=HoldoutConfig(salt="another"))).dataset
    diff = diff_builds(layout, "d", a.fingerprint, b.fingerprint)
    assert not diff.holdout.identical and not diff.holdout.same_files
    assert [c.field for c in diff.holdout.settings] == ["salt"] and [c.field for c in diff.config] == ["holdout.salt"]
    held = {r.split: (r.added, r.removed) for r in diff.rows if r.source == "forge"}
    assert held[HOLDOUT] == (diff.holdout.added, diff.holdout.removed)
    assert held[TRAIN] == (diff.holdout.removed, diff.holdout.added)  # what leaves the holdout joins train
    assert diff.rows_before == diff.rows_after == 480


def test_a_build_compared_with_itself_has_no_differences(layout: Layout, lake) -> None:
    _lake(lake)
    a = build_dataset(layout, BuildConfig(name="d")).dataset
    diff = diff_builds(layout, "d", a.fingerprint, a.fingerprint)
    assert diff.identical and diff.rows == [] and all(s.share_change == 0 for s in diff.labels)


def test_a_missing_build_is_an_error_naming_the_builds_that_exist(layout: Layout, lake) -> None:
    _lake(lake)
    a = build_dataset(layout, BuildConfig(name="d")).dataset
    with pytest.raises(BuildError, match="no build 0123456789abcdef of dataset 'd'") as error:
        diff_builds(layout, "d", a.fingerprint, "0123456789abcdef")
    assert a.fingerprint in (error.value.hint or "")
