"""The lake's lifecycle: retire and restore batches, compact small files, vacuum old ones; each one version.

- **Retire** takes batches out of the lake from the next version on: every
  view, build, gate, export and the dashboard stop seeing their rows (and
  their quarantined lines). It costs metadata only (remove actions), unless
  a compaction put a batch in one file with others: that file is rewritten
  without it.
- **Restore** brings retired batches back, committing their files again
  (or, for a batch sharing a compacted file, a file of its rows alone). It
  needs their files: a batch whose files a vacuum deleted comes back by
  ingesting its log file again.
- **Compact** merges runs of small neighbouring files of one source and
  generation (the sharded game jobs make one file per shard) into files of
  about ``target_mb``, keeping the rows' order, so builds read the same
  rows in the same order.
- **Vacuum** deletes the files no version inside the retention needs, and
  files no version ever listed; versions older than that horizon can no
  longer be read (``--as-of`` them is an error naming it).

Each runs on the data root's :class:`~toolkit.catalog.writer.LakeWriter` (so
one at a time per data root; :class:`~toolkit.catalog.lake.Lake` is how
commands reach them) and is one version of the lake, or none when there is
nothing to do.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict

from toolkit import __version__
from toolkit.catalog import log, remote
from toolkit.catalog.commit import CommitInfo
from toolkit.catalog.index import RESTORE, RETIRE, VACUUM, naive_utc_now
from toolkit.catalog.log import Commit
from toolkit.catalog.parquet import lake_parquet_options
from toolkit.catalog.records import VersionRecord
from toolkit.catalog.store import Catalog, LakeFile
from toolkit.catalog.writer import LakeWriter
from toolkit.errors import UsageError
from toolkit.layout import Layout
from toolkit.limits import DEFAULT_TARGET_MB
from toolkit.schema import columns as col
from toolkit.schema.arrow import lake_schema

ROW_GROUP_ROWS: Final = 65_536
HIDDEN: Final = ("_", ".")  # names Delta readers and writers skip in a table folder


class VacuumResult(BaseModel):
    """What a vacuum deleted, and the oldest version still readable."""

    model_config = ConfigDict(frozen=True)

    version: VersionRecord | None
    horizon: int
    files_deleted: int
    bytes_deleted: int


def history(catalog: Catalog) -> list[VersionRecord]:
    """Every version of the lake, oldest first."""
    rows = catalog.read_index("SELECT * FROM versions ORDER BY version").to_pylist()
    return [VersionRecord.from_row(row) for row in rows]


def select_batches(
    catalog: Catalog,
    batch_ids: Sequence[str] = (),
    *,
    files: Sequence[Path] = (),
    source: str | None = None,
    generation: int | None = None,
) -> list[str]:
    """The batches named by id, by an ingested file (its content, or the path it was read from), or by source
    (and generation): every batch holding rows of them.

    Raises:
        UsageError: nothing named, or a file or a source and generation no batch holds.
    """
    chosen = list(batch_ids)
    for path in files:
        chosen.append(_batch_of_file(catalog, path))
    if generation is not None and source is None:
        raise UsageError("--generation needs --source", hint="name the source too, e.g. --source ppo --generation 3")
    if source is not None:
        found = [
            b.batch_id
            for b in catalog.batches()
            if source in b.sources and (generation is None or generation in b.generations)
        ]
        if not found:
            what = f"source {source!r}" + ("" if generation is None else f" and generation {generation}")
            raise UsageError(f"no batch holds rows of {what}", hint='see: distill sql "SELECT * FROM batches"')
        chosen += found
    if not chosen:
        raise UsageError("name the batches", hint="give batch ids, --file PATH, or --source S [--generation G]")
    return list(dict.fromkeys(chosen))


def _batch_of_file(catalog: Catalog, path: Path) -> str:
    from toolkit.storage import file_sha256

    if path.is_file():
        found = catalog.batch_for_file(file_sha256(path))
        if found is not None:
            return found[0]
    rows = catalog.index_con.execute(
        "SELECT batch_id FROM file_log WHERE path = ? ORDER BY ingested_at DESC LIMIT 1", [catalog.layout.stored(path)]
    ).fetchall()
    if not rows:
        raise UsageError(
            f"{path} was never ingested into {catalog.layout.home}", hint="list them: distill sql 'FROM files'"
        )
    return rows[0][0]


def retire(writer: LakeWriter, batch_ids: Sequence[str], reason: str) -> VersionRecord:
    """Retire batches from the next version on, for ``reason``.

    Raises:
        UsageError: no reason, an unknown batch, or one retired already (nothing changes).
    """
    if not reason.strip():
        raise UsageError("say why the batches are retired", hint='--reason "engine build 4.2 logged wrong seats"')
    view = writer.view
    records = view.require_batches(list(batch_ids))
    already = [b.batch_id for b in records if b.retired]
    if already:
        raise UsageError(
            f"batch {', '.join(already)} is retired already",
            hint='see why: distill sql "SELECT batch_id, retired_reason FROM batches WHERE retired"',
        )
    leaving = set(batch_ids)
    files = view.lake_files(batches=leaving)
    info = CommitInfo(operation=RETIRE, batches=list(batch_ids), reason=reason, distill_version=__version__)
    shared = [f for f in files if not set(f.batch_ids) <= leaving]
    if not shared:  # metadata only
        return _record(view, writer.commit(info, removes=files))
    _require_on_disk(writer, shared, view.version)
    staged = writer.stage(f"retire-{uuid.uuid4().hex[:12]}")
    for file in shared:  # a compacted file holding other batches too: rewritten without these
        _write_rows(_rows_of(file, set(file.batch_ids) - leaving), _staged_path(writer.layout.lake, staged, file))
    return _record(view, writer.publish(staged, info, files))


def restore(writer: LakeWriter, batch_ids: Sequence[str], reason: str | None = None) -> VersionRecord:
    """Bring retired batches back from the next version on.

    Raises:
        UsageError: an unknown batch, one that is not retired, or one whose files a vacuum deleted (nothing
            changes).
    """
    view = writer.view
    records = view.require_batches(list(batch_ids))
    live = [b.batch_id for b in records if not b.retired]
    if live:
        raise UsageError(
            f"batch {', '.join(live)} is not retired: nothing to restore",
            hint='list the retired ones: distill sql "SELECT batch_id, retired_reason FROM batches WHERE retired"',
        )
    returning = set(batch_ids)
    needed: dict[Path, LakeFile] = {}
    for batch in batch_ids:
        for file in view.lake_files(batches=[batch], version=_retired_at(view, batch) - 1):
            needed[file.path] = file
    gone = sorted({b for f in needed.values() if not f.path.exists() for b in set(f.batch_ids) & returning})
    if gone:
        raise UsageError(
            f"the rows of batch {', '.join(gone)} are gone: a vacuum deleted its files",
            hint="ingest its log file again (distill ingest PATH): a vacuumed batch comes back that way",
        )
    info = CommitInfo(operation=RESTORE, batches=list(batch_ids), reason=reason, distill_version=__version__)
    _require_on_disk(writer, list(needed.values()), view.version)  # live again, or read: inside the table
    whole = [f for f in needed.values() if set(f.batch_ids) <= returning]
    shared = [f for f in needed.values() if not set(f.batch_ids) <= returning]
    if not shared:  # metadata only: the same files again
        return _record(view, writer.commit(info, described=whole))
    staged = writer.stage(f"restore-{uuid.uuid4().hex[:12]}")
    for file in shared:
        _write_rows(_rows_of(file, set(file.batch_ids) & returning), _staged_path(writer.layout.lake, staged, file))
    return _record(view, writer.publish(staged, info, placed=whole))


def _require_on_disk(writer: LakeWriter, files: Sequence[LakeFile], version: int) -> None:
    """Check the files about to be read are on disk inside the table (see :func:`toolkit.catalog.log.readable`)."""
    lake = writer.layout.lake
    log.readable(
        lake, [f.path.relative_to(lake).as_posix() for f in files], [list(f.batch_ids) for f in files], version
    )


def _retired_at(catalog: Catalog, batch_id: str) -> int:
    rows = catalog.index_con.execute(
        "SELECT max(version) FROM batch_states WHERE batch_id = ? AND retired", [batch_id]
    ).fetchall()
    return int(rows[0][0])


def compact(writer: LakeWriter, target_mb: float = DEFAULT_TARGET_MB) -> VersionRecord | None:
    """Merge runs of neighbouring files smaller than ``target_mb`` (of one source and generation) into files of
    about that size; None when there is nothing to merge.

    Raises:
        UsageError: a target that is not positive.
    """
    if target_mb <= 0:
        raise UsageError(f"--target-mb must be positive, got {target_mb}", hint="e.g. --target-mb 128")
    target = int(target_mb * 1024 * 1024)
    groups = _compaction_groups(writer.view.lake_files(), target)
    if not groups:
        return None
    _require_on_disk(writer, [f for group in groups for f in group], writer.view.version)
    staged = writer.stage(f"compact-{uuid.uuid4().hex[:12]}")
    for group in groups:
        name = hashlib.sha256(
            "\n".join(f.path.relative_to(writer.layout.lake).as_posix() for f in group).encode()
        ).hexdigest()[:16]
        folder = Layout.partition(group[0].source or "", group[0].generation)
        _write_files([f.path for f in group], staged / "lake" / folder / f"compacted-{name}.parquet")
    removed = [f for group in groups for f in group]
    batches = sorted({b for f in removed for b in f.batch_ids})
    info = CommitInfo(
        operation="compact",
        batches=batches,
        distill_version=__version__,
        detail={"target_mb": target_mb, "groups": len(groups)},
    )
    return _record(writer.view, writer.publish(staged, info, removed, data_change=False))


def _compaction_groups(files: list[LakeFile], target: int) -> list[list[LakeFile]]:
    """Runs of neighbouring small files (in scan order: source, generation, first batch) cut at ``target`` bytes;
    only runs of two or more files are worth merging."""
    ordered = sorted(files, key=_scan_order)
    groups: list[list[LakeFile]] = []
    run: list[LakeFile] = []

    def close() -> None:
        if len(run) > 1:
            groups.append(list(run))
        run.clear()

    for file in ordered:
        if run and (
            _partition(run[0]) != _partition(file) or sum(f.size_bytes for f in run) + file.size_bytes > target
        ):
            close()
        if file.size_bytes >= target:
            close()
            continue
        run.append(file)
    close()
    return groups


def _partition(file: LakeFile) -> tuple[str, int]:
    return file.source or "", -1 if file.generation is None else file.generation


def _scan_order(file: LakeFile) -> tuple[str, int, str, str]:
    return (*_partition(file), file.batch_ids[0], file.path.name)


def vacuum(writer: LakeWriter, retain_days: float) -> VacuumResult:
    """Delete the files that no version committed in the last ``retain_days`` days (nor any later one) lists,
    and the files no version ever listed.

    The version comes first: its commit names the horizon (the oldest
    version still readable) and every file it deletes, so no reader reads a
    version whose files are going, and a vacuum killed while deleting is
    finished by the next writer (:meth:`LakeWriter.recover`), with no version
    of its own.

    Raises:
        UsageError: a negative retention.
    """
    if retain_days < 0:
        raise UsageError(f"--retain must be 0 days or more, got {retain_days}", hint="e.g. --retain 7")
    cut = naive_utc_now() - dt.timedelta(days=retain_days)
    view = writer.view
    found = view.index_con.execute("SELECT max(version) FROM versions WHERE committed_at <= ?", [cut]).fetchall()
    expired = _expired_files(view, int(found[0][0]) if found[0][0] is not None else -1)
    strays = _unlisted_at_location(writer, cut)
    doomed = sorted({*expired, *_unlisted_files(view), *strays})
    if not doomed:
        return VacuumResult(version=None, horizon=view.vacuum_horizon, files_deleted=0, bytes_deleted=0)
    # The oldest version still whole once these files are gone: the last that removed one of them.
    horizon = max([view.vacuum_horizon, *expired.values()])
    size = sum(strays[name] if name in strays else (writer.layout.lake / name).lstat().st_size for name in doomed)
    info = CommitInfo(
        operation=VACUUM,
        distill_version=__version__,
        reason=f"retain {retain_days:g} days",
        detail={"horizon": horizon, "files_deleted": len(doomed), "bytes_deleted": size, "files": doomed},
    )
    record = _record(view, writer.commit(info))
    writer.delete_vacuumed(doomed)
    return VacuumResult(version=record, horizon=horizon, files_deleted=len(doomed), bytes_deleted=size)


def _unlisted_at_location(writer: LakeWriter, cut: dt.datetime) -> dict[str, int]:
    """At a shared lake's location, the data files no version ever listed (a writer's upload whose commit never
    came), by path in the table with their size, when older than ``cut`` and than
    :data:`~toolkit.catalog.remote.STRAY_MIN_AGE` (another root's upload may be about to be committed)."""
    if writer.location is None:
        return {}
    listed = {row[0] for row in writer.con.execute("SELECT DISTINCT path FROM lake_files").fetchall()}
    before = min(
        cut.replace(tzinfo=dt.UTC) if cut.tzinfo is None else cut, dt.datetime.now(dt.UTC) - remote.STRAY_MIN_AGE
    )
    return {name: size for name, size in remote.stray_files(writer.location, listed, before).items()}


def _expired_files(catalog: Catalog, cut: int) -> dict[str, int]:
    """Files on disk that no version from ``cut`` on lists (each stretch of versions they were live in ended at or
    before it), by path in the table, with the version that last removed each."""
    rows = catalog.index_con.execute(
        "SELECT path, max(removed_version) FROM lake_files GROUP BY path "
        "HAVING bool_and(removed_version IS NOT NULL AND removed_version <= ?) ORDER BY path",
        [cut],
    ).fetchall()
    lake = catalog.layout.lake
    return {path: int(removed) for path, removed in rows if os.path.lexists(lake / path)}


def _unlisted_files(catalog: Catalog) -> list[str]:
    """Parquet files in the table folder that no version ever listed (left by a crash before its commit), by path
    in the table; folders and files named ``_...`` or ``.…`` (the log's, Delta's hidden ones) are not looked in,
    symlinked folders are not followed."""
    listed = {row[0] for row in catalog.index_con.execute("SELECT DISTINCT path FROM lake_files").fetchall()}
    lake = catalog.layout.lake
    found = []
    for folder, subfolders, files in os.walk(lake, followlinks=False):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(HIDDEN))
        relative = Path(folder).relative_to(lake)
        for name in files:
            path = (relative / name).as_posix()
            if name.endswith(".parquet") and not name.startswith(HIDDEN) and path not in listed:
                found.append(path)
    return sorted(found)


def _rows_of(file: LakeFile, batches: Iterable[str]) -> pa.Table:
    kept = pa.array(sorted(batches), pa.string())
    return pads.dataset(file.path, format="parquet").to_table(filter=pads.field(col.BATCH_ID).isin(kept))


def _staged_path(lake: Path, staged: Path, file: LakeFile) -> Path:
    folder = staged / "lake" / file.path.parent.relative_to(lake)
    return folder / f"{file.path.stem.split('~')[0]}~{uuid.uuid4().hex[:8]}.parquet"


def _write_rows(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(_to_schema(table, lake_schema()), path, row_group_size=ROW_GROUP_ROWS, **lake_parquet_options())


def _write_files(inputs: list[Path], path: Path) -> None:
    """Concatenate lake files into one, in order, keeping each input's row groups apart (their statistics keep
    naming one batch each)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = lake_schema()
    with pq.ParquetWriter(path, schema, **lake_parquet_options()) as writer:
        for source in inputs:
            parquet = pq.ParquetFile(source)
            for group in range(parquet.num_row_groups):
                table = parquet.read_row_group(group)
                writer.write_table(_to_schema(table, schema), row_group_size=max(table.num_rows, 1))


def _to_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns (a column its file predates filled with nulls)."""
    columns = [
        table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _record(view: Catalog, commit: Commit) -> VersionRecord:
    return version_record(view, commit.version)


def version_record(view: Catalog, version: int) -> VersionRecord:
    """The record of one version, from the index."""
    rows = view.read_index("SELECT * FROM versions WHERE version = ?", [version]).to_pylist()
    return VersionRecord.from_row(rows[0])
