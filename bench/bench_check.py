"""Benchmark ``distill check dataset`` on a dataset built from a >= 5M-decision lake.

Usage::

    .venv/bin/python bench/bench_check.py                   # the 5M-decision lake of bench_build
    .venv/bin/python bench/bench_check.py --decisions 500000

The lake is bench_build's (``make_lake``: simulated, ingested, cached under
``bench/out/build-lake``); nothing is generated here. The dataset
``bench-check`` is built once with the default config and reused. Then each
run checks it in a fresh process (``check_dataset`` with the shipped suite,
report written), and prints the wall time, the peak RSS, and how the time
splits between Great Expectations (pandas chunks), DuckDB (set invariants
and metrics) and Arrow (feature vectors). Targets: < 60 s and < 2 GB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Tee, best_of, report_child, run_child, timed  # noqa: E402
from bench_build import OUT, lake_home, make_lake  # noqa: E402

NAME = "bench-check"
TARGET_S = 60.0
TARGET_RSS_MB = 2048.0


def ensure_dataset(home: Path) -> int:
    """Build ``bench-check`` unless it is there; returns its rows."""
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig
    from toolkit.datasets.dataset import list_names, open_dataset
    from toolkit.layout import Layout

    layout = Layout.at(home)
    if NAME not in list_names(layout):
        build_dataset(layout, BuildConfig(name=NAME))
    splits = open_dataset(layout, NAME).manifest.splits
    return splits["train"].rows + splits["holdout"].rows


def child_check(home: str) -> None:
    from toolkit.checks.gate import check_dataset
    from toolkit.checks.gx import _gx
    from toolkit.layout import Layout

    _gx()  # the GX import (seconds, once per process) is not part of a check
    with timed() as t:
        report = check_dataset(Layout.at(home), NAME)
    slowest = sorted(report.results, key=lambda r: -r.seconds)[:5]
    report_child(
        report.rows,
        t,
        timings=report.timings,
        passed=report.passed,
        failed=[r.id for r in report.results if not r.success],
        slowest={r.id: round(r.seconds, 2) for r in slowest},
        report=report.paths.get("json"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2, help="Runs; the fastest counts.")
    args = parser.parse_args()
    home = lake_home(args.decisions)
    tee = Tee()
    tee(f"# bench_check  {dt.datetime.now().isoformat(timespec='seconds')}  {platform.node()}")
    held = make_lake(home, args.decisions)
    rows = ensure_dataset(home)
    tee(f"lake: {held:,} decisions under {home}; dataset {NAME}: {rows:,} rows")
    script = str(Path(__file__).resolve())
    runs = [run_child("check", [script, "--child-check", str(home)]) for _ in range(args.repeat)]
    best = best_of(runs)
    timings = best.extra["timings"]
    tee(
        f"check dataset: {best.rows:,} rows in {best.wall_s:.1f}s ({best.rate:,.0f} rows/s), "
        f"peak RSS {best.peak_rss_mb:,.0f} MiB; passed={best.extra['passed']} failed={best.extra['failed']}"
    )
    tee(
        f"  split: GX {timings['gx']:.1f}s, DuckDB {timings['duckdb']:.1f}s, Arrow {timings['arrow']:.1f}s "
        f"(total in gate {timings['total']:.1f}s)"
    )
    tee("  slowest: " + ", ".join(f"{k} {v}s" for k, v in best.extra["slowest"].items()))
    tee(f"time: {best.wall_s:.1f}s (target < {TARGET_S:.0f}s) {'PASS' if best.wall_s < TARGET_S else 'FAIL'}")
    tee(
        f"peak RSS: {best.peak_rss_mb:,.0f} MiB (target < {TARGET_RSS_MB:,.0f}) "
        f"{'PASS' if best.peak_rss_mb < TARGET_RSS_MB else 'FAIL'}"
    )
    tee.write(OUT / "bench_check.txt")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child-check":
        child_check(sys.argv[2])
    else:
        main()
