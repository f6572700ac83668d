"""The final pass of a build: every selected lake row once, matched against the plan, encoded, written.

The lake is scanned by one DuckDB query with no join and no ORDER BY, which
DuckDB guarantees to return in file order; matching rows to the plan happens
here, per Arrow batch, so the output order (and so its bytes) depends only
on the lake's files and the plan. Parts are cut at fixed row counts and row
groups at fixed sizes, whatever batches the scan hands over.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit import features as F
from toolkit.build import dataset as D
from toolkit.build.config import BuildConfig
from toolkit.build.plan import KEY_SEP, Plan
from toolkit.build.select import DROPPED, InputBatch, lake_relation
from toolkit.schema import columns as col

ROW_GROUP: Final = 65_536
SCAN_BATCH: Final = 65_536
_PLAYER_FIELDS: Final = (*F.SEAT_FIELDS, F.HAND, F.COMMAND_ZONE)


def scan_sql(inputs: list[InputBatch]) -> str:
    """The one query of the final pass: lake rows in file order, only the columns a dataset needs."""
    player = ", ".join(f"{name} := p.{name}" for name in _PLAYER_FIELDS)
    return f"""
        SELECT {col.GAME_ID}, {col.SEAT}, {col.DECISION_INDEX}, {col.SOURCE}, {col.GENERATION},
               {col.TURN}, {col.PHASE}, {col.POD_SIZE}, {col.LEGAL_ACTIONS},
               list_transform({col.PLAYERS}, lambda p: struct_pack({player})) AS {col.PLAYERS},
               {col.ACTION}.{col.ACTION_INDEX}::INTEGER AS {D.LABEL},
               {col.ACTION}.{col.ACTION_LABEL_SOURCE} AS {D.LABEL_SOURCE},
               {col.REWARD}, {col.EPISODE_RETURN}, {col.SEAT_WON}, {col.BATCH_ID}, {col.SOURCE_LINE}
        FROM {lake_relation(inputs)}
    """


@dataclass
class SplitWriter:
    """Writes one split as fixed-size Parquet parts and keeps its accounting."""

    folder: Path
    split: str
    rows_per_file: int
    parts: list[D.PartFile] = field(default_factory=list)
    rows_by_source: Counter[str] = field(default_factory=Counter)
    weighted_by_source: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    games_by_source: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    label_sources: Counter[str] = field(default_factory=Counter)
    _pending: list[pa.RecordBatch] = field(default_factory=list)
    _pending_rows: int = 0
    _writer: pq.ParquetWriter | None = None
    _path: Path | None = None
    _file_rows: int = 0

    def add(self, batch: pa.RecordBatch) -> None:
        """Queue rows (already in dataset columns) and write every full row group."""
        if not batch.num_rows:
            return
        self._account(batch)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        while self._pending_rows >= self._room():
            self._flush(self._room())

    def close(self) -> D.SplitSummary:
        """Write what is left and return the split's summary."""
        while self._pending_rows:
            self._flush(min(self._pending_rows, self._room()))
        self._close_part()
        games = {s: len(g) for s, g in sorted(self.games_by_source.items())}
        return D.SplitSummary(
            rows=sum(self.rows_by_source.values()),
            games=len(set().union(*self.games_by_source.values())) if self.games_by_source else 0,
            weighted_rows=round(sum(self.weighted_by_source.values()), 6),
            rows_by_source=dict(sorted(self.rows_by_source.items())),
            games_by_source=games,
            weighted_rows_by_source={s: round(w, 6) for s, w in sorted(self.weighted_by_source.items())},
            label_sources=dict(sorted(self.label_sources.items())),
            files=self.parts,
        )

    def _room(self) -> int:
        """Rows the next row group takes: a full group, or what the current part still holds."""
        return min(ROW_GROUP, self.rows_per_file - self._file_rows)

    def _account(self, batch: pa.RecordBatch) -> None:
        source = batch.column(col.SOURCE)
        weight = batch.column(D.SAMPLE_WEIGHT)
        for s in pc.unique(source).to_pylist():
            mine = pc.equal(source, s)
            self.rows_by_source[s] += int(pc.sum(mine).as_py())
            self.weighted_by_source[s] += float(pc.sum(pc.filter(weight, mine)).as_py() or 0.0)
            self.games_by_source[s].update(pc.unique(pc.filter(batch.column(col.GAME_ID), mine)).to_pylist())
        for value in pc.value_counts(batch.column(D.LABEL_SOURCE)).to_pylist():
            self.label_sources[value["values"]] += value["counts"]

    def _flush(self, n: int) -> None:
        table = pa.Table.from_batches(self._pending, D.SCHEMA)
        head, rest = table.slice(0, n), table.slice(n)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows
        if self._writer is None:
            self._open_part()
        self._writer.write_table(head, row_group_size=ROW_GROUP)  # type: ignore[union-attr]
        self._file_rows += head.num_rows
        if self._file_rows >= self.rows_per_file:
            self._close_part()

    def _open_part(self) -> None:
        path = self.folder / self.split / f"part-{len(self.parts):05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(path, D.SCHEMA, compression="zstd", compression_level=1)
        self._path, self._file_rows = path, 0

    def _close_part(self) -> None:
        if self._writer is None or self._path is None:
            return
        self._writer.close()
        path = self._path
        relative = path.relative_to(self.folder).as_posix()
        self.parts.append(D.PartFile(path=relative, rows=self._file_rows, sha256=sha256_file(path)))
        self._writer, self._path, self._file_rows = None, None, 0


def write_splits(
    con: duckdb.DuckDBPyConnection,
    inputs: list[InputBatch],
    plan: Plan,
    config: BuildConfig,
    folder: Path,
    progress: Callable[[int], None] | None = None,
) -> dict[str, D.SplitSummary]:
    """Scan the selected rows once and write the train and holdout splits under ``folder``."""
    matcher = _Matcher(con, plan, config)
    writers = {split: SplitWriter(folder, split, config.rows_per_file) for split in D.SPLITS}
    reader = con.sql(scan_sql(inputs)).to_arrow_reader(SCAN_BATCH)
    for batch in reader:
        for split, rows in matcher.split(batch).items():
            writers[split].add(rows)
        if progress is not None:
            progress(batch.num_rows)
    return {split: writer.close() for split, writer in writers.items()}


class _Matcher:
    """Matches scanned rows to the plan: which split, which weight, dataset columns."""

    def __init__(self, con: duckdb.DuckDBPyConnection, plan: Plan, config: BuildConfig) -> None:
        self.train_keys = pa.array(list(plan.train), pa.string())
        self.train_weights = np.array(list(plan.train.values()), np.float32)
        self.holdout_keys = pa.array(list(plan.holdout), pa.string())
        self.excluded = pa.array(config.exclude_label_sources, pa.string())
        dropped = con.sql(f"SELECT {col.BATCH_ID}, {col.SOURCE_LINE} FROM {DROPPED}").to_arrow_table()
        self.dropped = _line_keys(dropped) if dropped.num_rows else None

    def split(self, batch: pa.RecordBatch) -> dict[str, pa.RecordBatch]:
        if self.dropped is not None:
            batch = batch.filter(pc.invert(pc.is_in(_line_keys(batch), self.dropped)))
        keys = pc.binary_join_element_wise(
            batch.column(col.SOURCE), batch.column(col.GAME_ID), pc.cast(batch.column(col.SEAT), pa.string()), KEY_SEP
        )
        position = pc.index_in(keys, value_set=self.train_keys)
        in_train = pc.is_valid(position)
        if len(self.excluded):
            in_train = pc.and_(in_train, pc.invert(pc.is_in(batch.column(D.LABEL_SOURCE), self.excluded)))
        in_holdout = pc.is_in(keys, value_set=self.holdout_keys)
        train = batch.filter(in_train)
        weights = self.train_weights[pc.filter(position, in_train).to_numpy(zero_copy_only=False)]
        holdout = batch.filter(in_holdout)
        return {
            D.TRAIN: to_dataset_rows(train, weights),
            D.HOLDOUT: to_dataset_rows(holdout, np.ones(holdout.num_rows, np.float32)),
        }


def to_dataset_rows(batch: pa.RecordBatch, weights: np.ndarray) -> pa.RecordBatch:
    """Scanned lake rows -> dataset rows (SCHEMA): features encoded, mask completed, weight attached."""
    state = F.state_arrays_from_arrow(batch)
    vectors = F.encode(state)
    legal = state.mask | ~state.mask_known[:, None]  # no logged mask: every action counts as legal
    columns = {
        **{name: batch.column(name) for name in (col.GAME_ID, col.SEAT, col.DECISION_INDEX, col.SOURCE, col.GENERATION)},
        D.FEATURES: pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), type=D.SCHEMA.field(D.FEATURES).type),
        D.LABEL: batch.column(D.LABEL),
        D.LEGAL_MASK: pa.FixedSizeListArray.from_arrays(pa.array(legal.ravel(), pa.bool_()), type=D.SCHEMA.field(D.LEGAL_MASK).type),
        D.SAMPLE_WEIGHT: pa.array(weights, pa.float32()),
        **{name: batch.column(name) for name in (D.LABEL_SOURCE, col.REWARD, col.EPISODE_RETURN, col.SEAT_WON, col.BATCH_ID, col.SOURCE_LINE)},
    }
    return pa.RecordBatch.from_arrays([columns[name].cast(D.SCHEMA.field(name).type) for name in D.COLUMNS], schema=D.SCHEMA)


def _line_keys(rows: pa.RecordBatch | pa.Table) -> pa.Array:
    """(batch id, line) of each row as one string: the identity of a lake row."""
    keys = pc.binary_join_element_wise(rows.column(col.BATCH_ID), pc.cast(rows.column(col.SOURCE_LINE), pa.string()), KEY_SEP)
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
