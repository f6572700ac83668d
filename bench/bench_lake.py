"""Benchmark the lake's lifecycle on the 5M-decision lake of ``bench_build.py``.

Usage::

    .venv/bin/python bench/bench_lake.py                 # the >= 5M-decision lake (made once, cached)
    .venv/bin/python bench/bench_lake.py --decisions 500000
    .venv/bin/python bench/bench_lake.py --shared         # a lake shared on S3 (bench_shared_lake.py)

Uses (and makes once, shared with bench_build and bench_check) the data root
of ``bench_build.lake_home``. Then measures, each in a fresh process:

(a) ``retire``: open the catalog for writing, retire one batch, close
    (``distill lake retire`` without the CLI): target < 1 s, since it is
    metadata only; then ``restore`` the batch (same, reported);
(b) ``sql``: one aggregate over every decision on the sealed catalog
    (``distill sql``) at the latest version, and ``--as-of`` the version before
    the retirement (the same rows): ratio target <= 1.2;
(c) ``build --as-of`` that version against a plain DuckDB COPY of the rows it
    reads (the floor, as in bench_build): ratio target <= 1.35;
(d) ``lake reindex`` once the lake has 50 lifecycle versions on top of its
    ingests (made once: reviews, retirements and restores): the whole catalog
    rebuilt from the Delta log alone, target < 5 s, with the time delta-rs
    takes to open the same table and list its files as the baseline;
(e) catching up one version: the catalog one version behind the log (a
    review whose writer was killed between its commit and its index), the
    index caught up (target < 100 ms), and a reader's whole open in that
    state against its open when the catalog is current.
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
TARGET_REINDEX_S = 5.0
TARGET_CATCH_UP_S = 0.1
LIFECYCLE_VERSIONS = 50
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


def child_reindex(home: str) -> None:
    from toolkit.catalog.lake import reindex
    from toolkit.layout import Layout

    with timed() as t:
        result = reindex(Layout.at(home))
    report_child(result.live_rows, t, versions=result.versions, files=result.live_files, found=result.found)


def child_delta_open(home: str) -> None:
    """The baseline: delta-rs alone opens the table and lists its live files."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from toolkit.layout import Layout

    with timed() as t:
        table = DeltaTable(str(Layout.at(home).lake))
        actions = pa.table(table.get_add_actions(flatten=True))
    report_child(int(pa.compute.sum(actions["num_records"]).as_py()), t, files=actions.num_rows)


def child_catch_up(home: str) -> None:
    from toolkit.catalog import connect, index
    from toolkit.layout import Layout

    layout = Layout.at(home)
    con = connect.connect_writer(layout)
    with timed() as t:
        done = index.catch_up(con, layout.lake)
    con.close()
    report_child(len(done), t)


def child_read(home: str) -> None:
    """A reader's whole open of the latest version (``distill sql`` up to its first statement)."""
    from toolkit.catalog.lake import Lake
    from toolkit.layout import Layout

    with timed() as t:
        with Lake.open(Layout.at(home)).at() as view:
            version = view.latest_version
    report_child(0, t, version=version)


def fall_behind(home: Path, batch: str) -> None:
    """Commit a review whose writer dies before indexing it: the catalog is one version behind the log."""
    import os
    import signal
    import subprocess

    code = (
        "import sys; from toolkit.catalog.lake import Lake; from toolkit.layout import Layout\n"
        "with Lake.open(Layout.at(sys.argv[1]), write=True) as lake: lake.review(sys.argv[2], 'accepted', 'bench')"
    )
    env = {**os.environ, "DISTILL_FAILPOINT": "review.after_commit"}
    done = subprocess.run([sys.executable, "-c", code, str(home), batch], env=env, cwd=Path(__file__).parents[1])
    assert done.returncode == -signal.SIGKILL, done.returncode


def make_lifecycle(home: Path, versions: int) -> int:
    """Give the lake ``versions`` lifecycle versions on top of its ingests (once: reviews, retirements and
    restores of its smallest batches); returns the lake's newest version."""
    from toolkit.catalog.lake import Lake
    from toolkit.layout import Layout

    marker = home / f".lifecycle-{versions}"
    with Lake.open(Layout.at(home), write=True) as lake:
        if not marker.exists():
            small = sorted(lake.batches(), key=lambda b: (b.rows_valid, b.batch_id))[:4]
            for i in range(versions):
                batch = lake.view.require_batches([small[(i // 2) % len(small)].batch_id])[0]
                if i % 2 == 0:
                    lake.review(batch.batch_id, ("accepted", "rejected")[i // 2 % 2], "bench")
                elif batch.retired:
                    lake.restore([batch.batch_id], "bench")
                else:
                    lake.retire([batch.batch_id], "bench")
            marker.touch()
        return lake.version()


def _largest_batch(home: Path) -> tuple[str, int]:
    from toolkit.catalog.lake import Lake
    from toolkit.layout import Layout

    with Lake.open(Layout.at(home)).at() as catalog:
        batch, rows = catalog.con.execute(
            "SELECT batch_id, rows_valid FROM batches WHERE NOT retired ORDER BY rows_valid DESC, batch_id LIMIT 1"
        ).fetchall()[0]
        return batch, int(rows)


def main() -> None:
    if "--shared" in sys.argv:  # the lake shared at a location: bench_shared_lake.py, with its own options
        import bench_shared_lake

        sys.argv.remove("--shared")
        bench_shared_lake.main()
        return
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
    reindex_and_catch_up(home, script, batch, args.repeat, tee)
    tee.write(OUT / "bench_lake.txt")


def reindex_and_catch_up(home: Path, script: str, batch: str, repeat: int, tee: Tee) -> None:
    latest = make_lifecycle(home, LIFECYCLE_VERSIONS)
    tee(f"the log: versions 0 to {latest} ({LIFECYCLE_VERSIONS} lifecycle versions on top of the ingests)")
    rebuilt = best_of([run_child("reindex", [script, "--child-reindex", str(home)]) for _ in range(repeat)])
    opened = best_of([run_child("delta-rs", [script, "--child-delta-open", str(home)]) for _ in range(repeat)])
    judged = verdict("lake reindex", rebuilt.wall_s, TARGET_REINDEX_S, at_most=True, unit="s")
    tee(
        f"reindex {rebuilt.extra['versions']} versions ({rebuilt.rows:,} live rows in {rebuilt.extra['files']} files): "
        f"{rebuilt.wall_s:.2f}s (target < {TARGET_REINDEX_S}s) {judged}; delta-rs alone opens the table and lists "
        f"its {opened.extra['files']} files in {opened.wall_s:.2f}s: {rebuilt.wall_s / opened.wall_s:.2f}x that"
    )
    catches, behind, current = [], [], []
    for _ in range(repeat):
        fall_behind(home, batch)
        catches.append(run_child("catch up", [script, "--child-catch-up", str(home)]))
        fall_behind(home, batch)
        behind.append(run_child("read behind", [script, "--child-read", str(home)]))
        current.append(run_child("read current", [script, "--child-read", str(home)]))
    caught, late, fresh = best_of(catches), best_of(behind), best_of(current)
    judged = verdict("catch up one version", caught.wall_s, TARGET_CATCH_UP_S, at_most=True, unit="s")
    tee(f"catch up one version: {caught.wall_s * 1000:.1f} ms (target < {TARGET_CATCH_UP_S * 1000:.0f} ms) {judged}")
    tee(
        f"a reader's open, the catalog one version behind: {late.wall_s * 1000:.0f} ms (caught up and published "
        f"for the next reader); the catalog current: {fresh.wall_s * 1000:.0f} ms: {late.wall_s / fresh.wall_s:.2f}x"
    )


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[1] == "--child-change":
        child_change(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 3 and sys.argv[1] == "--child-sql":
        child_sql(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 3 and sys.argv[1] == "--child-build":
        child_build(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 2 and sys.argv[1] == "--child-reindex":
        child_reindex(sys.argv[2])
    elif len(sys.argv) > 2 and sys.argv[1] == "--child-delta-open":
        child_delta_open(sys.argv[2])
    elif len(sys.argv) > 2 and sys.argv[1] == "--child-catch-up":
        child_catch_up(sys.argv[2])
    elif len(sys.argv) > 2 and sys.argv[1] == "--child-read":
        child_read(sys.argv[2])
    elif len(sys.argv) > 4 and sys.argv[1] == "--child-copy":
        child_copy(sys.argv[2], sys.argv[4], int(sys.argv[3]))
    else:
        main()
