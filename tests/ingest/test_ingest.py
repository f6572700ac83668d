"""Ingest into the lake: lineage, quarantine, idempotence, batches, atomic publish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DIALECT_CASES, encode
from tests.factories import make_snapshot
from toolkit.catalog import Catalog, Lake
from toolkit.catalog.delta import DeltaLake
from toolkit.failpoints import ENV
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

pytestmark = pytest.mark.usefixtures("either_lake")  # on the data root's own lake, and on one shared on S3


def good(i: int, game: str = "g") -> dict:
    record = make_snapshot(game_id=f"{game}{i // 4}", seat=i % 4, decision_index=i)
    record.update(winner_seat=0, seat_won=i % 4 == 0)
    return record


def power_cut(*args: object, **kwargs: object) -> None:
    raise RuntimeError("power cut")


def query(layout: Layout, sql: str) -> list[tuple]:
    with Catalog.open(layout) as catalog:
        return catalog.con.execute(sql).fetchall()


def test_rows_land_in_the_lake_with_lineage(write_log, layout: Layout) -> None:
    path = write_log("a.jsonl", [good(i) for i in range(8)])
    result = ingest_paths([path], layout)
    [batch] = result.batches
    rows = query(layout, "SELECT batch_id, source_file, source_line, file_sha256 FROM decisions ORDER BY source_line")
    assert [r[2] for r in rows] == list(range(1, 9))
    assert {(r[0], r[1], r[3]) for r in rows} == {(batch, str(path), result.files[0].sha256)}
    # (at a shared location the name carries its writer's token: batch-<id>~<token>.parquet)
    assert list(layout.lake.glob(f"source=forge/generation=__HIVE_DEFAULT_PARTITION__/batch-{batch}*.parquet"))
    assert (layout.lake / "_delta_log").is_dir()


def test_the_catalog_records_each_batch_and_file_as_typed_records(write_log, layout: Layout) -> None:
    ppo = [dict(good(i), source="ppo", model_version="gen-002", generation=2) for i in range(4)]
    path = write_log("mix.jsonl", [good(i, "f") for i in range(4)] + ppo + [{"broken": True}])
    result = ingest_paths([path], layout)
    with Catalog.open(layout) as catalog:
        [batch], [file] = catalog.batches(), catalog.files()
    assert (batch.batch_id, batch.file_sha256, batch.status) == (result.batches[0], result.files[0].sha256, "ingested")
    assert (batch.rows_valid, batch.rows_rejected, batch.sources, sorted(batch.generations)) == (
        8,
        1,
        ["forge", "ppo"],
        [2],
    )
    assert (file.path, file.batch_id, file.lines, file.size_bytes) == (
        str(path),
        batch.batch_id,
        9,
        path.stat().st_size,
    )
    assert file.dialects == dict(result.files[0].report.dialects) and sum(file.dialects.values()) == 8


def test_partitions_split_by_source_and_generation(write_log, layout: Layout) -> None:
    ppo = [dict(good(i), source="ppo", model_version="gen-002", generation=2) for i in range(4)]
    ingest_paths([write_log("mix.jsonl", [good(i, "f") for i in range(4)] + ppo)], layout)
    assert {p.parent.name for p in layout.lake.rglob("*.parquet")} == {
        "generation=__HIVE_DEFAULT_PARTITION__",
        "generation=2",
    }
    assert query(layout, "SELECT source, generation, count(*) FROM decisions GROUP BY ALL ORDER BY 1") == [
        ("forge", None, 4),
        ("ppo", 2, 4),
    ]


def test_rejects_are_kept_byte_for_byte_and_queryable(write_log, layout: Layout) -> None:
    lines = [encode(good(0)), b'{"broken": ', encode(good(1)).replace(b'"turn":3', b'"turn":"3"'), b"\xff\xfe"]
    path = write_log("bad.jsonl", lines, newline=b"\r\n", final_newline=False)
    ingest_paths([path], layout)
    rejects = query(layout, "SELECT source_line, raw, reason FROM rejects ORDER BY source_line")
    assert [r[0] for r in rejects] == [2, 3, 4]
    assert [r[1] for r in rejects] == [lines[1] + b"\r\n", lines[2] + b"\r\n", lines[3]]
    assert "turn" in rejects[1][2]
    # Nothing lost: accepted rows + rejects account for every line.
    assert query(layout, "SELECT count(*) FROM decisions") == [(1,)]


def test_reingesting_the_same_content_is_a_noop_that_says_so(write_log, layout: Layout) -> None:
    path = write_log("a.jsonl", [good(i) for i in range(4)])
    first = ingest_paths([path], layout)
    again = ingest_paths([path], layout)
    assert again.files[0].status == "already_ingested" and first.batches[0] in again.files[0].note
    assert query(layout, "SELECT count(*) FROM batches") == [(1,)]


def test_a_log_appended_to_and_ingested_again_adds_its_new_lines_and_leaves_the_copies(
    write_log, layout: Layout
) -> None:
    path = write_log("a.jsonl", [good(i) for i in range(4)])
    [first] = ingest_paths([path], layout).batches
    write_log("a.jsonl", [good(i) for i in range(8)])
    [second] = ingest_paths([path], layout).files
    assert (second.status, second.duplicates, second.held, second.held_by) == ("ingested", 0, 4, [first])
    assert (second.report.valid, second.report.invalid) == (4, 0) and "4 of its decisions" in second.note
    assert query(layout, "SELECT count(*), count(DISTINCT batch_id) FROM decisions") == [(8, 2)]
    assert query(layout, "SELECT count(*) FROM rejects") == [(0,)]  # a copy is not bad data


def test_a_repeat_of_a_lake_decision_with_other_content_is_quarantined_as_a_duplicate(
    write_log, layout: Layout
) -> None:
    [first] = ingest_paths([write_log("a.jsonl", [good(i) for i in range(8)])], layout).batches
    copies = [good(i) for i in range(4)]  # game g0, as logged before
    clashes = [dict(good(i), reward=0.5) for i in range(4, 8)]  # game g1's keys, another game's content
    fresh = [good(i, "h") for i in range(4)]
    [second] = ingest_paths([write_log("b.jsonl", copies + clashes + fresh)], layout).files
    assert (second.held, second.held_by, second.duplicates, second.report.valid) == (4, [first], 4, 4)
    assert query(layout, "SELECT source_line, code FROM rejects ORDER BY 1") == [(i, "duplicate") for i in range(5, 9)]
    assert query(layout, f"SELECT count(*) FROM rejects WHERE reason LIKE '%(batch {first})'") == [(4,)]


def test_a_file_of_copies_of_lake_rows_only_ingests_nothing_and_names_the_batches_that_hold_them(
    write_log, layout: Layout
) -> None:
    """The same games logged again in another file (another run that reused a seed, another compression): the
    lake has them; nothing is quarantined, no empty batch is made, and the result says which batches hold them."""
    [first] = ingest_paths([write_log("a.jsonl", [good(i) for i in range(8)])], layout).batches
    again = list(reversed([good(i) for i in range(4)]))  # another file: the same decisions in another order
    [result] = ingest_paths([write_log("b.jsonl", again)], layout).files
    assert (result.status, result.batch_id, result.held, result.held_by) == ("already_ingested", None, 4, [first])
    assert "all in the lake already" in result.note and first in result.note
    assert query(layout, "SELECT count(*) FROM batches UNION ALL SELECT count(*) FROM rejects") == [(1,), (0,)]


def test_forced_source_is_applied_on_both_paths(write_log, layout: Layout) -> None:
    from toolkit.ingest.config import IngestConfig, ReadOptions

    path = write_log("a.jsonl", [good(0), encode(good(1)) + b" "])
    ingest_paths([path], layout, IngestConfig(read=ReadOptions(source="lab")))
    assert query(layout, "SELECT DISTINCT source FROM decisions") == [("lab",)]


@pytest.mark.parametrize("case", ["forge_4seat", "forge_synthetic_2seat", "sim", "ds", "ppo_legacy"])
def test_every_dialect_case_file_ingests(case: str, layout: Layout) -> None:
    result = ingest_paths([DIALECT_CASES / f"{case}.jsonl"], layout)
    report = result.files[0].report
    assert report.valid > 0 and report.invalid == 0, report.model_dump()
    dialect = {"forge_4seat": "forge", "forge_synthetic_2seat": "forge", "ppo_legacy": "ppo_legacy"}.get(case, case)
    assert query(layout, "SELECT DISTINCT dialect FROM decisions") == [(dialect,)]


def test_a_crash_before_the_commit_point_leaves_nothing_visible(write_log, layout: Layout, monkeypatch) -> None:
    path = write_log("a.jsonl", [good(i) for i in range(8)])

    monkeypatch.setattr(DeltaLake, "commit", power_cut)
    with pytest.raises(RuntimeError):
        ingest_paths([path], layout)
    monkeypatch.undo()
    assert query(layout, "SELECT count(*) FROM decisions") == [(0,)]
    assert not list(layout.lake.rglob("*.parquet")) and not any(layout.staging.iterdir())
    assert query(layout, "SELECT max(version) FROM versions") == [(0,)]
    assert ingest_paths([path], layout).files[0].status == "ingested"
    assert query(layout, "SELECT count(*) FROM decisions") == [(8,)]


def ingest_killed_at(point: str, path: Path, layout: Layout) -> None:
    """Ingest ``path`` in a subprocess that is killed (SIGKILL) at the named point of the write protocol."""
    code = (
        f"from toolkit.ingest.ingest import ingest_paths; from toolkit.layout import Layout; "
        f"ingest_paths([__import__('pathlib').Path({str(path)!r})], Layout.at({str(layout.home)!r}))"
    )
    env = {**os.environ, ENV: point}
    process = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], env=env)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.parametrize("point", ["ingest.moved", "ingest.before_commit"])
def test_a_kill_after_the_files_moved_but_before_the_commit_leaves_nothing(write_log, layout: Layout, point) -> None:
    path = write_log("a.jsonl", [good(i) for i in range(8)] + [{"broken": True}])
    ingest_killed_at(point, path, layout)
    assert list(layout.lake.rglob("*.parquet")) and any(layout.staging.iterdir())  # moved, not committed
    assert query(layout, "SELECT count(*) FROM decisions") == [(0,)]
    assert query(layout, "SELECT count(*) FROM rejects") == [(0,)]
    with Lake.open(layout, write=True):  # the next writer deletes what the dead one moved
        pass
    assert not list(layout.lake.rglob("*.parquet")) and not list(layout.quarantine.rglob("*.parquet"))
    assert ingest_paths([path], layout).files[0].status == "ingested"
    assert query(layout, "SELECT count(*) FROM decisions UNION ALL SELECT count(*) FROM rejects") == [(8,), (1,)]


def test_a_kill_after_the_commit_point_is_finished_on_next_open(write_log, layout: Layout) -> None:
    path = write_log("a.jsonl", [good(i) for i in range(8)])
    ingest_killed_at("ingest.after_commit", path, layout)  # the log has the version, the index not yet
    assert any(layout.staging.iterdir())
    assert query(layout, "SELECT count(*) FROM decisions") == [(8,)]  # a reader catches up with the log itself
    assert any(layout.staging.iterdir())  # and leaves the writer's recovery to a writer
    assert ingest_paths([path], layout).files[0].status == "already_ingested"
    assert not any(layout.staging.iterdir())  # the next writer cleared it away
    assert query(layout, "SELECT version, operation FROM versions ORDER BY 1") == [(0, "create"), (1, "ingest")]


def test_a_kill_mid_ingest_leaves_no_half_batch_and_a_rerun_completes(tmp_path: Path, layout: Layout) -> None:
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as out:
        for i in range(60_000):
            out.write(encode(good(i)) + b"\n")
    code = (
        f"from toolkit.ingest.ingest import ingest_paths; from toolkit.layout import Layout; "
        f"ingest_paths([__import__('pathlib').Path({str(path)!r})], Layout.at({str(layout.home)!r}))"
    )
    process = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 60
    while not list(layout.staging.glob("*/lake/**/*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.005)  # kill once the batch is being written
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert query(layout, "SELECT count(*) FROM decisions") == [(0,)]
    ingest_paths([path], layout)
    assert query(layout, "SELECT count(*), count(DISTINCT batch_id) FROM decisions") == [(60_000, 1)]
    assert not any(layout.staging.iterdir())


def test_an_empty_file_creates_no_batch(write_log, layout: Layout) -> None:
    result = ingest_paths([write_log("empty.jsonl", [])], layout)
    assert result.files[0].status == "empty" and not result.batches


@pytest.mark.parametrize("run_length", [1, 50])
def test_interleaved_partitions_keep_every_row_in_line_order(write_log, layout: Layout, run_length: int) -> None:
    rows = []
    for i in range(400):
        record = good(i)
        if (i // run_length) % 2:
            record.update(source="ppo", model_version="gen-001", generation=1)
        rows.append(record)
    ingest_paths([write_log("mixed.jsonl", rows)], layout)
    for source in ("forge", "ppo"):
        [path] = layout.lake.glob(f"source={source}/*/*.parquet")
        import pyarrow.parquet as pq

        lines = pq.read_table(path, columns=["source_line"])["source_line"].to_pylist()
        assert lines == sorted(lines) and len(lines) == 200


def test_rejects_stream_to_the_quarantine_in_row_groups_with_duplicates_last(write_log, layout, monkeypatch) -> None:
    import pyarrow.parquet as pq

    from toolkit.ingest import staging

    monkeypatch.setattr(staging, "QUARANTINE_GROUP_REJECTS", 3)
    monkeypatch.setattr(staging, "ROW_GROUP_ROWS", 4)  # several row groups per lake file: rewritten one by one
    lines = [encode(good(i)) if i % 3 else b'{"broken": ' for i in range(30)] + [encode(good(1)), encode(good(2))]
    result = ingest_paths([write_log("a.jsonl", lines)], layout)
    assert (result.rows_valid, result.rows_rejected, result.files[0].duplicates) == (20, 12, 2)
    [path] = layout.quarantine.rglob("*.parquet")
    groups = [pq.ParquetFile(path).read_row_group(i)["source_line"].to_pylist() for i in range(4)]
    assert groups == [[1, 4, 7], [10, 13, 16], [19, 22, 25], [28, 31, 32]]  # each group in line order
    assert query(layout, "SELECT source_line FROM rejects WHERE reason LIKE '%duplicate%' ORDER BY 1") == [(31,), (32,)]
    lake = query(layout, "SELECT source_line FROM decisions")
    assert [line for (line,) in lake] == [n + 1 for n in range(30) if n % 3]  # in line order, duplicates gone


def test_a_line_repeating_both_the_lake_and_its_own_file_points_at_the_lake(write_log, layout: Layout) -> None:
    first = ingest_paths([write_log("a.jsonl", [good(0), good(1)])], layout).batches[0]
    other = dict(good(1), reward=0.25)  # good(1)'s key with other content: a clash, not a copy
    result = ingest_paths([write_log("b.jsonl", [other, good(2), other, good(2)])], layout)
    assert (result.rows_valid, result.files[0].duplicates) == (1, 3)
    reasons = query(layout, "SELECT source_line, reason FROM rejects ORDER BY 1")
    assert [line for line, _ in reasons] == [1, 3, 4]
    assert f"(batch {first})" in reasons[0][1] and f"(batch {first})" in reasons[1][1]
    assert reasons[2][1].endswith("b.jsonl:2")  # a repeat of its own file's line 2, which the lake lacks
