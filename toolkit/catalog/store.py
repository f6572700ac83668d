"""The DuckDB catalog over the Parquet lake.

The catalog is one DuckDB file under the data root. It owns three tables
(``catalog_meta``, ``batches``, ``files``) and, per connection, the views
users query: ``decisions`` and ``rejects`` (the lake and the quarantine,
restricted to committed batches), ``games`` (one row per game).

Publishing protocol (see ``toolkit.ingest.staging``): a batch is written
under ``staging/<batch>/``, then recorded in ``batches`` in one transaction,
then moved into ``lake/`` and ``quarantine/``. A batch is visible only once
recorded (the views semi-join ``batches``), so a crash never shows half a
batch; :meth:`Catalog.recover` finishes recorded batches and deletes
unrecorded staging folders.
"""

from __future__ import annotations

import contextlib
import glob
import shutil
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from toolkit.catalog import snapshot
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.errors import CatalogError
from toolkit.layout import LAKE_FORMAT_VERSION, Layout, sql_literal
from toolkit.schema import columns as col
from toolkit.schema.arrow import lake_schema

QUARANTINE_SCHEMA = pa.schema(
    [
        pa.field(col.BATCH_ID, pa.string(), nullable=False),
        pa.field(col.SOURCE_FILE, pa.string(), nullable=False),
        pa.field(col.SOURCE_LINE, pa.int64(), nullable=False),
        pa.field(col.FILE_SHA256, pa.string(), nullable=False),
        pa.field("raw", pa.binary(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field(
            "problems",
            pa.list_(pa.struct([("field", pa.string()), ("code", pa.string()), ("message", pa.string())])),
            nullable=False,
        ),
    ]
)

_TABLES = """
CREATE TABLE IF NOT EXISTS catalog_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS batches (
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
    status VARCHAR NOT NULL DEFAULT 'ingested',
    status_reason VARCHAR,
    distill_version VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
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

# How long a writer waits for a reader of the live catalog file to let go (writers never wait for writers long).
WRITER_WAIT_S = 2.0
# Batch review states: set by gates and the loop, never by ingest.
BATCH_STATES = ("ingested", "accepted", "rejected")


class Catalog:
    """A connection to the catalog of one data root, with the views registered."""

    def __init__(
        self, layout: Layout, connection: duckdb.DuckDBPyConnection, read_only: bool, sandbox: bool = False
    ) -> None:
        self.layout = layout
        self.con = connection
        self.read_only = read_only
        self.sandbox = sandbox

    @classmethod
    def open(cls, layout: Layout, *, read_only: bool = False, sandbox: bool = False) -> Catalog:
        """Open (creating it when writable) the catalog of ``layout``.

        With ``sandbox`` (implies read-only) the connection is sealed for
        untrusted SQL (``distill sql``): the views read the lake and the
        quarantine through Arrow datasets opened beforehand, the generation
        records are copied into a temporary table, and then DuckDB's own file
        access is switched off, extension auto-loading with it, and the
        configuration is locked. No statement on it can read or write a file,
        attach a database, install an extension or undo those settings.

        Raises:
            CatalogError: read-only on a data root with no catalog, a catalog
                locked by another process, or an unknown format version.
        """
        read_only = read_only or sandbox
        layout.check(write=not read_only)
        if read_only:
            con = _connect_reader(layout)
        else:
            con = _connect_writer(layout)
        catalog = cls(layout, con, read_only, sandbox)
        if not read_only:
            con.execute(_TABLES)
            con.execute(
                "INSERT INTO catalog_meta VALUES ('format_version', ?) ON CONFLICT DO NOTHING",
                [str(LAKE_FORMAT_VERSION)],
            )
            catalog.recover()
            catalog.publish_snapshot()
        catalog._check_version()
        catalog._register_views()
        if sandbox:
            catalog._seal()
        return catalog

    def close(self) -> None:
        try:
            if not self.read_only:
                self.publish_snapshot()
        finally:
            self.con.close()

    def publish_snapshot(self) -> None:
        """Give readers what is committed now (see :mod:`toolkit.catalog.snapshot`); writers only."""
        try:
            snapshot.refresh(self.con, self.layout)
        except (OSError, duckdb.Error) as error:
            raise CatalogError(
                f"cannot write the catalog's read snapshot {self.layout.catalog_snapshot}: {error}",
                hint="the data root must be writable: check its permissions and free space",
            ) from error

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_version(self) -> None:
        rows = self.con.execute("SELECT value FROM catalog_meta WHERE key = 'format_version'").fetchall()
        row = rows[0] if rows else None
        if row is None or int(row[0]) != LAKE_FORMAT_VERSION:
            found = row[0] if row else "none"
            raise CatalogError(
                f"catalog format version {found} at {self.layout.catalog}; this distill reads {LAKE_FORMAT_VERSION}",
                hint="use the distill version that wrote it, or re-ingest into a new --home",
            )

    def _register_views(self) -> None:
        lake = self.layout.lake_glob()
        quarantine = self.layout.quarantine_glob()
        self._register_parquet_view("decisions", lake, lake_schema())
        self._register_parquet_view("rejects", quarantine, QUARANTINE_SCHEMA)
        self.con.execute(
            f"""
            CREATE OR REPLACE TEMP VIEW games AS
            SELECT {col.GAME_ID},
                   CASE WHEN count(DISTINCT {col.SOURCE}) = 1 THEN any_value({col.SOURCE}) ELSE 'mixed' END AS source,
                   list(DISTINCT {col.SOURCE} ORDER BY {col.SOURCE}) AS sources,
                   max({col.POD_SIZE}) AS pod_size,
                   any_value({col.WINNER_SEAT}) AS winner_seat,
                   bool_or({col.IS_DRAW}) AS is_draw,
                   bool_or({col.TIMED_OUT}) AS timed_out,
                   max({col.TURN}) AS turns,
                   count(*) AS decisions,
                   count(DISTINCT {col.SEAT}) AS seats_logged,
                   min({col.GENERATION}) AS generation,
                   list(DISTINCT {col.BATCH_ID}) AS batches
            FROM decisions GROUP BY {col.GAME_ID}
            """
        )
        self._register_generations_view()

    def _register_generations_view(self) -> None:
        """``generations``: the records of every loop run (runs/*/generations.jsonl), the latest per generation."""
        pattern = str(self.layout.runs / "*" / "generations.jsonl")
        if glob.glob(pattern):
            source = f"read_json_auto('{sql_literal(pattern)}', format = 'newline_delimited', union_by_name = true)"
            body = (
                f"SELECT * FROM {source} QUALIFY row_number() OVER (PARTITION BY loop, generation ORDER BY "
                f"recorded_at DESC) = 1"
            )
        else:
            body = "SELECT NULL::VARCHAR AS loop, NULL::INTEGER AS generation, NULL::VARCHAR AS outcome WHERE false"
        kind = "TABLE" if self.sandbox else "VIEW"  # a sealed connection cannot read the files later
        self.con.execute(f"CREATE OR REPLACE TEMP {kind} generations AS {body}")

    def _register_parquet_view(self, name: str, pattern: str, schema: pa.Schema) -> None:
        files = sorted(glob.glob(pattern))
        if files and self.sandbox:  # opened now, scanned later by DuckDB without a path it could misuse
            import pyarrow.dataset as ds

            self.con.register(f"_files_{name}", ds.dataset(files, format="parquet"))
            source = f"_files_{name}"
        elif files:
            source = f"read_parquet('{sql_literal(pattern)}', hive_partitioning = false)"
        else:  # no file yet: an empty relation with the right columns
            # from_batches, not empty_table: building arrays makes pyarrow import pandas (0.2 s)
            self.con.register(f"_empty_{name}", pa.Table.from_batches([], schema=schema))
            source = f"_empty_{name}"
        self.con.execute(
            f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {source} "
            f"WHERE {col.BATCH_ID} IN (SELECT batch_id FROM batches)"
        )

    def _seal(self) -> None:
        """No file access, no extension loading, and no way to turn either back on (see :meth:`open`)."""
        for setting in (
            "autoinstall_known_extensions",
            "autoload_known_extensions",
            "allow_community_extensions",
            "enable_external_access",
        ):
            self.con.execute(f"SET {setting} = false")
        self.con.execute("SET lock_configuration = true")

    def refresh_views(self) -> None:
        """Re-register the views (after files were published by this connection)."""
        self._register_views()

    # -- batches and files ---------------------------------------------------------

    def batch_for_file(self, sha256: str) -> tuple[str, str] | None:
        """(batch id, path) of an earlier ingest of a file with this content, if any."""
        rows = self.con.execute("SELECT batch_id, path FROM files WHERE file_sha256 = ?", [sha256]).fetchall()
        row = rows[0] if rows else None
        return (row[0], row[1]) if row else None

    def record_batch(self, batch: BatchRecord, file: FileRecord) -> None:
        """Record a staged batch and its file in one transaction: the commit point."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            _insert(self.con, "batches", batch.model_dump())
            _insert(self.con, "files", file.row())
            self.con.execute("COMMIT")
            self.publish_snapshot()
        except Exception as error:
            with contextlib.suppress(duckdb.Error):  # a failed write may already have ended the transaction
                self.con.execute("ROLLBACK")
            if isinstance(error, duckdb.IOException | duckdb.TransactionException):
                raise CatalogError(
                    f"cannot write the catalog {self.layout.catalog}: {str(error).splitlines()[0]}",
                    hint="the data root must be writable: check its permissions and free space",
                ) from error
            raise

    def publish_recorded(self, staged: Path) -> None:
        """Move a batch staged at ``staged`` and recorded (:meth:`record_batch`) into the lake and the
        quarantine, and show it in this connection's views. A crash mid-way is finished by :meth:`recover`."""
        move_tree(staged, self.layout.home)
        shutil.rmtree(staged, ignore_errors=True)
        self.refresh_views()

    def read(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        """The result of one query of the views (``decisions``, ``rejects``, ``games``, ...) as Arrow."""
        return self.con.sql(sql, params=params).to_arrow_table()

    def end_flags(self, batch_ids: list[str]) -> pa.Table:
        """``batch_id``, ``source_line``, ``is_terminal``, ``truncated`` of every decision of these batches."""
        return self.read(
            "SELECT batch_id, source_line, is_terminal, truncated FROM decisions WHERE list_contains(?, batch_id)",
            [batch_ids],
        )

    def batches(self, *, newest_first: bool = False, limit: int | None = None) -> list[BatchRecord]:
        """The recorded batches, by id (or newest first), every status included."""
        order = "created_at DESC, batch_id" if newest_first else "batch_id"
        sql = f"SELECT * FROM batches ORDER BY {order}" + (" LIMIT ?" if limit is not None else "")
        rows = self.read(sql, [limit] if limit is not None else None).to_pylist()
        return [BatchRecord.model_validate(row) for row in rows]

    def files(self) -> list[FileRecord]:
        """The ingested files, in the order they were ingested."""
        return [
            FileRecord.from_row(row) for row in self.read("SELECT * FROM files ORDER BY ingested_at, path").to_pylist()
        ]

    def has_file(self, path: Path, size_bytes: int) -> bool:
        """Whether a file was ingested before from ``path`` with this size (most likely a re-run)."""
        found = self.con.execute(
            "SELECT count(*) FROM files WHERE path = ? AND size_bytes = ?", [str(path), size_bytes]
        ).fetchone()
        return bool(found and found[0])

    def set_batch_status(self, batch_id: str, status: str, reason: str | None = None) -> None:
        """Mark a batch accepted or rejected (kept either way); used by gates and the loop."""
        if status not in BATCH_STATES:
            raise CatalogError(f"unknown batch status {status!r}", hint=f"use one of {', '.join(BATCH_STATES)}")
        updated = self.con.execute(
            "UPDATE batches SET status = ?, status_reason = ? WHERE batch_id = ? RETURNING batch_id",
            [status, reason, batch_id],
        ).fetchall()
        if not updated:
            raise CatalogError(f"no batch {batch_id!r} in the catalog", hint="list them: distill sql 'FROM batches'")
        self.publish_snapshot()

    def committed_batches(self) -> set[str]:
        return {row[0] for row in self.con.execute("SELECT batch_id FROM batches").fetchall()}

    # -- crash recovery --------------------------------------------------------------

    def recover(self) -> list[str]:
        """Publish staged batches that were recorded, delete those that were not.

        Returns the batch ids that were finished.
        """
        staging = self.layout.staging
        if not staging.exists():
            return []
        recorded = self.committed_batches()
        finished = []
        for folder in sorted(p for p in staging.iterdir() if p.is_dir()):
            if folder.name in recorded:
                move_tree(folder, self.layout.home)
                finished.append(folder.name)
            shutil.rmtree(folder, ignore_errors=True)
        return finished


def move_tree(staged: Path, home: Path) -> None:
    """Move every leaf folder under ``staged`` to the same relative place under
    ``home`` with one rename each; folders already there are left alone (so a
    second run after a crash finishes the job)."""
    for leaf in sorted(staged.rglob("batch=*")):
        if not leaf.is_dir():
            continue
        target = home / leaf.relative_to(staged)
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        leaf.rename(target)


def _connect_writer(layout: Layout) -> duckdb.DuckDBPyConnection:
    """The catalog, writable; a reader holding the live file (rare: see :func:`_connect_reader`) is waited for
    briefly."""
    deadline = time.monotonic() + WRITER_WAIT_S
    while True:
        try:
            return duckdb.connect(str(layout.catalog))
        except duckdb.IOException as error:
            if "lock" not in str(error).lower() or time.monotonic() > deadline:
                raise _open_error(layout.catalog, error) from error
        time.sleep(0.1)


def _connect_reader(layout: Layout) -> duckdb.DuckDBPyConnection:
    """A read-only connection that neither waits for a writer nor holds one up (see :mod:`toolkit.catalog.snapshot`).

    Interrupted batches are finished first when no writer is at work; the
    snapshot is read when it is current or when a writer holds the live
    catalog, the live catalog otherwise.
    """
    if not layout.catalog.exists():
        raise CatalogError(f"no catalog at {layout.catalog}", hint="ingest some logs first: distill ingest PATH")
    if layout.staging.exists() and any(layout.staging.iterdir()):
        with contextlib.suppress(CatalogError):  # held by a writer: its staging is work in progress, not debris
            Catalog.open(layout).close()  # finish or discard interrupted batches first
    if snapshot.is_fresh(layout):
        with contextlib.suppress(duckdb.IOException):
            return duckdb.connect(str(layout.catalog_snapshot), read_only=True)
    try:
        return duckdb.connect(str(layout.catalog), read_only=True)
    except duckdb.IOException as error:
        if "lock" not in str(error).lower() or not _snapshot_appears(layout):
            raise _open_error(layout.catalog, error) from error
    try:  # a writer holds the catalog: read its last commit
        return duckdb.connect(str(layout.catalog_snapshot), read_only=True)
    except duckdb.IOException as error:
        raise _open_error(layout.catalog_snapshot, error) from error


def _snapshot_appears(layout: Layout) -> bool:
    """Whether the snapshot exists, or appears within :data:`WRITER_WAIT_S` (a writer publishes one as it opens)."""
    deadline = time.monotonic() + WRITER_WAIT_S
    while not layout.catalog_snapshot.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _open_error(path: Path, error: duckdb.IOException) -> CatalogError:
    """Why the catalog file could not be opened, in words that say what to do."""
    text = str(error)
    if "Permission denied" in text:
        return CatalogError(
            f"cannot open {path}: permission denied",
            hint="choose a data root you can write to (--home), or fix its permissions",
        )
    if "lock" in text.lower():
        return CatalogError(
            f"cannot open {path}: another process holds it ({text.splitlines()[0]})",
            hint="is another distill writing to this data root? wait for it to finish",
        )
    return CatalogError(f"cannot open {path}: {text.splitlines()[0]}", hint="check the data root (--home)")


def _insert(con: duckdb.DuckDBPyConnection, table: str, row: dict[str, Any]) -> None:
    names = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    con.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(row.values()))
