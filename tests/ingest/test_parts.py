"""Parts between validation and the lake: packing, partition grouping, rows validated during the hash."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.ingest.test_ingest import good, query
from toolkit.ingest import ingest as ingest_module
from toolkit.ingest.config import IngestConfig, ReadOptions
from toolkit.ingest.ingest import ingest_paths
from toolkit.ingest.parts import PackedPart, Part, Reject, group_by_partition, partition_runs, read_schema
from toolkit.ingest.rowpath import Problem
from toolkit.layout import Layout


def _table(records: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(records, schema=read_schema())


def test_a_packed_part_unpacks_to_the_same_rows_lines_and_rejects() -> None:
    rows = [good(i) for i in range(50)]
    reject = Reject("f.jsonl", 7, b"{bad}\n", [Problem("", "invalid_json", "no")])
    part = Part(_table(rows), np.arange(1, 51, dtype=np.int64), [reject])
    packed = PackedPart.pack(part)
    back = packed.unpack()
    assert back.table.equals(part.table) and back.table.schema == read_schema()
    assert back.lines.tolist() == part.lines.tolist() and back.rejects == [reject]
    assert packed.rows == 50 and packed.data.size < part.table.nbytes


def test_finely_interleaved_partitions_become_one_run_each_in_line_order() -> None:
    records = [
        dict(good(i), source="ppo", model_version="gen-001", generation=1) if i % 3 == 0 else good(i)
        for i in range(300)
    ]
    lines = np.arange(10, 310, dtype=np.int64)
    table, grouped_lines = group_by_partition(_table(records), lines)
    runs = partition_runs(table)
    assert [key for key, _, _ in runs] == [("ppo", 1), ("forge", None)]
    assert sorted(grouped_lines.tolist()) == lines.tolist()
    for _, start, stop in runs:
        assert np.all(np.diff(grouped_lines[start:stop]) > 0)
    # Every row still sits next to its own line number.
    assert table["decision_index"].to_pylist() == (grouped_lines - 10).tolist()
    assert table["decision_index"].num_chunks == 1


def test_long_runs_and_line_order_are_kept_as_they_are() -> None:
    records = [good(i) for i in range(600)] + [dict(good(i), source="sim") for i in range(600, 1200)]
    table = _table(records)
    lines = np.arange(1, 1201, dtype=np.int64)
    same, same_lines = group_by_partition(table, lines)
    assert same is table and same_lines is lines
    shuffled = np.concatenate([lines[600:], lines[:600]])
    reordered, back = group_by_partition(
        table.take(pa.array(np.concatenate([np.arange(600, 1200), np.arange(600)]))), shuffled
    )
    assert back.tolist() == lines.tolist() and reordered.equals(table)


def test_dropping_rows_while_grouping_is_the_same_as_filtering_first() -> None:
    rng = np.random.default_rng(3)
    sources = ["forge", "sim"]
    for size, share in [(300, 0.02), (300, 0.5), (1200, 0.01), (2, 0.5), (600, 0.0)]:
        records = [dict(good(i), source=sources[(i // 7) % 2]) if i % 300 < 200 else good(i) for i in range(size)]
        table, lines = _table(records), np.arange(5, 5 + size, dtype=np.int64)
        keep = rng.random(size) >= share
        keep[:1] = False  # the first row dropped, at least
        expected, expected_lines = group_by_partition(table.filter(pa.array(keep)), lines[keep])
        grouped, grouped_lines = group_by_partition(table, lines, keep=keep)
        assert grouped.equals(expected) and grouped_lines.tolist() == expected_lines.tolist()
        assert [c.num_chunks for c in grouped.columns] == [c.num_chunks for c in expected.columns]


def test_rows_validated_while_the_file_is_hashed_land_in_order(write_log, layout: Layout, monkeypatch) -> None:
    """A slow hash: several parts are validated (and held packed) before the
    batch id is known; every row still lands once, in line order, with lineage."""
    rows = [good(i) for i in range(400)]
    rows[5] = dict(rows[5], turn="three")  # a reject among the early parts
    path = write_log("slow.jsonl", rows)
    released = threading.Event()
    held: list[int] = []
    real_hash, real_pack = ingest_module.file_sha256, PackedPart.pack

    def slow_hash(target):
        released.wait(timeout=30)
        return real_hash(target)

    def pack_and_count(part):
        held.append(part.table.num_rows)
        if len(held) == 3:
            released.set()
        return real_pack(part)

    monkeypatch.setattr(ingest_module, "file_sha256", slow_hash)
    monkeypatch.setattr(PackedPart, "pack", staticmethod(pack_and_count))
    result = ingest_paths([path], layout, IngestConfig(read=ReadOptions(chunk_bytes=16 << 10)))
    assert len(held) >= 3
    [file] = result.files
    assert (file.report.valid, file.report.invalid, file.sha256) == (399, 1, real_hash(path))
    [lake_file] = layout.lake.rglob("*.parquet")
    lines = pq.read_table(lake_file, columns=["source_line"])["source_line"].to_pylist()
    assert lines == [n for n in range(1, 401) if n != 6]
    assert query(layout, "SELECT source_line FROM rejects") == [(6,)]
