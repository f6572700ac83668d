"""The catalog's index of the lake's log: which files, batches and batch states make up each version.

The Delta log (:mod:`toolkit.catalog.delta`) is the truth; these DuckDB
tables index it so that any version is a plain SQL question (which files are
live, what each batch's review status was) that readers answer without
replaying the log:

- ``versions``: one row per lake version (its time, operation, batches,
  reason, Distill version, what it added and removed);
- ``lake_files``: one row per file per stretch of versions it was live in
  (``added_version`` .. ``removed_version``, exclusive), with the batches,
  source and generation of its rows and the lake columns it lacks (it was
  written before a contract version added them: they read as null);
- ``batch_log``: what ingest recorded of each batch (counts, partitions,
  overrides, the version that brought it);
- ``batch_states``: the review status and retirement of each batch after
  every version that changed it (the state at version V is the latest row
  at or before V);
- ``file_log``: the ingested files (a path inside the data root is stored
  relative to it).

Every row is written by :func:`apply_version` from a commit and its file
actions: right after the writer commits, or later, from the log itself,
when a writer died between the two (:func:`catch_up`).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Final

import duckdb
import pyarrow.parquet as pq

from toolkit.catalog.delta import CommitInfo, DataFile, DeltaLake, Version
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.schema import columns as col
from toolkit.schema.arrow import lake_schema

TABLES: Final = """
CREATE TABLE IF NOT EXISTS catalog_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS versions (
    version BIGINT PRIMARY KEY,
    committed_at TIMESTAMP NOT NULL,
    operation VARCHAR NOT NULL,
    batches VARCHAR[] NOT NULL,
    reason VARCHAR,
    distill_version VARCHAR,
    files_added INTEGER NOT NULL,
    files_removed INTEGER NOT NULL,
    rows_added BIGINT NOT NULL,
    rows_removed BIGINT NOT NULL,
    detail JSON
);
CREATE TABLE IF NOT EXISTS lake_files (
    path VARCHAR NOT NULL,
    batch_ids VARCHAR[] NOT NULL,
    source VARCHAR,
    generation INTEGER,
    rows BIGINT NOT NULL,
    size_bytes BIGINT NOT NULL,
    added_version BIGINT NOT NULL,
    removed_version BIGINT,
    missing VARCHAR[] NOT NULL,
    PRIMARY KEY (path, added_version)
);
CREATE TABLE IF NOT EXISTS batch_log (
    batch_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    file_sha256 VARCHAR NOT NULL,
    rows_valid BIGINT NOT NULL,
    rows_rejected BIGINT NOT NULL,
    rows_duplicate BIGINT NOT NULL,
    sources VARCHAR[] NOT NULL,
    generations INTEGER[] NOT NULL,
    source_override VARCHAR,
    dialect_override VARCHAR,
    distill_version VARCHAR NOT NULL,
    lake_version BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_states (
    version BIGINT NOT NULL,
    batch_id VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    status_reason VARCHAR,
    retired BOOLEAN NOT NULL,
    retired_reason VARCHAR,
    PRIMARY KEY (version, batch_id)
);
CREATE TABLE IF NOT EXISTS file_log (
    file_sha256 VARCHAR PRIMARY KEY,
    path VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL,
    batch_id VARCHAR NOT NULL,
    lines BIGINT NOT NULL,
    blank_lines BIGINT NOT NULL,
    rows_valid BIGINT NOT NULL,
    rows_rejected BIGINT NOT NULL,
    dialects VARCHAR NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
"""

# Operations and what they do to batch states (the others change files only).
INGEST: Final = "ingest"
REVIEW: Final = "review"
RETIRE: Final = "retire"
RESTORE: Final = "restore"
VACUUM: Final = "vacuum"
# catalog_meta key: a vacuum deleting files has not committed its version yet (see toolkit.catalog.lifecycle).
VACUUM_PENDING: Final = "vacuum_pending"


def indexed_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The newest version the index holds (None: nothing yet)."""
    return con.execute("SELECT max(version) FROM versions").fetchall()[0][0]


def apply_version(
    con: duckdb.DuckDBPyConnection, lake: Path, version: Version, adds: list[DataFile], removes: list[DataFile]
) -> None:
    """Index one committed version: its row, its files' live ranges, and the batch records and states it changed.

    Runs in one transaction: a crash leaves the index at the version before.
    """
    con.execute("BEGIN TRANSACTION")
    try:
        record_version(con, lake, version, adds, removes)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def record_version(
    con: duckdb.DuckDBPyConnection, lake: Path, version: Version, adds: list[DataFile], removes: list[DataFile]
) -> None:
    """:func:`apply_version` inside the caller's transaction."""
    info = version.info
    con.execute(
        "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            version.version,
            version.at,
            version.operation,
            info.batches if info else [],
            info.reason if info else None,
            info.distill_version if info else None,
            len(adds),
            len(removes),
            sum(f.rows for f in adds),
            sum(f.rows for f in removes),
            json.dumps(info.detail) if info and info.detail else None,
        ],
    )
    for file in removes:
        con.execute(
            "UPDATE lake_files SET removed_version = ? WHERE path = ? AND removed_version IS NULL",
            [version.version, file.path],
        )
    for file in adds:
        batches, source, generation, missing = describe(lake / file.path)
        con.execute(
            "INSERT INTO lake_files VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
            [file.path, batches, source, generation, file.rows, file.size_bytes, version.version, missing],
        )
    if info is not None:
        _apply_batches(con, version.version, info)


def _apply_batches(con: duckdb.DuckDBPyConnection, version: int, info: CommitInfo) -> None:
    if info.operation == INGEST:
        batch = BatchRecord.model_validate(info.detail["batch"])
        file = FileRecord.model_validate(info.detail["file"])
        con.execute("DELETE FROM batch_log WHERE batch_id = ?", [batch.batch_id])  # ingested again after a vacuum
        con.execute("DELETE FROM file_log WHERE file_sha256 = ?", [file.file_sha256])
        _insert(con, "batch_log", {**batch.model_dump(include=set(BATCH_LOG_COLUMNS)), "lake_version": version})
        _insert(con, "file_log", file.row())
        _set_states(con, version, [batch.batch_id], status="ingested", status_reason=None, retired=False)
    elif info.operation == REVIEW:
        _set_states(con, version, info.batches, status=info.detail["status"], status_reason=info.reason)
    elif info.operation == RETIRE:
        _set_states(con, version, info.batches, retired=True, retired_reason=info.reason)
    elif info.operation == RESTORE:
        _set_states(con, version, info.batches, retired=False, retired_reason=None)
    elif info.operation == VACUUM:
        con.execute("DELETE FROM catalog_meta WHERE key = ?", [VACUUM_PENDING])


BATCH_LOG_COLUMNS: Final = (
    "batch_id",
    "created_at",
    "file_sha256",
    "rows_valid",
    "rows_rejected",
    "rows_duplicate",
    "sources",
    "generations",
    "source_override",
    "dialect_override",
    "distill_version",
    "lake_version",
)
_UNCHANGED: Final = object()


def _set_states(
    con: duckdb.DuckDBPyConnection,
    version: int,
    batches: list[str],
    *,
    status: object = _UNCHANGED,
    status_reason: object = _UNCHANGED,
    retired: object = _UNCHANGED,
    retired_reason: object = _UNCHANGED,
) -> None:
    """Record each batch's state after ``version``: its previous state with the given fields changed."""
    for batch in batches:
        found = con.execute(
            "SELECT status, status_reason, retired, retired_reason FROM batch_states WHERE batch_id = ? "
            "ORDER BY version DESC LIMIT 1",
            [batch],
        ).fetchall()
        old = found[0] if found else ("ingested", None, False, None)
        new = [
            old[i] if value is _UNCHANGED else value
            for i, value in enumerate((status, status_reason, retired, retired_reason))
        ]
        con.execute("INSERT OR REPLACE INTO batch_states VALUES (?, ?, ?, ?, ?, ?)", [version, batch, *new])


def _insert(con: duckdb.DuckDBPyConnection, table: str, row: dict[str, object]) -> None:
    con.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


def describe(path: Path) -> tuple[list[str], str | None, int | None, list[str]]:
    """The batches, source and generation of a lake file's rows (from its footer when each column holds one
    value, else from the columns themselves), and the lake columns it lacks."""
    meta = pq.read_metadata(path)
    names = meta.schema.to_arrow_schema().names
    missing = [name for name in lake_schema().names if name not in names]
    names = meta.schema.names
    single: dict[str, object] = {}
    for name in (col.BATCH_ID, col.SOURCE, col.GENERATION):
        index = names.index(name)
        stats = [meta.row_group(g).column(index).statistics for g in range(meta.num_row_groups)]
        values = {(s.min, s.max) for s in stats if s is not None and s.has_min_max}
        nulls = sum(s.null_count for s in stats if s is not None and s.has_null_count)
        if len(values) == 1 and len(stats) == meta.num_row_groups and all(s is not None for s in stats):
            low, high = next(iter(values))
            if low == high and nulls == 0:
                single[name] = low
        elif not values and meta.num_row_groups and nulls == meta.num_rows:
            single[name] = None
    if len(single) < 3:
        table = pq.read_table(path, columns=[n for n in (col.BATCH_ID, col.SOURCE, col.GENERATION) if n not in single])
        for name in table.column_names:
            values = table[name].unique().to_pylist()
            single[name] = sorted(values) if name == col.BATCH_ID else (values[0] if len(values) == 1 else None)
    batches = single[col.BATCH_ID]
    return (
        sorted(batches) if isinstance(batches, list) else [str(batches)],
        single[col.SOURCE],  # type: ignore[return-value]
        single[col.GENERATION],  # type: ignore[return-value]
        missing,
    )


def catch_up(con: duckdb.DuckDBPyConnection, delta: DeltaLake) -> list[int]:
    """Index the versions the log holds and the index does not (a writer died between its commit and its index
    update); returns them."""
    done = indexed_version(con)
    latest = delta.version
    start = 0 if done is None else done + 1
    if start > latest:
        return []
    before = {} if start == 0 else delta.files_at(start - 1)
    for version in delta.versions(start, latest):
        after = delta.files_at(version.version)
        adds = [f for p, f in after.items() if p not in before]
        removes = [f for p, f in before.items() if p not in after]
        apply_version(con, delta.root, version, adds, removes)
        before = after
    return list(range(start, latest + 1))


def now() -> dt.datetime:
    """UTC now, naive (how the catalog stores times)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
