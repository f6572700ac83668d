"""``distill datasets list | show | rm | prune | diff``: output, protected builds, warnings and exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.datasets.conftest import game_records, restamp
from toolkit.cli.main import app
from toolkit.datasets.dataset import build_fingerprints, list_builds, read_latest
from toolkit.layout import Layout

runner = CliRunner()


def _distill(layout: Layout, *args: str):
    return runner.invoke(app, ["--home", str(layout.home), *args])


@pytest.fixture
def builds(layout: Layout, write_log) -> list[str]:
    """Three builds of ``d`` (seeds 0, 1, 2), dated a day apart: their fingerprints, oldest first."""
    rows = [row for i in range(30) for row in game_records(f"f-{i}")]
    rows += [row for i in range(10) for row in game_records(f"p-{i}", "ppo", generation=1)]
    assert _distill(layout, "ingest", str(write_log("a.jsonl", rows))).exit_code == 0
    for seed in range(3):
        assert _distill(layout, "build", "--name", "d", "--seed", str(seed), "--weight", "ppo=0.5").exit_code == 0
    for day, dataset in enumerate(list_builds(layout, "d")):
        restamp(dataset, f"2030-01-0{day + 1}T00:00:00Z")
    return [d.fingerprint for d in list_builds(layout, "d")]


def _promote(layout: Layout, fingerprint: str, run: str, *, relative: bool = False) -> Path:
    """A loop run ``run`` whose promoted student's card names build ``fingerprint`` of ``d``; returns the card."""
    import torch

    from toolkit.loop.state import LoopState, PromotedModel, RunFolder, now
    from toolkit.train.checkpoints import DatasetRef, save_checkpoint

    folder = RunFolder(layout, run)
    card = save_checkpoint(
        folder.gen_dir(0),
        {"w": torch.zeros(2)},
        kind="bc",
        run_id="gen-000-try1",
        tag="best",
        arch={},
        dataset=DatasetRef(name="d", fingerprint=fingerprint),
    )
    checkpoint = str(card.relative_to(layout.home)) if relative else str(card)
    promoted = PromotedModel(generation=0, kind="student", name="gen-000-student", checkpoint=checkpoint)
    folder.save(LoopState(name=run, started_at=now(), updated_at=now(), promoted=[promoted]))
    return card


def test_list_all_shows_every_build_with_its_time_versions_and_the_models_naming_it(
    layout: Layout, builds: list[str]
) -> None:
    oldest, _, newest = builds
    _promote(layout, oldest, "a")
    _promote(layout, oldest, "b", relative=True)  # a card path relative to the data root
    every = _distill(layout, "datasets", "list", "--all", "--json")
    assert every.exit_code == 0, every.output
    listed = json.loads(every.stdout)
    assert [e["fingerprint"] for e in listed] == list(reversed(builds))
    assert [e["created_at"] for e in listed] == ["2030-01-03T00:00:00Z", "2030-01-02T00:00:00Z", "2030-01-01T00:00:00Z"]
    assert listed[-1]["models"] == ["a/gen-000-student", "b/gen-000-student"] and listed[0]["models"] == []
    assert {"lake_version", "distill_version", "train", "holdout", "latest", "path"} <= listed[0].keys()
    latest = json.loads(_distill(layout, "datasets", "list", "--json").stdout)
    assert [e["fingerprint"] for e in latest] == [newest] and latest[0]["latest"]
    table = _distill(layout, "datasets", "list", "--all")
    assert table.exit_code == 0 and all(fingerprint in table.stdout for fingerprint in builds)
    assert f"{newest} *" in table.stdout and "2030-01-01 00:00" in table.stdout


def test_list_and_show_warn_and_go_on_when_the_latest_build_folder_vanished(
    layout: Layout, builds: list[str], tmp_path: Path
) -> None:
    oldest, middle, newest = builds
    shutil.move(layout.build_dir("d", newest), tmp_path / "gone")
    listed = _distill(layout, "datasets", "list")
    assert listed.exit_code == 0 and f"the latest build of 'd', {newest}" in listed.stderr
    every = _distill(layout, "datasets", "list", "--all", "--json")
    assert every.exit_code == 0 and [e["fingerprint"] for e in json.loads(every.stdout)] == [middle, oldest]
    shown = _distill(layout, "datasets", "show", "d")
    assert shown.exit_code == 1 and newest in shown.stderr and middle in shown.stderr and oldest in shown.stderr
    assert _distill(layout, "datasets", "show", "d", "--fingerprint", middle).exit_code == 0


def test_rm_refuses_a_build_a_promoted_model_names_and_changes_nothing(layout: Layout, builds: list[str]) -> None:
    oldest, middle, newest = builds
    _promote(layout, newest, "nightly")
    refused = _distill(layout, "datasets", "rm", "d", newest)
    assert refused.exit_code == 1 and "named by promoted models: nightly/gen-000-student" in refused.stderr
    assert "--force" in refused.stderr
    assert build_fingerprints(layout, "d") == sorted(builds) and read_latest(layout, "d") == newest
    forced = _distill(layout, "datasets", "rm", "d", newest, "--force", "--json")
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.stdout) == {
        "name": "d",
        "dry_run": False,
        "removed": [newest],
        "forced": {newest: ["nightly/gen-000-student"]},
        "kept": [middle, oldest],
        "protected": {},
        "latest": middle,
        "warnings": [],
    }
    assert read_latest(layout, "d") == middle
    removed = _distill(layout, "datasets", "rm", "d", oldest)
    assert removed.exit_code == 0 and f"removed 1 build(s): {oldest}" in removed.stdout
    assert _distill(layout, "datasets", "rm", "d", "not-a-fingerprint").exit_code == 2


def test_prune_keeps_the_newest_and_protected_builds(layout: Layout, builds: list[str]) -> None:
    oldest, middle, newest = builds
    _promote(layout, oldest, "nightly")
    dry = _distill(layout, "datasets", "prune", "d", "--keep", "1", "--dry-run")
    assert dry.exit_code == 0 and f"would remove 1 build(s): {middle}" in dry.stdout and f"kept {oldest}" in dry.stdout
    assert build_fingerprints(layout, "d") == sorted(builds)
    pruned = json.loads(_distill(layout, "datasets", "prune", "d", "--keep", "1", "--json").stdout)
    assert pruned["removed"] == [middle] and pruned["protected"] == {oldest: ["nightly/gen-000-student"]}
    assert build_fingerprints(layout, "d") == sorted([oldest, newest])
    assert _distill(layout, "datasets", "prune", "d", "--keep", "-1").exit_code == 2


def test_a_promoted_model_whose_card_is_gone_is_a_warning_not_a_crash(layout: Layout, builds: list[str]) -> None:
    oldest, *_ = builds
    _promote(layout, oldest, "nightly").unlink()
    listed = _distill(layout, "datasets", "list", "--all", "--json")
    assert listed.exit_code == 0 and "nightly/gen-000-student: its card cannot be read" in listed.stderr
    assert all(entry["models"] == [] for entry in json.loads(listed.stdout))


def test_diff_prints_rows_labels_config_and_holdout(layout: Layout, builds: list[str]) -> None:
    oldest, _, newest = builds
    result = _distill(layout, "datasets", "diff", "d", oldest, newest, "--json")
    assert result.exit_code == 0, result.output
    diff = json.loads(result.stdout)
    assert {"name", "before", "after", "added", "removed", "rows", "labels", "config", "versions", "holdout"} <= set(
        diff
    )
    assert diff["config"] == [{"field": "seed", "before": 0, "after": 2}]
    assert diff["holdout"]["identical"] and diff["holdout"]["same_files"]
    assert {row["source"] for row in diff["rows"]} <= {"ppo"}  # the seed samples ppo games; forge is all kept
    table = _distill(layout, "datasets", "diff", "d", oldest, newest)
    assert table.exit_code == 0 and "config: seed: 0 -> 2" in table.stdout and "holdout: identical" in table.stdout
    missing = _distill(layout, "datasets", "diff", "d", oldest, "0123456789abcdef")
    assert missing.exit_code == 1 and "no build 0123456789abcdef" in missing.stderr


def test_a_real_loop_runs_promoted_models_protect_the_builds_they_were_trained_on(loop_home: Layout) -> None:
    listed = json.loads(_distill(loop_home, "datasets", "list", "--all", "--json").stdout)
    named = [entry for entry in listed if entry["models"]]
    assert named and all(entry["name"] == "loop-tiny" for entry in named)
    assert any(model.startswith("tiny/gen-000-student") for entry in named for model in entry["models"])
    refused = _distill(loop_home, "datasets", "rm", "loop-tiny", named[0]["fingerprint"])
    assert refused.exit_code == 1 and "named by promoted models" in refused.stderr
    assert named[0]["fingerprint"] in build_fingerprints(loop_home, "loop-tiny")


def test_one_build_reference_names_the_same_build_in_every_command(layout: Layout, builds: list[str]) -> None:
    """NAME@FINGERPRINT means that build wherever a build is named; NAME alone, the latest."""
    oldest, middle, newest = builds
    ref = f"d@{oldest}"
    shown = json.loads(_distill(layout, "datasets", "show", ref, "--json").stdout)
    assert shown["fingerprint"] == oldest
    assert json.loads(_distill(layout, "datasets", "show", "d", "--json").stdout)["fingerprint"] == newest
    assert _distill(layout, "datasets", "show", ref, "--fingerprint", oldest).exit_code == 0  # the same, twice
    twice = _distill(layout, "datasets", "show", ref, "--fingerprint", newest)
    assert twice.exit_code == 2 and "two builds named" in twice.stderr

    checked = json.loads(_distill(layout, "check", "dataset", ref, "--json", "--no-write").stdout)
    assert checked["scope"] == {"name": "d", "fingerprint": oldest}
    assert json.loads(_distill(layout, "datasets", "diff", ref, f"d@{newest}", "--json").stdout)["before"] == oldest
    assert json.loads(_distill(layout, "datasets", "diff", ref, newest, "--json").stdout)["after"] == newest
    assert json.loads(_distill(layout, "datasets", "diff", ref, "d", "--json").stdout)["after"] == newest
    assert json.loads(_distill(layout, "datasets", "diff", "d", oldest, middle, "--json").stdout)["after"] == middle
    trained = _distill(layout, "train", "bc", "--dataset", ref, "--epochs", "1", "--json")
    assert trained.exit_code == 0, trained.output
    assert json.loads(trained.stdout)["fingerprint"] == oldest
    removed = json.loads(_distill(layout, "datasets", "rm", f"d@{middle}", "--dry-run", "--json").stdout)
    assert removed["removed"] == [middle]

    missing = _distill(layout, "datasets", "show", "d@0123456789abcdef")
    assert missing.exit_code == 1 and "no build 0123456789abcdef of dataset 'd'" in missing.stderr
    assert "--name d@" not in missing.stderr  # the hint names the dataset, not the reference
    for bad, why in (
        ("d@", "not a build fingerprint"),
        ("d@../x", "not a build fingerprint"),
        ("D@ab", "dataset name"),
    ):
        refused = _distill(layout, "datasets", "show", bad)
        assert refused.exit_code == 2 and why in refused.stderr, (bad, refused.stderr)
    bare = _distill(layout, "datasets", "rm", "d")
    assert bare.exit_code == 2 and "NAME@FINGERPRINT" in bare.stderr
