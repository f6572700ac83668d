"""Connections to the catalog: the lake's index, always of the log as it is now, for writers and readers alike.

The catalog (``catalog.duckdb``) is a cache of the Delta log
(:mod:`toolkit.catalog.index`). Whoever opens it gets an index that holds
exactly the log's versions, whatever state the file is in:

- missing (a lost disk, a table copied alone), written by another Distill,
  of another index format, corrupt, or of another log (its last commit
  differs): rebuilt from the log;
- behind (another process committed, or a writer died between its commit and
  its index): caught up from the log, version by version.

A writer does it in the live file, which it holds. A reader does it there
too when no one holds the file (taking the writer's lock for the moment it
takes), and otherwise in a private index in memory, copied from the read
snapshot and caught up from the log: it never waits for a writer, never
shows a half-built index, and never runs a writer's recovery (staging
folders are a writer's business). Where the index cannot be made (a log that
cannot be trusted), opening fails with an error naming the version and file.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from toolkit.catalog import delta, index, log, remote, snapshot
from toolkit.errors import CatalogError, DataRootError
from toolkit.layout import Layout

# How long a writer waits, unless told otherwise (WriterWait), for another process to let go of the live catalog
# file: a reader of it (rare), or another writer (a one-shot command then says who holds it; a loop waits on).
WRITER_WAIT_S = 2.0
WAIT_REPORT_EVERY_S = 10.0  # how often a waiting writer tells its on_wait
# What DuckDB says of a file that is not a database it can open: the catalog is then rebuilt (it is a cache).
_CORRUPT = ("not a valid duckdb database", "corrupt", "replaying wal", "checksum")


@dataclass(frozen=True)
class WriterWait:
    """How long a writer waits for the catalog while another process holds it: ``seconds`` (None: as long as it
    takes), telling ``on_wait`` the seconds waited so far when it starts waiting and every
    :data:`WAIT_REPORT_EVERY_S` after."""

    seconds: float | None = WRITER_WAIT_S
    on_wait: Callable[[float], None] | None = None


NO_WAIT = WriterWait(seconds=0)


def connect_writer(layout: Layout, wait: WriterWait = WriterWait()) -> duckdb.DuckDBPyConnection:
    """The catalog, writable; another process holding the live file (a writer, or a reader: rare, see
    :func:`connect_reader`) is waited for as ``wait`` says (by default briefly). A file DuckDB cannot open as a
    database is deleted and made anew (the next :func:`sync` rebuilds it from the log).

    Raises:
        CatalogError: still held when the wait ran out, or not openable at all.
    """
    started = time.monotonic()
    reported: float | None = None
    while True:
        try:
            return duckdb.connect(str(layout.catalog))
        except duckdb.Error as error:
            if _corrupt(error):
                _discard(layout)
                continue
            if not isinstance(error, duckdb.IOException):
                raise _open_error(layout.catalog, error) from error
            waited = time.monotonic() - started
            if "lock" not in str(error).lower() or (wait.seconds is not None and waited > wait.seconds):
                raise _open_error(layout.catalog, error) from error
            if wait.on_wait is not None and (reported is None or waited - reported >= WAIT_REPORT_EVERY_S):
                wait.on_wait(waited)
                reported = waited
        time.sleep(0.1)


def sync(con: duckdb.DuckDBPyConnection, layout: Layout) -> list[int]:
    """Bring the index on ``con`` to the log's newest version: caught up when it is of this log, rebuilt when it
    is not; returns the versions indexed.

    Raises:
        CatalogError: a catalog of lake format 1 (migrate it), a lake of an older format, a lake whose table is
            gone while the catalog indexes versions of it.
        LakeLogError: a commit that cannot be trusted.
    """
    refuse_format_1(con, layout)
    remote.refresh(layout)  # a shared lake's copy brought up to its location's log
    if not delta.exists(layout.lake):
        refuse_lost_table(con, layout)
        return []
    try:
        return index.catch_up(con, layout.lake)
    except index.StaleIndex:
        return index.rebuild(con, layout.lake)


def connect_reader(layout: Layout) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an index of the log as it is now, that neither waits for a writer nor holds one
    up (see :mod:`toolkit.catalog.snapshot` and this module's docstring).

    Raises:
        CatalogError: no lake and no catalog (nothing ingested yet), a catalog of lake format 1, a table gone.
        LakeLogError: a commit that cannot be trusted.
    """
    remote.refresh(layout)  # a shared lake's copy brought up to its location's log
    if not delta.exists(layout.lake):
        return _without_table(layout)
    latest = log.latest_version(layout.lake)
    found = _open_index(layout)
    if found is not None:
        refuse_format_1(found, layout)
        if index.is_current(found, layout.lake, latest):
            return found
        found.close()
    with contextlib.suppress(CatalogError, DataRootError, OSError):  # held by a writer, or a read-only root
        writer = connect_writer(layout, NO_WAIT)
        try:
            sync(writer, layout)
            snapshot.publish_snapshot(writer, layout)
        finally:
            writer.close()
        again = _open_index(layout)
        if again is not None and index.is_current(again, layout.lake, log.latest_version(layout.lake)):
            return again
        if again is not None:
            again.close()
    return private_index(layout)


def private_index(layout: Layout) -> duckdb.DuckDBPyConnection:
    """An index of the log in memory, for this connection alone: the read snapshot's copy caught up, or, where
    there is none of this log, built from the log."""
    found = _open_index(layout)
    memory = copy_to_memory(found) if found is not None else duckdb.connect(":memory:")
    try:
        sync(memory, layout)
    except BaseException:
        memory.close()
        raise
    return memory


def copy_to_memory(source: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A connection to a new in-memory database holding the tables of ``source``, which is closed.

    A private index starts from this copy of the read snapshot (see
    :func:`private_index`). The tables go through Arrow, into tables made by
    their own ``CREATE`` statements (so a JSON column stays JSON); the
    catalog's tables are small.
    """
    memory = duckdb.connect(":memory:")
    try:
        tables = source.execute(
            "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary"
        ).fetchall()
        for name, create in tables:
            memory.execute(create)
            memory.register("_copied", source.sql(f'SELECT * FROM "{name}"').to_arrow_table())
            memory.execute(f'INSERT INTO "{name}" SELECT * FROM _copied')
            memory.unregister("_copied")
    except BaseException:
        memory.close()
        raise
    finally:
        source.close()
    return memory


def refuse_format_1(con: duckdb.DuckDBPyConnection, layout: Layout) -> None:
    """A catalog of lake format 1 is not a cache but the only record of its lake: refused until migrated."""
    if index.read_meta(con, index.FORMAT_KEY) == "1" and index.has_table(con, "batches"):
        raise CatalogError(
            f"the lake at {layout.home} is of format version 1 (plain Parquet files); this Distill reads a Delta table",
            hint=index.MIGRATE_HINT,
        )


def refuse_lost_table(con: duckdb.DuckDBPyConnection, layout: Layout) -> None:
    """A lake whose Delta log holds no commit while the catalog indexes versions of it lost its table: refused."""
    if index.has_table(con, "versions") and index.indexed_version(con) is not None:
        raise CatalogError(
            f"the lake's table is gone: {layout.lake / log.LOG_FOLDER} holds no commit, while the catalog "
            f"indexes versions 0 to {index.indexed_version(con)} of it",
            hint="restore the lake folder from a backup (the catalog is only an index of it)",
        )


def _without_table(layout: Layout) -> duckdb.DuckDBPyConnection:
    """An empty index, where the data root has a catalog but no table yet (a first writer is making it)."""
    found = _open_index(layout)
    if found is None:
        raise CatalogError(f"no catalog at {layout.catalog}", hint="ingest some logs first: distill ingest PATH")
    try:  # checks only: the connection is read-only, and a first writer may make the table meanwhile (then the
        # reader sees the lake as it was when it looked: empty)
        refuse_format_1(found, layout)
        if not delta.exists(layout.lake):
            refuse_lost_table(found, layout)
    finally:
        found.close()
    empty = duckdb.connect(":memory:")
    index.create(empty)
    return empty


def _open_index(layout: Layout) -> duckdb.DuckDBPyConnection | None:
    """The read snapshot when it is current or a writer holds the live file, the live file read-only otherwise;
    None where there is neither, or it is not a database."""
    candidates = [layout.catalog_snapshot] if snapshot.is_fresh(layout) else []
    candidates += [layout.catalog, layout.catalog_snapshot]
    for path in candidates:
        if not path.is_file():
            continue
        try:
            return duckdb.connect(str(path), read_only=True)
        except duckdb.Error as error:
            if path == layout.catalog and "lock" in str(error).lower() and _snapshot_appears(layout):
                continue  # a writer holds the live file: its snapshot is its last commit
            if not (_corrupt(error) or "lock" in str(error).lower()):
                raise _open_error(path, error) from error
    return None


def _snapshot_appears(layout: Layout) -> bool:
    """Whether the snapshot exists, or appears within :data:`WRITER_WAIT_S` (a writer publishes one as it opens)."""
    deadline = time.monotonic() + WRITER_WAIT_S
    while not layout.catalog_snapshot.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _corrupt(error: duckdb.Error) -> bool:
    text = str(error).lower()
    return any(mark in text for mark in _CORRUPT) and "permission" not in text


def _discard(layout: Layout) -> None:
    """Delete a catalog DuckDB cannot open (it is rebuilt from the log)."""
    for path in (layout.catalog, layout.catalog.with_name(layout.catalog.name + ".wal")):
        path.unlink(missing_ok=True)


def _open_error(path: Path, error: duckdb.Error) -> CatalogError:
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
