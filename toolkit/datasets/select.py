"""Choosing what a build reads, and the per-episode summary every later step works from.

The lake is read through DuckDB straight from the Parquet files live at one
version (the latest, or an earlier one: ``--as-of``) that hold the selected
batches (rejected or retired batches never), never loaded into Python. The
summary has one row per episode (source, game, seat) and is small (a few
hundred thousand rows for millions of decisions): filters, holdout and
sampling are decided on it, and only the final pass touches every row again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from toolkit.catalog.lake import Lake
from toolkit.catalog.records import BatchRecord
from toolkit.catalog.store import LakeFile
from toolkit.catalog.views import relation
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import InputRecord
from toolkit.errors import BuildError, ConfigError
from toolkit.holdout import holdout_sql
from toolkit.layout import Layout, sql_literal
from toolkit.schema import columns as col
from toolkit.schema.arrow import lake_schema

REJECTED = "rejected"
ROWS = "lake_rows"  # the view of the selected (and deduplicated) lake rows
DROPPED = "dropped_duplicates"


@dataclass(frozen=True)
class InputBatch:
    """One lake batch a build reads: its identity, review status and the partitions (source, generation) of it
    that are selected."""

    batch_id: str
    file_sha256: str
    status: str
    partitions: tuple[tuple[str, int | None], ...] = field(default=())

    def describe(self, rows: int) -> InputRecord:
        return InputRecord(batch_id=self.batch_id, file_sha256=self.file_sha256, status=self.status, rows=rows)


@dataclass(frozen=True)
class LakeInputs:
    """What a build reads: the lake's version, the selected batches (by id) and the live files holding their
    selected rows (a compacted file may also hold other batches' rows: :func:`lake_relation` leaves them out)."""

    version: int
    batches: list[InputBatch]
    files: list[LakeFile]

    @property
    def batch_ids(self) -> list[str]:
        return [b.batch_id for b in self.batches]


def select_inputs(layout: Layout, config: BuildConfig, as_of: int | str | None = None) -> LakeInputs:
    """The lake's batches (neither rejected nor retired) and partitions matching the config's selection, sorted
    by batch id, as the lake is at ``as_of`` (a version or a time; the latest by default).

    Raises:
        ConfigError: for a source, generation or batch that the lake does not hold.
        BuildError: when nothing is selected.
        UsageError: ``as_of`` a version the lake does not have.
    """
    with Lake.open(layout).at(as_of) as catalog:
        every = catalog.batches()
        usable = [b for b in every if b.status != REJECTED and not b.retired]
        _check_known(config, usable, every)
        wanted = {b.batch_id for b in usable if config.batches is None or b.batch_id in config.batches}
        files = [f for f in catalog.lake_files(batches=wanted) if _partition_selected(f, config)]
        version = catalog.version
    partitions: dict[str, set[tuple[str, int | None]]] = {}
    for file in files:
        for batch in set(file.batch_ids) & wanted:
            partitions.setdefault(batch, set()).add((file.source or "", file.generation))
    inputs = [
        InputBatch(b.batch_id, b.file_sha256, b.status, tuple(sorted(partitions[b.batch_id], key=_partition_order)))
        for b in usable
        if b.batch_id in partitions
    ]
    if not inputs:
        raise BuildError(
            "the selection is empty: no lake rows match the sources, generations and batches asked for",
            hint='see what the lake holds with `distill sql "SELECT source, generation, count(*) FROM decisions '
            'GROUP BY ALL"`, or ingest logs first',
        )
    return LakeInputs(version, inputs, sorted(files, key=_file_order))


def _partition_order(partition: tuple[str, int | None]) -> tuple[str, int]:
    return partition[0], -1 if partition[1] is None else partition[1]


def _file_order(file: LakeFile) -> tuple[str, int, str, str]:
    """Files in (source, generation, first batch) order: the order rows are scanned in, which compaction keeps
    (it merges neighbours of one source and generation), so a build's bytes do not depend on it."""
    return (*_partition_order((file.source or "", file.generation)), file.batch_ids[0], file.path.name)


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
    known = {b.batch_id: b for b in every}
    for wanted in config.batches or []:
        if wanted not in known:
            raise ConfigError(
                f"batches: no batch {wanted!r} in the catalog", hint='list them: distill sql "SELECT * FROM batches"'
            )
        if known[wanted].status == REJECTED:
            raise ConfigError(
                f"batches: batch {wanted!r} was rejected by a gate", hint="rejected batches never enter a build"
            )
        if known[wanted].retired:
            raise ConfigError(
                f"batches: batch {wanted!r} is retired ({known[wanted].retired_reason})",
                hint=f"retired batches never enter a build; bring it back with `distill lake restore {wanted}`",
            )
    readable = set(config.sources) if config.sources is not None else set(sources)
    for weighted in config.weights:
        if weighted not in readable:
            raise ConfigError(
                f"weights: source {weighted!r} is not in the selection",
                hint=f"weight one of {', '.join(sorted(readable)) or 'nothing'}, or select it with --source",
            )


def _partition_selected(file: LakeFile, config: BuildConfig) -> bool:
    if config.sources is not None and file.source not in config.sources:
        return False
    return config.generations is None or file.generation in config.generations


def lake_relation(con: duckdb.DuckDBPyConnection, inputs: LakeInputs) -> str:
    """SQL reading the selected rows, files in a fixed order (rows of batches not selected left out)."""
    source = relation(
        con,
        "build_lake",
        [f.path for f in inputs.files],
        lake_schema(),
        missing=[f.missing for f in inputs.files],
        partitions=[f.partitions for f in inputs.files],
    )
    foreign = {b for f in inputs.files for b in f.batch_ids} - set(inputs.batch_ids)
    if not foreign:
        return source
    selected = ", ".join(f"'{sql_literal(b)}'" for b in inputs.batch_ids)
    return f"(SELECT * FROM {source} WHERE {col.BATCH_ID} IN ({selected}))"


def register_rows(con: duckdb.DuckDBPyConnection, inputs: LakeInputs) -> int:
    """Register the view of the selected rows without duplicates; returns how many duplicates it drops.

    A decision (game, seat, decision index) seen more than once keeps its first
    copy by (batch id, line). The drop list is only computed when a cheap count
    finds duplicates.
    """
    source = lake_relation(con, inputs)
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
