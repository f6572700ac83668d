"""Benchmark the lake's lifecycle on the 5M-decision lake of ``bench_build.py``.

Usage::

    .venv/bin/python bench/bench_lake.py                 # the >= 5M-decision lake (made once, cached)
    .venv/bin/python bench/bench_lake.py --decisions 500000

Uses (and makes once, shared with bench_build and bench_check) the data root
of ``bench_build.lake_home``. Then measures, each in a fresh process:

(a) ``retire``: open the catalog for writing, retire one batch, close
    (``distill lake retire`` without the CLI): target < 1 s, since it is
    metadata only; then ``restore`` the batch (same, reported);
(b) ``sql``: one aggregate over every decision on the sealed catalog
    (``distill sql``) at the latest version, and ``--as-of`` the version before
    the retirement (the same rows): ratio target <= 1.2;
(c) ``build --as-of`` that version against a plain DuckDB COPY of the rows it
    reads (the floor, as in bench_build): ratio target <= 1.35.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Tee, best_of, report_child, run_child, timed, verdict  # noqa: E402
from bench_build import OUT, child_copy, lake_home, make_lake  # noqa: E402

TARGET_RETIRE_S = 1.0
TARGET_AS_OF = 1.2
TARGET_BUILD = 1.35
QUERY = (
    "SELECT source, generation, count(*) AS n, avg(reward) AS reward, sum(len(players)) AS seats "
    "FROM decisions GROUP BY ALL ORDER BY ALL"
)


def child_change(home: str, operation: str, batch: str) -> None:
    from toolkit.catalog.lake import Lake
    from toolkit.layout import Layout

    with timed() as t:
        with Lake.open(Layout.at(home), write=True) as lake:
            record = lake.retire([batch], "bench") if operation == "retire" else lake.restore([batch])
    report_child(record.rows_removed + record.rows_added, t, version=record.version)


def child_sql(home: str, as_of: str) -> None:
    from toolkit.catalog.lake import Lake
    from toolkit.catalog.query import run_query
    from toolkit.layout import Layout

    with timed() as t:
        lake = Lake.open(Layout.at(home))
        with lake.at(None if as_of == "latest" else int(as_of), sandbox=True) as catalog:
            result = run_query(catalog, QUERY)
    report_child(sum(result["n"].to_pylist()), t)


def child_build(home: str, as_of: str) -> None:
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig
    from toolkit.layout import Layout

    layout = Layout.at(home)
    shutil.rmtree(layout.builds / "bench-as-of", ignore_errors=True)
    with timed() as t:
        info = build_dataset(layout, BuildConfig(name="bench-as-of"), as_of=int(as_of))
    rows = info.manifest.splits["train"].rows + info.manifest.splits["holdout"].rows
    report_child(rows, t, fingerprint=info.manifest.fingerprint, lake_version=info.manifest.lake_version)


def _largest_batch(home: Path) -> tuple[str, int]:
    from toolkit.catalog.lake import Lake
    from toolkit.layout import Layout

    with Lake.open(Layout.at(home)).at() as catalog:
        batch, rows = catalog.con.execute(
            "SELECT batch_id, rows_valid FROM batches WHERE NOT retired ORDER BY rows_valid DESC, batch_id LIMIT 1"
        ).fetchall()[0]
        return batch, int(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2, help="Runs per path; the fastest counts.")
    args = parser.parse_args()
    home = lake_home(args.decisions)
    tee = Tee()
    tee(f"# bench_lake  {dt.datetime.now().isoformat(timespec='seconds')}  {platform.node()}")
    held = make_lake(home, args.decisions)
    tee(f"lake: {held:,} decisions under {home}")
    script = str(Path(__file__).resolve())
    batch, rows = _largest_batch(home)
    retires, restores = [], []
    for _ in range(args.repeat):
        retires.append(run_child("retire", [script, "--child-change", str(home), "retire", batch]))
        restores.append(run_child("restore", [script, "--child-change", str(home), "restore", batch]))
    retired, restored = best_of(retires), best_of(restores)
    before = int(retires[-1].extra["version"]) - 1  # the lake just before the last retirement: the same rows as now
    judged = verdict("retire one batch", retired.wall_s, TARGET_RETIRE_S, at_most=True, unit="s")
    tee(f"retire one batch ({rows:,} rows): {retired.wall_s:.3f}s (target < {TARGET_RETIRE_S}s) {judged}")
    tee(f"restore it: {restored.wall_s:.3f}s")
    now = best_of([run_child("sql", [script, "--child-sql", str(home), "latest"]) for _ in range(args.repeat)])
    then = best_of([run_child("sql", [script, "--child-sql", str(home), str(before)]) for _ in range(args.repeat)])
    ratio = then.wall_s / now.wall_s
    judged = verdict("sql --as-of / latest", ratio, TARGET_AS_OF, at_most=True, unit="x", against="sql latest")
    tee(f"sql over {now.rows:,} decisions: latest {now.wall_s:.2f}s, --as-of {before} {then.wall_s:.2f}s")
    tee(f"sql --as-of / latest: {ratio:.2f}x (target <= {TARGET_AS_OF}x) {judged}")
    builds = [run_child("build", [script, "--child-build", str(home), str(before)]) for _ in range(args.repeat)]
    copies = [
        run_child("copy", [script, "--child-copy", str(home), str(before), str(OUT / "copy-as-of.parquet")])
        for _ in range(args.repeat)
    ]
    build, copy = best_of(builds), best_of(copies)
    ratio = build.wall_s / copy.wall_s
    judged = verdict("build --as-of / COPY", ratio, TARGET_BUILD, at_most=True, unit="x", against="DuckDB COPY")
    tee(f"build --as-of {before}: {build.rows:,} rows in {build.wall_s:.1f}s; copy {copy.wall_s:.1f}s")
    tee(f"build --as-of / copy time: {ratio:.2f}x (target <= {TARGET_BUILD}x) {judged}")
    tee.write(OUT / "bench_lake.txt")


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[1] == "--child-change":
        child_change(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 3 and sys.argv[1] == "--child-sql":
        child_sql(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 3 and sys.argv[1] == "--child-build":
        child_build(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 4 and sys.argv[1] == "--child-copy":
        child_copy(sys.argv[2], sys.argv[4], int(sys.argv[3]))
    else:
        main()
