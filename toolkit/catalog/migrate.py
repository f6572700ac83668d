"""Move a data root written by an older Distill onto lake format 3, where the Delta log holds every fact.

- **Format 2** (a Delta table whose commits name no file facts, partitions
  undeclared, files in ``source=/generation=/batch=`` folders): one commit
  amends the log. It declares the partition columns, moves every live file
  to its hive folder (a hard link: no data is rewritten, and the old paths
  keep serving the versions before the migration until a vacuum), and
  records the facts of every file any earlier commit added (from the old
  catalog where it still indexes them, else the file's footer while it is
  on disk, else the log's own statistics). Delta-rs cannot change a table's
  partition columns, so this commit is written by hand
  (:func:`toolkit.catalog.delta.write_commit`), with its put-if-absent rule.
- **Format 1** (plain Parquet files and a DuckDB catalog, no log): the
  table is created with the recorded files (hard links in their hive
  folders), and the catalog's batch and file records go into that first
  commit, so the catalog becomes a cache like any other.

Either way the catalog is then rebuilt from the log. A crash at any point
is finished by running the migration again.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from pathlib import Path

import duckdb
from pydantic import BaseModel, ConfigDict

from toolkit import __version__
from toolkit.catalog import delta, index, log, snapshot
from toolkit.catalog.commit import COMMIT_FORMAT, CommitInfo, FileFacts
from toolkit.catalog.connect import connect_writer
from toolkit.catalog.delta import DataFile, DeltaLake
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
    """Migrate the data root ``layout`` to lake format 3 (nothing to do when it is already).

    Raises:
        CatalogError: nothing to migrate (no lake, no catalog), a catalog held by another process, or a format
            this Distill cannot migrate.
        LakeLogError: a log that cannot be trusted.
    """
    layout.check(write=True)
    if not layout.catalog.exists() and not delta.exists(layout.lake):
        raise CatalogError(f"no lake at {layout.home}", hint="nothing to migrate: ingest logs with this Distill")
    con = connect_writer(layout)
    try:
        if index.read_meta(con, index.FORMAT_KEY) == "1" and index.has_table(con, "batches"):
            result = _from_format_1(con, layout)
        else:
            result = _from_format_2(con, layout)
        if result.version is not None or not index.is_current(con, layout.lake, log.latest_version(layout.lake)):
            index.rebuild(con, layout.lake)
            snapshot.publish_snapshot(con, layout)
        return result
    finally:
        con.close()


def _done(found: int) -> MigrateResult:
    return MigrateResult(
        from_format=found,
        to_format=found,
        version=None,
        batches=0,
        files=0,
        message=f"the lake is of format {found} already: nothing to do",
    )


# -- format 2 ----------------------------------------------------------------------------


def _from_format_2(con: duckdb.DuckDBPyConnection, layout: Layout) -> MigrateResult:
    lake = layout.lake
    latest = log.latest_version(lake)
    if latest is None:
        raise CatalogError(f"no lake at {lake}", hint="nothing to migrate: ingest logs with this Distill")
    commits = list(log.read_commits(lake, 0, latest))
    found = index.lake_format(commits)
    if found is None or found >= COMMIT_FORMAT:
        return _done(COMMIT_FORMAT if found is None else found)
    known = _indexed_facts(con)
    facts: dict[str, FileFacts] = {}
    live: dict[str, log.AddedFile] = {}
    metadata: dict[str, object] = {}
    for commit in commits:
        metadata = commit.metadata or metadata
        for path in commit.removes:
            live.pop(path, None)
        for file in commit.adds:
            live[file.path] = file
            facts[file.path] = known.get(file.path) or index.foreign_facts(lake, file)
    moved = {path: _hive_path(path, facts[path]) for path in live}
    for old, new in moved.items():
        _link(lake / old, lake / new)
    actions: list[dict[str, object]] = [{"metaData": {**metadata, "partitionColumns": list(delta.PARTITION_COLUMNS)}}]
    for old, new in sorted(moved.items()):
        if old != new:
            actions.append(delta.remove_action(old, live[old].size, data_change=False))
        file = DataFile(new, (lake / new).stat().st_size, facts[old])
        actions.append(delta.add_action(lake, file, data_change=False))
    info = CommitInfo(
        operation=index.MIGRATE,
        reason="lake format 2 to 3: every file's facts in the log, partitions declared, hive folders",
        distill_version=__version__,
        detail={"from_format": 2, "files_moved": sum(o != n for o, n in moved.items())},
        files={**facts, **{new: facts[old] for old, new in moved.items()}},
    )
    commit = delta.write_commit(lake, latest + 1, actions, info)
    failpoint("migrate.after_commit")
    batches = {b for f in facts.values() for b in f.batches}
    return MigrateResult(
        from_format=2,
        to_format=LAKE_FORMAT_VERSION,
        version=commit.version,
        batches=len(batches),
        files=len(moved),
        message=f"migrated the lake to format {LAKE_FORMAT_VERSION} in version {commit.version}: the facts of "
        f"{len(facts)} files recorded in the log, partitions declared, {len(moved)} live files linked into "
        "their hive folders (no file rewritten)",
    )


def _indexed_facts(con: duckdb.DuckDBPyConnection) -> dict[str, FileFacts]:
    """The facts an old catalog still holds of the files it indexed (those a vacuum deleted included)."""
    if not index.has_table(con, "lake_files"):
        return {}
    try:
        rows = con.execute("SELECT DISTINCT path, batch_ids, source, generation, rows, missing FROM lake_files")
        return {
            path: FileFacts(batches=sorted(b), source=s, generation=g, rows=r, missing=list(m))
            for path, b, s, g, r, m in rows.fetchall()
        }
    except duckdb.Error:
        return {}


def _hive_path(path: str, facts: FileFacts) -> str:
    """Where a file of an older layout (``.../batch=<id>/part-00000.parquet``) lives among the hive folders of its
    partition (``.../batch-<id>.parquet``)."""
    old = Path(path)
    name = old.name
    if old.parent.name.startswith("batch="):
        batch = old.parent.name.removeprefix("batch=")
        rest = name.removeprefix("part-00000") if name.startswith("part-00000") else f"-{name}"
        name = f"batch-{batch}{rest}"
    return (Layout.partition(facts.source or "", facts.generation) / name).as_posix()


def _link(old: Path, new: Path) -> None:
    """``new`` names the same file as ``old`` (a hard link; a copy where the disk has none)."""
    if old == new:
        return
    new.parent.mkdir(parents=True, exist_ok=True)
    if new.exists():
        if os.path.samefile(old, new):
            return
        new.unlink()  # a copy an interrupted run left
    try:
        os.link(old, new)
    except OSError:
        shutil.copy2(old, new)


# -- format 1 ----------------------------------------------------------------------------


def _from_format_1(con: duckdb.DuckDBPyConnection, layout: Layout) -> MigrateResult:
    batches = con.execute("SELECT * FROM batches ORDER BY batch_id").fetchall()
    batch_names = [d[0] for d in con.description]
    records = [dict(zip(batch_names, row, strict=True)) for row in batches]
    files_rows = con.execute("SELECT * FROM files ORDER BY ingested_at, path").fetchall()
    file_names = [d[0] for d in con.description]
    file_records = [dict(zip(file_names, row, strict=True)) for row in files_rows]
    if not delta.exists(layout.lake):
        _create_from_format_1(layout, records, file_records)
        failpoint("migrate.after_commit")
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DROP TABLE IF EXISTS batches")
        con.execute("DROP TABLE IF EXISTS files")
        con.execute("UPDATE catalog_meta SET value = ? WHERE key = ?", [str(index.INDEX_FORMAT), index.FORMAT_KEY])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    files = len(log.read_commit(layout.lake, 0).adds)
    return MigrateResult(
        from_format=1,
        to_format=LAKE_FORMAT_VERSION,
        version=0,
        batches=len(records),
        files=files,
        message=f"migrated {len(records)} batches and {files} lake files to lake format "
        f"{LAKE_FORMAT_VERSION} (version 0 of the lake); no file was rewritten",
    )


def _create_from_format_1(layout: Layout, records: list[dict[str, object]], files: list[dict[str, object]]) -> None:
    """The Delta table holding the format-1 lake's recorded files as version 0, the catalog's records in its
    commit."""
    recorded = {str(r["batch_id"]) for r in records}
    pattern = str(layout.lake / "source=*" / "generation=*" / "batch=*" / "*.parquet")
    adds = []
    for found in sorted(glob.glob(pattern)):
        old = Path(found)
        if old.parent.name.removeprefix("batch=") not in recorded:
            continue
        facts = delta.file_facts(old)
        new = layout.lake / _hive_path(old.relative_to(layout.lake).as_posix(), facts)
        _link(old, new)
        adds.append(DataFile(new.relative_to(layout.lake).as_posix(), new.stat().st_size, facts))
    states = {str(r["batch_id"]): {"status": r["status"], "status_reason": r["status_reason"]} for r in records}
    batch_records = [
        {k: v for k, v in r.items() if k not in ("status", "status_reason")} | {"lake_version": 0} for r in records
    ]
    file_records = [{**f, "path": layout.stored(str(f["path"]))} for f in files]
    info = CommitInfo(
        operation=index.MIGRATE,
        batches=sorted(recorded),
        reason="lake format 1 (plain Parquet) to 3 (a Delta table)",
        distill_version=__version__,
        detail=json.loads(
            json.dumps(
                {"from_format": 1, "batch_records": batch_records, "file_records": file_records, "states": states},
                default=str,
            )
        ),
    )
    DeltaLake.create(layout.lake, lake_schema(), info, adds)
