"""The catalog: the lake (a Delta table of Parquet files) and its DuckDB index, opened at one version.

The catalog is one DuckDB file under the data root holding the index of the
lake's log (:mod:`toolkit.catalog.index`); a connection shows the views of
:mod:`toolkit.catalog.views` as the lake was at one version (the latest, or
``as_of`` an earlier one).

Writing (one process at a time: the writer holds the DuckDB file) follows
one protocol for every change of the lake (see :meth:`Catalog.commit`):
new files are written under ``staging/<id>/`` with an intent naming where
they go, moved into ``lake/`` and ``quarantine/`` (invisible: no version
lists them), then one Delta commit makes them live, then the index records
that version. A crash before the commit leaves nothing visible and the next
writer deletes the moved files; a crash after it is finished by the next
writer, which indexes what the log holds and the index does not. Readers
never see half a change.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from toolkit import __version__
from toolkit.catalog import delta, index, snapshot, views
from toolkit.catalog.delta import CommitInfo, DataFile, DeltaLake, Version
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.errors import CatalogError, UsageError
from toolkit.failpoints import failpoint
from toolkit.layout import LAKE_FORMAT_VERSION, Layout
from toolkit.schema.arrow import lake_schema
from toolkit.storage import write_text_atomic

QUARANTINE_SCHEMA = views.QUARANTINE_SCHEMA
# How long a writer waits, unless told otherwise (WriterWait), for another process to let go of the live catalog
# file: a reader of it (rare), or another writer (a one-shot command then says who holds it; a loop waits on).
WRITER_WAIT_S = 2.0
WAIT_REPORT_EVERY_S = 10.0  # how often a waiting writer tells its on_wait
# Batch review states: set by gates and the loop, never by ingest.
BATCH_STATES = ("ingested", "accepted", "rejected")
INTENT_FILE = "intent.json"
MIGRATE_HINT = "migrate it once with `distill lake migrate` (metadata only: no file is rewritten)"


@dataclass(frozen=True)
class WriterWait:
    """How long a writer waits for the catalog while another process holds it: ``seconds`` (None: as long as it
    takes), telling ``on_wait`` the seconds waited so far when it starts waiting and every
    :data:`WAIT_REPORT_EVERY_S` after."""

    seconds: float | None = WRITER_WAIT_S
    on_wait: Callable[[float], None] | None = None


@dataclass(frozen=True)
class LakeFile:
    """A file of the lake at some version: where it is and what its rows are."""

    path: Path
    batch_ids: tuple[str, ...]
    source: str | None
    generation: int | None
    rows: int
    size_bytes: int
    missing: tuple[str, ...] = ()  # lake columns the file predates (read as null)


class Catalog:
    """A connection to the catalog of one data root, with the views of the lake at :attr:`version`."""

    def __init__(
        self, layout: Layout, connection: duckdb.DuckDBPyConnection, read_only: bool, sandbox: bool = False
    ) -> None:
        self.layout = layout
        self.con = connection
        self.read_only = read_only
        self.sandbox = sandbox
        self.version = -1
        self._delta: DeltaLake | None = None

    @classmethod
    def open(
        cls,
        layout: Layout,
        *,
        read_only: bool = False,
        sandbox: bool = False,
        as_of: int | str | dt.datetime | None = None,
        wait: WriterWait = WriterWait(),
        limits: views.SandboxLimits | None = None,
    ) -> Catalog:
        """Open (creating it when writable) the catalog of ``layout``, its views showing the lake ``as_of`` a
        version number or a time (the latest version by default). A writer waits for another process holding
        the catalog as ``wait`` says.

        With ``sandbox`` (implies read-only) the connection is sealed for
        untrusted SQL (``distill sql``): it works on an in-memory copy of the
        catalog's tables (no file of the data root is attached), the views
        read the lake and the quarantine through Arrow datasets opened
        beforehand, the small views and the generation records are copied
        into temporary tables, the index tables are dropped from the copy
        (the connection holds the views and nothing else: only SQL through
        :func:`~toolkit.catalog.query.start_query` is for it, not this class's
        readers), and then DuckDB's own file access is switched off, extension
        auto-loading with it, a statement's time and memory are bounded by
        ``limits`` (default :class:`~toolkit.catalog.views.SandboxLimits`), and
        the configuration is locked. No statement on it can read or write a
        file, attach a database, install an extension, learn a path of this
        machine or undo those settings.

        Raises:
            CatalogError: read-only on a data root with no catalog, a catalog
                locked by another process, or of a format this Distill does not read.
            UsageError: ``as_of`` a version the lake does not have (a future one, or one a vacuum removed).
        """
        read_only = read_only or sandbox
        layout.check(write=not read_only)
        con = _connect_reader(layout) if read_only else connect_writer(layout, wait)
        if sandbox:
            con = views.copy_to_memory(con)
        catalog = cls(layout, con, read_only, sandbox)
        try:
            if read_only:
                _check_format(con, layout)
            else:
                catalog._prepare()
            catalog.version = catalog._resolve(as_of)
            views.register(con, layout, catalog.version, sandbox=sandbox)
            if sandbox:
                views.seal(con, limits)
        except BaseException:
            con.close()
            raise
        return catalog

    def _prepare(self) -> None:
        """A writer's opening: tables, the lake table, the index caught up with the log, interrupted work finished
        or undone, the table's schema evolved to this Distill's columns, a fresh read snapshot."""
        found = read_meta(self.con, "format_version")
        if found is None:  # a new catalog
            self.con.execute(index.TABLES)
            self.con.execute("INSERT INTO catalog_meta VALUES ('format_version', ?)", [str(LAKE_FORMAT_VERSION)])
        else:
            _refuse_other_format(found, self.layout)
        if not delta.exists(self.layout.lake):
            info = CommitInfo(operation="create", distill_version=__version__)
            self._delta = DeltaLake.create(self.layout.lake, lake_schema(), info)
        index.catch_up(self.con, self.lake_table)
        self.recover()
        self._evolve()
        self.publish_snapshot()

    @property
    def lake_table(self) -> DeltaLake:
        """The lake's Delta table (writers only)."""
        if self.read_only:
            raise CatalogError("a read-only catalog cannot change the lake", hint="open it writable")
        if self._delta is None:
            self._delta = DeltaLake(self.layout.lake)
        return self._delta

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

    # -- versions ---------------------------------------------------------------------

    @property
    def latest_version(self) -> int:
        """The newest version of the lake the index holds."""
        found = index.indexed_version(self.con)
        return -1 if found is None else int(found)

    @property
    def vacuum_horizon(self) -> int:
        """The oldest version that can still be read (a vacuum deleted files older versions need); 0 if none."""
        return int(read_meta(self.con, "vacuum_horizon") or 0)

    def _resolve(self, as_of: int | str | dt.datetime | None) -> int:
        latest = self.latest_version
        if as_of is None:
            return latest
        version = _version_at(self.con, as_of, latest)
        if version < self.vacuum_horizon:
            raise UsageError(
                f"the lake's version {version} can no longer be read: a vacuum deleted files it needs "
                f"(the oldest readable version is {self.vacuum_horizon})",
                hint=f"read version {self.vacuum_horizon} or later; `distill lake history` lists them",
            )
        return version

    def set_meta(self, key: str, value: str) -> None:
        """Record a fact about the lake that is not a version of it (the vacuum horizon); readers see it at once."""
        self.con.execute("INSERT OR REPLACE INTO catalog_meta VALUES (?, ?)", [key, value])
        self.publish_snapshot()

    def refresh_views(self) -> None:
        """Show the latest version (after this connection committed one)."""
        self.version = self.latest_version
        views.register(self.con, self.layout, self.version, sandbox=self.sandbox)

    # -- the write protocol -----------------------------------------------------------

    def commit(
        self,
        info: CommitInfo,
        adds: Sequence[Path] = (),
        removes: Sequence[LakeFile] = (),
        *,
        data_change: bool = True,
    ) -> Version:
        """Make one new lake version: ``adds`` (files already moved into ``lake/``) become live, ``removes`` stop
        being live, the index records it, readers get it. ``data_change`` False: the same rows in other files.

        Raises:
            CatalogError: the log or the index cannot be written.
        """
        lake = self.layout.lake
        added = [delta.data_file(lake, path) for path in adds]
        removed = [DataFile(f.path.relative_to(lake).as_posix(), f.size_bytes, f.rows) for f in removes]
        failpoint(f"{info.operation}.before_commit")
        version = self.lake_table.commit(info, added, removed, data_change=data_change)
        failpoint(f"{info.operation}.after_commit")
        self._index(version, added, removed)
        return version

    def _index(self, version: Version, adds: list[DataFile], removes: list[DataFile]) -> None:
        try:
            index.apply_version(self.con, self.layout.lake, version, adds, removes)
        except (duckdb.IOException, duckdb.TransactionException) as error:
            raise CatalogError(
                f"cannot write the catalog {self.layout.catalog}: {str(error).splitlines()[0]}",
                hint="the data root must be writable: check its permissions and free space; the next writer "
                "indexes the committed version",
            ) from error
        self.publish_snapshot()
        self.refresh_views()

    def stage(self, name: str) -> Path:
        """A fresh staging folder for a change of the lake (its files are written there first)."""
        folder = self.layout.staging / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def publish(
        self,
        staged: Path,
        info: CommitInfo,
        removes: Sequence[LakeFile] = (),
        *,
        placed: Sequence[Path] = (),
        data_change: bool = True,
    ) -> Version:
        """Move the files staged under ``staged`` (a small data root: ``lake/``, ``quarantine/``) into place and
        commit them, with ``placed`` (files already in ``lake/``), as one version removing ``removes``; the
        staging folder is removed once the version is indexed.

        On an error the staging folder and its intent are left for :meth:`recover` to settle against the log
        (the moved files are deleted unless the commit happened), here at once when possible.
        """
        token = uuid.uuid4().hex
        moves = [(p, self.layout.home / p.relative_to(staged)) for p in sorted(staged.rglob("*.parquet"))]
        targets = [self.layout.stored(t) for _, t in moves]
        intent = {"token": token, "base_version": self.latest_version, "targets": targets}
        write_text_atomic(staged / INTENT_FILE, json.dumps(intent))
        try:
            for source, target in moves:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
            failpoint(f"{info.operation}.moved")
            info = info.model_copy(update={"detail": {**info.detail, "token": token}})
            adds = [*placed, *(t for _, t in moves if t.is_relative_to(self.layout.lake))]
            version = self.commit(info, adds, removes, data_change=data_change)
        except BaseException:
            with contextlib.suppress(Exception):  # when even that fails, the next writer settles it
                self.settle(staged)
            raise
        shutil.rmtree(staged, ignore_errors=True)
        return version

    def recover(self) -> list[str]:
        """Finish or undo interrupted changes (the index first caught up with the log): a staged change whose
        version was committed is cleared away; one whose commit never happened has its moved files deleted.
        Returns the staging folders settled."""
        staging = self.layout.staging
        if not staging.exists():
            return []
        folders = sorted(p for p in staging.iterdir() if p.is_dir())
        for folder in folders:
            self.settle(folder)
        return [folder.name for folder in folders]

    def settle(self, folder: Path) -> None:
        """Settle one staging folder: the index caught up with the log, then the change finished (cleared away)
        if its version was committed, undone (its moved files deleted) if not."""
        index.catch_up(self.con, self.lake_table)
        intent = _read_intent(folder)
        if intent is not None and not self._committed(intent):
            for target in intent.get("targets", []):
                self.layout.resolve(target).unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)

    def _committed(self, intent: dict[str, Any]) -> bool:
        rows = self.con.execute(
            "SELECT detail FROM versions WHERE version > ? AND detail IS NOT NULL", [intent.get("base_version", -1)]
        ).fetchall()
        return any(json.loads(detail).get("token") == intent.get("token") for (detail,) in rows)

    def _evolve(self) -> None:
        """Add to the lake table the columns this Distill writes and the table lacks (one version, no rewrite)."""
        present = set(self.lake_table.schema().names)
        missing = [f for f in lake_schema() if f.name not in present]
        if not missing:
            return
        info = CommitInfo(
            operation="evolve",
            reason=f"contract columns added: {', '.join(f.name for f in missing)}",
            distill_version=__version__,
            detail={"columns": [f.name for f in missing]},
        )
        failpoint("evolve.before_commit")
        version = self.lake_table.add_columns(missing, info)
        failpoint("evolve.after_commit")
        self._index(version, [], [])

    # -- batches and files ---------------------------------------------------------

    def publish_batch(self, staged: Path, batch: BatchRecord, file: FileRecord) -> Version:
        """Publish an ingested batch staged at ``staged``: its version's commit holds its records."""
        detail = {"batch": batch.model_dump(mode="json"), "file": file.model_dump(mode="json")}
        info = CommitInfo(operation=index.INGEST, batches=[batch.batch_id], distill_version=__version__, detail=detail)
        return self.publish(staged, info)

    def set_batch_status(self, batch_ids: list[str] | str, status: str, reason: str | None = None) -> Version:
        """Mark batches accepted or rejected (kept either way), as one version; used by gates and the loop."""
        batch_ids = [batch_ids] if isinstance(batch_ids, str) else list(batch_ids)
        if status not in BATCH_STATES:
            raise CatalogError(f"unknown batch status {status!r}", hint=f"use one of {', '.join(BATCH_STATES)}")
        self.require_batches(batch_ids)
        info = CommitInfo(
            operation=index.REVIEW,
            batches=batch_ids,
            reason=reason,
            distill_version=__version__,
            detail={"status": status},
        )
        return self.commit(info)

    def require_batches(self, batch_ids: list[str]) -> list[BatchRecord]:
        """The records of these batches at this connection's version.

        Raises:
            UsageError: naming the batches the catalog does not know.
        """
        known = {b.batch_id: b for b in self.batches()}
        unknown = [b for b in batch_ids if b not in known]
        if unknown:
            raise UsageError(
                f"no batch {', '.join(repr(b) for b in unknown)} in the catalog",
                hint='list them: distill sql "SELECT batch_id, status, retired FROM batches"',
            )
        return [known[b] for b in batch_ids]

    def batch_for_file(self, sha256: str) -> tuple[str, str] | None:
        """(batch id, path) of an earlier ingest of a file with this content, if any."""
        rows = self.con.execute("SELECT batch_id, path FROM file_log WHERE file_sha256 = ?", [sha256]).fetchall()
        return (rows[0][0], rows[0][1]) if rows else None

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
        """The batches at this connection's version, by id (or newest first), every status included (retired
        ones too: see ``retired``)."""
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
            "SELECT count(*) FROM file_log WHERE path = ? AND size_bytes = ?", [self.layout.stored(path), size_bytes]
        ).fetchall()
        return bool(found and found[0][0])

    def batch_vacuumed(self, batch_id: str) -> bool:
        """Whether a retired batch's rows are gone from disk (a vacuum deleted its files): ingesting its file
        again is then how it comes back."""
        rows = self.con.execute("SELECT path FROM lake_files WHERE list_contains(batch_ids, ?)", [batch_id]).fetchall()
        retired = self.con.execute("SELECT retired FROM batches WHERE batch_id = ?", [batch_id]).fetchall()
        return bool(rows and retired and retired[0][0]) and not any((self.layout.lake / p).exists() for (p,) in rows)

    def committed_batches(self) -> set[str]:
        return {row[0] for row in self.con.execute("SELECT batch_id FROM batches").fetchall()}

    def lake_files(
        self,
        *,
        batches: list[str] | set[str] | None = None,
        source: str | None = None,
        generation: int | None = None,
        version: int | None = None,
    ) -> list[LakeFile]:
        """The files live at ``version`` (this connection's by default) holding rows of these batches, this source
        and this generation (None: any), by path."""
        wanted = self.version if version is None else version
        rows = self.con.execute(f"SELECT * FROM ({views.live_files_sql(wanted)}) ORDER BY path").fetchall()
        found = []
        for path, batch_ids, file_source, file_generation, rows_, size, _, _, missing in rows:
            if batches is not None and not set(batch_ids) & set(batches):
                continue
            if source is not None and file_source != source:
                continue
            if generation is not None and file_generation != generation:
                continue
            lake_path = self.layout.lake / path
            found.append(
                LakeFile(lake_path, tuple(batch_ids), file_source, file_generation, rows_, size, tuple(missing))
            )
        return found


def _version_at(con: duckdb.DuckDBPyConnection, as_of: int | str | dt.datetime, latest: int) -> int:
    """The version ``as_of`` names: a number, or the latest version committed at or before a time."""
    if isinstance(as_of, str) and as_of.strip().lstrip("-").isdigit():
        as_of = int(as_of)
    if isinstance(as_of, int):
        if not 0 <= as_of <= latest:
            raise UsageError(
                f"the lake has no version {as_of}: its versions are 0 to {latest}",
                hint="`distill lake history` lists them",
            )
        return as_of
    when = as_of if isinstance(as_of, dt.datetime) else _parse_time(as_of)
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    rows = con.execute("SELECT max(version) FROM versions WHERE committed_at <= ?", [when]).fetchall()
    if rows[0][0] is None:
        first = con.execute("SELECT min(committed_at) FROM versions").fetchall()[0][0]
        raise UsageError(
            f"the lake had no version yet at {when.isoformat()} (UTC): its first is from {first}",
            hint="`distill lake history` lists the versions and their times",
        )
    return int(rows[0][0])


def _parse_time(text: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--as-of {text!r} is neither a version number nor a time",
            hint="give a version (`distill lake history` lists them) or an ISO time such as 2026-12-01T12:00:00",
        ) from None


def _read_intent(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / INTENT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    if not _has_table(con, "catalog_meta"):
        return None
    rows = con.execute("SELECT value FROM catalog_meta WHERE key = ?", [key]).fetchall()
    return rows[0][0] if rows else None


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    rows = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND NOT temporary AND database_name = "
        "current_database()",
        [name],
    ).fetchall()
    return bool(rows[0][0])


def _check_format(con: duckdb.DuckDBPyConnection, layout: Layout) -> None:
    found = read_meta(con, "format_version")
    if found is None:
        raise CatalogError(f"no catalog at {layout.catalog}", hint="ingest some logs first: distill ingest PATH")
    _refuse_other_format(found, layout)


def _refuse_other_format(found: str, layout: Layout) -> None:
    if int(found) == LAKE_FORMAT_VERSION:
        return
    if int(found) < LAKE_FORMAT_VERSION:
        raise CatalogError(
            f"the lake at {layout.home} is of format version {found} (plain Parquet files); this Distill reads "
            f"version {LAKE_FORMAT_VERSION} (a Delta table)",
            hint=MIGRATE_HINT,
        )
    raise CatalogError(
        f"catalog format version {found} at {layout.catalog}; this distill reads {LAKE_FORMAT_VERSION}",
        hint="use the distill version that wrote it, or re-ingest into a new --home",
    )


def connect_writer(layout: Layout, wait: WriterWait = WriterWait()) -> duckdb.DuckDBPyConnection:
    """The catalog, writable; another process holding the live file (a writer, or a reader: rare, see
    :func:`_connect_reader`) is waited for as ``wait`` says (by default briefly).

    Raises:
        CatalogError: still held when the wait ran out, or not openable at all.
    """
    started = time.monotonic()
    reported: float | None = None
    while True:
        try:
            return duckdb.connect(str(layout.catalog))
        except duckdb.IOException as error:
            waited = time.monotonic() - started
            if "lock" not in str(error).lower() or (wait.seconds is not None and waited > wait.seconds):
                raise _open_error(layout.catalog, error) from error
            if wait.on_wait is not None and (reported is None or waited - reported >= WAIT_REPORT_EVERY_S):
                wait.on_wait(waited)
                reported = waited
        time.sleep(0.1)


def _connect_reader(layout: Layout) -> duckdb.DuckDBPyConnection:
    """A read-only connection that neither waits for a writer nor holds one up (see :mod:`toolkit.catalog.snapshot`).

    A catalog missing beside a lake is rebuilt from the lake's log, and
    interrupted changes are finished first, when no writer is at work; the
    snapshot is read when it is current or when a writer holds the live
    catalog, the live catalog otherwise.
    """
    if not layout.catalog.exists() and delta.exists(layout.lake):  # lost, or a lake copied without it: rebuilt
        with contextlib.suppress(CatalogError, OSError):
            Catalog.open(layout).close()
    if not layout.catalog.exists():
        raise CatalogError(f"no catalog at {layout.catalog}", hint="ingest some logs first: distill ingest PATH")
    if layout.staging.exists() and any(layout.staging.iterdir()):
        with contextlib.suppress(CatalogError):  # held by a writer: its staging is work in progress, not debris
            Catalog.open(layout).close()  # finish or undo interrupted changes first
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
