"""Compaction and vacuum: Distill's own against delta-rs's, on copies of one lake, in one run.

Usage::

    .venv/bin/python bench/compare_lake_maintenance.py               # 40 batches of ~200 simulated games
    .venv/bin/python bench/compare_lake_maintenance.py --batches 10

Makes a lake of many small batches (one simulated log each), copies it, and
on each copy runs one maintenance two ways, each timed:

- compaction: ``Lake.compact()`` against ``DeltaTable.optimize.compact()``
  (the same target size); then whether each output file's facts are in the
  log (what the index is built from: a file delta-rs wrote has none, so its
  batches must be read from its rows), whether each output row group holds
  one batch (what lets a retirement cut one batch out of a merged file), and
  whether the rows keep their order;
- vacuum: half the batches retired, then ``Lake.vacuum(0)`` against
  ``DeltaTable.vacuum(0, full=True)``: time, versions committed, and whether
  the horizon is in the log before the first file goes.

It prints the figures and writes them to ``bench/out/compare_lake_maintenance.txt``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Tee  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
PLAYERS = ("heuristic", "heuristic", "heuristic", "random")


def make_lake(home: Path, batches: int, games: int) -> None:
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    layout = Layout.at(home)
    for i in range(batches):
        logs = home.parent / f"logs-{i}"
        simulate(SimulateConfig(games=games, players=PLAYERS, seed=500 + i, out=logs))
        for path in sorted(logs.rglob("*.jsonl*")):
            ingest_paths([path], layout)
        shutil.rmtree(logs)


def copy(home: Path, name: str) -> Path:
    target = home.parent / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(home, target, symlinks=True)
    return target


def row_order(home: Path) -> list[tuple[str, int]]:
    import pyarrow.parquet as pq

    from toolkit.catalog import Lake
    from toolkit.layout import Layout

    with Lake.open(Layout.at(home)).at() as view:
        files = sorted(view.lake_files(), key=lambda f: (f.source or "", f.generation or -1, f.path.name))
    rows: list[tuple[str, int]] = []
    for file in files:
        table = pq.read_table(file.path, columns=["batch_id", "source_line"])
        rows += list(zip(table["batch_id"].to_pylist(), table["source_line"].to_pylist(), strict=True))
    return rows


def distill_rows(home: Path) -> list[tuple]:
    from toolkit.catalog import Lake
    from toolkit.layout import Layout

    key = "batch_id, source_line, source, generation, game_id, seat, decision_index"
    with Lake.open(Layout.at(home)).at(sandbox=True) as view:
        return view.con.execute(f"SELECT {key} FROM decisions ORDER BY ALL").fetchall()


def one_batch_row_groups(home: Path) -> bool:
    import pyarrow.parquet as pq

    from toolkit.catalog import Lake
    from toolkit.layout import Layout

    with Lake.open(Layout.at(home)).at() as view:
        for file in view.lake_files():
            meta = pq.ParquetFile(file.path).metadata
            index = meta.schema.names.index("batch_id")
            for g in range(meta.num_row_groups):
                stats = meta.row_group(g).column(index).statistics
                if stats is None or stats.min != stats.max:
                    return False
    return True


def facts_in_log(home: Path) -> tuple[int, int]:
    """(files added by the last commit, how many of them the commit's Distill record describes)."""
    from toolkit.catalog import log
    from toolkit.layout import Layout

    lake = Layout.at(home).lake
    commit = log.read_commit(lake, log.latest_version(lake) or 0)
    described = sum(1 for f in commit.adds if commit.info is not None and f.path in commit.info.files)
    return len(commit.adds), described


def compare_compaction(home: Path, tee: Tee) -> None:
    from deltalake import DeltaTable

    from toolkit.catalog import Lake
    from toolkit.layout import Layout

    ours, theirs = copy(home, "compact-distill"), copy(home, "compact-delta-rs")
    before = row_order(home)
    started = time.perf_counter()
    with Lake.open(Layout.at(ours), write=True) as lake:
        lake.compact(target_mb=128)
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    metrics = DeltaTable(str(Layout.at(theirs).lake)).optimize.compact(target_size=128 * 1024 * 1024)
    theirs_s = time.perf_counter() - started
    started = time.perf_counter()
    Layout.at(theirs).catalog.unlink()  # the index rebuilt from the log: the new files' facts from their rows
    with Lake.open(Layout.at(theirs)) as lake:
        lake.version()
    reindex_s = time.perf_counter() - started
    tee("compaction (the same target, 128 MB):")
    for name, root, seconds in (("Distill", ours, ours_s), ("delta-rs", theirs, theirs_s)):
        added, described = facts_in_log(root)
        tee(
            f"  {name:9} {seconds:6.2f}s; {added} files written, {described} described in the log; one batch per "
            f"row group: {one_batch_row_groups(root)}; rows in their order: {row_order(root) == before}"
        )
    tee(f"  delta-rs's metrics: {json.dumps({k: metrics[k] for k in ('numFilesAdded', 'numFilesRemoved')})}")
    tee(f"  the index rebuilt after delta-rs's compaction (its files' batches read from their rows): {reindex_s:.2f}s")
    same = distill_rows(theirs) == distill_rows(home)
    tee(f"  distill sql reads the same rows (partition values from the log) after delta-rs's compaction: {same}")


def compare_vacuum(home: Path, tee: Tee) -> None:
    from deltalake import DeltaTable

    from toolkit.catalog import Lake, log
    from toolkit.layout import Layout

    with Lake.open(Layout.at(home), write=True) as lake:
        batches = [b.batch_id for b in lake.batches()]
        lake.retire(batches[::2], "bench")
    ours, theirs = copy(home, "vacuum-distill"), copy(home, "vacuum-delta-rs")
    results = {}
    for name, root in (("Distill", ours), ("delta-rs", theirs)):
        lake_folder = Layout.at(root).lake
        first = log.latest_version(lake_folder) or 0
        started = time.perf_counter()
        if name == "Distill":
            with Lake.open(Layout.at(root), write=True) as lake:
                deleted = lake.vacuum(0).files_deleted
        else:
            table = DeltaTable(str(lake_folder))
            deleted = len(table.vacuum(0, dry_run=False, enforce_retention_duration=False, full=True))
        seconds = time.perf_counter() - started
        last = log.latest_version(lake_folder) or 0
        operations = [
            c.info.operation if c.info else c.operation for c in log.read_commits(lake_folder, first + 1, last)
        ]
        horizon = [c.info.detail.get("horizon") for c in log.read_commits(lake_folder, first + 1, last) if c.info]
        results[name] = (seconds, deleted, operations, horizon)
    tee("vacuum (half the batches retired, retention 0):")
    for name, (seconds, deleted, operations, horizon) in results.items():
        tee(
            f"  {name:9} {seconds:6.2f}s; {deleted} files deleted; versions committed: {operations}; "
            f"horizon in the log: {horizon or 'none'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--games", type=int, default=200, help="Simulated games per batch.")
    args = parser.parse_args()
    root = OUT / "compare-lake-maintenance"
    home = root / f"lake-{args.batches}x{args.games}"
    tee = Tee()
    tee(f"# compare_lake_maintenance  {dt.datetime.now().isoformat(timespec='seconds')}  {platform.node()}")
    if not (home / ".made").exists():
        shutil.rmtree(home, ignore_errors=True)
        make_lake(home, args.batches, args.games)
        (home / ".made").touch()
    from toolkit.catalog import Lake
    from toolkit.layout import Layout

    with Lake.open(Layout.at(home)).at() as view:
        files, batches = view.lake_files(), view.batches()
    tee(f"lake: {sum(f.rows for f in files):,} decisions in {len(files)} files ({len(batches)} batches)")
    compare_compaction(home, tee)
    compare_vacuum(copy(home, "vacuum-base"), tee)
    tee.write(OUT / "compare_lake_maintenance.txt")


if __name__ == "__main__":
    main()
