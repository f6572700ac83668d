"""The lake's table format: a Delta Lake table (delta-rs) whose Parquet files Distill writes itself.

``lake/`` is a Delta table: ``lake/_delta_log/`` is its transaction log, and
every change of the lake (an ingested batch, a review, a retirement, a
restore, a compaction, a vacuum, a migration) is one commit, that is one
version, whose commit info carries what Distill did under the key
``distill`` (:class:`CommitInfo`). Any Delta reader (delta-rs, polars,
Spark, Trino, DuckDB's delta extension where it can be installed) reads the
lake as it is at any version.

Distill encodes the Parquet files itself (the ingest stage's tuned writer),
moves them into the table folder and commits them with ``add`` actions;
retiring a batch commits ``remove`` actions for its files (metadata only:
the files stay until a vacuum deletes them), restoring it commits ``add``
actions for the same files again. The log is the one source of truth for
which rows are live at a version; the catalog keeps an index of it (see
:mod:`toolkit.catalog.index`) that any process can rebuild from the log.

Only the catalog's writer (one process at a time: it holds the DuckDB
catalog) commits, so commits never race (delta-rs #2700: compaction while
another writer appends fails). Old log files are never cleaned up (time
travel needs them); delta-rs writes a checkpoint every 100 commits, so
loading the table stays fast (delta-rs #1815).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import CatalogError

# The key of Distill's part of a commit's info.
COMMIT_KEY: Final = "distill"
LOG_FOLDER: Final = "_delta_log"
TABLE_CONFIGURATION: Final = {
    # Time travel reads old log files: never delete them (the default deletes those past 30 days).
    "delta.enableExpiredLogCleanup": "false",
    "delta.checkpointInterval": "100",
}


class CommitInfo(BaseModel):
    """What one lake version did, as Distill records it in the commit (and the catalog indexes it)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    operation: str = Field(description="create, ingest, review, retire, restore, compact, vacuum, migrate, evolve.")
    batches: list[str] = Field(default_factory=list, description="The batches it concerns.")
    reason: str | None = None
    distill_version: str
    detail: dict[str, Any] = Field(default_factory=dict, description="Operation-specific facts (records, counts).")


@dataclass(frozen=True)
class DataFile:
    """One Parquet file of the table: its path relative to the table folder, size and rows."""

    path: str
    size_bytes: int
    rows: int


@dataclass(frozen=True)
class Version:
    """One commit of the log: its number, time and Distill's info (None for a commit another tool made)."""

    version: int
    at: dt.datetime
    operation: str
    info: CommitInfo | None


def exists(lake: Path) -> bool:
    """Whether ``lake`` holds a Delta table (a log with at least one commit)."""
    log = lake / LOG_FOLDER
    return log.is_dir() and any(log.glob("*.json"))


class DeltaLake:
    """The lake's Delta table, for the catalog's writer (reads go through the catalog's index)."""

    def __init__(self, lake: Path) -> None:
        from deltalake import DeltaTable

        self.root = lake
        try:
            self.table = DeltaTable(str(lake))
        except Exception as error:  # delta-rs raises its own TableNotFoundError / DeltaError kinds
            raise CatalogError(
                f"cannot read the lake's transaction log {lake / LOG_FOLDER}: {error}",
                hint="restore the data root from a backup; `distill lake history` lists what the catalog knew",
            ) from error

    @classmethod
    def create(cls, lake: Path, schema: pa.Schema, info: CommitInfo, files: list[DataFile] | None = None) -> DeltaLake:
        """Create the table (version 0), holding ``files`` already in its folder, in one commit."""
        from deltalake import CommitProperties
        from deltalake.transaction import create_table_with_add_actions

        lake.mkdir(parents=True, exist_ok=True)
        create_table_with_add_actions(
            str(lake),
            _delta_schema(schema),
            [_add(lake, f) for f in files or []],
            mode="error",
            configuration={**TABLE_CONFIGURATION, "delta.dataSkippingStatsColumns": ",".join(_stats_columns(schema))},
            commit_properties=CommitProperties(custom_metadata=_custom(info)),
        )
        return cls(lake)

    @property
    def version(self) -> int:
        return int(self.table.version())

    def commit(
        self,
        info: CommitInfo,
        adds: Sequence[DataFile] = (),
        removes: Sequence[DataFile] = (),
        *,
        data_change: bool = True,
    ) -> Version:
        """Commit ``adds`` (files already in the table folder) and ``removes`` as one new version
        (``data_change`` False: the same rows in other files, as a compaction does).

        Raises:
            CatalogError: the log cannot be written (a full disk, a read-only data root).
        """
        from deltalake import CommitProperties
        from deltalake.transaction import RemoveAction

        now = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
        actions = [_add(self.root, f, data_change) for f in adds] + [
            RemoveAction(f.path, data_change, now, f.size_bytes, {}) for f in removes
        ]
        try:
            self.table.create_write_transaction(
                actions,
                "append",
                self.table.schema(),
                commit_properties=CommitProperties(custom_metadata=_custom(info)),
            )
        except Exception as error:
            raise CatalogError(
                f"cannot commit to the lake {self.root}: {error}",
                hint="the data root must be writable: check its permissions and free space",
            ) from error
        self.table.update_incremental()
        return self.versions(self.version, self.version)[0]

    def add_columns(self, fields: list[pa.Field], info: CommitInfo) -> Version:
        """Evolve the table's schema: add nullable top-level columns (files without them read them as null)."""
        from deltalake import CommitProperties, Schema

        delta_fields = Schema.from_arrow(pa.schema([f.with_nullable(True) for f in fields])).fields
        self.table.alter.add_columns(delta_fields, commit_properties=CommitProperties(custom_metadata=_custom(info)))
        self.table.update_incremental()
        return self.versions(self.version, self.version)[0]

    def schema(self) -> pa.Schema:
        """The table's schema, as Arrow."""
        return pa.schema(self.table.schema().to_arrow())

    def versions(self, first: int, last: int) -> list[Version]:
        """The commits ``first``..``last`` (inclusive), oldest first."""
        wanted = range(first, last + 1)
        if not wanted:
            return []
        found = [h for h in self.table.history(self.version - first + 1) if h.get("version") in wanted]
        return sorted((_version(h) for h in found), key=lambda v: v.version)

    def files_at(self, version: int) -> dict[str, DataFile]:
        """The live files at ``version``, by path."""
        from deltalake import DeltaTable

        table = self.table if version == self.version else DeltaTable(str(self.root), version=version)
        actions = pa.table(table.get_add_actions(flatten=True)).select(["path", "size_bytes", "num_records"])
        return {
            path: DataFile(path, int(size), int(rows or 0))
            for path, size, rows in zip(*(c.to_pylist() for c in actions.columns), strict=True)
        }


def data_file(lake: Path, path: Path) -> DataFile:
    """A Parquet file in the table folder, described from its footer."""
    return DataFile(path.relative_to(lake).as_posix(), path.stat().st_size, pq.read_metadata(path).num_rows)


def _add(lake: Path, file: DataFile, data_change: bool = True) -> Any:
    from deltalake.transaction import AddAction

    path = lake / file.path
    modified = int(path.stat().st_mtime * 1000)
    return AddAction(file.path, file.size_bytes, {}, modified, data_change, json.dumps(file_stats(path)))


def file_stats(path: Path) -> dict[str, Any]:
    """Delta statistics of a Parquet file from its footer: rows, and per top-level scalar column with statistics
    in every row group its minimum, maximum and null count (what Delta readers skip files by)."""
    meta = pq.read_metadata(path)
    stats: dict[str, Any] = {"numRecords": meta.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
    schema = meta.schema.to_arrow_schema()
    for index in range(meta.num_columns):
        column = meta.row_group(0).column(index) if meta.num_row_groups else None
        name = column.path_in_schema if column is not None else ""
        if column is None or "." in name or pa.types.is_nested(schema.field(name).type):
            continue
        groups = [meta.row_group(g).column(index).statistics for g in range(meta.num_row_groups)]
        if any(s is None or not s.has_null_count for s in groups):
            continue
        stats["nullCount"][name] = sum(s.null_count for s in groups)
        bounded = [s for s in groups if s.has_min_max]
        if bounded and len(bounded) + sum(s.null_count == s.num_values for s in groups) >= len(groups):
            stats["minValues"][name] = _jsonable(min(s.min for s in bounded))
            stats["maxValues"][name] = _jsonable(max(s.max for s in bounded))
    return stats


def _stats_columns(schema: pa.Schema) -> list[str]:
    """The columns Distill writes statistics for (top-level scalars; Delta's default of the first 32 leaf columns
    would stop inside ``players`` and miss ``batch_id``)."""
    return [f.name for f in schema if not pa.types.is_nested(f.type)]


def _jsonable(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _delta_schema(schema: pa.Schema) -> Any:
    from deltalake import Schema

    return Schema.from_arrow(schema)


def _custom(info: CommitInfo) -> dict[str, Any]:
    return {COMMIT_KEY: info.model_dump(mode="json")}


def _version(entry: dict[str, Any]) -> Version:
    raw = entry.get(COMMIT_KEY)
    info = CommitInfo.model_validate(raw) if isinstance(raw, dict) else None
    at = dt.datetime.fromtimestamp(int(entry["timestamp"]) / 1000, dt.UTC).replace(tzinfo=None)
    operation = info.operation if info is not None else str(entry.get("operation", "unknown")).lower()
    return Version(int(entry["version"]), at, operation, info)
