"""One build: composition, filters, sample weights, the fixed holdout across builds, actions, features, drift."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow.compute as pc

from toolkit.analysis.errors import NothingToShowError
from toolkit.datasets.dataset import (
    FEATURES,
    HOLDOUT,
    LABEL,
    SAMPLE_WEIGHT,
    SPLITS,
    TRAIN,
    Dataset,
    list_builds,
    open_dataset,
)
from toolkit.datasets.scores import read_scores, read_scores_info
from toolkit.errors import BuildError
from toolkit.layout import Layout
from toolkit.schema import columns as col
from toolkit.schema import scores as sc
from toolkit.schema.vocab import MACRO_ACTIONS, N_ACTIONS
from toolkit.stats import js_divergence


def load(layout: Layout, name: str, fingerprint: str | None = None) -> Dataset:
    """The build to look at (its latest, or ``fingerprint``).

    Raises:
        NothingToShowError: no build of that name.
    """
    try:
        return open_dataset(layout, name, fingerprint)
    except BuildError as error:
        raise NothingToShowError(error.message, hint=error.hint) from None


def build_composition(dataset: Dataset) -> pl.DataFrame:
    """Per source: target and achieved share of the train split, rows, games and weighted rows."""
    train = dataset.manifest.splits[TRAIN]
    sources = sorted(set(train.rows_by_source) | set(dataset.manifest.shares))
    shares = dataset.manifest.shares
    return pl.DataFrame(
        {
            "source": sources,
            "target_share": [shares[s].target if s in shares else None for s in sources],
            "achieved_share": [shares[s].achieved if s in shares else None for s in sources],
            "rows": [train.rows_by_source.get(s, 0) for s in sources],
            "games": [train.games_by_source.get(s, 0) for s in sources],
            "weighted_rows": [train.weighted_rows_by_source.get(s, 0.0) for s in sources],
        },
        schema={
            "source": pl.String,
            "target_share": pl.Float64,
            "achieved_share": pl.Float64,
            "rows": pl.Int64,
            "games": pl.Int64,
            "weighted_rows": pl.Float64,
        },
    )


def filters(dataset: Dataset) -> pl.DataFrame:
    """Per source, the rows and games left after each step of the build (what each filter removed)."""
    rows = []
    for source, steps in dataset.manifest.filters.items():
        before = None
        for step in steps:
            removed = None if before is None else before - step.rows
            rows.append(
                {"source": source, "step": step.step, "rows": step.rows, "games": step.games, "rows_removed": removed}
            )
            before = step.rows
    return pl.DataFrame(
        rows,
        schema={"source": pl.String, "step": pl.String, "rows": pl.Int64, "games": pl.Int64, "rows_removed": pl.Int64},
    )


def _split(dataset: Dataset, split: str, columns: list[str]) -> pl.DataFrame:
    return pl.from_arrow(dataset.read(split, columns))  # type: ignore[return-value]


def sample_weights(dataset: Dataset) -> pl.DataFrame:
    """Per source, the distribution of sample weights in the train split."""
    frame = _split(dataset, TRAIN, [col.SOURCE, SAMPLE_WEIGHT])
    return (
        frame.group_by(col.SOURCE)
        .agg(
            pl.len().alias("rows"),
            pl.col(SAMPLE_WEIGHT).sum().alias("weighted_rows"),
            pl.col(SAMPLE_WEIGHT).min().alias("min"),
            pl.col(SAMPLE_WEIGHT).mean().alias("mean"),
            pl.col(SAMPLE_WEIGHT).max().alias("max"),
        )
        .sort(col.SOURCE)
    )


def holdout_history(layout: Layout, name: str) -> pl.DataFrame:
    """Every build of ``name``, oldest first, with its holdout; ``kept_earlier`` tells whether every game of
    the previous build's holdout is still held out (the holdout never moves, it only grows with new games)."""
    builds = list_builds(layout, name)
    rows, previous = [], None
    for dataset in builds:
        games = set(dataset.read(HOLDOUT, [col.GAME_ID]).column(col.GAME_ID).to_pylist())
        holdout = dataset.manifest.holdout
        rows.append(
            {
                "fingerprint": dataset.fingerprint[:12],
                "holdout_games": len(games),
                "holdout_rows": holdout.rows,
                "sources": ",".join(holdout.sources),
                "content": holdout.content[:12],
                "kept_earlier": None if previous is None else previous <= games,
                "train_rows": dataset.manifest.splits[TRAIN].rows,
            }
        )
        previous = games
    return pl.DataFrame(
        rows,
        schema={
            "fingerprint": pl.String,
            "holdout_games": pl.Int64,
            "holdout_rows": pl.Int64,
            "sources": pl.String,
            "content": pl.String,
            "kept_earlier": pl.Boolean,
            "train_rows": pl.Int64,
        },
    )


def actions(dataset: Dataset) -> pl.DataFrame:
    """Per split and source, the share of each macro action among the labels."""
    frames = []
    for split in SPLITS:
        frame = _split(dataset, split, [col.SOURCE, LABEL]).with_columns(pl.lit(split).alias("split"))
        frames.append(frame)
    counts = pl.concat(frames).group_by("split", col.SOURCE, LABEL).len("rows")
    counts = counts.with_columns(
        pl.col(LABEL).map_elements(lambda i: MACRO_ACTIONS[i], return_dtype=pl.String).alias("action"),
        (pl.col("rows") / pl.col("rows").sum().over("split", col.SOURCE)).alias("share"),
    )
    return counts.sort("split", col.SOURCE, LABEL).select("split", col.SOURCE, "action", "rows", "share")


def feature_stats(dataset: Dataset, max_rows: int = 200_000) -> pl.DataFrame:
    """Per feature, its mean and standard deviation in train and in the holdout (the first ``max_rows`` rows)."""
    names = dataset.manifest.features.names
    stats = {}
    for split in SPLITS:
        table = dataset.read(split, [FEATURES]).slice(0, max_rows)
        values = pc.list_flatten(table.column(FEATURES)).to_numpy(zero_copy_only=False)
        matrix = values.reshape(table.num_rows, -1) if table.num_rows else np.zeros((0, len(names)))
        stats[split] = (
            matrix.mean(0) if len(matrix) else np.full(len(names), np.nan),
            matrix.std(0) if len(matrix) else np.full(len(names), np.nan),
        )
    size = len(stats[TRAIN][0])
    return pl.DataFrame(
        {
            "feature": names[:size] if len(names) >= size else [f"f{i}" for i in range(size)],
            "train_mean": stats[TRAIN][0],
            "train_std": stats[TRAIN][1],
            "holdout_mean": stats[HOLDOUT][0],
            "holdout_std": stats[HOLDOUT][1],
        }
    ).with_columns((pl.col("train_mean") - pl.col("holdout_mean")).abs().alias("mean_gap"))


def drift(layout: Layout, name: str) -> pl.DataFrame:
    """Per source, the Jensen-Shannon divergence (bits) of the train labels from the previous build's."""
    builds = list_builds(layout, name)
    if len(builds) < 2:
        return pl.DataFrame(schema={"source": pl.String, "js_bits": pl.Float64, "previous": pl.String})
    current, previous = (_label_counts(d) for d in builds[-2:][::-1])
    rows = [
        {"source": s, "js_bits": js_divergence(current[s], previous[s]), "previous": builds[-2].fingerprint[:12]}
        for s in sorted(set(current) & set(previous))
        if sum(current[s]) and sum(previous[s])
    ]
    return pl.DataFrame(rows, schema={"source": pl.String, "js_bits": pl.Float64, "previous": pl.String})


def _label_counts(dataset: Dataset) -> dict[str, list[int]]:
    frame = _split(dataset, TRAIN, [col.SOURCE, LABEL])
    counts: dict[str, list[int]] = {}
    for source, label, n in frame.group_by(col.SOURCE, LABEL).len().iter_rows():
        counts.setdefault(source, [0] * N_ACTIONS)[label] += n
    return counts


def label_issues(layout: Layout, dataset: Dataset) -> pl.DataFrame | None:
    """Per source and generation: decisions, those with a choice, label issues and their rate with a 95% interval
    (``distill check labels``); None when the build was never scored."""
    info = read_scores_info(layout, dataset)
    if info is None:
        return None
    return pl.DataFrame(
        [g.model_dump() for g in info.groups],
        schema={
            "source": pl.String,
            "generation": pl.Int64,
            "decisions": pl.Int64,
            "scored": pl.Int64,
            "flagged": pl.Int64,
            "rate": pl.Float64,
            "low": pl.Float64,
            "high": pl.Float64,
            "conflicts": pl.Int64,
        },
    )


def worst_labels(layout: Layout, dataset: Dataset, n: int = 20) -> pl.DataFrame:
    """The ``n`` flagged decisions of lowest label quality, with the logged and the expected action."""
    table = read_scores(layout, dataset)
    if table is None:
        return pl.DataFrame()
    frame = pl.from_arrow(table.filter(table.column(sc.FLAGGED)))
    assert isinstance(frame, pl.DataFrame)
    names = pl.Series(MACRO_ACTIONS)
    return (
        frame.sort([sc.LABEL_QUALITY, col.GAME_ID, col.SEAT, col.DECISION_INDEX])
        .head(n)
        .select(
            col.GAME_ID,
            col.SEAT,
            col.DECISION_INDEX,
            col.SOURCE,
            sc.SPLIT,
            pl.col(sc.LABEL).map_elements(lambda i: names[i], return_dtype=pl.String).alias("logged"),
            pl.col(sc.PREDICTED).map_elements(lambda i: names[i], return_dtype=pl.String).alias("expected"),
            sc.LABEL_QUALITY,
        )
    )
