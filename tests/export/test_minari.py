"""``distill export --format minari``: a build round-trips through Minari, episode by episode."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from toolkit.catalog import Catalog
from toolkit.cli.main import app
from toolkit.datasets.dataset import list_builds, open_dataset
from toolkit.errors import ExportError
from toolkit.export.minari import MinariExportConfig, export_minari
from toolkit.layout import Layout
from toolkit.schema.vocab import MACRO_ACTIONS, SCHEMA_VERSION

minari = pytest.importorskip("minari")


def load(root: Path, dataset_id: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return minari.load_dataset(dataset_id)


def build_episodes(layout: Layout, split: str) -> pl.DataFrame:
    """The build's rows per (game, seat) in decision order, with the lake's end flags joined by lineage."""
    rows = pl.from_arrow(open_dataset(layout, "loop-tiny").read(split))
    with Catalog.open(layout) as catalog:
        ends = catalog.con.sql("SELECT batch_id, source_line, is_terminal, truncated FROM decisions").pl()
    return rows.join(ends, on=["batch_id", "source_line"], how="left").sort("game_id", "seat", "decision_index")


@pytest.mark.parametrize("split", ["train", "holdout"])
def test_every_episode_equals_the_builds_rows(loop_home: Layout, tmp_path: Path, monkeypatch, split: str) -> None:
    result = export_minari(loop_home, MinariExportConfig(name="loop-tiny", split=split, out=tmp_path))
    loaded = load(tmp_path, result.dataset_id, monkeypatch)
    want = build_episodes(loop_home, split)
    groups = want.partition_by("game_id", "seat", maintain_order=True)
    assert loaded.total_episodes == result.episodes == len(groups)
    assert loaded.total_steps == result.steps == want.height
    keys = list(loaded.storage.get_episode_metadata(range(len(groups))))
    for episode, rows, key in zip(loaded.iterate_episodes(), groups, keys, strict=True):
        n = rows.height
        assert (key["game_id"], key["seat"], key["source"]) == (rows["game_id"][0], rows["seat"][0], rows["source"][0])
        assert key["outcome"] == (1 if rows["seat_won"][-1] else -1)  # the loop's rows all know their result
        assert len(episode) == n
        np.testing.assert_array_equal(episode.actions, rows["label"].to_numpy())
        np.testing.assert_allclose(episode.rewards, rows["reward"].fill_null(0.0).to_numpy())
        np.testing.assert_array_equal(episode.observations[:n], np.stack(rows["features"].to_numpy()))
        np.testing.assert_array_equal(episode.observations[n], episode.observations[n - 1])
        np.testing.assert_array_equal(episode.infos["legal_mask"][:n], np.stack(rows["legal_mask"].to_numpy()))
        np.testing.assert_array_equal(episode.infos["decision_index"][:n], rows["decision_index"].to_numpy())
        # The lake's flags, and an episode the build cut short ends truncated.
        np.testing.assert_array_equal(episode.terminations, rows["is_terminal"].to_numpy())
        cut = rows["truncated"].to_numpy().copy()
        cut[-1] |= not (rows["is_terminal"][-1] or rows["truncated"][-1])
        np.testing.assert_array_equal(episode.truncations, cut)
        assert episode.terminations[-1] or episode.truncations[-1]
        assert not (episode.terminations[:-1].any() or episode.truncations[:-1].any())
        assert episode.infos["legal_mask"][np.arange(n), episode.actions].all()  # each action legal at its step


def test_the_metadata_carries_the_fingerprint_contract_version_holdout_rule_and_action_names(
    loop_home, tmp_path, monkeypatch
) -> None:
    result = export_minari(loop_home, MinariExportConfig(name="loop-tiny", out=tmp_path))
    meta = load(tmp_path, result.dataset_id, monkeypatch).storage.metadata
    manifest = open_dataset(loop_home, "loop-tiny").manifest
    distill = meta["distill"]
    assert distill["fingerprint"] == manifest.fingerprint == result.fingerprint
    assert distill["contract_version"] == manifest.contract_version == SCHEMA_VERSION
    assert distill["holdout"]["rule"] == manifest.holdout.rule
    assert distill["holdout"]["salt"] == manifest.holdout.salt
    assert distill["holdout"]["content"] == manifest.holdout.content
    assert distill["features"] == manifest.features.names
    assert distill["actions"] == manifest.actions == list(MACRO_ACTIONS)
    assert "+1 for the winner and -1 for every other seat" in distill["rewards"]
    assert meta["dataset_id"] == "distill/loop-tiny-train-v0"


def test_the_dataset_recovers_the_game_as_a_gymnasium_env(loop_home, tmp_path, monkeypatch) -> None:
    result = export_minari(loop_home, MinariExportConfig(name="loop-tiny", out=tmp_path))
    env = load(tmp_path, result.dataset_id, monkeypatch).recover_environment()
    observation, _ = env.reset(seed=3)
    assert observation.shape == (len(open_dataset(loop_home, "loop-tiny").manifest.features.names),)
    assert env.unwrapped.action_masks().any()


def test_exporting_the_same_build_again_reuses_it_and_another_build_is_refused(loop_home, tmp_path) -> None:
    first = export_minari(loop_home, MinariExportConfig(name="loop-tiny", split="holdout", out=tmp_path))
    again = export_minari(loop_home, MinariExportConfig(name="loop-tiny", split="holdout", out=tmp_path))
    assert (again.reused, again.episodes, again.steps) == (True, first.episodes, first.steps)
    older = next(b for b in list_builds(loop_home, "loop-tiny") if b.fingerprint != first.fingerprint)
    with pytest.raises(ExportError, match=f"holds build {first.fingerprint}"):
        export_minari(
            loop_home,
            MinariExportConfig(name="loop-tiny", fingerprint=older.fingerprint, split="holdout", out=tmp_path),
        )
    other = export_minari(
        loop_home,
        MinariExportConfig(name="loop-tiny", fingerprint=older.fingerprint, split="holdout", out=tmp_path, version=1),
    )
    assert other.dataset_id == "distill/loop-tiny-holdout-v1" and other.fingerprint == older.fingerprint


def test_a_crash_mid_export_leaves_nothing_and_a_rerun_finishes(loop_home, tmp_path, monkeypatch) -> None:
    from minari.dataset._storages.arrow_storage import ArrowStorage

    write = ArrowStorage.update_episodes

    def crash(self, episodes):
        write(self, list(episodes)[:3])
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(ArrowStorage, "update_episodes", crash)
    with pytest.raises(KeyboardInterrupt):
        export_minari(loop_home, MinariExportConfig(name="loop-tiny", out=tmp_path))
    assert not (tmp_path / "distill" / "loop-tiny-train-v0").exists()
    assert not list(tmp_path.glob(".distill-export-*"))
    monkeypatch.setattr(ArrowStorage, "update_episodes", write)
    done = export_minari(loop_home, MinariExportConfig(name="loop-tiny", out=tmp_path))
    assert not done.reused and done.steps == open_dataset(loop_home, "loop-tiny").manifest.splits["train"].rows


def test_the_cli_exports_and_refuses_unknown_formats_and_datasets(loop_home, tmp_path) -> None:
    runner = CliRunner()
    home = ["--home", str(loop_home.home)]
    done = runner.invoke(app, [*home, "export", "loop-tiny", "--out", str(tmp_path), "--json"])
    assert done.exit_code == 0, done.output
    payload = json.loads(done.stdout)
    assert payload["dataset_id"] == "distill/loop-tiny-train-v0" and Path(payload["path"]).is_dir()
    refused = runner.invoke(app, [*home, "export", "loop-tiny", "--format", "d4rl", "--out", str(tmp_path)])
    assert refused.exit_code == 2 and "--format 'd4rl' is not supported" in refused.output
    missing = runner.invoke(app, [*home, "export", "nope", "--out", str(tmp_path)])
    assert missing.exit_code == 1 and "no dataset named 'nope'" in missing.output


def test_a_split_that_is_not_one_is_refused_by_the_configs_field_before_anything_is_read(tmp_path: Path) -> None:
    refused = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "export", "loop-tiny", "--split", "test"])
    assert refused.exit_code == 2 and "split" in refused.output and "'train' or 'holdout'" in refused.output
    assert not (tmp_path / "home").exists()
