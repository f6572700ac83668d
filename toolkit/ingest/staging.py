"""Write one batch into its staging folder: lake partitions and quarantine.

Nothing here is visible to queries: ``toolkit.catalog.store`` makes a staged
batch visible by moving it into place and committing it as a lake version.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit.catalog.parquet import PARQUET_OPTIONS, lake_parquet_options
from toolkit.catalog.views import QUARANTINE_SCHEMA
from toolkit.ingest.memory import memory_pool
from toolkit.ingest.parts import Part, PartitionKey, Reject, partition_runs
from toolkit.layout import Layout
from toolkit.schema import columns as col
from toolkit.schema.arrow import lake_schema

# Rows buffered across partitions before a flush (one row group per partition).
# The Parquet encoder pays per row group and column, so small groups cost CPU
# (a 16k-row group ~10% more per row than a 131k one); each buffered row holds
# ~0.8 KB, twice over while a flush is written. 64k: within ~1% of 131k's speed
# at 1M rows, ~100 MB less peak memory.
ROW_GROUP_ROWS = 65_536
_WRITER_THREADS = 2
# Rejects held before they are written to the quarantine as one row group (in line order within it): a
# reject holds its line's bytes and its problems (~1-3 KB), so memory stays flat however many lines are bad.
QUARANTINE_GROUP_REJECTS = 4096
QUARANTINE_GROUP_BYTES = 32 << 20  # of raw lines (a line may be up to ReadOptions.max_line_bytes long)


@dataclass(frozen=True)
class Lineage:
    """Where a batch's rows come from."""

    batch_id: str
    file: str
    sha256: str


class _PartitionWriter:
    """Writes one (source, generation) partition's Parquet file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.writer = pq.ParquetWriter(path, lake_schema(), memory_pool=memory_pool(), **lake_parquet_options())
        self.rows = 0
        self.closed = False

    def write(self, tables: list[pa.Table]) -> None:
        table = pa.concat_tables(tables)
        self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.rows += table.num_rows

    def close(self) -> None:
        if not self.closed:
            self.writer.close()
            self.closed = True


class _QuarantineWriter:
    """Writes a batch's rejects to its quarantine file as they come, a row group at a time (opened at the
    first reject: a batch without rejects has no quarantine file)."""

    def __init__(self, path: Path, lineage: Lineage) -> None:
        self.path = path
        self.lineage = lineage
        self.pending: list[Reject] = []
        self.pending_bytes = 0
        self.count = 0
        self._writer: pq.ParquetWriter | None = None

    def add(self, rejects: Iterable[Reject]) -> None:
        for reject in rejects:
            self.pending.append(reject)
            self.pending_bytes += len(reject.raw)
            self.count += 1
            if len(self.pending) >= QUARANTINE_GROUP_REJECTS or self.pending_bytes >= QUARANTINE_GROUP_BYTES:
                self.flush()

    def flush(self) -> None:
        """Write the rejects held as one row group, in line order."""
        if not self.pending:
            return
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.path, QUARANTINE_SCHEMA, **PARQUET_OPTIONS)
        table = _rejects_table(sorted(self.pending, key=lambda r: r.line), self.lineage)
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.pending, self.pending_bytes = [], 0

    def close(self) -> None:
        self.flush()
        if self._writer is not None:
            self._writer.close()


def _rejects_table(rejects: list[Reject], lineage: Lineage) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                col.BATCH_ID: lineage.batch_id,
                col.SOURCE_FILE: r.file,
                col.SOURCE_LINE: r.line,
                col.FILE_SHA256: lineage.sha256,
                "raw": r.raw,
                "reason": "; ".join(p.render() for p in r.problems),
                "problems": [{"field": p.field, "code": p.code, "message": p.message} for p in r.problems],
            }
            for r in rejects
        ],
        schema=QUARANTINE_SCHEMA,
    )


class StagedBatch:
    """Collects a batch's accepted rows and rejects under ``staging/<batch>/``.

    Rejects are written to the quarantine file as they come, a row group of a
    few thousand at a time, each in line order (duplicates, found once the
    rows are written, come last): readers order them by line.

    Rows are buffered for the whole batch and flushed, one row group per
    partition, once ``ROW_GROUP_ROWS`` are waiting: the buffer holds zero-copy
    slices of the parts (runs of one partition), and flushing them all together
    bounds how much of the input stays alive. Parquet encoding runs on writer
    threads (it releases the GIL), one flush in flight at a time, so
    validation goes on while row groups are written; the partitions of a flush
    are written in parallel, so the last flush, which nothing overlaps, is short.
    """

    def __init__(self, layout: Layout, lineage: Lineage) -> None:
        self.layout = layout
        self.lineage = lineage
        self.root = layout.staging_for(lineage.batch_id)
        self.partitions: dict[PartitionKey, _PartitionWriter] = {}
        self.buffer: dict[PartitionKey, list[pa.Table]] = {}
        self.buffered = 0
        self.quarantine = _QuarantineWriter(Layout(self.root).quarantine_file(lineage.batch_id), lineage)
        self.rows = 0
        self._writer = ThreadPoolExecutor(max_workers=_WRITER_THREADS, thread_name_prefix="distill-parquet")
        self._pending: list[Future[None]] = []

    def write(self, part: Part) -> None:
        """Stage a validated part: rows to their partitions, rejects to the quarantine."""
        self.quarantine.add(part.rejects)
        if part.table.num_rows == 0:
            return
        table = self._with_lineage(part)
        for key, rows in _partition_runs(table):
            self.buffer.setdefault(key, []).append(rows)
        self.buffered += table.num_rows
        self.rows += table.num_rows
        if self.buffered >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        self._wait()
        for key, tables in self.buffer.items():
            if key not in self.partitions:
                path = Layout(self.root).lake_file(key[0], key[1], self.lineage.batch_id)
                self.partitions[key] = _PartitionWriter(path)
            # One job per partition: a file is never written by two threads at once.
            self._pending.append(self._writer.submit(self.partitions[key].write, tables))
        self.buffer, self.buffered = {}, 0

    def _wait(self) -> None:
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()  # re-raises a failed write here

    def _with_lineage(self, part: Part) -> pa.Table:
        n = part.table.num_rows
        # pa.repeat builds the constant columns in C: no per-row Python objects.
        lineage = {
            col.BATCH_ID: pa.repeat(pa.scalar(self.lineage.batch_id, pa.string()), n),
            col.SOURCE_FILE: pa.repeat(pa.scalar(self.lineage.file, pa.string()), n),
            col.SOURCE_LINE: pa.array(part.lines, pa.int64()),
            col.FILE_SHA256: pa.repeat(pa.scalar(self.lineage.sha256, pa.string()), n),
        }
        table = part.table
        for name, values in lineage.items():
            table = table.append_column(name, values)
        return table.cast(lake_schema())

    def finish_rows(self) -> None:
        """Write out every buffered row and close the lake files (before reading them back)."""
        self._close_writers()

    @property
    def lake_files(self) -> list[Path]:
        """The staged lake files, one per partition."""
        return [writer.path for writer in self.partitions.values()]

    @property
    def rejected(self) -> int:
        """Rejects staged so far."""
        return self.quarantine.count

    def drop_lines(self, lines: np.ndarray) -> int:
        """Remove staged rows by line number (duplicates found after writing).

        Rewrites only the partitions that hold such lines, a row group at a
        time; returns rows removed.
        """
        self._close_writers()
        removed = 0
        wanted = pa.array(lines, pa.int64())
        for key, writer in list(self.partitions.items()):
            dropped, left = _drop_rows(writer.path, wanted)
            removed += dropped
            if not left:
                writer.path.unlink()
                del self.partitions[key]
        self.rows -= removed
        return removed

    def close(self) -> None:
        """Finish every staged file (rows and quarantine)."""
        self._close_writers()
        self.quarantine.close()

    def _close_writers(self) -> None:
        self._flush()
        self._wait()
        self._writer.shutdown()
        for writer in self.partitions.values():
            writer.close()

    @property
    def sources(self) -> list[str]:
        return sorted({source for source, _ in self.partitions})

    @property
    def generations(self) -> list[int]:
        return sorted({gen for _, gen in self.partitions if gen is not None})


def _drop_rows(path: Path, lines: pa.Array) -> tuple[int, int]:
    """Remove the rows at ``lines`` from the lake file at ``path`` (rewritten a row group at a time, only
    if it holds one); returns the rows removed and the rows left."""
    with pq.ParquetFile(path) as source:
        total = source.metadata.num_rows
        groups = range(source.num_row_groups)
        if not any(_holds(source.read_row_group(i, columns=[col.SOURCE_LINE]), lines) for i in groups):
            return 0, total
        left = 0
        rewritten = path.with_name(path.name + ".rewrite")
        with pq.ParquetWriter(
            rewritten, source.schema_arrow, memory_pool=memory_pool(), **lake_parquet_options()
        ) as out:
            for i in groups:
                group = source.read_row_group(i)
                kept = group.filter(pc.invert(pc.is_in(group[col.SOURCE_LINE], value_set=lines)))
                if kept.num_rows:
                    out.write_table(kept, row_group_size=kept.num_rows)
                left += kept.num_rows
    rewritten.replace(path)
    return total - left, left


def _holds(table: pa.Table, lines: pa.Array) -> bool:
    return bool(pc.any(pc.is_in(table[col.SOURCE_LINE], value_set=lines)).as_py())


def _partition_runs(table: pa.Table) -> Iterator[tuple[PartitionKey, pa.Table]]:
    """Yield ((source, generation), zero-copy slice) for each run of rows of one
    partition (validation hands over parts whose runs are long)."""
    for key, start, stop in partition_runs(table):
        yield key, table.slice(start, stop - start)
