"""A game job's logs into a shared lake without a shared disk: the workers stage, the driver commits.

Where a data root's lake lives at a location (``--lake s3://...``), the
loop's game jobs (the bootstrap's simulation, self-play's export) need no
filesystem the driver and the workers share:

1. **a worker** (:func:`stage_shard`), once its shard's log is written to
   its own disk, validates and encodes it exactly as ``distill ingest``
   does (the same rows, rejects, lineage and in-file duplicates), then
   uploads to the location the batch's Parquet files (in their hive folders,
   under names no other writer uses: ``batch-<id>~<token>.parquet``), its
   rejected lines and the log itself (under ``_staged/``, a folder Delta
   readers skip), and returns what it staged (:class:`StagedShard`);
2. **the driver** (:func:`commit_shards`) fetches the logs into its data
   root (where a local run writes them: the run's records are the same),
   checks the staged rows against the lake (a decision the lake holds
   already, or another shard of the job holds, is judged by the ordinary
   ingest of that log instead, after the commit), and commits every shard's
   batch as **one** lake version carrying each batch's records and Delta
   transaction id: the workers' files themselves, neither rewritten nor
   uploaded again. Then it clears what the workers left under ``_staged/``.

A batch is the same whichever way it came: its id is its log's content
hash, its rows carry the same lineage, and a shard whose log the lake
holds already is reported ``already_ingested``. A worker killed after its
upload leaves files no version lists (a rerun stages anew under another
token; a vacuum deletes such data files once they are an hour old); a
driver killed before its commit changes nothing in the lake, and rerunning
the step commits the same shards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import duckdb

from toolkit.catalog import remote
from toolkit.catalog.connect import WriterWait
from toolkit.catalog.delta import BatchCommittedElsewhere
from toolkit.catalog.index import naive_utc_now
from toolkit.catalog.lake import Lake
from toolkit.catalog.records import BatchRecord, FileRecord
from toolkit.catalog.remote import LakeLocation
from toolkit.catalog.store import Catalog
from toolkit.errors import CatalogError
from toolkit.ingest.config import IngestConfig
from toolkit.ingest.dedup import DuplicateSet
from toolkit.ingest.handover import ShardStaging, StagedShard
from toolkit.ingest.ingest import (
    FileIngest,
    IngestResult,
    already_note,
    batch_id_for,
    ingest_file,
    quarantine_duplicates,
)
from toolkit.ingest.inputs import Input
from toolkit.ingest.parts import FileReport
from toolkit.ingest.staging import Lineage, StagedBatch
from toolkit.ingest.validate import validate_file
from toolkit.layout import QUARANTINE_FILE, Layout
from toolkit.storage import file_sha256


def staging_for(layout: Layout, folder: Path) -> ShardStaging | None:
    """Staging for logs meant for ``folder`` of ``layout``'s data root (the lake made at its location if new, so
    that the workers' files land in a lake); None where its lake is its own.

    Raises:
        CatalogError: the location cannot be reached, or holds something else than a lake.
    """
    location = remote.location_of(layout)
    if location is None:
        return None
    if not remote.location_has_table(location):
        Lake.open(layout, write=True).close()
    return ShardStaging(location=location.uri, recorded=layout.stored(folder))


def stage_shard(log: Path, staging: ShardStaging, config: IngestConfig | None = None) -> StagedShard:
    """Validate and encode the log file ``log`` (on the worker's disk) as one batch and upload it to the lake's
    location, uncommitted (see the module's doc).

    Raises:
        CatalogError: the location cannot be written.
        FileReadError: the log cannot be read.
    """
    config = config or IngestConfig()
    location = LakeLocation.parse(staging.location)
    recorded = f"{staging.recorded.rstrip('/')}/{log.name}"
    sha = file_sha256(log)
    batch_id = batch_id_for(sha)
    report = FileReport(path=recorded)
    token = remote.new_token()
    work = Path(tempfile.mkdtemp(prefix="distill-shard-"))
    try:
        staged = StagedBatch(Layout(work), Lineage(batch_id, recorded, sha))
        parts = validate_file(log, config.read, report, recorded)
        try:
            for part in parts:
                staged.write(part)
        finally:
            parts.close()
        staged.finish_rows()
        with duckdb.connect() as con:  # the log's own repeats (the driver checks the lake's)
            duplicates = quarantine_duplicates(Input(log, recorded), staged, report, config, con, existing=None)
        staged.close()
        lake = staged.root / "lake"
        files = {remote.unique_name(p.relative_to(lake).as_posix(), token): p for p in sorted(lake.rglob("*.parquet"))}
        prefix = f"{remote.STAGED_FOLDER}/{batch_id}~{token[:12]}"
        rejects = Layout(staged.root).quarantine_file(batch_id)
        travelling = _compressed(log, work) if not log.name.endswith(COMPRESSED) else log
        uploads = {**files, f"{prefix}/{travelling.name}": travelling}
        if rejects.exists():
            uploads[f"{prefix}/{QUARANTINE_FILE}"] = rejects
        remote.put(location, uploads)
        return StagedShard(
            recorded=recorded,
            sha256=sha,
            size_bytes=log.stat().st_size,
            batch_id=batch_id,
            token=token,
            report=report,
            lake_files=sorted(files),
            rejects=f"{prefix}/{QUARANTINE_FILE}" if rejects.exists() else None,
            log=f"{prefix}/{travelling.name}",
            duplicates=duplicates.quarantined,
            sources=staged.sources,
            generations=staged.generations,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fetch_logs(shards: Sequence[StagedShard], layout: Layout) -> None:
    """Copy the logs the workers staged into ``layout``'s data root, where they are recorded (as a local run writes
    them), and delete them at the location: the driver holds them from the moment the job returns, whatever
    later happens to what waits there for the commit.

    Raises:
        CatalogError: the lake is not at a location, a staged log is gone, or the location cannot be read.
    """
    location = remote.location_of(layout)
    if location is None or not shards:
        return
    for shard in shards:
        _fetch_log(location, shard, layout)
    remote.discard(location, [s.log for s in shards])


def _fetch_log(location: LakeLocation, shard: StagedShard, layout: Layout) -> Path:
    log = layout.inside(layout.home / shard.recorded)
    if log.is_file() and log.stat().st_size == shard.size_bytes and file_sha256(log) == shard.sha256:
        return log
    travelled = shard.log.endswith(ZSTD_SUFFIX) and not shard.recorded.endswith(ZSTD_SUFFIX)
    target = log.with_name(log.name + ZSTD_SUFFIX + ".part") if travelled else log
    if not remote.get(location, shard.log, target):
        raise CatalogError(
            f"the log {shard.recorded} staged by a worker is gone from {location.uri} ({shard.log})",
            hint="run the step again: its game job plays the shard anew",
        )
    if travelled:  # back to the bytes the worker wrote (its batch id is their hash)
        _decompressed(target, log)
    return log


# A log written uncompressed travels zstd-compressed (about 40 times smaller), and is written back as it was.
ZSTD_SUFFIX: Final = ".zst"
COMPRESSED: Final = (".zst", ".gz")


def _compressed(log: Path, folder: Path) -> Path:
    import zstandard

    target = folder / (log.name + ZSTD_SUFFIX)
    with open(log, "rb") as source, open(target, "wb") as sink:
        zstandard.ZstdCompressor(level=3).copy_stream(source, sink)
    return target


def _decompressed(packed: Path, log: Path) -> None:
    import zstandard

    partial = log.with_name(f".{log.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(packed, "rb") as source, open(partial, "wb") as sink:
            zstandard.ZstdDecompressor().copy_stream(source, sink)
        os.replace(partial, log)
    finally:
        partial.unlink(missing_ok=True)
        packed.unlink(missing_ok=True)


def commit_shards(
    shards: Sequence[StagedShard],
    layout: Layout,
    config: IngestConfig | None = None,
    catalog_wait: WriterWait = WriterWait(),
) -> IngestResult:
    """Commit the shards staged by a job's workers as one lake version (see the module's doc); each log is fetched
    into ``layout``'s data root where it is recorded. Shards whose rows repeat decisions of the lake (or of
    another shard), or whose staged files are gone, are ingested from their logs the ordinary way, after it.

    Raises:
        CatalogError: the catalog cannot be opened, the lake is not at a location, a staged log is gone, or the
            location cannot be read or written.
    """
    with Lake.open(layout, write=True, wait=catalog_wait) as lake:
        return _commit(shards, layout, config or IngestConfig(), lake)


def _commit(shards: Sequence[StagedShard], layout: Layout, config: IngestConfig, lake: Lake) -> IngestResult:
    location = lake.writer.location
    if location is None:
        raise CatalogError(
            f"the lake of {layout.home} is not at a location: staged shards are committed to a shared lake only",
            hint="open the data root with the --lake its workers staged to",
        )
    done: dict[str, FileIngest] = {}
    fallback: list[StagedShard] = []
    ready: list[StagedShard] = []
    folder = lake.writer.stage(f"shards-{uuid.uuid4().hex[:12]}")
    try:
        for shard in shards:
            _fetch_log(location, shard, layout)
            if shard.empty:
                done[shard.recorded] = FileIngest(
                    path=shard.recorded,
                    sha256=shard.sha256,
                    status="empty",
                    batch_id=None,
                    report=shard.report,
                    note="file holds no record: nothing ingested",
                )
            elif (earlier := _already(lake.view, shard)) is not None:
                done[shard.recorded] = earlier
            elif _fetch(location, shard, folder):
                ready.append(shard)
            else:  # a vacuum deleted the uncommitted upload (older than an hour): from the log
                fallback.append(shard)
        repeating = _repeating(lake.view, folder, ready)
        fallback += [s for s in ready if s.recorded in repeating]
        ready = [s for s in ready if s.recorded not in repeating]
        for shard in fallback:
            _drop(folder, shard)
        if ready:
            records = [(_batch_record(s, config), _file_record(s)) for s in ready]
            uploaded = [f"lake/{name}" for s in ready for name in s.lake_files]
            lake.writer.publish_batches(folder, records, uploaded=uploaded)
            for shard in ready:
                done[shard.recorded] = FileIngest(
                    path=shard.recorded,
                    sha256=shard.sha256,
                    status="ingested",
                    batch_id=shard.batch_id,
                    report=shard.report,
                    duplicates=shard.duplicates,
                )
    except BatchCommittedElsewhere:  # another data root committed one of these batches at the same moment
        lake.writer.index()
        return _commit(shards, layout, config, lake)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for shard in fallback:
        done[shard.recorded] = ingest_file(Input(layout.home / shard.recorded, shard.recorded), lake, config)
    leftovers = [name for s in shards for name in (s.log, s.rejects) if name]
    leftovers += [name for s in shards if s not in ready for name in s.lake_files]
    remote.discard(location, leftovers)
    return IngestResult(files=[done[s.recorded] for s in shards])


def _already(catalog: Catalog, shard: StagedShard) -> FileIngest | None:
    earlier = catalog.batch_for_file(shard.sha256)
    if earlier is None or catalog.batch_vacuumed(earlier[0]):
        return None
    return FileIngest(
        path=shard.recorded,
        sha256=shard.sha256,
        status="already_ingested",
        batch_id=earlier[0],
        report=FileReport(path=shard.recorded),
        note=already_note(catalog, *earlier),
    )


def _fetch(location: LakeLocation, shard: StagedShard, folder: Path) -> bool:
    """Copy the shard's staged files into the staging ``folder`` (a small data root); whether all were there."""
    for name in shard.lake_files:
        if not remote.get(location, name, folder / "lake" / name):
            return False
    if shard.rejects is not None:
        target = Layout(folder).quarantine_file(shard.batch_id)
        if not remote.get(location, shard.rejects, target):
            return False
    return True


def _drop(folder: Path, shard: StagedShard) -> None:
    for name in shard.lake_files:
        (folder / "lake" / name).unlink(missing_ok=True)
    Layout(folder).quarantine_file(shard.batch_id).unlink(missing_ok=True)


def _repeating(catalog: Catalog, folder: Path, shards: list[StagedShard]) -> set[str]:
    """The logs (as recorded) of ``shards`` holding a decision the lake holds, or an earlier shard holds."""
    files = [folder / "lake" / name for s in shards for name in s.lake_files]
    if not files:
        return set()
    catalog.require_readable()
    with DuplicateSet(catalog.con, files, existing="decisions") as found:
        return {d.file for d in found}


def _batch_record(shard: StagedShard, config: IngestConfig) -> BatchRecord:
    from toolkit import __version__

    return BatchRecord(
        batch_id=shard.batch_id,
        created_at=naive_utc_now(),
        file_sha256=shard.sha256,
        rows_valid=shard.report.valid,
        rows_rejected=shard.report.invalid,
        rows_duplicate=shard.duplicates,
        sources=shard.sources,
        generations=shard.generations,
        source_override=config.read.source,
        dialect_override=config.read.dialect,
        distill_version=__version__,
    )


def _file_record(shard: StagedShard) -> FileRecord:
    return FileRecord(
        file_sha256=shard.sha256,
        path=shard.recorded,
        size_bytes=shard.size_bytes,
        batch_id=shard.batch_id,
        lines=shard.report.lines,
        blank_lines=shard.report.blank,
        rows_valid=shard.report.valid,
        rows_rejected=shard.report.invalid,
        dialects=dict(shard.report.dialects),
        ingested_at=naive_utc_now(),
    )


@contextlib.contextmanager
def shard_output() -> Iterator[Path]:
    """A folder of the worker's own disk for a shard's logs, removed once the context ends (they are staged)."""
    scratch = Path(tempfile.mkdtemp(prefix="distill-logs-"))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
