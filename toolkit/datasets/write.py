"""The final pass of a build: every selected lake row once, matched against the plan, encoded, written.

The lake is scanned by one DuckDB query with no join and no ORDER BY, which
DuckDB guarantees to return in file order; matching rows to the plan happens
here, per Arrow batch, so the output order (and so its bytes) depends only
on the lake's files and the plan. Parts are cut at fixed row counts and row
groups at fixed sizes, whatever batches the scan hands over.

Three things overlap on a 2-core machine: DuckDB scans on its own threads,
this thread matches and encodes, and one writer thread encodes and compresses
Parquet (in submission order, so the bytes do not depend on timing).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import (
    COLUMNS,
    FEATURES,
    HOLDOUT,
    LABEL,
    LABEL_SOURCE,
    LEGAL_MASK,
    SAMPLE_WEIGHT,
    SCHEMA,
    SPLITS,
    TRAIN,
    PartFile,
    SplitSummary,
)
from toolkit.datasets.hf import with_features
from toolkit.datasets.plan import Episodes, Plan
from toolkit.datasets.select import DROPPED, LakeInputs, lake_relation
from toolkit.features import COMMAND_ZONE, HAND, MAX_SEATS, SEAT_FIELDS, encode
from toolkit.features_arrow import state_arrays_from_arrow
from toolkit.progress import Progress, ProgressFn
from toolkit.schema import columns as col
from toolkit.schema.vocab import MACRO_ACTIONS
from toolkit.storage import file_sha256

ROW_GROUP: Final = 65_536
SCAN_BATCH: Final = 65_536
MAX_QUEUED_WRITES: Final = 2  # row groups waiting for the writer thread (bounds memory)
_PLAYER_FIELDS: Final = (*SEAT_FIELDS, HAND, COMMAND_ZONE)
_DICTIONARY: Final = [col.GAME_ID, col.SOURCE, LABEL_SOURCE, col.BATCH_ID]
_STATISTICS: Final = [col.GAME_ID, col.SEAT, col.DECISION_INDEX, col.SOURCE, col.GENERATION]
# The scanned columns a dataset row copies as they are (the nested ones are encoded into FEATURES / LEGAL_MASK).
_FLAT: Final = [
    col.GAME_ID, col.SEAT, col.DECISION_INDEX, col.SOURCE, col.GENERATION, LABEL, LABEL_SOURCE,
    col.REWARD, col.EPISODE_RETURN, col.SEAT_WON, col.BATCH_ID, col.SOURCE_LINE,
]  # fmt: skip
# The parts' schema: the rows' columns plus the Hugging Face features, so that `datasets` reads the label as
# a ClassLabel of the action names.
FILE_SCHEMA: Final = with_features(SCHEMA, {LABEL: MACRO_ACTIONS})


def scan_sql(con: duckdb.DuckDBPyConnection, inputs: LakeInputs) -> str:
    """The one query of the final pass: lake rows in file order, only the columns a dataset needs."""
    player = ", ".join(f"{name} := p.{name}" for name in _PLAYER_FIELDS)
    return f"""
        SELECT {col.GAME_ID}, {col.SEAT}, {col.DECISION_INDEX}, {col.SOURCE}, {col.GENERATION},
               {col.TURN}, {col.PHASE}, {col.POD_SIZE}, {col.LEGAL_ACTIONS},
               list_transform({col.PLAYERS}, lambda p: struct_pack({player})) AS {col.PLAYERS},
               {col.ACTION}.{col.ACTION_INDEX}::INTEGER AS {LABEL},
               {col.ACTION}.{col.ACTION_LABEL_SOURCE} AS {LABEL_SOURCE},
               {col.REWARD}, {col.EPISODE_RETURN}, {col.SEAT_WON}, {col.BATCH_ID}, {col.SOURCE_LINE}
        FROM {lake_relation(con, inputs)}
    """


@dataclass
class LabelDrop:
    """Lake rows (``batch_id``, ``source_line``) a build leaves out of its train split, and how many it did."""

    rows: pa.Table
    rows_dropped: int = 0


@dataclass
class Matched:
    """Rows of one split from one scanned batch, with their source and game codes for the accounting."""

    rows: pa.RecordBatch
    source: np.ndarray
    game: np.ndarray


@dataclass
class SplitWriter:
    """Writes one split as fixed-size Parquet parts (on the shared writer thread) and keeps its accounting."""

    folder: Path
    split: str
    rows_per_file: int
    io: ThreadPoolExecutor
    sources: list[str]
    n_games: int
    parts: list[PartFile] = field(default_factory=list)
    label_sources: Counter[str] = field(default_factory=Counter)
    _rows: np.ndarray = field(init=False)
    _weighted: np.ndarray = field(init=False)
    _seen: np.ndarray = field(init=False)
    _pending: list[pa.RecordBatch] = field(default_factory=list)
    _pending_rows: int = 0
    _writer: pq.ParquetWriter | None = None
    _path: Path | None = None
    _file_rows: int = 0
    _queued: list[Future[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rows = np.zeros(len(self.sources), np.int64)
        self._weighted = np.zeros(len(self.sources), np.float64)
        self._seen = np.zeros((len(self.sources), self.n_games), bool)

    def add(self, matched: Matched) -> None:
        """Queue rows (already in dataset columns) and write every full row group."""
        if not matched.rows.num_rows:
            return
        self._account(matched)
        self._pending.append(matched.rows)
        self._pending_rows += matched.rows.num_rows
        while self._pending_rows >= self._room():
            self._flush(self._room())

    def close(self) -> SplitSummary:
        """Write what is left, wait for the writer, and return the split's summary."""
        while self._pending_rows:
            self._flush(min(self._pending_rows, self._room()))
        self._close_part()
        self._drain(0)
        present = [i for i, s in enumerate(self.sources) if self._rows[i]]
        return SplitSummary(
            rows=int(self._rows.sum()),
            games=int(self._seen.any(0).sum()),
            weighted_rows=round(float(self._weighted.sum()), 6),
            rows_by_source={self.sources[i]: int(self._rows[i]) for i in present},
            games_by_source={self.sources[i]: int(self._seen[i].sum()) for i in present},
            weighted_rows_by_source={self.sources[i]: round(float(self._weighted[i]), 6) for i in present},
            label_sources=dict(sorted(self.label_sources.items())),
            files=self.parts,
        )

    def _room(self) -> int:
        """Rows the next row group takes: a full group, or what the current part still holds."""
        return min(ROW_GROUP, self.rows_per_file - self._file_rows)

    def _account(self, matched: Matched) -> None:
        weights = matched.rows.column(SAMPLE_WEIGHT).to_numpy()
        self._rows += np.bincount(matched.source, minlength=len(self.sources))
        self._weighted += np.bincount(matched.source, weights=weights, minlength=len(self.sources))
        self._seen[matched.source, matched.game] = True
        for value in pc.value_counts(matched.rows.column(LABEL_SOURCE)).to_pylist():
            self.label_sources[value["values"]] += value["counts"]

    def _flush(self, n: int) -> None:
        table = pa.Table.from_batches(self._pending, SCHEMA)
        head, rest = table.slice(0, n), table.slice(n)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows
        if self._writer is None:
            self._open_part()
        self._drain(MAX_QUEUED_WRITES)
        self._queued.append(self.io.submit(self._writer.write_table, head, row_group_size=ROW_GROUP))  # type: ignore[union-attr]
        self._file_rows += head.num_rows
        if self._file_rows >= self.rows_per_file:
            self._close_part()

    def _open_part(self) -> None:
        path = self.folder / self.split / f"part-{len(self.parts):05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(
            path,
            FILE_SCHEMA,
            compression="zstd",
            compression_level=1,
            use_dictionary=_DICTIONARY,
            write_statistics=_STATISTICS,
        )
        self._path, self._file_rows = path, 0

    def _close_part(self) -> None:
        if self._writer is None or self._path is None:
            return
        self._drain(0)
        self._writer.close()
        relative = self._path.relative_to(self.folder).as_posix()
        self.parts.append(PartFile(path=relative, rows=self._file_rows, sha256=file_sha256(self._path)))
        self._writer, self._path, self._file_rows = None, None, 0

    def _drain(self, keep: int) -> None:
        """Wait until at most ``keep`` writes are queued (re-raising a writer error)."""
        while len(self._queued) > keep:
            self._queued.pop(0).result()


def write_splits(
    con: duckdb.DuckDBPyConnection,
    inputs: LakeInputs,
    plan: Plan,
    config: BuildConfig,
    folder: Path,
    progress: ProgressFn | None = None,
    label_drop: LabelDrop | None = None,
) -> dict[str, SplitSummary]:
    """Scan the selected rows once and write the train and holdout splits under ``folder``.

    ``label_drop``: lake rows left out of the train split (label issues), which
    counts the rows it removed; the holdout keeps them.
    """
    matcher = _Matcher(con, plan, config, label_drop)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parquet") as io:
        writers = {
            split: SplitWriter(folder, split, config.rows_per_file, io, matcher.sources, matcher.n_games)
            for split in SPLITS
        }
        reader = con.sql(scan_sql(con, inputs)).to_arrow_reader(SCAN_BATCH)
        scanned = 0
        for batch in reader:
            for split, matched in matcher.split(batch).items():
                writers[split].add(matched)
            scanned += batch.num_rows
            if progress is not None:
                progress(Progress(scanned, None, "rows"))
        return {split: writer.close() for split, writer in writers.items()}


class _Matcher:
    """Matches scanned rows to the plan's episodes by integer codes: which split, which weight."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, plan: Plan, config: BuildConfig, label_drop: LabelDrop | None = None
    ) -> None:
        self.sources = sorted({*plan.train.source.tolist(), *plan.holdout.source.tolist()})
        games = sorted({*plan.train.game_id.tolist(), *plan.holdout.game_id.tolist()})
        self.n_games = len(games)
        self._games = pa.array(games, pa.string())
        self._game_index = {game: i for i, game in enumerate(games)}
        self._sources = pa.array(self.sources, pa.string())
        size = max(1, self.n_games * len(self.sources) * MAX_SEATS)
        self._weight = {TRAIN: self._table(plan.train, size), HOLDOUT: self._table(plan.holdout, size)}
        self.excluded = pa.array(config.exclude_label_sources, pa.string())
        dropped = con.sql(f"SELECT {col.BATCH_ID}, {col.SOURCE_LINE} FROM {DROPPED}").to_arrow_table()
        self.dropped = _line_keys(dropped) if dropped.num_rows else None
        self.label_drop = label_drop
        self._label_keys = _line_keys(label_drop.rows) if label_drop is not None and label_drop.rows.num_rows else None

    def _game_codes(self, game_id: pa.Array) -> np.ndarray:
        """Each row's index in the plan's games (-1: not planned).

        A batch holds a few hundred games (the lake keeps a game's rows together), so the batch's distinct ids
        are looked up in a dict built once; ``pc.index_in`` against every game would hash them all per batch.
        """
        encoded = pc.dictionary_encode(game_id)
        lookup = self._game_index
        codes = np.array([lookup.get(g, -1) for g in encoded.dictionary.to_pylist()] or [-1], np.int64)
        indices = encoded.indices
        if indices.null_count:
            valid = indices.is_valid().to_numpy(zero_copy_only=False)
            return np.where(valid, codes[pc.fill_null(indices, 0).to_numpy()], -1)
        return codes[indices.to_numpy()]

    def _codes(self, source: np.ndarray, game: np.ndarray, seat: np.ndarray) -> np.ndarray:
        return (game * len(self.sources) + source) * MAX_SEATS + seat

    def _table(self, episodes: Episodes, size: int) -> np.ndarray:
        """Dense weight per episode code (0: not in the split)."""
        weight = np.zeros(size, np.float32)
        if len(episodes):
            source = np.searchsorted(self.sources, episodes.source)
            game = pc.index_in(pa.array(episodes.game_id, pa.string()), value_set=self._games).to_numpy()
            weight[self._codes(source, game, episodes.seat.astype(np.int64))] = episodes.weight
        return weight

    def split(self, batch: pa.RecordBatch) -> dict[str, Matched]:
        if self.dropped is not None:
            batch = batch.filter(pc.invert(pc.is_in(_line_keys(batch), self.dropped)))
        game = self._game_codes(batch.column(col.GAME_ID))
        source = pc.fill_null(pc.index_in(batch.column(col.SOURCE), value_set=self._sources), -1).to_numpy()
        known = (game >= 0) & (source >= 0)
        codes = np.where(known, self._codes(source, game, batch.column(col.SEAT).to_numpy().astype(np.int64)), 0)
        keeps = {}
        for split, table in self._weight.items():
            weight = np.where(known, table[codes], 0.0)
            keep = weight > 0
            if split == TRAIN and len(self.excluded):
                keep &= ~pc.is_in(batch.column(LABEL_SOURCE), value_set=self.excluded).to_numpy(zero_copy_only=False)
            if split == TRAIN and self._label_keys is not None and self.label_drop is not None:
                issue = keep & pc.is_in(_line_keys(batch), value_set=self._label_keys).to_numpy(zero_copy_only=False)
                self.label_drop.rows_dropped += int(issue.sum())
                keep &= ~issue
            keeps[split] = (keep, weight[keep])
        # Encoded once for the whole batch; each split then takes its rows of the vectors and filters only the
        # flat columns (filtering the nested players and legal_actions columns per split cost more than encoding).
        vectors, legal = encode_batch(batch)
        flat = batch.select(_FLAT)
        out = {}
        for split, (keep, weights) in keeps.items():
            rows = flat.filter(pa.array(keep))
            out[split] = Matched(dataset_rows(rows, vectors[keep], legal[keep], weights), source[keep], game[keep])
        return out


def encode_batch(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """Scanned lake rows -> their feature vectors [M, FEATURE_SIZE] and completed legal masks [M, 8]."""
    state = state_arrays_from_arrow(batch)
    legal = state.mask | ~state.mask_known[:, None]  # no logged mask: every action counts as legal
    return encode(state), legal


def dataset_rows(flat: pa.RecordBatch, vectors: np.ndarray, legal: np.ndarray, weights: np.ndarray) -> pa.RecordBatch:
    """Dataset rows (SCHEMA) from the scanned rows' flat columns, their vectors, masks and weights."""
    columns = {
        **{name: flat.column(name) for name in _FLAT},
        FEATURES: pa.FixedSizeListArray.from_arrays(
            pa.array(vectors.ravel(), pa.float32()), type=SCHEMA.field(FEATURES).type
        ),
        LEGAL_MASK: pa.FixedSizeListArray.from_arrays(
            pa.array(legal.ravel(), pa.bool_()), type=SCHEMA.field(LEGAL_MASK).type
        ),
        SAMPLE_WEIGHT: pa.array(weights, pa.float32()),
    }
    return pa.RecordBatch.from_arrays([columns[name].cast(SCHEMA.field(name).type) for name in COLUMNS], schema=SCHEMA)


def _line_keys(rows: pa.RecordBatch | pa.Table) -> pa.Array:
    """(batch id, line) of each row as one string: the identity of a lake row."""
    line = pc.cast(rows.column(col.SOURCE_LINE), pa.string())
    keys = pc.binary_join_element_wise(rows.column(col.BATCH_ID), line, "\x1f")
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
