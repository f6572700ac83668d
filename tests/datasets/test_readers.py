"""A built dataset is plain Parquet: it reads as it is with polars, pandas, DuckDB and pyarrow datasets."""

from __future__ import annotations

import duckdb
import pandas as pd
import polars as pl
import pyarrow.dataset as pads
import pytest

from toolkit.datasets.dataset import Dataset, open_dataset
from toolkit.layout import Layout


@pytest.fixture(scope="module")
def built(loop_home: Layout) -> Dataset:
    return open_dataset(loop_home, "loop-tiny")


def expected(dataset: Dataset, split: str) -> pl.DataFrame:
    return pl.from_arrow(dataset.read(split)).sort("game_id", "seat", "decision_index")


@pytest.mark.parametrize("split", ["train", "holdout"])
def test_polars_reads_a_split_folder(built: Dataset, split: str) -> None:
    frame = pl.read_parquet(built.root / split / "*.parquet").sort("game_id", "seat", "decision_index")
    assert frame.height == built.manifest.splits[split].rows > 0
    assert frame.equals(expected(built, split))
    assert frame.schema["features"] == pl.Array(pl.Float32, len(built.manifest.features.names))


@pytest.mark.parametrize("split", ["train", "holdout"])
def test_pandas_reads_a_split_folder(built: Dataset, split: str) -> None:
    frame = pd.read_parquet(built.root / split).sort_values(["game_id", "seat", "decision_index"], ignore_index=True)
    want = expected(built, split)
    assert len(frame) == want.height
    assert frame["label"].tolist() == want["label"].to_list()
    assert frame["sample_weight"].tolist() == pytest.approx(want["sample_weight"].to_list())
    assert [list(v) for v in frame["features"].head(3)] == want["features"].head(3).to_list()


@pytest.mark.parametrize("split", ["train", "holdout"])
def test_duckdb_reads_a_split_folder(built: Dataset, split: str) -> None:
    glob = str(built.root / split / "*.parquet")
    ((rows, games, weight),) = duckdb.sql(
        f"SELECT count(*), count(DISTINCT game_id), sum(sample_weight) FROM read_parquet('{glob}')"
    ).fetchall()
    want = expected(built, split)
    assert (rows, games) == (want.height, want["game_id"].n_unique())
    assert weight == pytest.approx(want["sample_weight"].sum(), rel=1e-6)


@pytest.mark.parametrize("split", ["train", "holdout"])
def test_pyarrow_dataset_reads_a_split_folder(built: Dataset, split: str) -> None:
    table = pads.dataset(built.root / split, format="parquet").to_table()
    assert table.num_rows == built.manifest.splits[split].rows
    assert pl.from_arrow(table).sort("game_id", "seat", "decision_index").equals(expected(built, split))


def test_the_holdout_and_train_folders_share_no_game(built: Dataset) -> None:
    train = set(pl.read_parquet(built.root / "train" / "*.parquet")["game_id"])
    holdout = set(pl.read_parquet(built.root / "holdout" / "*.parquet")["game_id"])
    assert holdout and train and not train & holdout
