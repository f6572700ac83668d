"""The lake shared at a location (``--lake s3://...``) against the data root's own lake, on a local S3 server.

Usage (also ``bench/bench_lake.py --shared``)::

    .venv/bin/python bench/bench_shared_lake.py                  # 1M rows; 4 roots x 20 batches
    .venv/bin/python bench/bench_shared_lake.py --rows 200000 --roots 4 --batches 20

Starts moto's S3 server on the loopback (the same the tests use) and
measures, each in a fresh process:

(a) ingest of ``--rows`` generated rows (bench_ingest's file) into a local
    lake, and into an S3 lake: the ratio of the two, and where the S3
    ingest's extra time goes (uploading the batch's files, committing at
    the location, pulling the commit back into the local copy);
(b) a second data root's first query of that S3 lake (it copies the table
    down: the log, then every data file) against the same query on the
    local lake;
(c) ``--roots`` data roots, each a process of its own, ingesting
    ``--batches`` small logs each at once into one S3 lake: the wall time,
    and the check that every batch is in the lake exactly once, in one
    version of its own, with every row (the target: no lost commit);
(d) a game job of ``--games`` games on the process pool (2 workers, shards
    of ``--games / 8``) into the S3 lake, the way a loop on a shared lake
    does it (the workers validate, encode and upload their shards; the
    driver fetches the logs and commits the job as one version) against the
    way it would without (the workers write logs, the driver ingests them
    one by one): the driver's data time (after the games) and the job's
    wall time, each way, and the ratio.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
from _common import Tee, judged, ratio, report_child, run_child, timed  # noqa: E402
from bench_ingest import data_file, generate_file  # noqa: E402

OUT = BENCH / "out" / "shared-lake"
WHAT_CONCURRENT = "shared lake: concurrent writers, every batch exactly once"
SQL = "SELECT source, count(*) AS n, count(DISTINCT game_id) AS games FROM decisions GROUP BY ALL ORDER BY ALL"


def child_ingest(path: str, home: str, lake: str) -> None:
    """Ingest one file; with a lake location, the time spent uploading, committing and pulling is reported."""
    from toolkit.catalog import delta, remote
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    spent = {"upload_s": 0.0, "commit_s": 0.0, "pull_s": 0.0}

    def clocked(owner: object, name: str, key: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - started

        setattr(owner, name, wrapper)

    clocked(remote, "upload", "upload_s")
    clocked(remote, "pull", "pull_s")
    clocked(delta.DeltaLake, "commit", "commit_s")  # includes the pull after the commit
    shutil.rmtree(home, ignore_errors=True)
    with timed() as t:
        result = ingest_paths([Path(path)], Layout.at(home, lake or None))
    report_child(result.rows_valid, t, lake=lake, **spent)


def child_query(home: str, lake: str) -> None:
    from toolkit.catalog.lake import Lake
    from toolkit.layout import Layout

    with timed() as t, Lake.open(Layout.at(home, lake or None)).at(sandbox=True) as view:
        table = view.read(SQL)
    report_child(sum(table.column("n").to_pylist()), t)


def child_writer(home: str, lake: str, paths: list[str]) -> None:
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    with timed() as t:
        rows = sum(ingest_paths([Path(p)], Layout.at(home, lake)).rows_valid for p in paths)
    report_child(rows, t)


def child_job(home: str, lake: str, games: str, staged: str, compression: str) -> None:
    """A simulation job on the pool into the lake at ``lake``: staged by its workers (``staged`` = "1") and
    committed as one version, or written as logs the driver ingests."""
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.ingest.shards import commit_shards, fetch_logs, staging_for
    from toolkit.jobs.backends import close_pools
    from toolkit.jobs.config import BackendConfig
    from toolkit.layout import Layout

    layout, n = Layout.at(home, lake), int(games)
    out = layout.home / "logs"
    backend = BackendConfig(kind="pool", workers=2, shard_games=max(1, n // 8))
    handoff = staging_for(layout, out) if staged == "1" else None
    with timed() as t:
        config = SimulateConfig(games=n, seed=7, out=out, compression=compression)  # type: ignore[arg-type]
        played = simulate(config, backend=backend, handoff=handoff)
        with timed() as data:
            if handoff is not None:
                fetch_logs(played.staged, layout)
                result = commit_shards(played.staged, layout)
            else:
                result = ingest_paths(list(played.files), layout)
    close_pools()
    report_child(result.rows_valid, t, data_s=data.wall, batches=len(result.batches))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--roots", type=int, default=4)
    parser.add_argument("--batches", type=int, default=20, help="Logs each root ingests in (c).")
    parser.add_argument("--batch-rows", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=1, help="Runs of (a) and (b); the fastest counts.")
    parser.add_argument("--games", type=int, default=4096, help="Games of the job in (d).")
    parser.add_argument("--only-job", action="store_true", help="Run (d) only.")
    args = parser.parse_args()

    from tests.s3server import environment, s3_server

    tee = Tee()
    script = str(Path(__file__).resolve())
    tee(f"# bench_shared_lake  {dt.datetime.now().isoformat(timespec='seconds')}  {platform.node()}")
    source, _ = data_file(args.rows)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    with s3_server() as server, environment(server.env):
        if args.only_job:
            _job(tee, script, server, args.games)
            tee.write(OUT.parent / "bench_shared_lake.txt")
            return
        # (a) ingest, local against S3
        local_runs, s3_runs = [], []
        for i in range(args.repeat):
            local_runs.append(run_child("local", [script, "--child", "ingest", str(source), str(OUT / "local"), ""]))
            lake = f"s3://{server.bucket()}/lake"
            s3_runs.append(run_child("s3", [script, "--child", "ingest", str(source), str(OUT / f"s3-{i}"), lake]))
        local, s3 = min(local_runs, key=lambda m: m.wall_s), min(s3_runs, key=lambda m: m.wall_s)
        share = ", ".join(f"{k.removesuffix('_s')} {s3.extra[k]:.2f} s" for k in ("upload_s", "commit_s", "pull_s"))
        tee(
            f"(a) ingest {s3.rows:,} rows: local lake {local.wall_s:.2f} s, S3 lake {s3.wall_s:.2f} s: "
            f"{local.wall_s / s3.wall_s:.2f}x the local speed; the S3 ingest's time at the location: {share} "
            f"(commit includes pulling its version back)"
        )
        ratio("shared lake: ingest into S3 / local lake (speed)", local.wall_s / s3.wall_s, "local lake ingest")
        # (b) a second root's first read copies the table down
        reader = [script, "--child", "query", str(OUT / "reader"), s3.extra["lake"]]
        first, again = run_child("read-s3", reader), run_child("read-s3-again", reader)
        plain = run_child("read-local", [script, "--child", "query", str(OUT / "local"), ""])
        tee(
            f"(b) a second data root's first query: {first.wall_s:.2f} s (the table copied down), then "
            f"{again.wall_s:.2f} s (its copy current); a local lake's: {plain.wall_s:.2f} s"
        )
        # (c) many roots at once
        logs = OUT / "logs"
        logs.mkdir()
        paths = {
            r: [str(made(logs / f"r{r}-b{b}.jsonl", args.batch_rows, 1000 * r + b)) for b in range(args.batches)]
            for r in range(args.roots)
        }
        lake = f"s3://{server.bucket()}/lake"
        started = time.perf_counter()
        processes = [
            subprocess.Popen(
                [sys.executable, script, "--child", "writer", str(OUT / f"writer-{r}"), lake, *paths[r]],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for r in range(args.roots)
        ]
        outputs = [p.communicate() for p in processes]
        wall = time.perf_counter() - started
        failed = [o[1][-800:] for p, o in zip(processes, outputs, strict=True) if p.returncode != 0]
        check = json.loads(
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "toolkit",
                    "--home",
                    str(OUT / "checker"),
                    "--lake",
                    lake,
                    "sql",
                    "--json",
                    "SELECT (SELECT count(*) FROM batches) AS batches, (SELECT count(*) FROM versions WHERE "
                    "operation = 'ingest') AS ingests, (SELECT sum(rows_valid) FROM batches) AS rows, "
                    "(SELECT count(*) FROM decisions) AS decisions",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )[0]
        expected = args.roots * args.batches
        whole = not failed and check["batches"] == check["ingests"] == expected and check["rows"] == check["decisions"]
        tee(
            f"(c) {args.roots} data roots x {args.batches} batches at once into one S3 lake: {wall:.1f} s "
            f"({expected / wall:.1f} commits/s); batches {check['batches']}, ingest versions {check['ingests']} "
            f"(expected {expected}), rows {check['rows']:,} = decisions {check['decisions']:,}: "
            + judged(
                "shared lake: concurrent writers, every batch exactly once", whole, str(check["batches"]), str(expected)
            )
        )
        for text in failed:
            tee("    a writer failed: " + text.replace("\n", " | "))
        _job(tee, script, server, args.games)
    tee.write(OUT.parent / "bench_shared_lake.txt")


def _job(tee: Tee, script: str, server: Any, games: int) -> None:
    """(d): a game job staged by its workers against the same job ingested by the driver, its logs zstd-compressed
    (as a loop writes them by default) and plain (``retention: keep``)."""
    for compression in ("zstd", "none"):
        runs = {}
        for staged in ("0", "1"):
            lake = f"s3://{server.bucket()}/lake"
            folder = str(OUT / f"job-{compression}-{staged}")
            runs[staged] = run_child(
                f"job-{staged}", [script, "--child", "job", folder, lake, str(games), staged, compression]
            )
        driver, workers = runs["0"], runs["1"]
        same = driver.rows == workers.rows and driver.extra["batches"] == workers.extra["batches"]
        tee(
            f"(d) a job of {games:,} games on the pool (2 workers), logs {compression}, {workers.rows:,} rows in "
            f"{workers.extra['batches']} batches: the driver's data time {driver.extra['data_s']:.2f} s when it "
            f"ingests the logs, {workers.extra['data_s']:.2f} s when the workers staged them (fetch + one commit): "
            f"{driver.extra['data_s'] / workers.extra['data_s']:.2f}x; the job {driver.wall_s:.2f} s against "
            f"{workers.wall_s:.2f} s ({driver.wall_s / workers.wall_s:.2f}x); same rows and batches: {same}"
        )
        against = f"the driver ingesting the job's logs ({compression})"
        ratio(
            f"shared lake: a job's driver data time, ingested / staged ({compression})",
            driver.extra["data_s"] / workers.extra["data_s"],
            against,
        )
        ratio(
            f"shared lake: a job's wall time, ingested / staged ({compression})",
            driver.wall_s / workers.wall_s,
            against,
        )


def made(path: Path, rows: int, seed: int) -> Path:
    generate_file(path, rows, seed=seed)
    return path


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "ingest":
            child_ingest(*rest)
        elif kind == "job":
            child_job(*rest)
        elif kind == "query":
            child_query(*rest)
        else:
            child_writer(rest[0], rest[1], rest[2:])
    else:
        main()
