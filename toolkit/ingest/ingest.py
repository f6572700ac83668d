"""The ingest stage: decision-log files in, one atomic batch per file in the lake.

Each file becomes one batch (its id derives from the file's content hash):
validated rows go to the lake with lineage columns, bad lines go byte for
byte to the quarantine, duplicates of decisions already seen (in the file or
in the lake) are quarantined with a pointer to the first, except copies of
lake rows, every field alike (the same games logged again): those are left
out, counted against the batch that holds them. A file whose
content was ingested before is a no-op that says so.

Memory stays flat whatever a file holds: lines are read in bounded chunks
(a line over the length limit is skipped unread), rejects stream to the
quarantine, and duplicates are read back from DuckDB and the file a batch at
a time. Only regular files are read, and standard input once (see
:mod:`toolkit.ingest.inputs`), before the catalog is locked.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, computed_field, model_serializer

from toolkit import __version__
from toolkit.catalog import remote
from toolkit.catalog.connect import WriterWait
from toolkit.catalog.delta import BatchCommittedElsewhere
from toolkit.catalog.index import naive_utc_now
from toolkit.catalog.lake import Lake
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.catalog.store import Catalog
from toolkit.errors import FileReadError
from toolkit.ingest.config import IngestConfig
from toolkit.ingest.dedup import DuplicateSet
from toolkit.ingest.inputs import Input, SkippedFile, find_inputs, opened_inputs
from toolkit.ingest.parts import FileReport, PackedPart, Part, Reject
from toolkit.ingest.reader import read_raw_lines
from toolkit.ingest.staging import Lineage, StagedBatch
from toolkit.ingest.validate import validate_file
from toolkit.layout import Layout
from toolkit.progress import Progress, ProgressFn
from toolkit.schema.arrow import snapshot_schema
from toolkit.storage import file_sha256


class FileIngest(BaseModel):
    """What happened to one file (its JSON: these fields, then its report's counts)."""

    path: str
    sha256: str
    status: Literal["ingested", "already_ingested", "empty", "failed", "skipped"]
    batch_id: str | None
    report: FileReport
    duplicates: int = 0
    held: int = Field(0, description="Decisions left out as copies of lake rows (the same games logged again).")
    held_by: list[str] = Field(default_factory=list, description="The lake's batches holding those copies.")
    note: str = ""

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        body = handler(self)
        report = body.pop("report")
        report.pop("path")
        return {**body, **report}


class IngestResult(BaseModel):
    """The outcome of one ingest run."""

    files: list[FileIngest] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rows_valid(self) -> int:
        return sum(f.report.valid for f in self.files if f.status == "ingested")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rows_rejected(self) -> int:
        return sum(f.report.invalid for f in self.files if f.status == "ingested")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def batches(self) -> list[str]:
        return [f.batch_id for f in self.files if f.status == "ingested" and f.batch_id]

    @property
    def failed(self) -> list[FileIngest]:
        """Files that could not be read at all (nothing of them was ingested; the note says why)."""
        return [f for f in self.files if f.status == "failed"]

    @property
    def skipped(self) -> list[FileIngest]:
        """Entries of folders that were not read (not regular files; the note says why)."""
        return [f for f in self.files if f.status == "skipped"]

    @model_serializer(mode="wrap")
    def _summary_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        body = handler(self)  # JSON: the totals, the failed files' paths, then each file
        return {
            "rows_valid": body["rows_valid"],
            "rows_rejected": body["rows_rejected"],
            "batches": body["batches"],
            "failed": [f.path for f in self.failed],
            "files": body["files"],
        }


def batch_id_for(sha256: str) -> str:
    """The batch id of a file: a pure function of its content."""
    return f"b{sha256[:16]}"


def ingest_paths(
    paths: list[Path],
    layout: Layout,
    config: IngestConfig | None = None,
    progress: ProgressFn | None = None,
    catalog_wait: WriterWait = WriterWait(),
) -> IngestResult:
    """Ingest files and folders into the lake under ``layout``.

    Args:
        paths: regular files or folders (searched recursively for decision logs), or ``-`` for
            standard input (read once, into a spool file under the data root, before the catalog is locked).
        progress: told the rows done in the file being read (``item``) as work advances.
        catalog_wait: how long to wait for the catalog another process writes (by default briefly).

    A file that cannot be read at all (a compressed stream cut short, or not
    what its name says) is reported as ``failed`` with the reason, none of it
    is ingested, and the other files go on. An entry of a folder that is not a
    regular file (a FIFO, a device) is reported as ``skipped``.

    Raises:
        UsageError: a path is missing or not a regular file or folder, a folder holds no log file, or
            standard input is a terminal or too long.
        CatalogError: the catalog cannot be opened.
        IngestError: standard input cannot be spooled.
    """
    config = config or IngestConfig()
    found = find_inputs(paths)
    result = IngestResult(files=[_skipped(s) for s in found.skipped])
    layout.check(write=True)
    with (
        opened_inputs(found, layout.spool, config.read.max_stdin_bytes) as inputs,
        Lake.open(layout, write=True, wait=catalog_wait) as lake,
    ):
        for source in inputs:
            try:
                result.files.append(ingest_file(source, lake, config, progress))
            except FileReadError as error:
                result.files.append(
                    FileIngest(
                        path=source.name,
                        sha256="",
                        status="failed",
                        batch_id=None,
                        report=FileReport(path=source.name),
                        note=error.reason,
                    )
                )
    return result


def _skipped(skipped: SkippedFile) -> FileIngest:
    return FileIngest(
        path=skipped.path,
        sha256="",
        status="skipped",
        batch_id=None,
        report=FileReport(path=skipped.path),
        note=skipped.reason,
    )


# Rows validated while the file's SHA-256 (which names its batch) is computed on
# another thread (~1.5 s for 2 GB, in which the other core validates ~100k
# rows). They wait packed (~210 B a row: ~55 MB at most), so the bound costs
# little memory; a file whose hash takes longer than validating this many rows
# stalls validation until the hash is done. A reject weighs as much as
# REJECT_WEIGHT packed rows (its line and problems, ~1-3 KB, stay Python objects).
ROWS_BEFORE_HASH = 262_144
# What a decision is, beside its lineage: a repeat of a lake row alike in all of these is a copy of it.
_DECISION_COLUMNS = tuple(snapshot_schema().names)
REJECT_WEIGHT = 8


def ingest_file(source: Input, lake: Lake, config: IngestConfig, progress: ProgressFn | None = None) -> FileIngest:
    """Ingest one input file into ``lake`` (opened for writing) as one batch and one version (see
    :func:`ingest_paths`).

    Raises:
        FileReadError: the file cannot be read at all (nothing of it is ingested).
    """
    report = FileReport(path=source.name)
    catalog = lake.view
    parts = validate_file(source.path, config.read, report, source.name)
    try:
        sha, early = _hash_while_validating(source, parts, catalog)
        earlier = catalog.batch_for_file(sha)
        if earlier is not None and not catalog.batch_vacuumed(earlier[0]):
            return FileIngest(
                path=source.name,
                sha256=sha,
                status="already_ingested",
                batch_id=earlier[0],
                report=FileReport(path=source.name),
                note=already_note(catalog, *earlier),
            )
        return _stage_and_publish(source, sha, itertools.chain(_unpacked(early), parts), report, lake, config, progress)
    finally:
        parts.close()


def already_note(catalog: Catalog, batch_id: str, stored: str) -> str:
    """Why a file is not ingested again: its content is batch ``batch_id`` (maybe retired)."""
    note = f"same content already ingested as batch {batch_id} from {stored}"
    [batch] = catalog.require_batches([batch_id])
    if batch.retired:
        note += (
            f"; that batch is retired ({batch.retired_reason}): bring it back with `distill lake restore {batch_id}`"
        )
    return note


def _hash_while_validating(source: Input, parts: Iterator[Part], catalog: Catalog) -> tuple[str, list[PackedPart]]:
    """The file's SHA-256, and the parts validated meanwhile (at most about
    ``ROWS_BEFORE_HASH`` rows, packed, a reject counting as ``REJECT_WEIGHT``):
    hashing takes one core for a while, and the other core need not sit idle. A
    file seen before at this path and size is most likely a re-run, so it is
    only hashed."""
    path = source.path
    if not source.is_stdin and catalog.has_file(path, path.stat().st_size):
        return file_sha256(path), []
    early: list[PackedPart] = []
    weight = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="distill-sha256") as hasher:
        digest = hasher.submit(file_sha256, path)
        while not digest.done() and weight < ROWS_BEFORE_HASH:
            part = next(parts, None)
            if part is None:
                break
            early.append(PackedPart.pack(part))
            weight += part.table.num_rows + REJECT_WEIGHT * len(part.rejects)
        return digest.result(), early


def _unpacked(early: list[PackedPart]) -> Iterator[Part]:
    """The packed parts, unpacked in order, each let go of once handed over."""
    early.reverse()
    while early:
        yield early.pop().unpack()


def _stage_and_publish(
    source: Input,
    sha: str,
    parts: Iterator[Part],
    report: FileReport,
    lake: Lake,
    config: IngestConfig,
    progress: ProgressFn | None,
) -> FileIngest:
    """Stage the file's parts as one batch, quarantine duplicates, record and publish it."""
    batch_id = batch_id_for(sha)
    layout = lake.layout
    if layout.staging_for(batch_id).exists():  # left by an earlier attempt: finish or undo it first
        lake.writer.settle(layout.staging_for(batch_id))
    recorded = _recorded(layout, source)
    staged = StagedBatch(layout, Lineage(batch_id, recorded, sha))
    try:
        for part in parts:
            staged.write(part)
            if progress is not None:
                progress(Progress(report.valid + report.invalid, None, "rows", source.name))
        if report.lines == report.blank and not staged.rejected:
            shutil.rmtree(staged.root, ignore_errors=True)
            return FileIngest(
                path=source.name,
                sha256=sha,
                status="empty",
                batch_id=None,
                report=report,
                note="file holds no record: nothing ingested",
            )
        staged.finish_rows()
        lake.view.require_readable()  # the staged lake files carry every accepted row's key, content and line
        duplicates = quarantine_duplicates(source, staged, report, config, lake.view.con, existing="decisions")
        staged.close()
        held = {"held": sum(duplicates.held_by.values()), "held_by": sorted(duplicates.held_by)}
        if report.valid == 0 and not staged.rejected:  # every decision of it is in the lake already
            shutil.rmtree(staged.root, ignore_errors=True)
            return FileIngest(
                path=source.name,
                sha256=sha,
                status="already_ingested",
                batch_id=None,
                report=report,
                **held,
                note=f"its {held['held']:,} decisions are all in the lake already, every field alike (the same "
                f"games, logged before): held by batch {', '.join(held['held_by'])}; nothing new to ingest",
            )
    except BaseException:
        shutil.rmtree(staged.root, ignore_errors=True)
        raise
    try:
        lake.append(
            staged.root,
            _batch_record(batch_id, sha, staged, report, duplicates.quarantined, config),
            _file_record(source, recorded, sha, batch_id, report),
        )
    except BatchCommittedElsewhere:  # a shared lake: another data root committed this batch at the same moment
        lake.writer.index()  # its commit, now in this root's copy and index
        rejects = layout.quarantine_file(batch_id)
        if lake.writer.location is not None and not rejects.exists():  # ours was undone: the winner's, copied
            remote.fetch_quarantine(lake.writer.location, batch_id, rejects)
        return FileIngest(
            path=source.name,
            sha256=sha,
            status="already_ingested",
            batch_id=batch_id,
            report=report,
            note=f"same content committed as batch {batch_id} by another data root at the same moment",
        )
    note = (
        f"{held['held']:,} of its decisions are in the lake already, every field alike (held by batch "
        f"{', '.join(held['held_by'])}): left out"
        if held["held"]
        else ""
    )
    return FileIngest(
        path=source.name,
        sha256=sha,
        status="ingested",
        batch_id=batch_id,
        report=report,
        duplicates=duplicates.quarantined,
        **held,
        note=note,
    )


def _recorded(layout: Layout, source: Input) -> str:
    """How the file is recorded in the data root (its lineage): its path, or ``<stdin>``."""
    return source.name if source.is_stdin else layout.stored(source.path)


@dataclass(frozen=True)
class Duplicates:
    """The rows of a staged file taken out as repeats of a decision."""

    quarantined: int = 0  # repeats of a decision with other content, or repeated within the file
    held_by: dict[str, int] = dataclasses.field(default_factory=dict)  # copies of lake rows, by the batch holding them


def quarantine_duplicates(
    source: Input,
    staged: StagedBatch,
    report: FileReport,
    config: IngestConfig,
    con: duckdb.DuckDBPyConnection,
    *,
    existing: str | None,
) -> Duplicates:
    """Take out the rows of ``staged`` (its lake files written) that repeat a decision of the file, or of the
    relation ``existing`` on ``con`` (the lake's ``decisions``; None: the file's own repeats only). A row that is
    a copy of a lake row, every field alike (the same game logged again: a run that reused another's seed), is
    already in the lake: it is left out and counted against the batch that holds it, not quarantined. Any other
    repeat goes to the quarantine, its line read again from the file, a batch of duplicates at a time."""
    compare = _DECISION_COLUMNS if existing is not None else ()
    with DuplicateSet(con, staged.lake_files, existing=existing, compare=compare) as found:
        if not found.count:
            return Duplicates()
        staged.drop_lines(found.lines())
        held_by = found.held_by()
        clashes = (d for d in found if not d.same)
        duplicates, wanted = itertools.tee(clashes)  # one pass over both: the tee holds a duplicate or two
        raws = read_raw_lines(source.path, (d.line for d in wanted), config.read.max_line_bytes)
        for duplicate, raw in zip(duplicates, raws, strict=True):
            problem = duplicate.problem()
            staged.quarantine.add([Reject(source.name, duplicate.line, raw, [problem])])
            report.demote(problem)
        report.valid -= found.same
        return Duplicates(found.count - found.same, held_by)


def _batch_record(
    batch_id: str, sha: str, staged: StagedBatch, report: FileReport, duplicates: int, config: IngestConfig
) -> BatchRecord:
    return BatchRecord(
        batch_id=batch_id,
        created_at=naive_utc_now(),
        file_sha256=sha,
        rows_valid=report.valid,
        rows_rejected=report.invalid,
        rows_duplicate=duplicates,
        sources=staged.sources,
        generations=staged.generations,
        source_override=config.read.source,
        dialect_override=config.read.dialect,
        distill_version=__version__,
    )


def _file_record(source: Input, recorded: str, sha: str, batch_id: str, report: FileReport) -> FileRecord:
    return FileRecord(
        file_sha256=sha,
        path=recorded,
        size_bytes=source.path.stat().st_size,
        batch_id=batch_id,
        lines=report.lines,
        blank_lines=report.blank,
        rows_valid=report.valid,
        rows_rejected=report.invalid,
        dialects=dict(report.dialects),
        ingested_at=naive_utc_now(),
    )
