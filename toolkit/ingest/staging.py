"""Write one batch into its staging folder: lake partitions and quarantine.

Nothing here is visible to queries: ``toolkit.catalog.store`` makes a staged
batch visible by moving it into place and committing it as a lake version.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

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


class StagedBatch:
    """Collects a batch's accepted rows and rejects under ``staging/<batch>/``.

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
        self.rejects: list[Reject] = []
        self.rows = 0
        self._writer = ThreadPoolExecutor(max_workers=_WRITER_THREADS, thread_name_prefix="distill-parquet")
        self._pending: list[Future[None]] = []

    def write(self, part: Part) -> None:
        """Stage a validated part: rows to their partitions, rejects to the quarantine list."""
        self.rejects.extend(part.rejects)
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

    def drop_lines(self, lines: set[int]) -> int:
        """Remove staged rows by line number (duplicates found after writing).

        Rewrites only the partitions that hold such lines; returns rows removed.
        """
        self._close_writers()
        removed = 0
        wanted = pa.array(sorted(lines), pa.int64())
        for writer in self.partitions.values():
            table = pq.read_table(writer.path)
            keep = pc.invert(pc.is_in(table[col.SOURCE_LINE], value_set=wanted))
            kept = table.filter(keep)
            removed += table.num_rows - kept.num_rows
            if kept.num_rows != table.num_rows:
                pq.write_table(kept, writer.path, row_group_size=ROW_GROUP_ROWS, **lake_parquet_options())
        for key, writer in list(self.partitions.items()):
            if pq.read_metadata(writer.path).num_rows == 0:
                writer.path.unlink()
                del self.partitions[key]
        self.rows -= removed
        return removed

    def close(self) -> None:
        """Finish every staged file (rows and quarantine)."""
        self._close_writers()
        if self.rejects:
            path = Layout(self.root).quarantine_file(self.lineage.batch_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(self._rejects_table(), path, **PARQUET_OPTIONS)

    def _close_writers(self) -> None:
        self._flush()
        self._wait()
        self._writer.shutdown()
        for writer in self.partitions.values():
            writer.close()

    def _rejects_table(self) -> pa.Table:
        rejects = sorted(self.rejects, key=lambda r: r.line)
        return pa.Table.from_pylist(
            [
                {
                    col.BATCH_ID: self.lineage.batch_id,
                    col.SOURCE_FILE: r.file,
                    col.SOURCE_LINE: r.line,
                    col.FILE_SHA256: self.lineage.sha256,
                    "raw": r.raw,
                    "reason": "; ".join(p.render() for p in r.problems),
                    "problems": [{"field": p.field, "code": p.code, "message": p.message} for p in r.problems],
                }
                for r in rejects
            ],
            schema=QUARANTINE_SCHEMA,
        )

    @property
    def sources(self) -> list[str]:
        return sorted({source for source, _ in self.partitions})

    @property
    def generations(self) -> list[int]:
        return sorted({gen for _, gen in self.partitions if gen is not None})


def _partition_runs(table: pa.Table) -> Iterator[tuple[PartitionKey, pa.Table]]:
    """Yield ((source, generation), zero-copy slice) for each run of rows of one
    partition (validation hands over parts whose runs are long)."""
    for key, start, stop in partition_runs(table):
        yield key, table.slice(start, stop - start)
