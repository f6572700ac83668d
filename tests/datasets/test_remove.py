"""Removing and pruning builds: what goes, what stays (protected builds), where LATEST points, and that nothing
else is disturbed."""

from __future__ import annotations

import os

import pytest

from tests.datasets.conftest import game_records, restamp
from toolkit.datasets.build import build_dataset, build_lock
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import Dataset, build_fingerprints, open_dataset, read_latest
from toolkit.datasets.inventory import ModelRef
from toolkit.datasets.remove import ProtectedBuildError, prune_builds, remove_build
from toolkit.errors import BuildError, UsageError
from toolkit.layout import Layout


def _builds(layout: Layout, lake, seeds: tuple[int, ...] = (0, 1, 2, 3)) -> list[Dataset]:
    """Builds of ``d`` dated a day apart in seed order; then LATEST points at the first, as after a rebuild."""
    lake("a.jsonl", *[game_records(f"f-{i}") for i in range(20)])
    built = [build_dataset(layout, BuildConfig(name="d", seed=seed)).dataset for seed in seeds]
    build_dataset(layout, BuildConfig(name="d", seed=seeds[0]))  # reused: LATEST is the oldest build now
    return [restamp(d, f"2030-01-0{i + 1}T00:00:00Z") for i, d in enumerate(built)]


def _named(dataset: Dataset, model: str = "gen-000-student") -> ModelRef:
    return ModelRef(dataset=dataset.name, fingerprint=dataset.fingerprint, run="nightly", model=model)


def test_rm_removes_one_build_and_moves_latest_to_the_newest_left(layout: Layout, lake) -> None:
    first, second, third, fourth = _builds(layout, lake)
    assert read_latest(layout, "d") == first.fingerprint
    removal = remove_build(layout, "d", first.fingerprint)
    assert removal.removed == [first.fingerprint] and removal.latest == fourth.fingerprint
    assert removal.kept == [fourth.fingerprint, third.fingerprint, second.fingerprint]
    assert not first.root.exists() and read_latest(layout, "d") == fourth.fingerprint
    assert open_dataset(layout, "d").fingerprint == fourth.fingerprint
    assert not (layout.build_staging / "d").exists()
    remove_build(layout, "d", third.fingerprint)  # not the latest: LATEST stays
    assert read_latest(layout, "d") == fourth.fingerprint


def test_removing_the_last_build_removes_latest_and_the_name(layout: Layout, lake) -> None:
    (only,) = _builds(layout, lake, seeds=(0,))
    removal = remove_build(layout, "d", only.fingerprint)
    assert removal.latest is None and removal.kept == []
    assert not (layout.builds / "d").exists()
    with pytest.raises(BuildError, match="no dataset named 'd'"):
        open_dataset(layout, "d")


def test_rm_of_a_build_a_promoted_model_names_is_refused_and_changes_nothing(layout: Layout, lake) -> None:
    first, second, *_ = _builds(layout, lake)
    before = (build_fingerprints(layout, "d"), read_latest(layout, "d"))
    with pytest.raises(ProtectedBuildError, match="named by promoted models: nightly/gen-000-student") as error:
        remove_build(layout, "d", first.fingerprint, models=[_named(first)])
    assert error.value.models == {first.fingerprint: ["nightly/gen-000-student"]} and error.value.exit_code in (1, 2)
    assert (build_fingerprints(layout, "d"), read_latest(layout, "d")) == before
    forced = remove_build(layout, "d", first.fingerprint, models=[_named(first)], force=True)
    assert forced.forced == {first.fingerprint: ["nightly/gen-000-student"]} and not first.root.exists()


def test_prune_keeps_the_newest_and_the_builds_promoted_models_name(layout: Layout, lake) -> None:
    first, second, third, fourth = _builds(layout, lake)
    models = [_named(first)]
    dry = prune_builds(layout, "d", keep=1, models=models, dry_run=True)
    assert dry.dry_run and dry.removed == sorted([second.fingerprint, third.fingerprint])
    assert len(build_fingerprints(layout, "d")) == 4 and read_latest(layout, "d") == first.fingerprint
    pruned = prune_builds(layout, "d", keep=1, models=models)
    assert pruned.removed == dry.removed and pruned.protected == {first.fingerprint: ["nightly/gen-000-student"]}
    assert build_fingerprints(layout, "d") == sorted([first.fingerprint, fourth.fingerprint])
    assert read_latest(layout, "d") == first.fingerprint  # it was not removed: LATEST stays
    forced = prune_builds(layout, "d", keep=1, models=models, force=True)
    assert forced.removed == [first.fingerprint] and forced.forced == {first.fingerprint: ["nightly/gen-000-student"]}
    assert build_fingerprints(layout, "d") == [fourth.fingerprint] and read_latest(layout, "d") == fourth.fingerprint


def test_prune_dates_builds_without_created_at_by_their_folder_time(layout: Layout, lake) -> None:
    builds = _builds(layout, lake)
    by_folder_time = [builds[2], builds[0], builds[3], builds[1]]  # oldest first
    for day, dataset in enumerate(by_folder_time):
        restamp(dataset, None, drop=["created_at"])
        os.utime(dataset.root, (1_900_000_000 + day * 86_400,) * 2)
    pruned = prune_builds(layout, "d", keep=2)
    assert pruned.kept == [builds[1].fingerprint, builds[3].fingerprint]
    assert pruned.removed == sorted([builds[2].fingerprint, builds[0].fingerprint])
    assert read_latest(layout, "d") == builds[1].fingerprint


def test_removal_waits_for_no_build_of_the_name_and_leaves_other_names_alone(layout: Layout, lake) -> None:
    first, *_ = _builds(layout, lake)
    other = build_dataset(layout, BuildConfig(name="other")).dataset
    writing = layout.build_staging / "other" / "0123456789ab"
    writing.mkdir(parents=True)
    with build_lock(layout, "d"):
        with pytest.raises(BuildError, match="being written by another process"):
            remove_build(layout, "d", first.fingerprint)
        with pytest.raises(BuildError, match="being written by another process"):
            prune_builds(layout, "d", keep=0)
    assert first.root.exists()
    leftover = layout.build_staging / "d" / "removing-from-a-crash"
    leftover.mkdir(parents=True)
    prune_builds(layout, "d", keep=0)
    assert build_fingerprints(layout, "d") == [] and not leftover.exists()
    assert writing.exists() and other.root.exists() and read_latest(layout, "other") == other.fingerprint


def test_malformed_names_and_fingerprints_are_usage_errors(layout: Layout, lake) -> None:
    _builds(layout, lake, seeds=(0,))
    with pytest.raises(UsageError, match="not a build fingerprint"):
        remove_build(layout, "d", "../../etc")
    with pytest.raises(UsageError, match="not a dataset name"):
        prune_builds(layout, "../d", keep=1)
    with pytest.raises(UsageError, match="--keep -1"):
        prune_builds(layout, "d", keep=-1)
    with pytest.raises(BuildError, match="no build 0123456789abcdef of dataset 'd'"):
        remove_build(layout, "d", "0123456789abcdef")
