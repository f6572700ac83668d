"""The lake as one object: a data root's Delta table, its log and its index, opened from a location.

As delta-rs's ``DeltaTable`` is for a table, :class:`Lake` is for Distill's
lake: opened for reading (any number of processes) or for writing (one at a
time), it answers what the lake holds at any version and makes every change
of it::

    with Lake.open(layout) as lake:                      # read
        lake.version(), lake.history()
        with lake.at(3) as view:                         # the views as of version 3
            view.read("SELECT count(*) FROM decisions")

    with Lake.open(layout, write=True) as lake:          # write (waits briefly for another writer)
        lake.retire([batch], "wrong seats"); lake.restore([batch])
        lake.compact(); lake.vacuum(retain_days=7); lake.reindex()

Underneath, by responsibility: the log (:mod:`~toolkit.catalog.log`, the one
truth), the table's commits (:mod:`~toolkit.catalog.delta`), the index (a
cache of the log: :mod:`~toolkit.catalog.index`,
:mod:`~toolkit.catalog.connect`), the write protocol
(:mod:`~toolkit.catalog.writer`), the read views
(:mod:`~toolkit.catalog.store`, :mod:`~toolkit.catalog.views`), the sealed
SQL (:mod:`~toolkit.catalog.query`) and the lifecycle's rules
(:mod:`~toolkit.catalog.lifecycle`).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from toolkit.catalog import connect, delta, index, lifecycle, log
from toolkit.catalog.connect import WriterWait
from toolkit.catalog.records import BatchRecord, FileRecord, VersionRecord
from toolkit.catalog.sandbox import SandboxLimits
from toolkit.catalog.store import Catalog
from toolkit.catalog.writer import LakeWriter
from toolkit.errors import CatalogError
from toolkit.layout import Layout
from toolkit.limits import DEFAULT_TARGET_MB


class ReindexResult(BaseModel):
    """What ``distill lake reindex`` found and made."""

    model_config = ConfigDict(frozen=True)

    found: str = Field(description="The catalog before: missing, current, behind, not of this log, or unreadable.")
    version: int = Field(description="The newest version of the log, now indexed (-1: no table yet).")
    versions: int
    batches: int
    live_files: int
    live_rows: int
    horizon: int
    seconds: float


class Lake:
    """A data root's lake: read at any version, changed by one writer at a time (see the module's docstring)."""

    def __init__(self, layout: Layout, writer: LakeWriter | None) -> None:
        self.layout = layout
        self._writer = writer
        self._view: Catalog | None = writer.view if writer is not None else None

    @classmethod
    def open(cls, layout: Layout, *, write: bool = False, wait: WriterWait = WriterWait()) -> Lake:
        """The lake of ``layout``: for reading (its index opened when first asked), or for writing (the catalog
        taken, waiting for another writer as ``wait`` says; see :meth:`LakeWriter.open`).

        Raises:
            CatalogError: for writing, the catalog held by another writer past the wait, or a lake of an older
                format.
            LakeLogError: for writing, a commit of the log that cannot be trusted.
        """
        return cls(layout, LakeWriter.open(layout, wait) if write else None)

    def __enter__(self) -> Lake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        elif self._view is not None:
            self._view.close()
        self._view = None

    # -- reading ----------------------------------------------------------------------

    @property
    def view(self) -> Catalog:
        """The views of the latest version (this lake's own connection).

        Raises:
            CatalogError: no lake yet, or one of an older format.
            LakeLogError: a commit of the log that cannot be trusted.
        """
        if self._view is None:
            self._view = Catalog.open(self.layout)
        return self._view

    def at(
        self,
        as_of: int | str | dt.datetime | None = None,
        *,
        sandbox: bool = False,
        limits: SandboxLimits | None = None,
    ) -> Catalog:
        """The views of the lake ``as_of`` a version number or a time (the latest by default), on a connection of
        their own (close it, or use it as a context manager); ``sandbox``: sealed for untrusted SQL (see
        :meth:`Catalog.open`).

        Raises:
            UsageError: a version the lake does not have, or one a vacuum removed.
        """
        return Catalog.open(self.layout, sandbox=sandbox, as_of=as_of, limits=limits)

    def version(self) -> int:
        """The newest version of the lake."""
        return self.view.latest_version

    def history(self) -> list[VersionRecord]:
        """Every version of the lake, oldest first."""
        return lifecycle.history(self.view)

    @property
    def horizon(self) -> int:
        """The oldest version that can still be read (a vacuum deleted files older versions need)."""
        return self.view.vacuum_horizon

    def batches(self) -> list[BatchRecord]:
        return self.view.batches()

    def select_batches(
        self,
        batch_ids: Sequence[str] = (),
        *,
        files: Sequence[Path] = (),
        source: str | None = None,
        generation: int | None = None,
    ) -> list[str]:
        """The batches named by id, by an ingested file, or by source (and generation): see
        :func:`~toolkit.catalog.lifecycle.select_batches`."""
        return lifecycle.select_batches(self.view, batch_ids, files=files, source=source, generation=generation)

    # -- writing ----------------------------------------------------------------------

    @property
    def writer(self) -> LakeWriter:
        """The write protocol (a lake opened with ``write=True`` only)."""
        if self._writer is None:
            raise CatalogError("this lake was opened for reading", hint="open it with Lake.open(layout, write=True)")
        return self._writer

    def append(self, staged: Path, batch: BatchRecord, file: FileRecord) -> VersionRecord:
        """Publish an ingested batch staged at ``staged`` as one version."""
        return self._record(self.writer.publish_batch(staged, batch, file))

    def review(self, batch_ids: list[str] | str, status: str, reason: str | None = None) -> VersionRecord:
        """Mark batches accepted or rejected (kept either way), as one version."""
        return self._record(self.writer.set_batch_status(batch_ids, status, reason))

    def retire(self, batch_ids: Sequence[str], reason: str) -> VersionRecord:
        return lifecycle.retire(self.writer, batch_ids, reason)

    def restore(self, batch_ids: Sequence[str], reason: str | None = None) -> VersionRecord:
        return lifecycle.restore(self.writer, batch_ids, reason)

    def compact(self, target_mb: float = DEFAULT_TARGET_MB) -> VersionRecord | None:
        return lifecycle.compact(self.writer, target_mb)

    def vacuum(self, retain_days: float) -> lifecycle.VacuumResult:
        return lifecycle.vacuum(self.writer, retain_days)

    def _record(self, commit: log.Commit) -> VersionRecord:
        return lifecycle.version_record(self.view, commit.version)


def reindex(layout: Layout, wait: WriterWait = WriterWait()) -> ReindexResult:
    """Rebuild the catalog of ``layout`` from the lake's log alone (``distill lake reindex``), saying what the
    catalog was before. The rebuild is one transaction: readers see the old index or the new one, a crash
    leaves the old one.

    Raises:
        CatalogError: no lake, the catalog held by another writer past the wait, a lake of an older format.
        LakeLogError: a commit of the log that cannot be trusted.
    """
    layout.check(write=True)
    started = time.monotonic()
    existed = layout.catalog.exists()
    if not delta.exists(layout.lake):
        raise CatalogError(f"no lake at {layout.lake}", hint="ingest some logs first: distill ingest PATH")
    con = connect.connect_writer(layout, wait)
    try:
        connect.refuse_format_1(con, layout)
        found = _state(con, layout, existed)
        writer = LakeWriter(layout, con)
        writer.reindex()
        view = writer.view
        live = view.lake_files()
        return ReindexResult(
            found=found,
            version=view.latest_version,
            versions=view.latest_version + 1,
            batches=len(view.batches()),
            live_files=len(live),
            live_rows=sum(f.rows for f in live),
            horizon=view.vacuum_horizon,
            seconds=round(time.monotonic() - started, 3),
        )
    finally:
        con.close()


def _state(con: duckdb.DuckDBPyConnection, layout: Layout, existed: bool) -> str:
    """What the catalog was, against the log."""
    if not existed:
        return "missing"
    latest = log.latest_version(layout.lake)
    if index.read_meta(con, index.FORMAT_KEY) is None:
        return "missing (an empty or unreadable file, replaced)"
    if index.read_meta(con, index.FORMAT_KEY) != str(index.INDEX_FORMAT):
        return f"of index format {index.read_meta(con, index.FORMAT_KEY)} (this Distill writes {index.INDEX_FORMAT})"
    if index.is_current(con, layout.lake, latest):
        return f"current (version {latest})"
    done = index.indexed_version(con)
    if (
        done is not None
        and latest is not None
        and done < latest
        and index.read_meta(con, index.DIGEST_KEY) == log.digest(layout.lake, done)
    ):
        return f"behind (version {done} of {latest})"
    return f"not of this log (it indexed version {done}; the log is at {latest})"
