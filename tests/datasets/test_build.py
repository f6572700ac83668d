"""``build_dataset``: weights, game-level sampling, filters, dedup, the fixed holdout, reproducibility."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.datasets.conftest import game_records
from toolkit.catalog import Catalog, Lake
from toolkit.config import load_config
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig, HoldoutConfig
from toolkit.datasets.dataset import (
    FEATURES,
    HOLDOUT,
    LABEL,
    LEGAL_MASK,
    SAMPLE_WEIGHT,
    SPLITS,
    TRAIN,
    Dataset,
    list_names,
    open_dataset,
)
from toolkit.datasets.leakage import check_leakage
from toolkit.errors import BuildError, ConfigError, LeakageError
from toolkit.features import feature_spec
from toolkit.features_arrow import encode_arrow
from toolkit.holdout import in_holdout
from toolkit.layout import Layout
from toolkit.schema import columns as col
from toolkit.schema.vocab import MACRO_ACTIONS


def _games(prefix: str, n: int, source: str = "forge", **kwargs: object) -> list[list[dict]]:
    return [game_records(f"{prefix}-{i}", source, **kwargs) for i in range(n)]


def _rows(dataset: Dataset, split: str) -> list[dict]:
    return dataset.read(split, [col.GAME_ID, col.SEAT, col.DECISION_INDEX, col.SOURCE, SAMPLE_WEIGHT]).to_pylist()


def _games_of(dataset: Dataset, split: str, source: str | None = None) -> set[str]:
    return {r[col.GAME_ID] for r in _rows(dataset, split) if source is None or r[col.SOURCE] == source}


def test_a_default_build_splits_reference_games_by_the_rule_and_keeps_every_row(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 200), *_games("p", 50, "ppo"))
    info = build_dataset(layout, BuildConfig())
    ds = info.dataset
    holdout = _games_of(ds, HOLDOUT)
    rule = HoldoutConfig().rule()
    assert holdout == {f"f-{i}" for i in range(200) if in_holdout(f"f-{i}", rule)}
    assert 0.07 <= len(holdout) / 200 <= 0.17
    assert _games_of(ds, TRAIN, "forge") == {f"f-{i}" for i in range(200)} - holdout
    assert _games_of(ds, TRAIN, "ppo") == {f"p-{i}" for i in range(50)}  # only reference sources are split
    assert ds.manifest.splits[TRAIN].rows + ds.manifest.splits[HOLDOUT].rows == 250 * 12
    assert {r[SAMPLE_WEIGHT] for r in _rows(ds, TRAIN)} == {1.0}
    assert ds.manifest.holdout.games == len(holdout) and ds.manifest.features == feature_spec()


def test_dataset_rows_carry_the_encoded_features_label_and_mask_of_their_lake_row(layout: Layout, lake) -> None:
    games = _games("f", 30)
    games[0][0]["legal_actions"] = None  # an unknown mask becomes all-legal in the dataset
    lake("a.jsonl", *games)
    ds = build_dataset(layout, BuildConfig()).dataset
    table = pa.concat_tables([ds.read(TRAIN), ds.read(HOLDOUT)])
    with Catalog.open(layout) as catalog:
        lake_rows = catalog.con.sql("SELECT * FROM decisions").to_arrow_table()
    expected = {
        (r[col.GAME_ID], r[col.SEAT], r[col.DECISION_INDEX]): (v, r)
        for r, v in zip(lake_rows.to_pylist(), encode_arrow(lake_rows), strict=True)
    }
    assert table.num_rows == len(expected)
    for row in table.to_pylist():
        vector, lake_row = expected[(row[col.GAME_ID], row[col.SEAT], row[col.DECISION_INDEX])]
        assert np.array_equal(np.array(row[FEATURES], np.float32), vector)
        assert row[LABEL] == lake_row[col.ACTION]["index"]
        assert row[LEGAL_MASK] == (lake_row[col.LEGAL_ACTIONS] or [True] * 8)
        assert row[col.BATCH_ID] == lake_row[col.BATCH_ID] and row[col.SOURCE_LINE] == lake_row[col.SOURCE_LINE]


def test_a_build_names_its_actions_in_the_manifest_and_as_a_hugging_face_class_label(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 40))
    ds = build_dataset(layout, BuildConfig()).dataset
    assert ds.manifest.actions == list(MACRO_ACTIONS)
    for split in SPLITS:
        for path in ds.files(split):
            schema = pq.read_schema(path)
            features = json.loads(schema.metadata[b"huggingface"])["info"]["features"]
            assert list(features) == schema.names
            assert features[LABEL] == {"names": list(MACRO_ACTIONS), "_type": "ClassLabel"}
            assert features[FEATURES] == {
                "feature": {"dtype": "float32", "_type": "Value"},
                "length": 117,
                "_type": "Sequence",
            }
            # `datasets` keeps a column's feature from this metadata only where its Arrow field is the feature's
            # own, exactly: ClassLabel's is a nullable int64
            assert schema.field(LABEL) == pa.field(LABEL, pa.int64(), nullable=True)


def test_hugging_face_datasets_loads_the_label_as_the_action_names(layout: Layout, lake, tmp_path: Path) -> None:
    import datasets  # the dev extra installs it

    lake("a.jsonl", *_games("f", 20))
    ds = build_dataset(layout, BuildConfig()).dataset
    files = {split: [str(p) for p in ds.files(split)] for split in SPLITS}
    loaded = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf"))
    label = loaded[TRAIN].features[LABEL]
    assert isinstance(label, datasets.ClassLabel) and label.names == list(MACRO_ACTIONS)
    assert loaded[TRAIN].num_rows == ds.manifest.splits[TRAIN].rows


def test_the_readmes_loading_snippets_run_as_written_hugging_face_datasets_included(
    layout: Layout, lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ast

    import pandas
    import polars
    import pyarrow.dataset

    import datasets  # the dev extra installs it

    readme = (Path(__file__).resolve().parents[2] / "docs" / "export.md").read_text(encoding="utf-8")
    [block] = [b for b in readme.split("```python\n")[1:] if "datasets.load_dataset(" in b.split("```")[0]]
    snippet = block.split("```")[0]
    lake("a.jsonl", *_games("f", 20))
    ds = build_dataset(layout, BuildConfig(name="mix")).dataset
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "datasets").symlink_to(layout.home)  # the README's data root, ./datasets
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    names = {"polars": polars, "pandas": pandas, "duckdb": duckdb, "pyarrow": pyarrow, "datasets": datasets}
    results = [
        eval(compile(ast.Expression(statement.value), "docs/export.md", "eval"), names)  # noqa: S307 (our docs)
        for statement in ast.parse(snippet.replace("<fp>", ds.fingerprint)).body
        if isinstance(statement, ast.Expr)
    ]
    assert len(results) == 5
    loaded = results[-1]
    assert loaded[TRAIN].features[LABEL].names == list(MACRO_ACTIONS)
    assert {split: loaded[split].num_rows for split in SPLITS} == {
        split: ds.manifest.splits[split].rows for split in SPLITS
    }


def test_ratio_weights_subsample_oversample_and_drop_whole_games(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 100), *_games("p", 300, "ppo"), *_games("r", 100, "random"))
    config = BuildConfig(weights={"ppo": 0.5, "random": 0.0, "forge": 2.0}, seed=3)
    ds = build_dataset(layout, config).dataset
    per_game: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in _rows(ds, TRAIN):
        per_game[(r[col.SOURCE], r[col.GAME_ID])].append(r[SAMPLE_WEIGHT])
    assert all(len(w) == 12 and len(set(w)) == 1 for w in per_game.values())  # games are never split
    kept_ppo = sum(1 for s, _ in per_game if s == "ppo")
    assert 150 - 4 * 8.7 <= kept_ppo <= 150 + 4 * 8.7  # Binomial(300, 0.5): mean 150, sd 8.7
    assert not any(s == "random" for s, _ in per_game)
    forge = [w[0] for (s, _), w in per_game.items() if s == "forge"]
    trainable = 100 - len(_games_of(ds, HOLDOUT))
    assert 2 * trainable - 4 * (2 * trainable) ** 0.5 <= sum(forge) <= 2 * trainable + 4 * (2 * trainable) ** 0.5
    assert max(forge) >= 2  # some games drawn more than once
    assert build_dataset(layout, config.model_copy(update={"name": "again"})).manifest.splits == ds.manifest.splits


def test_share_mode_meets_the_target_shares_and_reports_them(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 200), *_games("p", 400, "ppo"))
    ds = build_dataset(layout, BuildConfig(weight_mode="share", weights={"forge": 0.6, "ppo": 0.4})).dataset
    shares = ds.manifest.shares
    assert shares["forge"].target == 0.6 and shares["ppo"].target == 0.4
    assert abs(shares["ppo"].achieved - 0.4) < 0.05
    weighted = ds.manifest.splits[TRAIN].weighted_rows_by_source
    assert weighted["ppo"] / sum(weighted.values()) == pytest.approx(shares["ppo"].achieved, abs=1e-5)
    assert ds.manifest.filters["forge"][-1].rows == ds.manifest.filters["forge"][1].rows  # forge is not cut


def test_generation_decay_weighs_older_generations_less_and_keeps_each_sources_weighted_rows(
    layout: Layout, lake
) -> None:
    games = [*_games("f", 40)] + [game_records(f"p{g}-{i}", "ppo", generation=g) for g in (1, 2, 3) for i in range(10)]
    lake("a.jsonl", *games)
    flat = build_dataset(layout, BuildConfig(name="flat")).dataset
    decayed = build_dataset(layout, BuildConfig(name="decayed", generation_decay=0.5)).dataset
    weight = {(r[col.SOURCE], r[col.GAME_ID][:2]): r[SAMPLE_WEIGHT] for r in _rows(decayed, TRAIN)}
    assert weight[("ppo", "p3")] == pytest.approx(2 * weight[("ppo", "p2")]) == pytest.approx(4 * weight[("ppo", "p1")])
    assert weight[("ppo", "p3")] == pytest.approx(3 / (1 + 0.5 + 0.25))  # 30 games keep 30 games' weight
    assert weight[("forge", "f-")] == 1.0  # no generation: unchanged
    assert decayed.manifest.splits[TRAIN].weighted_rows_by_source == pytest.approx(
        flat.manifest.splits[TRAIN].weighted_rows_by_source
    )
    assert decayed.manifest.fingerprint != flat.manifest.fingerprint
    assert "generation_decay" not in flat.manifest.model_dump(mode="json")["config"]  # unset: fingerprints as before


def test_filters_keep_or_drop_whole_episodes(layout: Layout, lake) -> None:
    good = game_records("p-good", "ppo", returns=[0.5, 0.1, 0.3, 0.9])
    lake("a.jsonl", good, game_records("f-0", "forge", winner=2), game_records("f-short", "forge", per_seat=1))
    config = BuildConfig(
        min_reward=0.2, wins_only=["forge"], min_episode_length=2, holdout=HoldoutConfig(fraction=0.1, salt="s3")
    )
    ds = build_dataset(layout, config).dataset
    episodes = Counter((r[col.SOURCE], r[col.GAME_ID], r[col.SEAT]) for r in _rows(ds, TRAIN))
    assert episodes == {
        ("ppo", "p-good", 0): 3,
        ("ppo", "p-good", 2): 3,
        ("ppo", "p-good", 3): 3,
        ("forge", "f-0", 2): 3,
    }
    steps = [s.step for s in ds.manifest.filters["forge"]]
    assert steps == ["selected", "after_holdout", "min_episode_length", "wins_only", "sampled"]


def test_excluded_label_sources_leave_the_train_split_but_not_the_holdout(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 60, label_source="card_role"), *_games("g", 60))
    ds = build_dataset(layout, BuildConfig(exclude_label_sources=["card_role"])).dataset
    assert ds.manifest.splits[TRAIN].label_sources == {"logged": ds.manifest.splits[TRAIN].rows}
    assert "card_role" in ds.manifest.splits[HOLDOUT].label_sources


def test_duplicate_decisions_across_batches_are_dropped_and_counted(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 40))
    _copy_batch_as_another(layout)
    ds = build_dataset(layout, BuildConfig()).dataset
    assert ds.manifest.duplicates == 40 * 12
    rows = _rows(ds, TRAIN) + _rows(ds, HOLDOUT)
    assert len(rows) == len({(r[col.GAME_ID], r[col.SEAT], r[col.DECISION_INDEX]) for r in rows}) == 40 * 12


def _copy_batch_as_another(layout: Layout) -> None:
    """A lake holding the same decisions under two batches (as a lake written by another tool could): the copy
    committed through the catalog's own write protocol, bypassing ingest's duplicate check."""
    with Lake.open(layout, write=True) as lake:
        [batch], [file], [lake_file] = lake.view.batches(), lake.view.files(), lake.view.lake_files()
        staged = lake.writer.stage("bcopy")
        relative = lake_file.path.relative_to(layout.lake)
        target = staged / "lake" / relative.parent.with_name("batch=bcopy") / relative.name
        target.parent.mkdir(parents=True)
        duckdb.connect().execute(  # the copy's rows say which batch they belong to
            f"COPY (SELECT * REPLACE ('bcopy' AS batch_id) FROM read_parquet('{lake_file.path}', "
            f"hive_partitioning = false)) TO '{target}' (FORMAT parquet)"
        )
        copy = {"batch_id": "bcopy", "file_sha256": "f" + batch.file_sha256}
        lake.append(staged, batch.model_copy(update=copy), file.model_copy(update=copy))


def test_the_holdout_never_moves_when_data_is_added_reweighted_or_filtered(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 150))
    first = build_dataset(layout, BuildConfig()).dataset
    lake("b.jsonl", *_games("n", 150), *_games("p", 50, "ppo"))
    second = build_dataset(layout, BuildConfig(weights={"forge": 0.3, "ppo": 2.0}, wins_only=["forge"])).dataset
    old_holdout, old_train = _games_of(first, HOLDOUT), _games_of(first, TRAIN)
    assert old_holdout <= _games_of(second, HOLDOUT)
    assert not old_holdout & _games_of(second, TRAIN) and not old_train & _games_of(second, HOLDOUT)
    third = build_dataset(layout, BuildConfig(name="other", min_episode_length=3, seed=9)).dataset
    assert third.manifest.holdout.content == second.manifest.holdout.content  # same data: same holdout bytes


def test_same_inputs_and_config_give_the_same_fingerprint_and_bytes(tmp_path: Path, lake, layout: Layout) -> None:
    path = lake("a.jsonl", *_games("f", 80), *_games("p", 40, "ppo"))
    config = BuildConfig(weights={"ppo": 0.5}, rows_per_file=1000)
    first = build_dataset(layout, config).dataset
    other = Layout.at(tmp_path / "elsewhere")
    from toolkit.ingest.config import IngestConfig
    from toolkit.ingest.ingest import ingest_paths

    ingest_paths([path], other, IngestConfig())
    second = build_dataset(other, config).dataset
    assert first.fingerprint == second.fingerprint and len(first.files(TRAIN)) > 1
    for split in SPLITS:
        for a, b in zip(first.files(split), second.files(split), strict=True):
            assert a.read_bytes() == b.read_bytes()
    again = build_dataset(layout, config)
    assert again.reused and again.dataset.root == first.root


def test_the_leakage_check_fires_on_a_tampered_dataset(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 100))
    ds = build_dataset(layout, BuildConfig()).dataset
    check_leakage(ds)
    shutil.copy(ds.files(HOLDOUT)[0], ds.root / TRAIN / "part-99999.parquet")
    with pytest.raises(LeakageError, match="games in both train and holdout"):
        check_leakage(ds)


def test_clear_errors_for_bad_selections(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 20))
    with pytest.raises(ConfigError, match="sources: unknown source 'nope'"):
        build_dataset(layout, BuildConfig(sources=["nope"]))
    with pytest.raises(ConfigError, match="weights: source 'ppo' is not in the selection"):
        build_dataset(layout, BuildConfig(weights={"ppo": 1.0}))
    with pytest.raises(ConfigError, match="every weight is 0"):
        load_config(BuildConfig, None, {"weights": {"forge": 0.0}, "weight_mode": "share"})
    with pytest.raises(BuildError, match="training set is empty"):
        build_dataset(layout, BuildConfig(weights={"forge": 0.0}))
    with pytest.raises(ConfigError, match="holdout.fraction"):
        load_config(BuildConfig, None, {"holdout": {"fraction": 0.5}})
    with pytest.raises(BuildError, match="no dataset named 'missing'"):
        open_dataset(layout, "missing")


def test_an_empty_lake_is_an_empty_selection(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 5))
    with pytest.raises(BuildError, match="selection is empty"):
        build_dataset(layout, BuildConfig(batches=[], sources=None))


def test_a_yaml_config_loads_and_flags_override_it(tmp_path: Path) -> None:
    path = tmp_path / "build.yaml"
    path.write_text("name: mix\nweights: {forge: 1.0, ppo: 0.5}\nmin_reward: 0.1\n")
    config = load_config(BuildConfig, path, {"min_reward": 0.3})
    assert (config.name, config.weights, config.min_reward) == ("mix", {"forge": 1.0, "ppo": 0.5}, 0.3)
    path.write_text("weights: {forge: -1}\n")
    with pytest.raises(ConfigError, match="weights"):
        load_config(BuildConfig, path)


def test_a_build_killed_mid_way_leaves_nothing_visible_and_a_rerun_completes(layout: Layout, lake) -> None:
    lake("a.jsonl", *_games("f", 60))
    code = (
        "import os, signal; from toolkit.layout import Layout; from toolkit.datasets.build import build_dataset; "
        "from toolkit.datasets.config import BuildConfig; "
        f"build_dataset(Layout.at({str(layout.home)!r}), BuildConfig(rows_per_file=100), "
        "progress=lambda event: os.kill(os.getpid(), signal.SIGKILL))"
    )
    process = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], check=False)
    assert process.returncode == -signal.SIGKILL
    assert list(layout.build_staging.glob("default/*/train/*.parquet"))  # it died while writing parts
    assert not (layout.builds / "default").exists() and list_names(layout) == []
    info = build_dataset(layout, BuildConfig(rows_per_file=100))
    assert list_names(layout) == ["default"] and not any(layout.build_staging.iterdir())
    check_leakage(info.dataset)
