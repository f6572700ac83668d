"""The catalog's index of the lake's log: which files, batches and batch states make up each version.

The Delta log is the truth (:mod:`toolkit.catalog.log` reads it); these
DuckDB tables are a cache of it, built from the log alone, so that any
version is a plain SQL question (which files are live, what each batch's
review status was) that readers answer without replaying the log:

- ``versions``: one row per lake version (its time, operation, batches,
  reason, Distill version, what it added and removed);
- ``lake_files``: one row per file per stretch of versions it was live in
  (``added_version`` .. ``removed_version``, exclusive), with the batches,
  source and generation of its rows and the lake columns it lacks;
- ``batch_log``: what ingest recorded of each batch (counts, partitions,
  overrides, the version that brought it);
- ``batch_states``: the review status and retirement of each batch after
  every version that changed it (the state at version V is the latest row
  at or before V);
- ``file_log``: the ingested files (a path inside the data root is stored
  relative to it);
- ``catalog_meta``: the index's format, the digest of the last commit it
  holds (an index is of this log only while that commit is unchanged), the
  vacuum horizon.

:func:`catch_up` indexes the versions the log holds and the index does not
(one transaction per version); :func:`rebuild` makes the whole index anew
from the log, in one transaction. Nothing here reads a data file, except
for a commit another tool made, which carries no facts of its files.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import duckdb

from toolkit.catalog import log
from toolkit.catalog.commit import COMMIT_FORMAT, CommitInfo, FileFacts
from toolkit.catalog.log import AddedFile, Commit
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.errors import CatalogError
from toolkit.failpoints import failpoint
from toolkit.schema import columns as col

# The shape of these tables: a catalog of another shape is rebuilt from the log (it is a cache).
INDEX_FORMAT: Final = 3
INDEX_TABLES: Final = ("catalog_meta", "versions", "lake_files", "batch_log", "batch_states", "file_log")
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
MIGRATE: Final = "migrate"
# catalog_meta keys
FORMAT_KEY: Final = "format_version"
DIGEST_KEY: Final = "log_digest"
HORIZON_KEY: Final = "vacuum_horizon"
LAKE_FORMAT_KEY: Final = "lake_format"
MIGRATE_HINT: Final = "migrate it once with `distill lake migrate` (metadata only: no file is rewritten)"


class StaleIndex(Exception):
    """The index is not of this log (its last commit changed, or a migration amended earlier commits): rebuild."""


def meta(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Every fact ``catalog_meta`` holds (none where the table is missing), in one query."""
    try:
        return dict(con.execute("SELECT key, value FROM catalog_meta").fetchall())
    except duckdb.CatalogException:
        return {}


def read_meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    return meta(con).get(key)


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    rows = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND NOT temporary AND database_name = "
        "current_database()",
        [name],
    ).fetchall()
    return bool(rows[0][0])


def indexed_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The newest version the index holds (None: nothing yet)."""
    return con.execute("SELECT max(version) FROM versions").fetchall()[0][0]


def is_current(con: duckdb.DuckDBPyConnection, lake: Path, latest: int | None) -> bool:
    """Whether the index holds exactly the log up to ``latest`` (its newest version): same format, same last
    commit, byte for byte."""
    try:
        facts = meta(con)
        if facts.get(FORMAT_KEY) != str(INDEX_FORMAT):
            return False
        done = indexed_version(con)
    except duckdb.Error:
        return False
    return done is not None and done == latest and facts.get(DIGEST_KEY) == log.digest(lake, done)


def catch_up(con: duckdb.DuckDBPyConnection, lake: Path) -> list[int]:
    """Index the versions the log holds and the index does not (a writer died between its commit and its index
    update, or another process committed since); returns them. A version applied is committed in its own
    transaction: a crash leaves the index at a version of the log, never between two.

    Raises:
        StaleIndex: the index is not of this log (rebuild it: :func:`rebuild`).
        LakeLogError: a commit that cannot be trusted.
        CatalogError: a lake of an older format (migrate it).
    """
    if read_meta(con, FORMAT_KEY) != str(INDEX_FORMAT):
        raise StaleIndex
    latest = log.latest_version(lake)
    done = indexed_version(con)
    if latest is None or (done is not None and done > latest):
        raise StaleIndex
    if done is not None and read_meta(con, DIGEST_KEY) != log.digest(lake, done):
        raise StaleIndex
    start = 0 if done is None else done + 1
    applied = []
    for commit in log.read_commits(lake, start, latest):
        if commit.info is not None and commit.info.operation == MIGRATE and start > 0:
            raise StaleIndex  # it amends the facts of earlier commits
        _check_format(commit, lake)
        con.execute("BEGIN TRANSACTION")
        try:
            record(con, lake, commit, {})
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        applied.append(commit.version)
    return applied


def rebuild(con: duckdb.DuckDBPyConnection, lake: Path) -> list[int]:
    """Make the whole index anew from the log, in one transaction (a crash leaves the index as it was);
    returns the versions indexed.

    Raises:
        LakeLogError: a commit that cannot be trusted.
        CatalogError: a lake of an older format (migrate it).
    """
    latest = log.latest_version(lake)
    commits = [] if latest is None else list(log.read_commits(lake, 0, latest))
    if commits:
        _check_format(commits[-1], lake, commits)
    amended = {path: facts for c in commits if c.info is not None for path, facts in c.info.files.items()}
    con.execute("BEGIN TRANSACTION")
    try:
        for table in INDEX_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {table}")
        create(con)
        failpoint("reindex.dropped")  # a kill inside the transaction: the index stays as it was
        for commit in commits:
            record(con, lake, commit, amended)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return [c.version for c in commits]


def create(con: duckdb.DuckDBPyConnection) -> None:
    """The index's tables, empty (in the caller's transaction, if any)."""
    con.execute(TABLES)
    con.execute("INSERT OR REPLACE INTO catalog_meta VALUES (?, ?)", [FORMAT_KEY, str(INDEX_FORMAT)])


def lake_format(commits: Iterable[Commit]) -> int | None:
    """The lake's format: that of the newest of these commits Distill made (None: none did)."""
    found = None
    for commit in commits:
        if commit.info is not None:
            found = commit.info.format
    return found


def _check_format(commit: Commit, lake: Path, commits: list[Commit] | None = None) -> None:
    """Refuse to index a lake whose newest Distill commit is of an older format (its files have no facts)."""
    if commit.info is None and commits is not None:
        found = lake_format(commits)
    else:
        found = commit.info.format if commit.info is not None else None
    if found is not None and found < COMMIT_FORMAT:
        raise CatalogError(
            f"the lake at {lake} is of format {found} (its commits name no file facts; partitions undeclared); "
            f"this Distill reads format {COMMIT_FORMAT}",
            hint=MIGRATE_HINT,
        )


def record(con: duckdb.DuckDBPyConnection, lake: Path, commit: Commit, amended: dict[str, FileFacts]) -> None:
    """Index one commit (in the caller's transaction): its row, its files' live ranges, the batch records and
    states it changed. ``amended``: facts of files whose own commit lacks them (from a later migration)."""
    info = commit.info
    removed_rows = 0
    for path in commit.removes:
        found = con.execute(
            "UPDATE lake_files SET removed_version = ? WHERE path = ? AND removed_version IS NULL RETURNING rows",
            [commit.version, path],
        ).fetchall()
        removed_rows += sum(r[0] for r in found)
    added_rows = 0
    for file in commit.adds:
        facts = _facts(lake, file, info, amended)
        added_rows += facts.rows
        con.execute(  # a file added again without a remove: its earlier stretch ends here
            "UPDATE lake_files SET removed_version = ? WHERE path = ? AND removed_version IS NULL",
            [commit.version, file.path],
        )
        con.execute(
            "INSERT INTO lake_files VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
            [
                file.path,
                facts.batches,
                facts.source,
                facts.generation,
                facts.rows,
                file.size,
                commit.version,
                facts.missing,
            ],
        )
    con.execute(
        "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            commit.version,
            commit.at,
            info.operation if info is not None else commit.operation,
            info.batches if info is not None else [],
            info.reason if info is not None else None,
            info.distill_version if info is not None else None,
            len(commit.adds),
            len(commit.removes),
            added_rows,
            removed_rows,
            json.dumps(info.detail) if info is not None and info.detail else None,
        ],
    )
    if info is not None:
        _apply_batches(con, commit.version, info)
        _set_meta(con, LAKE_FORMAT_KEY, str(info.format))
    _set_meta(con, DIGEST_KEY, commit.digest)


def _facts(lake: Path, file: AddedFile, info: CommitInfo | None, amended: dict[str, FileFacts]) -> FileFacts:
    """What the log says of an added file: its commit's facts, or a migration's (see :func:`foreign_facts`)."""
    if info is not None and file.path in info.files:
        return info.files[file.path]
    if file.path in amended:
        return amended[file.path]
    return foreign_facts(lake, file)


def foreign_facts(lake: Path, file: AddedFile) -> FileFacts:
    """The facts of a file a commit added without them (another tool's, or an older Distill's): its footer while
    the file is in the table folder, else the log's partition values and statistics."""
    from toolkit.catalog.delta import file_facts

    path = log.inside(lake, file.path)
    if path is not None and path.is_file():
        try:
            facts = file_facts(path)
        except (OSError, ValueError, KeyError):
            pass
        else:  # a partition column the file lacks: its value is the log's
            given = {name: file.partition[name] for name in (col.SOURCE, col.GENERATION) if name in facts.missing}
            if col.GENERATION in given and given[col.GENERATION] is not None:
                given[col.GENERATION] = int(str(given[col.GENERATION]))
            return facts.model_copy(update=given) if given else facts
    low, high = file.stats.get("minValues") or {}, file.stats.get("maxValues") or {}

    def single(name: str) -> object:
        if name in file.partition:
            return file.partition[name]
        return low.get(name) if name in low and low.get(name) == high.get(name) else None

    generation = single(col.GENERATION)
    batch = single(col.BATCH_ID)
    return FileFacts(
        batches=[str(batch)] if batch is not None else [],
        source=None if single(col.SOURCE) is None else str(single(col.SOURCE)),
        generation=None if generation is None else int(str(generation)),
        rows=file.rows or 0,
    )


def _apply_batches(con: duckdb.DuckDBPyConnection, version: int, info: CommitInfo) -> None:
    if info.operation == INGEST:  # one batch (detail: batch, file), or a generation's shards (detail: ingests)
        for ingested in info.detail.get("ingests") or [info.detail]:
            batch = BatchRecord.model_validate(ingested["batch"])
            file = FileRecord.model_validate(ingested["file"])
            con.execute("DELETE FROM batch_log WHERE batch_id = ?", [batch.batch_id])  # again after a vacuum
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
    elif info.operation == MIGRATE and info.detail.get("from_format") == 1:  # the format-1 catalog's records
        for raw in info.detail.get("batch_records", []):
            batch = BatchRecord.model_validate(raw)
            _insert(con, "batch_log", {**batch.model_dump(include=set(BATCH_LOG_COLUMNS)), "lake_version": version})
        for raw in info.detail.get("file_records", []):
            file = FileRecord.from_row(raw) if isinstance(raw.get("dialects"), str) else FileRecord.model_validate(raw)
            _insert(con, "file_log", file.row())
        for batch_id, state in info.detail.get("states", {}).items():
            _set_states(con, version, [batch_id], status=state["status"], status_reason=state["status_reason"])
    elif info.operation == VACUUM:
        horizon = max(int(info.detail.get("horizon", 0)), int(read_meta(con, HORIZON_KEY) or 0))
        _set_meta(con, HORIZON_KEY, str(horizon))


def _set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    con.execute("INSERT OR REPLACE INTO catalog_meta VALUES (?, ?)", [key, value])


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


def naive_utc_now() -> dt.datetime:
    """UTC now, naive (how the catalog stores times)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
