"""The lake's write protocol: one writer at a time, every change one Delta commit, a crash undone or finished.

:class:`LakeWriter` holds the live catalog (the DuckDB file: one process at
a time) and makes every change of the lake the same way:

1. the change's new files are written under ``staging/<id>/`` (a small data
   root: ``lake/...``, ``quarantine/...``), with an intent naming each file
   and what proves it is the same file (:mod:`toolkit.catalog.intent`);
2. they are moved into place (invisible: no version lists them);
3. one Delta commit makes them live, its commit info holding everything
   Distill knows of the version (:mod:`toolkit.catalog.commit`);
4. the index records the version (:mod:`toolkit.catalog.index`) and readers
   get a fresh snapshot (:mod:`toolkit.catalog.snapshot`).

A crash before step 3 leaves nothing visible: the next writer deletes the
moved files its intent proves are its own, and nothing else. A crash after
it is finished by whoever opens the catalog next, which indexes what the log
holds and the index does not. A vacuum commits first (naming the horizon
and every file it deletes) and deletes after; one killed while deleting is
finished by the next writer. Readers never see half a change, and never run
this recovery.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Collection, Sequence
from pathlib import Path

import duckdb

from toolkit import __version__
from toolkit.catalog import delta, index, intent, log, remote, snapshot
from toolkit.catalog.commit import CommitInfo
from toolkit.catalog.connect import WriterWait, connect_writer, sync
from toolkit.catalog.delta import DeltaLake
from toolkit.catalog.log import Commit
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.catalog.store import BATCH_STATES, Catalog, LakeFile
from toolkit.errors import CatalogError
from toolkit.failpoints import failpoint
from toolkit.layout import Layout
from toolkit.schema.arrow import lake_schema


class LakeWriter:
    """The one writer of a data root's lake: the live catalog, held, and the views of the latest version on it
    (:attr:`view`)."""

    def __init__(self, layout: Layout, con: duckdb.DuckDBPyConnection) -> None:
        self.layout = layout
        self.con = con  # the index's tables; the views are made on it when first read through ``view.con``
        self.view = Catalog(layout, con, read_only=False)
        self.location = remote.location_of(layout)
        self._delta: DeltaLake | None = None

    @classmethod
    def open(cls, layout: Layout, wait: WriterWait = WriterWait()) -> LakeWriter:
        """Take the data root's catalog for writing (waiting for another writer as ``wait`` says): the table made
        on a new data root, the index of the log as it is now, interrupted changes finished or undone, the
        table's schema evolved to this Distill's columns, a fresh read snapshot.

        Raises:
            CatalogError: the catalog held by another process past the wait, a lake of an older format, a
                table gone while the catalog indexes it.
            LakeLogError: a commit of the log that cannot be trusted.
        """
        layout.check(write=True)
        writer = cls(layout, connect_writer(layout, wait))
        try:
            sync(writer.con, layout)  # refuses a format-1 catalog, or one indexing a table that is gone
            if not delta.exists(layout.lake):
                info = CommitInfo(operation="create", distill_version=__version__)
                writer._delta = DeltaLake.create(layout.lake, lake_schema(), info, location=writer.location)
                sync(writer.con, layout)
            writer.recover()
            writer._evolve()
            writer.publish_snapshot()
            writer.view.show(None)
        except BaseException:
            writer.con.close()
            raise
        return writer

    @property
    def table(self) -> DeltaLake:
        """The lake's Delta table."""
        if self._delta is None:
            self._delta = DeltaLake(self.layout.lake, self.location)
        return self._delta

    def close(self) -> None:
        try:
            self.publish_snapshot()
        finally:
            self.con.close()

    def publish_snapshot(self) -> None:
        """Give readers what is committed now (see :mod:`toolkit.catalog.snapshot`)."""
        try:
            snapshot.publish_snapshot(self.con, self.layout)
        except (OSError, duckdb.Error) as error:
            raise CatalogError(
                f"cannot write the catalog's read snapshot {self.layout.catalog_snapshot}: {error}",
                hint="the data root must be writable: check its permissions and free space",
            ) from error

    # -- commits ----------------------------------------------------------------------

    def commit(
        self,
        info: CommitInfo,
        adds: Sequence[Path] = (),
        removes: Sequence[LakeFile] = (),
        *,
        data_change: bool = True,
        described: Sequence[LakeFile] = (),
    ) -> Commit:
        """Make one new lake version: ``adds`` (files already moved into ``lake/``, described from their footers)
        and ``described`` (files whose facts the index holds: a restore) become live, ``removes`` stop being
        live, the index records it, readers get it. ``data_change`` False: the same rows in other files.

        Raises:
            CatalogError: the log or the index cannot be written.
        """
        lake = self.layout.lake
        added = [delta.data_file(lake, path) for path in adds] + [f.data_file(lake) for f in described]
        removed = [f.data_file(lake) for f in removes]
        failpoint(f"{info.operation}.before_commit")
        version = self.table.commit(
            info, added, removed, data_change=data_change, read_version=self.view.latest_version
        )
        failpoint(f"{info.operation}.after_commit")
        self.index()
        return version

    def index(self) -> list[int]:
        """Index what the log holds and the index does not (this writer's commit, or another's), then show it;
        returns the versions indexed."""
        try:
            done = sync(self.con, self.layout)
        except (duckdb.IOException, duckdb.TransactionException) as error:
            raise CatalogError(
                f"cannot write the catalog {self.layout.catalog}: {str(error).splitlines()[0]}",
                hint="the data root must be writable: check its permissions and free space; the next writer "
                "indexes the committed version",
            ) from error
        self.publish_snapshot()
        self.view.show(None)
        return done

    def reindex(self) -> list[int]:
        """Rebuild the whole index from the log (in one transaction: a crash leaves the index as it was)."""
        failpoint("reindex.before")
        done = index.rebuild(self.con, self.layout.lake)
        failpoint("reindex.after")
        self.publish_snapshot()
        self.view.show(None)
        return done

    def publish_batch(self, staged: Path, batch: BatchRecord, file: FileRecord) -> Commit:
        """Publish an ingested batch staged at ``staged``: its version's commit holds its records."""
        detail = {"batch": batch.model_dump(mode="json"), "file": file.model_dump(mode="json")}
        info = CommitInfo(operation=index.INGEST, batches=[batch.batch_id], distill_version=__version__, detail=detail)
        return self.publish(staged, info)

    def publish_batches(
        self, staged: Path, records: Sequence[tuple[BatchRecord, FileRecord]], *, uploaded: Collection[str] = ()
    ) -> Commit:
        """Publish several ingested batches staged together under ``staged`` as one version (a generation's
        shards, gated as one unit): its commit holds every batch's records, in order. ``uploaded``: the staged
        files (paths relative to ``staged``) that are at the lake's location already, under names no other writer
        uses (a worker's upload), so they are neither renamed nor uploaded again."""
        ingests = [{"batch": b.model_dump(mode="json"), "file": f.model_dump(mode="json")} for b, f in records]
        info = CommitInfo(
            operation=index.INGEST,
            batches=[b.batch_id for b, _ in records],
            distill_version=__version__,
            detail={"ingests": ingests},
        )
        return self.publish(staged, info, uploaded=uploaded)

    def set_batch_status(self, batch_ids: list[str] | str, status: str, reason: str | None = None) -> Commit:
        """Mark batches accepted or rejected (kept either way), as one version; used by gates and the loop."""
        batch_ids = [batch_ids] if isinstance(batch_ids, str) else list(batch_ids)
        if status not in BATCH_STATES:
            raise CatalogError(f"unknown batch status {status!r}", hint=f"use one of {', '.join(BATCH_STATES)}")
        self.view.require_batches(batch_ids)
        info = CommitInfo(
            operation=index.REVIEW,
            batches=batch_ids,
            reason=reason,
            distill_version=__version__,
            detail={"status": status},
        )
        return self.commit(info)

    # -- staged changes ---------------------------------------------------------------

    def stage(self, name: str) -> Path:
        """A fresh staging folder for a change of the lake (its files are written there first)."""
        folder = self.layout.inside(self.layout.staging / name)
        _remove_entry(folder)
        folder.mkdir(parents=True)
        return folder

    def publish(
        self,
        staged: Path,
        info: CommitInfo,
        removes: Sequence[LakeFile] = (),
        *,
        placed: Sequence[LakeFile] = (),
        data_change: bool = True,
        uploaded: Collection[str] = (),
    ) -> Commit:
        """Move the files staged under ``staged`` (a small data root: ``lake/``, ``quarantine/``) into place and
        commit them, with ``placed`` (files already in ``lake/``, known to the index), as one version removing
        ``removes``; the staging folder is removed once the version is indexed.

        On an error the staging folder and its intent are left for :meth:`recover` to settle against the log
        (the moved files are deleted unless the commit happened), here at once when possible. ``uploaded``:
        staged files (relative to ``staged``) already at the location under their own unique names.
        """
        token = uuid.uuid4().hex
        uploaded = set(uploaded)
        if self.location is not None:  # at a shared location, names no other writer stages
            for path in sorted((staged / "lake").rglob("*.parquet")):
                if path.relative_to(staged).as_posix() not in uploaded:
                    path.rename(staged / remote.unique_name(path.relative_to(staged).as_posix(), token))
        moves = [(p, p.relative_to(staged).as_posix()) for p in sorted(staged.rglob("*.parquet"))]
        record = intent.Intent(
            token=token,
            base_version=self.view.latest_version,
            files=[intent.moved_file(name, source) for source, name in moves],
        )
        intent.write(staged, record)
        try:
            for source, name in moves:
                target = self.layout.inside(self.layout.home / name)  # never through a link leading out
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
            failpoint(f"{info.operation}.moved")
            info = info.model_copy(update={"detail": {**info.detail, "token": token}})
            lake_name = self.layout.lake.relative_to(self.layout.home).as_posix() + "/"
            adds = [self.layout.home / name for _, name in moves if name.startswith(lake_name)]
            if self.location is not None:
                home = self.layout.home
                fresh = [p for p in adds if p.relative_to(home).as_posix() not in uploaded]
                remote.upload(
                    self.layout.lake, self.location, [p.relative_to(self.layout.lake).as_posix() for p in fresh]
                )
                rejects = [self.layout.home / n for _, n in moves if n.startswith("quarantine/batch=")]
                remote.upload_quarantine(self.location, {p.parent.name.removeprefix("batch="): p for p in rejects})
                failpoint(f"{info.operation}.uploaded")
            version = self.commit(info, adds, removes, data_change=data_change, described=placed)
        except BaseException:
            with contextlib.suppress(Exception):  # when even that fails, the next writer settles it
                self.settle(staged)
            raise
        _remove_entry(staged)
        return version

    def recover(self) -> list[str]:
        """Finish or undo interrupted changes (the index first caught up with the log): a vacuum killed while
        deleting is finished; a staged change whose version was committed is cleared away; one whose commit
        never happened has its moved files deleted (those its intent proves it moved: see
        :mod:`toolkit.catalog.intent`). Returns the staging entries settled."""
        self._finish_vacuum()
        staging = self.layout.staging
        if not staging.is_dir() or staging.is_symlink():
            return []
        entries = sorted(staging.iterdir())
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                self.settle(entry)
            else:  # not a folder a writer made: removed, never followed
                entry.unlink(missing_ok=True)
        return [entry.name for entry in entries]

    def settle(self, folder: Path) -> None:
        """Settle one staging folder: the index caught up with the log, then the change finished (cleared away)
        if its version was committed, undone (the files it moved deleted) if not."""
        self.index()
        found = intent.read(folder)
        if found is not None and not self._committed(found):
            for moved in found.files:
                path = intent.owned(self.layout, moved)
                if path is not None:
                    path.unlink(missing_ok=True)
        _remove_entry(folder)

    def _committed(self, found: intent.Intent) -> bool:
        rows = self.con.execute(
            "SELECT detail FROM versions WHERE version > ? AND detail IS NOT NULL", [found.base_version]
        ).fetchall()
        return any(json.loads(detail).get("token") == found.token for (detail,) in rows)

    # -- vacuum and schema ----------------------------------------------------------

    def delete_vacuumed(self, names: Sequence[str]) -> int:
        """Delete the files a committed vacuum named (paths in the table), each only while it lies inside the table
        folder and no version from the vacuum horizon on lists it; returns how many were deleted."""
        lake = self.layout.lake
        kept = self.con.execute(
            "SELECT DISTINCT path FROM lake_files WHERE removed_version IS NULL OR removed_version > ?",
            [self.view.vacuum_horizon],
        ).fetchall()
        live = {row[0] for row in kept}
        names = [name for name in names if log.is_table_path(name)]  # a record's names: never a climb or a URI
        if self.location is not None:  # the location's files first: a kill between leaves local copies only
            remote.delete(self.location, [name for name in names if name not in live])
        deleted = 0
        for i, name in enumerate(names):
            path = None if name in live else log.inside(lake, name, follow=False)
            if path is not None and os.path.lexists(path):
                path.unlink()
                deleted += 1
            if i == 0:
                failpoint("vacuum.deleting")
        _remove_empty_folders(lake)
        return deleted

    def _finish_vacuum(self) -> None:
        """Delete what the last vacuum named and a kill left on disk (its version is committed already)."""
        rows = self.con.execute(
            "SELECT detail FROM versions WHERE operation = ? ORDER BY version DESC LIMIT 1", [index.VACUUM]
        ).fetchall()
        names = json.loads(rows[0][0]).get("files", []) if rows and rows[0][0] else []
        left = [n for n in names if isinstance(n, str) and os.path.lexists(self.layout.lake / n)]
        if left:
            self.delete_vacuumed(left)

    def _evolve(self) -> None:
        """Add to the lake table the columns this Distill writes and the table lacks (one version, no rewrite)."""
        present = set(self.table.schema().names)
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
        self.table.add_columns(missing, info)
        failpoint("evolve.after_commit")
        self.index()


def _remove_empty_folders(lake: Path) -> None:
    """Remove the empty folders of the table (a vacuum emptied them), never its log or the table folder itself."""
    for folder, _, files in os.walk(lake, topdown=False, followlinks=False):
        path = Path(folder)
        if path != lake and not files and log.LOG_FOLDER not in path.relative_to(lake).parts:
            with contextlib.suppress(OSError):  # not empty: a folder below it stayed
                path.rmdir()


def _remove_entry(entry: Path) -> None:
    """Remove a staging folder; a symlink or file in its place is removed, never followed."""
    if entry.is_symlink() or entry.is_file():
        entry.unlink(missing_ok=True)
    else:
        shutil.rmtree(entry, ignore_errors=True)
