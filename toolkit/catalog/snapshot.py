"""The catalog's read snapshot: readers never wait for a writer, and never hold up one.

DuckDB lets one process write a database file and refuses every other
process while it does (and a reader holding the file refuses the writer).
A loop ingesting for minutes would lock ``distill sql``, the dashboard and
``distill build`` out of the catalog for as long, and a dashboard polling
the catalog would make the loop's next ingest fail.

So every writer, after each commit and when it closes, checkpoints the
catalog and has DuckDB copy it to ``catalog.read.duckdb`` (a temporary file, then
one rename: readers see the old or the new copy, never half of one), and
records the live file's stamp (size and modification time of it and of its
write-ahead log) beside it. A reader opens the snapshot when its stamp is
the live file's (nothing was written since), or when a writer holds the
live file (the snapshot is then the writer's last commit); otherwise it
opens the live file read-only as before. The catalog's tables are small
(batches and files: kilobytes to a few megabytes), so a refresh is a few
milliseconds; the lake itself is Parquet and is read in place.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
from pydantic import BaseModel, ConfigDict

from toolkit.errors import CatalogError
from toolkit.layout import STAMP_FORMAT_VERSION, Layout, sql_literal
from toolkit.storage import read_versioned, write_text_atomic

Stamp = list[int]


class StampFile(BaseModel):
    """The snapshot's stamp file: the live catalog's stamp when the snapshot was taken."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = STAMP_FORMAT_VERSION
    stamp: Stamp


def stamp(catalog: Path) -> Stamp:
    """The live catalog's stamp: size and mtime of the file and of its write-ahead log (0, 0 when absent)."""
    parts: Stamp = []
    for path in (catalog, catalog.with_name(catalog.name + ".wal")):
        try:
            info = path.stat()
            parts += [info.st_size, info.st_mtime_ns]
        except FileNotFoundError:
            parts += [0, 0]
    return parts


def publish_snapshot(con: duckdb.DuckDBPyConnection, layout: Layout) -> None:
    """Checkpoint the catalog ``con`` writes and publish a copy of it as the read snapshot.

    Called by the writer with no transaction open: after the checkpoint the
    file holds every commit and no other process can change it while this
    one holds it, so the copy is consistent. Where the snapshot is fresh
    already (:func:`is_fresh`: nothing written to the live file since the
    snapshot was taken of it, the test every reader makes) it is left as it
    is: a writer that opens and closes without a change, or closes after a
    commit that published, copies nothing (the copy costs ~45 ms a time).
    """
    if is_fresh(layout):
        return
    con.execute("CHECKPOINT")
    target = layout.catalog_snapshot
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    # DuckDB copies it: opening the live file here and closing it would drop this process's lock on it (POSIX
    # record locks belong to the process and go with the first close of any descriptor of the file).
    con.execute(f"ATTACH '{sql_literal(str(temporary))}' AS _snapshot")
    try:
        live = con.execute("SELECT current_database()").fetchall()[0][0]
        con.execute(f'COPY FROM DATABASE "{live}" TO _snapshot')
    finally:
        con.execute("DETACH _snapshot")
    with open(temporary, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, target)
    write_text_atomic(layout.catalog_snapshot_stamp, StampFile(stamp=stamp(layout.catalog)).model_dump_json())


def is_fresh(layout: Layout) -> bool:
    """Whether the snapshot holds exactly what the live catalog holds (nothing was written since it was taken)."""
    try:  # a stamp missing, unreadable or of a newer Distill: not known to be fresh (the live file is read)
        recorded = read_versioned(
            layout.catalog_snapshot_stamp,
            StampFile,
            STAMP_FORMAT_VERSION,
            what="catalog snapshot stamp",
            error=CatalogError,
            hint="a writer writes it again",
            unversioned=1,
        ).stamp
    except (CatalogError, OSError):  # OSError: its folder cannot be searched, say
        return False
    return layout.catalog_snapshot.exists() and recorded == stamp(layout.catalog)
