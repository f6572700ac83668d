"""Where ``ingest_paths`` spends its time on one file: CPU per thread, CPU per step, wall per phase.

Usage::

    PYTHONPATH=$PWD .venv/bin/python bench/profile_ingest.py bench/out/data/records-1000000-s20240601-d0.jsonl

Ingests the file into a fresh data root under ``bench/out/homes`` while a sampler thread reads every
thread's CPU time from ``/proc/self/task/*/stat`` (Linux), and wraps the stage's steps to add up the CPU
time of the thread each ran on (``time.thread_time``) and the wall time of the main thread's phases.
Steps nest (``parse_sorted`` holds ``_parse_block``, ``find_bad_rows`` and ``group_by_partition``), so their
sum is more than the total. The wrapping costs a few microseconds per call: negligible (a few hundred
calls per GB).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _task_cpu() -> dict[int, tuple[str, float]]:
    """Per native thread id of this process: (its name, CPU seconds so far)."""
    found = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
        except OSError:  # ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / _TICK)
    return found


class _Sampler(threading.Thread):
    """Keeps the last CPU time seen of every thread (threads end during the run) and their Python names."""

    def __init__(self) -> None:
        super().__init__(name="profile-sampler", daemon=True)
        self.seen: dict[int, tuple[str, float]] = {}
        self.names: dict[int, str] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.seen.update(_task_cpu())
            for thread in threading.enumerate():
                if thread.native_id is not None:
                    self.names[thread.native_id] = thread.name
            time.sleep(0.1)


def _wrap(owner: Any, name: str, totals: dict[str, float], clock: Callable[[], float], label: str) -> None:
    original = getattr(owner, name)
    lock = threading.Lock()

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                totals[label] += clock() - start

    setattr(owner, name, wrapped)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="the decision-log file to ingest")
    args = parser.parse_args(argv)

    from toolkit.catalog.writer import LakeWriter
    from toolkit.ingest import fastpath, ingest, parse, rows, sorting, staging
    from toolkit.layout import Layout

    steps: dict[str, float] = defaultdict(float)  # thread CPU seconds
    phases: dict[str, float] = defaultdict(float)  # wall seconds, main thread
    for owner, name in (
        (parse, "parse_sorted"),
        (fastpath, "_parse_block"),
        (fastpath, "find_bad_rows"),
        (fastpath, "group_by_partition"),
        (sorting.LineSorter, "sort"),
        (rows.RowCheck, "check"),
        (staging.StagedBatch, "_with_lineage"),
        (staging._PartitionWriter, "write"),
        (ingest, "file_sha256"),
        (ingest.PackedPart, "pack"),
        (ingest.PackedPart, "unpack"),
    ):
        _wrap(owner, name, steps, time.thread_time, f"{owner.__name__.rsplit('.', 1)[-1]}.{name}")
    for owner, name in (
        (LakeWriter, "open"),
        (ingest, "_hash_while_validating"),
        (staging.StagedBatch, "write"),
        (staging.StagedBatch, "finish_rows"),
        (ingest, "_quarantine_duplicates"),
        (staging.StagedBatch, "close"),
        (LakeWriter, "publish_batch"),
    ):
        _wrap(owner, name, phases, time.perf_counter, name)

    home = OUT / "homes" / f"profile-{os.getpid()}"
    shutil.rmtree(home, ignore_errors=True)
    sampler = _Sampler()
    sampler.start()
    main_thread = threading.get_native_id()
    wall, cpu = time.perf_counter(), time.process_time()
    result = ingest.ingest_paths([args.path], Layout.at(home))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sampler.stop.set()
    sampler.join()
    shutil.rmtree(home, ignore_errors=True)

    rows = result.rows_valid + result.rows_rejected
    print(
        f"{args.path.name}: {rows:,} rows  wall {wall:.2f}s  CPU {cpu:.2f}s ({cpu / wall:.2f} cores)  "
        f"{rows / wall:,.0f} rows/s  {cpu / rows * 1e6:.1f} CPU-us/row  load {os.getloadavg()[0]:.1f}"
    )
    threads: dict[str, float] = defaultdict(float)
    for tid, (name, seconds) in sampler.seen.items():
        label = "main" if tid == main_thread else sampler.names.get(tid, name)
        threads[label.rsplit("_", 1)[0] if label.startswith("distill-") else label] += seconds
    print("CPU per thread (threads of one pool added up; unnamed ones are Arrow's, DuckDB's or delta-rs's):")
    for label, seconds in sorted(threads.items(), key=lambda item: -item[1]):
        print(f"  {label:32s} {seconds:7.2f} s  {seconds / rows * 1e6:5.2f} us/row")
    print("CPU per step (on whichever thread ran it):")
    for label, seconds in sorted(steps.items(), key=lambda item: -item[1]):
        print(f"  {label:32s} {seconds:7.2f} s  {seconds / rows * 1e6:5.2f} us/row")
    print("wall per phase (main thread):")
    for label, seconds in phases.items():
        print(f"  {label:32s} {seconds:7.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
