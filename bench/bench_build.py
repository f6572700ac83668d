"""Benchmark ``distill build`` against a plain DuckDB COPY of the same rows.

Usage::

    .venv/bin/python bench/bench_build.py                 # a lake of >= 5M decisions
    .venv/bin/python bench/bench_build.py --decisions 500000

Makes (once, cached under ``bench/out/build-lake``) a data root holding at
least ``--decisions`` decisions: games of 3 heuristics and 1 random player
simulated in parts, each part ingested with ``distill ingest`` and its JSONL
deleted. Then measures, each in a fresh process:

(a) ``build``: ``build_dataset`` with the default config (every source,
    weight 1, the 12% Forge holdout): dedup check, episode summary, plan,
    one scan encoding 117-float feature vectors, Parquet parts, manifest,
    leakage check, atomic publish;
(b) ``copy``: ``COPY (SELECT <the columns the build reads> FROM the lake
    files) TO parquet`` in DuckDB: the same rows read and written once with
    no work on them (the floor).

Prints both times, the ratio build/copy (target <= 2.0) and peak RSS (target
< 2 GB), and the split of the build's time between its steps.

Last run (2 shared cores, three other jobs running): lake 5,091,848
decisions; build 4,952,999 rows in 121.7 s (scan+encode+write 114.3 s,
dedup check 3.9 s, leakage check 1.7 s), copy 90.2 s: 1.35x; peak RSS
943 MiB for both (DuckDB's 1 GB buffer limit dominates). At 1M decisions:
1.78x, 687 MiB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Tee, best_of, report_child, run_child, timed, verdict  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
TARGET_RATIO = 1.0
TARGET_RSS_MB = 2048.0
GAMES_PER_PART = 5_000
PLAYERS = ("heuristic", "heuristic", "heuristic", "random")


def lake_home(decisions: int) -> Path:
    """Where the lake of ``decisions`` decisions is cached (shared with bench_check)."""
    return OUT / ("build-lake" if decisions >= 5_000_000 else f"build-lake-{decisions}")


def make_lake(home: Path, decisions: int) -> int:
    """Simulate and ingest parts until the lake holds ``decisions`` decisions; returns how many it holds."""
    from toolkit.catalog.lake import Lake
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    layout = Layout.at(home)

    def held() -> int:
        if not layout.catalog.exists():
            return 0
        with Lake.open(layout).at() as catalog:
            return int(catalog.con.execute("SELECT coalesce(sum(rows_valid), 0) FROM batches").fetchall()[0][0])

    part = 0
    while (have := held()) < decisions:
        logs = home / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        config = SimulateConfig(games=GAMES_PER_PART, players=PLAYERS, seed=1000 + part, out=logs)
        if (home / f".part-{part}").exists():
            part += 1
            continue
        print(f"  lake: {have:,} decisions; simulating and ingesting part {part}", flush=True)
        simulate(config)
        ingest_paths([logs], layout)
        (home / f".part-{part}").touch()
        shutil.rmtree(logs, ignore_errors=True)
        part += 1
    return held()


def child_build(home: str) -> None:
    from toolkit.datasets import build as B
    from toolkit.datasets.config import BuildConfig
    from toolkit.layout import Layout

    layout = Layout.at(home)
    shutil.rmtree(layout.builds, ignore_errors=True)
    steps: dict[str, float] = {}
    _time_steps(B, steps)
    with timed() as t:
        info = B.build_dataset(layout, BuildConfig(name="bench"))
    rows = info.manifest.splits["train"].rows + info.manifest.splits["holdout"].rows
    report_child(rows, t, steps=steps, fingerprint=info.manifest.fingerprint)


def _time_steps(module: object, steps: dict[str, float]) -> None:
    """Wrap the build's step functions to time each (the build itself is unchanged)."""
    for name in ("select_inputs", "register_rows", "episode_summary", "make_plan", "write_splits", "check_leakage"):
        original = getattr(module, name)

        def wrapped(*args: object, _original=original, _name=name, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                steps[_name] = steps.get(_name, 0.0) + time.perf_counter() - started

        setattr(module, name, wrapped)


def child_copy(home: str, target: str, as_of: int | None = None) -> None:
    """COPY the rows a default build reads (of the lake ``as_of`` a version: the latest by default) to Parquet."""
    import duckdb

    from toolkit.datasets.config import BuildConfig
    from toolkit.datasets.select import select_inputs
    from toolkit.datasets.write import scan_sql
    from toolkit.layout import Layout

    inputs = select_inputs(Layout.at(home), BuildConfig(), as_of=as_of)
    Path(target).unlink(missing_ok=True)
    with timed() as t:
        con = duckdb.connect(config={"memory_limit": "1GB"})
        copy = f"COPY ({scan_sql(con, inputs)}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)"
        (rows,) = con.execute(copy).fetchall()[0]
    report_child(int(rows), t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2, help="Runs per path; the fastest counts.")
    args = parser.parse_args()
    home = lake_home(args.decisions)
    tee = Tee()
    tee(f"# bench_build  {dt.datetime.now().isoformat(timespec='seconds')}  {platform.node()}")
    held = make_lake(home, args.decisions)
    tee(f"lake: {held:,} decisions under {home}")
    script = str(Path(__file__).resolve())
    builds = [run_child("build", [script, "--child-build", str(home)]) for _ in range(args.repeat)]
    copies = [
        run_child("copy", [script, "--child-copy", str(home), str(OUT / "copy.parquet")]) for _ in range(args.repeat)
    ]
    build, copy = best_of(builds), best_of(copies)
    ratio = build.wall_s / copy.wall_s
    tee(
        f"build: {build.rows:,} rows in {build.wall_s:.1f}s ({build.rate:,.0f} rows/s), peak RSS "
        f"{build.peak_rss_mb:,.0f} MiB"
    )
    tee("  steps: " + ", ".join(f"{k} {v:.1f}s" for k, v in build.extra["steps"].items()))
    tee(
        f"copy:  {copy.rows:,} rows in {copy.wall_s:.1f}s ({copy.rate:,.0f} rows/s), peak RSS "
        f"{copy.peak_rss_mb:,.0f} MiB"
    )
    judged = verdict("build / COPY time", ratio, TARGET_RATIO, at_most=True, unit="x", against="DuckDB COPY")
    tee(f"build / copy time: {ratio:.2f}x (target <= {TARGET_RATIO}x) {judged}")
    judged = verdict("build peak RSS", build.peak_rss_mb, TARGET_RSS_MB, at_most=True, unit="MiB")
    tee(f"build peak RSS: {build.peak_rss_mb:,.0f} MiB (target < {TARGET_RSS_MB:,.0f}) {judged}")
    tee.write(OUT / "bench_build.txt")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child-build":
        child_build(sys.argv[2])
    elif len(sys.argv) > 3 and sys.argv[1] == "--child-copy":
        child_copy(sys.argv[2], sys.argv[3])
    else:
        main()
