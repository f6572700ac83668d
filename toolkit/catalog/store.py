"""The lake's read views: a connection to the catalog showing the lake as it was at one version.

The catalog is one DuckDB file under the data root holding an index of the
lake's log (:mod:`toolkit.catalog.index`), a cache any process rebuilds
from the log (:mod:`toolkit.catalog.connect`). A :class:`Catalog` shows the
views of :mod:`toolkit.catalog.views` (``decisions``, ``rejects``,
``batches``...) as the lake was at one version (the latest, or ``as_of`` an
earlier one), and answers the stages' typed questions (the batches, the
files, the live lake files of a version). It changes nothing: writing is
:mod:`toolkit.catalog.writer`'s, and both are reached through
:class:`toolkit.catalog.lake.Lake`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from toolkit.catalog import index, log, views
from toolkit.catalog.commit import FileFacts
from toolkit.catalog.connect import connect_reader
from toolkit.catalog.delta import DataFile
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.catalog.sandbox import SandboxLimits
from toolkit.errors import UsageError
from toolkit.layout import Layout

# Batch review states: set by gates and the loop, never by ingest.
BATCH_STATES = ("ingested", "accepted", "rejected")


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

    @property
    def partitions(self) -> dict[str, object]:
        """Its values of the table's partition columns (from the log: a file another writer wrote may lack them)."""
        return views.partition_values(self.source, self.generation)

    def data_file(self, lake: Path) -> DataFile:
        """The file as the log names it (its path inside the table, its facts)."""
        facts = FileFacts(
            batches=list(self.batch_ids),
            source=self.source,
            generation=self.generation,
            rows=self.rows,
            missing=list(self.missing),
        )
        return DataFile(self.path.relative_to(lake).as_posix(), self.size_bytes, facts)


class Catalog:
    """A connection to the catalog of one data root, with the views of the lake at :attr:`version`."""

    def __init__(
        self, layout: Layout, connection: duckdb.DuckDBPyConnection, read_only: bool, sandbox: bool = False
    ) -> None:
        self.layout = layout
        self._con = connection
        self.read_only = read_only
        self.sandbox = sandbox
        self.version = -1
        self._unshown = False  # a writer's views of :attr:`version`, not made yet (see :meth:`show`)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The connection, with the views of :attr:`version` on it (a writer's made as it is first asked for)."""
        if self._unshown:
            views.register(self._con, self.layout, self.version, check=False)
            self._unshown = False
        return self._con

    @con.setter
    def con(self, connection: duckdb.DuckDBPyConnection) -> None:
        self._con = connection
        self._unshown = False

    @property
    def index_con(self) -> duckdb.DuckDBPyConnection:
        """The same connection, for the index's own tables (``versions``, ``lake_files``, ``file_log``,
        ``batch_states``...): reading it makes no view (a writer's are made when :attr:`con` is first read)."""
        return self._con

    @classmethod
    def open(
        cls,
        layout: Layout,
        *,
        sandbox: bool = False,
        as_of: int | str | dt.datetime | None = None,
        limits: SandboxLimits | None = None,
    ) -> Catalog:
        """Open the catalog of ``layout`` for reading: an index of the log as the log is now
        (:func:`~toolkit.catalog.connect.connect_reader`: caught up, or rebuilt, without waiting for a writer),
        its views showing the lake ``as_of`` a version number or a time (the latest version by default).

        With ``sandbox`` the connection is sealed for untrusted SQL (``distill
        sql``): it is a new in-memory database (no file of the data root is
        attached), made of the views alone, read from the index, which is
        then closed: the lake and the quarantine as Arrow datasets opened
        beforehand, the small views and the generation records as Arrow tables
        of their rows (no table of the index: only SQL through
        :func:`~toolkit.catalog.query.start_query` is for it, not this class's
        readers); and then DuckDB's own file access
        is switched off, extension auto-loading with it, a statement's time and
        memory are bounded by ``limits`` (default
        :class:`~toolkit.catalog.sandbox.SandboxLimits`), and the configuration is
        locked. No statement on it can read or write a file, attach a
        database, install an extension, learn a path of this machine or undo
        those settings.

        Raises:
            CatalogError: a data root with no lake, a lake of a format this Distill does not read.
            LakeLogError: a commit of the log that cannot be trusted (naming its version and file).
            UsageError: ``as_of`` a version the lake does not have (a future one, or one a vacuum removed).
        """
        layout.check(write=False)
        con = connect_reader(layout)
        catalog = cls(layout, con, read_only=True, sandbox=sandbox)
        if not sandbox:
            try:
                catalog.show(as_of)
            except BaseException:
                con.close()
                raise
            return catalog
        sealed = None
        try:
            catalog.version = catalog._resolve(as_of)
            sealed = duckdb.connect(":memory:")
            views.register(con, layout, catalog.version, into=sealed)
            views.seal(sealed, limits)
        except BaseException:
            if sealed is not None:
                sealed.close()
            raise
        finally:
            con.close()
        catalog.con = sealed
        return catalog

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- versions ---------------------------------------------------------------------

    @property
    def latest_version(self) -> int:
        """The newest version of the lake the index holds."""
        found = index.indexed_version(self._con)
        return -1 if found is None else int(found)

    @property
    def vacuum_horizon(self) -> int:
        """The oldest version that can still be read (a vacuum deleted files older versions need); 0 if none."""
        return int(index.read_meta(self._con, index.HORIZON_KEY) or 0)

    def _resolve(self, as_of: int | str | dt.datetime | None) -> int:
        latest = self.latest_version
        if as_of is None:
            return latest
        version = _version_at(self._con, as_of, latest)
        if version < self.vacuum_horizon:
            raise UsageError(
                f"the lake's version {version} can no longer be read: a vacuum deleted files it needs "
                f"(the oldest readable version is {self.vacuum_horizon})",
                hint=f"read version {self.vacuum_horizon} or later; `distill lake history` lists them",
            )
        return version

    def show(self, as_of: int | str | dt.datetime | None) -> None:
        """Show the lake ``as_of`` a version or a time (None: the latest the index holds).

        Raises:
            UsageError: a version the lake does not have, or one a vacuum removed.
        """
        if self.sandbox:
            raise UsageError("a sandboxed catalog shows the version it was opened at", hint="open another")
        self.version = self._resolve(as_of)
        if self.read_only:  # a reader's views check every live file now: a lost one is an error as it opens
            views.register(self._con, self.layout, self.version, check=True)
        else:  # a writer's, made when first read (most writers commit and close, showing each version unread)
            self._unshown = True

    # -- batches and files ---------------------------------------------------------

    def require_readable(self) -> None:
        """Check that every file of this version is on disk inside the table, before reading its rows (a reader's
        views checked it as they opened; a writer's check it here).

        Raises:
            CatalogError: naming the first file that is missing or outside, and what recovers.
        """
        live = self._con.execute(f"SELECT path, batch_ids FROM ({views.live_files_sql(self.version)})").fetchall()
        log.readable(self.layout.lake, [p for p, _ in live], [b for _, b in live], self.version)

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
        rows = self._con.execute("SELECT batch_id, path FROM file_log WHERE file_sha256 = ?", [sha256]).fetchall()
        return (rows[0][0], rows[0][1]) if rows else None

    def read(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        """The result of one query of the views (``decisions``, ``rejects``, ``games``, ...) as Arrow."""
        return self.con.sql(sql, params=params).to_arrow_table()

    def read_index(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        """The result of one query of the index's own tables (``versions``, ``lake_files``, ...) as Arrow: unlike
        :meth:`read`, it makes no view (a writer's are made when first read)."""
        return self.index_con.sql(sql, params=params).to_arrow_table()

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
        found = self._con.execute(
            "SELECT count(*) FROM file_log WHERE path = ? AND size_bytes = ?", [self.layout.stored(path), size_bytes]
        ).fetchall()
        return bool(found and found[0][0])

    def batch_vacuumed(self, batch_id: str) -> bool:
        """Whether a retired batch's rows are gone (a vacuum deleted its files: every file holding them left the
        lake at or before the vacuum horizon): ingesting its file again is then how it comes back."""
        rows = self._con.execute(
            "SELECT bool_and(removed_version IS NOT NULL AND removed_version <= ?) FROM lake_files "
            "WHERE list_contains(batch_ids, ?)",
            [self.vacuum_horizon, batch_id],
        ).fetchall()
        return bool(rows and rows[0][0])

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
        rows = self._con.execute(f"SELECT * FROM ({views.live_files_sql(wanted)}) ORDER BY path").fetchall()
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
