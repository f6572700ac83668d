"""Choosing what a build reads, and the per-episode summary every later step works from.

The lake is read through DuckDB straight from the Parquet files of the
selected batches (rejected batches never), never loaded into Python. The
summary has one row per episode (source, game, seat) and is small (a few
hundred thousand rows for millions of decisions): filters, holdout and
sampling are decided on it, and only the final pass touches every row again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from toolkit.catalog.records import BatchRecord
from toolkit.catalog.store import Catalog
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import InputRecord
from toolkit.errors import BuildError, ConfigError
from toolkit.holdout import holdout_sql
from toolkit.layout import NO_GENERATION, Layout
from toolkit.schema import columns as col

REJECTED = "rejected"
ROWS = "lake_rows"  # the view of the selected (and deduplicated) lake rows
DROPPED = "dropped_duplicates"


@dataclass(frozen=True)
class InputBatch:
    """One lake batch a build reads: its identity and the files of the selected partitions."""

    batch_id: str
    file_sha256: str
    status: str
    files: tuple[Path, ...] = field(default=())

    def describe(self, rows: int) -> InputRecord:
        return InputRecord(batch_id=self.batch_id, file_sha256=self.file_sha256, status=self.status, rows=rows)


def select_inputs(layout: Layout, config: BuildConfig) -> list[InputBatch]:
    """The non-rejected batches and partition files matching the config's selection, sorted by batch id.

    Raises:
        ConfigError: for a source, generation or batch that the lake does not hold.
        BuildError: when nothing is selected.
    """
    with Catalog.open(layout, read_only=True) as catalog:
        every = catalog.batches()
    usable = [b for b in every if b.status != REJECTED]
    _check_known(config, usable, every)
    inputs = []
    for batch in usable:
        if config.batches is not None and batch.batch_id not in config.batches:
            continue
        files = tuple(p for p in _batch_files(layout, batch.batch_id) if _partition_selected(p, config))
        if files:
            inputs.append(InputBatch(batch.batch_id, batch.file_sha256, batch.status, files))
    if not inputs:
        raise BuildError(
            "the selection is empty: no lake rows match the sources, generations and batches asked for",
            hint='see what the lake holds with `distill sql "SELECT source, generation, count(*) FROM decisions '
            'GROUP BY ALL"`, or ingest logs first',
        )
    return inputs


def _check_known(config: BuildConfig, usable: list[BatchRecord], every: list[BatchRecord]) -> None:
    sources = sorted({s for b in usable for s in b.sources})
    generations = sorted({g for b in usable for g in b.generations if g is not None})
    for wanted in config.sources or []:
        if wanted not in sources:
            raise ConfigError(
                f"sources: unknown source {wanted!r}", hint=f"the lake holds {', '.join(sources) or 'nothing'}"
            )
    for wanted in config.generations or []:
        if wanted not in generations:
            raise ConfigError(f"generations: no generation {wanted} in the lake", hint=f"the lake holds {generations}")
    known = {b.batch_id: b.status for b in every}
    for wanted in config.batches or []:
        if wanted not in known:
            raise ConfigError(
                f"batches: no batch {wanted!r} in the catalog", hint='list them: distill sql "SELECT * FROM batches"'
            )
        if known[wanted] == REJECTED:
            raise ConfigError(
                f"batches: batch {wanted!r} was rejected by a gate", hint="rejected batches never enter a build"
            )
    readable = set(config.sources) if config.sources is not None else set(sources)
    for weighted in config.weights:
        if weighted not in readable:
            raise ConfigError(
                f"weights: source {weighted!r} is not in the selection",
                hint=f"weight one of {', '.join(sorted(readable)) or 'nothing'}, or select it with --source",
            )


def _batch_files(layout: Layout, batch_id: str) -> list[Path]:
    return sorted(layout.lake.glob(f"source=*/generation=*/batch={batch_id}/*.parquet"))


def _partition_selected(path: Path, config: BuildConfig) -> bool:
    generation_dir, source_dir = path.parent.parent.name, path.parent.parent.parent.name
    source = source_dir.removeprefix("source=")
    generation_text = generation_dir.removeprefix("generation=")
    generation = None if generation_text == NO_GENERATION else int(generation_text)
    if config.sources is not None and source not in config.sources:
        return False
    return config.generations is None or generation in config.generations


def lake_relation(inputs: list[InputBatch]) -> str:
    """SQL reading the selected files, in a fixed order."""
    files = ", ".join("'" + str(p).replace("'", "''") + "'" for batch in inputs for p in batch.files)
    return f"read_parquet([{files}], hive_partitioning = false)"


def register_rows(con: duckdb.DuckDBPyConnection, inputs: list[InputBatch]) -> int:
    """Register the view of the selected rows without duplicates; returns how many duplicates it drops.

    A decision (game, seat, decision index) seen more than once keeps its first
    copy by (batch id, line). The drop list is only computed when a cheap count
    finds duplicates.
    """
    source = lake_relation(inputs)
    key = ", ".join(col.DECISION_KEY)
    (duplicates,) = con.execute(f"SELECT count(*) - count(DISTINCT ({key})) FROM {source}").fetchall()[0]
    if duplicates:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {DROPPED} AS
            SELECT {col.BATCH_ID}, {col.SOURCE_LINE} FROM {source}
            QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {col.BATCH_ID}, {col.SOURCE_LINE}) > 1"""
        )
        rows = f"SELECT * FROM {source} ANTI JOIN {DROPPED} USING ({col.BATCH_ID}, {col.SOURCE_LINE})"
    else:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {DROPPED} ({col.BATCH_ID} VARCHAR, {col.SOURCE_LINE} BIGINT)")
        rows = f"SELECT * FROM {source}"
    con.execute(f"CREATE OR REPLACE TEMP VIEW {ROWS} AS {rows}")
    return int(duplicates)


def episode_summary(con: duckdb.DuckDBPyConnection, config: BuildConfig) -> pa.Table:
    """One row per episode (source, game, seat) of the selected rows, with what filters and the holdout read.

    Columns: source, game_id, seat, generation, rows, label_rows (rows whose
    label source is not excluded), pod_size, episode_return (the last
    decision's, else the sum of rewards), won, holdout (the game is held out:
    it belongs to a reference source and the rule puts it in).
    """
    excluded = ", ".join(f"'{s}'" for s in config.exclude_label_sources)
    label_kept = f"{col.ACTION}.{col.ACTION_LABEL_SOURCE} NOT IN ({excluded})" if excluded else "true"
    references = ", ".join("'" + s.replace("'", "''") + "'" for s in config.holdout.sources)
    in_rule = holdout_sql(col.GAME_ID, config.holdout.rule())
    return con.sql(
        f"""
        WITH episodes AS (
            SELECT {col.SOURCE} AS source, {col.GAME_ID} AS game_id, {col.SEAT} AS seat,
                   min({col.GENERATION}) AS generation,
                   count(*) AS rows,
                   count(*) FILTER (WHERE {label_kept}) AS label_rows,
                   max({col.POD_SIZE}) AS pod_size,
                   coalesce(max_by({col.EPISODE_RETURN}, {col.DECISION_INDEX}), sum({col.REWARD})) AS episode_return,
                   coalesce(bool_or({col.SEAT_WON}), false) AS won
            FROM {ROWS} GROUP BY ALL
        ),
        held AS (
            SELECT DISTINCT game_id FROM episodes WHERE source IN ({references}) AND {in_rule}
        )
        SELECT episodes.*, game_id IN (SELECT game_id FROM held) AS holdout
        FROM episodes ORDER BY source, game_id, seat
        """
    ).to_arrow_table()
