"""Where a default build's CPU goes, per thread: the main thread (matching, encoding), DuckDB's scan threads, the
Parquet writer thread.

Run: ``.venv/bin/python bench/profile_build.py [DATA_ROOT]`` (default: bench_build's cached 5M-decision lake,
``bench/out/build-lake``; make it with ``bench/bench_build.py`` first). The build is the one bench_build times
(``BuildConfig(name="bench")``, its old builds removed first); a sampler thread reads every thread's CPU time from
``/proc/self/task/*/stat`` every 50 ms. Prints wall and CPU seconds, CPU per thread (Python threads by name,
DuckDB's as "native") and the build's fingerprint (unchanged by a speed-up: same bytes). Linux only.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.layout import Layout

DEFAULT = Path(__file__).resolve().parent / "out" / "build-lake"


def _cpu_by_thread() -> dict[str, float]:
    """CPU seconds of every thread of this process, by thread id."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended
            continue
        out[tid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def main() -> None:
    layout = Layout.at(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
    shutil.rmtree(layout.builds, ignore_errors=True)
    seen: dict[str, float] = {}
    names: dict[str, str] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            names.update({str(t.native_id): t.name for t in threading.enumerate()})
            seen.update(_cpu_by_thread())
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, name="sampler", daemon=True)
    sampler.start()
    wall, cpu = time.perf_counter(), time.process_time()
    info = build_dataset(layout, BuildConfig(name="bench"))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    done.set()
    sampler.join()
    by: dict[str, float] = {}
    for tid, seconds in seen.items():
        name = "main" if tid == str(os.getpid()) else names.get(tid, "native")
        by[name] = by.get(name, 0.0) + seconds
    rows = sum(split.rows for split in info.manifest.splits.values())
    print(f"build of {rows:,} rows: {wall:.1f} s wall, {cpu:.1f} CPU-s; fingerprint {info.manifest.fingerprint}")
    for name, seconds in sorted(by.items(), key=lambda item: -item[1]):
        print(f"  {name:<20} {seconds:6.1f} CPU-s")


if __name__ == "__main__":
    main()
