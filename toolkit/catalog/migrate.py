"""Move a data root of lake format 1 (plain Parquet files and a DuckDB catalog) onto format 2 (a Delta table).

Metadata only: the format-1 lake's files already sit where format 2 keeps
an ingested batch's files (``lake/source=<s>/generation=<g>/batch=<id>/``),
so the migration commits them as they are, in one version (version 0,
operation ``migrate``), and turns the catalog's ``batches`` and ``files``
tables into the index of that version (batch records, their review states,
file paths made relative to the data root when they lie inside it). A
crash between the two steps is finished by running it again.
"""

from __future__ import annotations

import glob
from pathlib import Path

import duckdb
from pydantic import BaseModel, ConfigDict

from toolkit import __version__
from toolkit.catalog import delta, index, snapshot
from toolkit.catalog.delta import CommitInfo, DeltaLake
from toolkit.catalog.store import connect_writer, read_meta
from toolkit.errors import CatalogError
from toolkit.failpoints import failpoint
from toolkit.layout import LAKE_FORMAT_VERSION, Layout
from toolkit.schema.arrow import lake_schema


class MigrateResult(BaseModel):
    """What a migration did."""

    model_config = ConfigDict(frozen=True)

    from_format: int
    to_format: int
    version: int | None
    batches: int
    files: int
    message: str


def migrate(layout: Layout) -> MigrateResult:
    """Migrate the data root ``layout`` to lake format 2 (nothing to do when it is already).

    Raises:
        CatalogError: no catalog, one held by another process, or of a format this Distill cannot migrate.
    """
    layout.check(write=True)
    if not layout.catalog.exists():
        raise CatalogError(f"no catalog at {layout.catalog}", hint="nothing to migrate: ingest logs with this Distill")
    con = connect_writer(layout)
    try:
        found = int(read_meta(con, "format_version") or 0)
        if found == LAKE_FORMAT_VERSION:
            return MigrateResult(
                from_format=found,
                to_format=found,
                version=None,
                batches=0,
                files=0,
                message=f"the lake is of format {found} already: nothing to do",
            )
        if found != 1:
            raise CatalogError(
                f"cannot migrate a catalog of format {found}", hint="use the Distill version that wrote it"
            )
        batches = [row[0] for row in con.execute("SELECT batch_id FROM batches ORDER BY batch_id").fetchall()]
        table = _lake_table(layout, batches)
        failpoint("migrate.after_commit")
        [version] = table.versions(0, 0)
        adds = list(table.files_at(0).values())
        con.execute("BEGIN TRANSACTION")
        try:
            _convert_catalog(con, layout, version, adds)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        snapshot.refresh(con, layout)
    finally:
        con.close()
    return MigrateResult(
        from_format=1,
        to_format=LAKE_FORMAT_VERSION,
        version=0,
        batches=len(batches),
        files=len(adds),
        message=f"migrated {len(batches)} batches and {len(adds)} lake files to lake format "
        f"{LAKE_FORMAT_VERSION} (version 0 of the lake); no file was rewritten",
    )


def _lake_table(layout: Layout, batches: list[str]) -> DeltaLake:
    """The Delta table holding the format-1 lake's recorded files as version 0 (made now, or by an earlier run)."""
    if delta.exists(layout.lake):
        return DeltaLake(layout.lake)
    recorded = set(batches)
    files = [
        Path(p)
        for p in sorted(glob.glob(str(layout.lake / "source=*" / "generation=*" / "batch=*" / "*.parquet")))
        if Path(p).parent.name.removeprefix("batch=") in recorded
    ]
    info = CommitInfo(
        operation="migrate",
        batches=batches,
        reason="lake format 1 (plain Parquet) to 2 (a Delta table)",
        distill_version=__version__,
        detail={"from_format": 1},
    )
    return DeltaLake.create(layout.lake, lake_schema(), info, [delta.data_file(layout.lake, f) for f in files])


def _convert_catalog(
    con: duckdb.DuckDBPyConnection, layout: Layout, version: delta.Version, adds: list[delta.DataFile]
) -> None:
    """The format-1 tables become the index of version 0 (in the caller's transaction)."""
    con.execute("ALTER TABLE batches RENAME TO batches_format_1")
    con.execute("ALTER TABLE files RENAME TO files_format_1")
    con.execute(index.TABLES)
    index.record_version(con, layout.lake, version, adds, [])
    columns = ", ".join(c for c in index.BATCH_LOG_COLUMNS if c != "lake_version")
    con.execute(f"INSERT INTO batch_log ({columns}, lake_version) SELECT {columns}, 0 FROM batches_format_1")
    con.execute("INSERT INTO batch_states SELECT 0, batch_id, status, status_reason, false, NULL FROM batches_format_1")
    rows = con.execute("SELECT * FROM files_format_1").fetchall()
    names = [d[0] for d in con.description]
    for row in rows:
        record = dict(zip(names, row, strict=True))
        record["path"] = layout.stored(record["path"])
        con.execute(
            f"INSERT INTO file_log ({', '.join(record)}) VALUES ({', '.join('?' * len(record))})", list(record.values())
        )
    con.execute("DROP TABLE batches_format_1")
    con.execute("DROP TABLE files_format_1")
    con.execute("UPDATE catalog_meta SET value = ? WHERE key = 'format_version'", [str(LAKE_FORMAT_VERSION)])
