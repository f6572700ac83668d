"""A lake at a location shared by several data roots (``--lake s3://...``), on a real S3 API: moto's server, started
here on the loopback. Each data root keeps its own index, builds and runs; they read and write one Delta table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.datasets.conftest import game_records
from tests.s3server import S3Server, environment, free_port, s3_server
from toolkit.catalog.remote import LakeLocation
from toolkit.cli.main import app
from toolkit.errors import CatalogError, UsageError

runner = CliRunner()


@pytest.fixture
def lake_uri(s3_env: S3Server) -> str:
    """A shared lake's location: a prefix of a new bucket (given with --lake)."""
    return f"s3://{s3_env.bucket()}/lake"


def distill(home: Path, lake: str | None, *args: str):
    result = runner.invoke(app, ["--home", str(home), *(["--lake", lake] if lake else []), *args])
    return result, result.stdout + result.stderr


def ok(home: Path, lake: str | None, *args: str) -> str:
    result, output = distill(home, lake, *args)
    assert result.exit_code == 0, (args, output, result.exception)
    return result.stdout


def rows(home: Path, lake: str | None, sql: str) -> list[dict]:
    return json.loads(ok(home, lake, "sql", sql, "--json"))


def log_file(write_log, name: str, games: int, *, first: int = 0) -> Path:
    return write_log(f"{name}.jsonl", [r for i in range(first, first + games) for r in game_records(f"{name}-{i}")])


def test_two_data_roots_share_one_lake_read_each_others_commits_and_build_the_same_dataset(
    tmp_path: Path, lake_uri: str, write_log, s3: S3Server
) -> None:
    a, b, local = tmp_path / "a", tmp_path / "b", tmp_path / "local"
    first, second = log_file(write_log, "first", 4), log_file(write_log, "second", 3)
    ok(a, lake_uri, "ingest", str(first))
    assert rows(b, lake_uri, "SELECT count(DISTINCT game_id) AS n FROM decisions") == [{"n": 4}]
    ok(b, lake_uri, "ingest", str(second))
    assert rows(a, lake_uri, "SELECT count(DISTINCT game_id) AS n FROM decisions") == [{"n": 7}]
    # the data files and the log live at the location, under names no other writer uses
    keys = s3.keys(lake_uri.split("/")[2])
    assert sum(k.endswith(".parquet") for k in keys) == 2 and all("~" in k for k in keys if k.endswith(".parquet"))
    assert sum("/_delta_log/" in k and k.endswith(".json") for k in keys) == 3  # create, two ingests
    # a build from either root, and from a local lake of the same logs, is the same dataset
    for home in (local,):
        ok(home, None, "ingest", str(first))
        ok(home, None, "ingest", str(second))
    fingerprints = set()
    for home, lake in ((a, lake_uri), (b, lake_uri), (local, None)):
        ok(home, lake, "build", "--name", "mix")
        fingerprints.add((home / "builds" / "mix" / "LATEST").read_text().strip())
    assert len(fingerprints) == 1
    # a retirement from one root is seen by the other
    batch = rows(a, lake_uri, "SELECT batch_id FROM batches ORDER BY batch_id LIMIT 1")[0]["batch_id"]
    ok(a, lake_uri, "lake", "retire", batch, "--reason", "seen elsewhere")
    assert rows(b, lake_uri, "SELECT count(*) AS n FROM batches WHERE retired") == [{"n": 1}]


def test_a_log_ingested_from_two_data_roots_is_one_batch(tmp_path: Path, lake_uri: str, write_log) -> None:
    log = log_file(write_log, "same", 3)
    ok(tmp_path / "a", lake_uri, "ingest", str(log))
    result, output = distill(tmp_path / "b", lake_uri, "ingest", str(log))
    assert result.exit_code == 0 and "0 new batch" in output, output
    assert rows(tmp_path / "a", lake_uri, "SELECT count(*) AS n FROM batches") == [{"n": 1}]


def test_writers_in_several_processes_at_once_lose_no_commit_and_ingest_a_shared_log_once(
    tmp_path: Path, lake_uri: str, write_log, s3: S3Server
) -> None:
    """Three data roots, each a process of its own (spawned: delta-rs does not survive a fork), ingest their own
    logs and one log they all have, at once."""
    shared = log_file(write_log, "shared", 2)
    own = {i: [log_file(write_log, f"own{i}-{k}", 1) for k in range(3)] for i in range(3)}
    env = {**os.environ, **s3.env}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from toolkit.cli.main import app\n"
                "for path in sys.argv[3:]:\n"
                "    try: app(['--home', sys.argv[1], '--lake', sys.argv[2], 'ingest', path])\n"
                "    except SystemExit as end:\n"
                "        if end.code: raise\n",
                str(tmp_path / f"root{i}"),
                lake_uri,
                *(str(p) for p in [*own[i][:1], shared, *own[i][1:]]),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for i in range(3)
    ]
    outputs = [p.communicate(timeout=300)[0].decode() for p in processes]
    failed = {i: out[-1500:] for i, (p, out) in enumerate(zip(processes, outputs, strict=True)) if p.returncode}
    assert not failed, failed  # a root that lost a race for the shared batch skips it
    found = rows(tmp_path / "root0", lake_uri, "SELECT count(*) AS batches, sum(rows_valid) AS n FROM batches")
    assert found == [{"batches": 10, "n": 10 * 3 * 4 + 3 * 4}]  # nine own logs of 1 game, the shared one of 2
    versions = rows(tmp_path / "root1", lake_uri, "SELECT count(*) AS n FROM versions WHERE operation = 'ingest'")
    assert versions == [{"n": 10}]


def test_a_vacuum_deletes_at_the_location_and_other_roots_read_on(
    tmp_path: Path, lake_uri: str, write_log, s3: S3Server
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ok(a, lake_uri, "ingest", str(log_file(write_log, "x", 2)))
    ok(a, lake_uri, "ingest", str(log_file(write_log, "y", 2)))
    assert rows(b, lake_uri, "SELECT count(*) AS n FROM batches") == [{"n": 2}]
    batch = rows(a, lake_uri, "SELECT batch_id FROM batches ORDER BY batch_id LIMIT 1")[0]["batch_id"]
    ok(a, lake_uri, "lake", "retire", batch, "--reason", "gone")
    ok(a, lake_uri, "lake", "vacuum", "--retain", "0")
    bucket = lake_uri.split("/")[2]
    assert sum(k.endswith(".parquet") for k in s3.keys(bucket)) == 1
    assert rows(b, lake_uri, "SELECT count(DISTINCT game_id) AS n FROM decisions") == [{"n": 2}]
    ok(b, lake_uri, "lake", "compact")  # a writer of the other root settles the vacuum in its copy
    assert len(list((b / "lake").rglob("*.parquet"))) == 1


def test_a_data_root_keeps_to_its_lake(tmp_path: Path, lake_uri: str, write_log, s3: S3Server) -> None:
    home = tmp_path / "a"
    ok(home, lake_uri, "ingest", str(log_file(write_log, "x", 1)))
    result, output = distill(home, None, "sql", "SELECT 1")
    assert result.exit_code == 2 and f"keeps a copy of the lake at {lake_uri}" in output, output
    other = f"s3://{s3.bucket()}/lake"
    result, output = distill(home, other, "sql", "SELECT 1")
    assert result.exit_code == 2 and f"indexes the lake at {lake_uri}, not {other}" in output, output
    local = tmp_path / "local"
    ok(local, None, "ingest", str(log_file(write_log, "y", 1)))
    result, output = distill(local, lake_uri, "sql", "SELECT 1")
    assert result.exit_code == 2 and "holds a lake of its own" in output, output


@pytest.mark.parametrize(
    "uri,words",
    [
        ("ftp://host/lake", "has the scheme 'ftp'"),
        ("s3:///lake", "is not an S3 location"),
        ("s3://lake?x=1", "is not an S3 location"),
        ("s3://lake/t/_delta_log/00000000000000000000.json", "inside a lake's own folders"),
        ("/shared/t/_quarantine", "inside a lake's own folders"),
    ],
)
def test_a_location_that_is_not_one_is_refused(tmp_path: Path, uri: str, words: str, s3_env: S3Server) -> None:
    result, output = distill(tmp_path / "a", uri, "sql", "SELECT 1")
    assert result.exit_code == 2 and words in output and "Traceback" not in output, output
    with pytest.raises(UsageError):
        LakeLocation.parse(uri)


def test_store_faults_are_clear_errors_and_a_rerun_finishes(tmp_path: Path, write_log, s3_env: S3Server) -> None:
    s3 = s3_env
    log = str(log_file(write_log, "x", 1))
    missing = f"s3://no-such-bucket-{free_port()}/lake"
    result, output = distill(tmp_path / "a", missing, "ingest", log)
    assert result.exit_code == 1 and "the lake at" in output and "Traceback" not in output, output
    bucket = s3.bucket()
    s3.client().put_object(Bucket=bucket, Key="data/notes.txt", Body=b"not a lake")
    result, output = distill(tmp_path / "b", f"s3://{bucket}/data", "ingest", log)
    assert result.exit_code == 1 and "no Delta log" in output and "notes.txt" in output, output
    result, output = distill(tmp_path / "b2", f"s3://{bucket}/data/notes.txt", "ingest", log)
    assert result.exit_code == 1 and "is a file" in output, output
    with environment({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}):  # nothing listens there
        result, output = distill(tmp_path / "c", f"s3://{bucket}/lake", "ingest", log)
    assert result.exit_code == 1 and "cannot" in output and "Traceback" not in output, output
    ok(tmp_path / "c", f"s3://{bucket}/lake", "ingest", log)  # the server back: a rerun does the job
    assert rows(tmp_path / "c", f"s3://{bucket}/lake", "SELECT count(*) AS n FROM batches") == [{"n": 1}]


@pytest.mark.parametrize("point", ["ingest.moved", "ingest.uploaded", "ingest.before_commit", "ingest.after_commit"])
def test_a_writer_killed_mid_ingest_leaves_its_batch_whole_or_absent_and_a_rerun_finishes(
    tmp_path: Path, lake_uri: str, write_log, s3: S3Server, point: str
) -> None:
    home, other = tmp_path / "a", tmp_path / "b"
    log = str(log_file(write_log, "x", 2))
    ok(other, lake_uri, "ingest", str(log_file(write_log, "y", 1)))  # another root's batch, before
    env = {**os.environ, **s3.env, "DISTILL_FAILPOINT": point}
    argv = [sys.executable, "-m", "toolkit", "--home", str(home), "--lake", lake_uri, "ingest", log]
    assert subprocess.run(argv, env=env, capture_output=True).returncode == -signal.SIGKILL
    seen = rows(other, lake_uri, "SELECT count(*) AS batches, sum(rows_valid) AS n FROM batches")
    assert seen in ([{"batches": 1, "n": 12}], [{"batches": 2, "n": 36}]), seen  # absent, or whole
    ok(home, lake_uri, "ingest", log)  # the rerun: recovery, then the batch once
    assert rows(other, lake_uri, "SELECT count(*) AS batches, sum(rows_valid) AS n FROM batches") == [
        {"batches": 2, "n": 36}
    ]
    assert rows(home, lake_uri, "SELECT count(*) AS n FROM decisions") == [{"n": 36}]
    assert not any((home / "staging").iterdir())


def test_a_vacuum_deletes_an_upload_whose_commit_never_came_once_it_is_old_enough(
    tmp_path: Path, lake_uri: str, write_log, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime as dt

    from toolkit.catalog import remote

    home = tmp_path / "a"
    ok(home, lake_uri, "ingest", str(log_file(write_log, "x", 1)))
    bucket, prefix = lake_uri.split("/")[2], lake_uri.split("/", 3)[3]
    stray = f"{prefix}/source=forge/generation=__HIVE_DEFAULT_PARTITION__/batch-feed~0123456789ab.parquet"
    s3.client().put_object(Bucket=bucket, Key=stray, Body=b"PAR1 a writer killed before its commit")
    s3.client().put_object(Bucket=bucket, Key="elsewhere/batch-x.parquet", Body=b"not the lake's")
    left = f"{prefix}/_staged/bfeed~0123456789ab/rejects.parquet"  # a loop worker's, whose driver never committed
    s3.client().put_object(Bucket=bucket, Key=left, Body=b"PAR1 rejected lines")
    ok(home, lake_uri, "lake", "vacuum", "--retain", "0")
    assert {stray, left} <= set(s3.keys(bucket))  # younger than an hour: perhaps another root's upload, on its way
    monkeypatch.setattr(remote, "STRAY_MIN_AGE", dt.timedelta(0))
    ok(home, lake_uri, "lake", "vacuum", "--retain", "0")
    keys = s3.keys(bucket)
    assert stray not in keys and left not in keys and "elsewhere/batch-x.parquet" in keys
    assert sum(k.endswith(".parquet") for k in keys if k.startswith(prefix)) == 1  # the batch's own file stays
    assert rows(home, lake_uri, "SELECT count(*) AS n FROM batches") == [{"n": 1}]


def test_every_data_root_reads_every_batchs_rejected_lines_byte_for_byte(
    tmp_path: Path, lake_uri: str, write_log
) -> None:
    good = [r for i in range(2) for r in game_records(f"g-{i}")]
    log = tmp_path / "mixed.jsonl"
    bad_lines = [b'{"not": "a decision"}', b"\xff\xfe not even text", b'{"game_id": 7']
    log.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in good) + b"\n".join(bad_lines) + b"\n")
    ok(tmp_path / "a", lake_uri, "ingest", str(log))
    query = "SELECT source_line, hex(raw) AS raw FROM rejects ORDER BY source_line"
    seen = {home: rows(tmp_path / home, lake_uri, query) for home in ("a", "b")}
    assert len(seen["a"]) == 3 and seen["b"] == seen["a"]  # the other root's copy, the same bytes


def test_a_batch_another_root_commits_at_the_same_moment_is_skipped_and_its_rejected_lines_kept(
    tmp_path: Path, lake_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.catalog import remote
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    log = tmp_path / "log.jsonl"
    good = [r for i in range(2) for r in game_records(f"g-{i}")]
    log.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in good) + b'{"not": "a decision"}\n')
    upload = remote.upload

    def racing(*args: object, **kwargs: object) -> None:  # root a commits the batch while root b uploads it
        monkeypatch.setattr(remote, "upload", upload)
        assert ingest_paths([log], Layout.at(tmp_path / "a", lake_uri)).files[0].status == "ingested"
        upload(*args, **kwargs)

    monkeypatch.setattr(remote, "upload", racing)
    found = ingest_paths([log], Layout.at(tmp_path / "b", lake_uri)).files[0]
    assert found.status == "already_ingested" and "by another data root" in (found.note or ""), found
    assert rows(tmp_path / "b", lake_uri, "SELECT count(*) AS n FROM versions WHERE operation = 'ingest'") == [{"n": 1}]
    query = "SELECT source_line, hex(raw) AS raw FROM rejects"
    assert rows(tmp_path / "b", lake_uri, query) == rows(tmp_path / "a", lake_uri, query) != []
    assert not any((tmp_path / "b" / "staging").iterdir())


def test_a_change_decided_on_a_version_another_root_moved_past_is_refused(
    tmp_path: Path, lake_uri: str, write_log
) -> None:
    from toolkit.catalog import Lake
    from toolkit.layout import Layout

    for name in "xyz":
        ok(tmp_path / "a", lake_uri, "ingest", str(log_file(write_log, name, 1)))
    late = Lake.open(Layout.at(tmp_path / "b", lake_uri), write=True)  # decides on version 3
    try:
        ok(tmp_path / "a", lake_uri, "lake", "compact")  # another root compacts first: version 4
        with pytest.raises(CatalogError, match="another data root changed the lake"):
            late.compact()
    finally:
        late.close()
    assert rows(tmp_path / "c", lake_uri, "SELECT count(*) AS n FROM decisions") == [{"n": 36}]  # not twice
    ok(tmp_path / "b", lake_uri, "lake", "compact")  # run again: nothing left to merge, nothing wrong


def test_a_vacuum_record_naming_files_outside_the_table_deletes_nothing_there(
    tmp_path: Path, lake_uri: str, write_log, s3: S3Server
) -> None:
    home = tmp_path / "a"
    ok(home, lake_uri, "ingest", str(log_file(write_log, "x", 1)))
    bucket, prefix = lake_uri.split("/")[2], lake_uri.split("/", 3)[3]
    s3.client().put_object(Bucket=bucket, Key="lake.json", Body=b"beside the lake")
    commit = {
        "commitInfo": {
            "timestamp": 1_900_000_000_000,
            "operation": "DISTILL VACUUM",
            "distill": {
                "format": 3,
                "operation": "vacuum",
                "batches": [],
                "distill_version": "0",
                "detail": {"horizon": 0, "files": ["../lake.json", "../../other/x.parquet"]},
            },
        }
    }
    key = f"{prefix}/_delta_log/{2:020d}.json"
    s3.client().put_object(Bucket=bucket, Key=key, Body=(json.dumps(commit) + "\n").encode())
    result, output = distill(home, lake_uri, "ingest", str(log_file(write_log, "y", 1)))  # finishes "the vacuum"
    assert result.exit_code == 0, output  # the record was read and indexed: its names were what was refused
    assert "lake.json" in s3.keys(bucket) and (home / "lake.json").exists()


def test_a_copy_whose_folders_lead_out_of_the_data_root_is_not_written_through(
    tmp_path: Path, lake_uri: str, write_log
) -> None:
    ok(tmp_path / "a", lake_uri, "ingest", str(log_file(write_log, "x", 1)))
    outside = tmp_path / "outside"
    outside.mkdir()
    for linked in ("lake", "lake/_delta_log", "lake/source=forge"):
        home = tmp_path / f"b-{linked.replace('/', '-')}"
        (home / linked).parent.mkdir(parents=True, exist_ok=True)
        (home / linked).symlink_to(outside, target_is_directory=True)
        result, output = distill(home, lake_uri, "sql", "FROM batches")
        assert result.exit_code != 0 and "Traceback" not in output, (linked, output)
        assert not any(outside.iterdir()), linked


def test_a_server_that_stops_answering_mid_upload_or_mid_commit_gives_a_clear_error_and_a_rerun_finishes(
    tmp_path: Path, write_log, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.catalog import remote, writer

    monkeypatch.setattr(remote, "_CONNECT_TIMEOUT_S", 1.0)
    monkeypatch.setattr(remote, "_REQUEST_TIMEOUT_S", 1.0)
    monkeypatch.setattr(remote, "_RETRY_TIMEOUT_S", 3.0)
    with s3_server() as server, environment(server.env):
        lake, home, other = f"s3://{server.bucket()}/lake", tmp_path / "a", tmp_path / "b"
        ok(home, lake, "ingest", str(log_file(write_log, "x", 1)))
        for n, point in enumerate(["ingest.moved", "ingest.uploaded"], start=2):  # before its upload, its commit
            log = str(log_file(write_log, point, 2))

            def freeze(name: str, point: str = point) -> None:  # the server stops answering mid-ingest
                if name == point:
                    os.kill(server.process.pid, signal.SIGSTOP)

            monkeypatch.setattr(writer, "failpoint", freeze)
            try:
                started = time.monotonic()
                result, output = distill(home, lake, "ingest", log)
                took = time.monotonic() - started
            finally:
                os.kill(server.process.pid, signal.SIGCONT)
            assert result.exit_code == 1 and "the lake at " + lake in output and "Traceback" not in output, output
            assert took < 60, (point, took)
            monkeypatch.setattr(writer, "failpoint", lambda name: None)
            assert rows(other, lake, "SELECT count(*) AS n FROM batches") == [{"n": n - 1}]  # nothing half-committed
            ok(home, lake, "ingest", log)  # the server back: a rerun finishes the job
            assert rows(other, lake, "SELECT count(*) AS n FROM batches") == [{"n": n}]
            assert not any((home / "staging").iterdir())


def test_one_of_several_writers_killed_mid_ingest_costs_the_others_nothing(
    tmp_path: Path, lake_uri: str, write_log, s3: S3Server
) -> None:
    """Three data roots ingest at once; one is killed (kill -9) between its upload and its commit: the others'
    batches all land, the killed one's is absent, and its rerun finishes."""
    logs = {i: [log_file(write_log, f"w{i}-{k}", 1) for k in range(3)] for i in range(3)}
    script = (
        "import sys; from toolkit.cli.main import app\n"
        "for path in sys.argv[3:]:\n"
        "    try: app(['--home', sys.argv[1], '--lake', sys.argv[2], 'ingest', path])\n"
        "    except SystemExit as end:\n"
        "        if end.code: raise\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / f"root{i}"), lake_uri, *map(str, logs[i])],
            env={**os.environ, **s3.env, **({"DISTILL_FAILPOINT": "ingest.uploaded"} if i == 0 else {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for i in range(3)
    ]
    outputs = [p.communicate(timeout=300)[0].decode()[-1500:] for p in processes]
    assert processes[0].returncode == -signal.SIGKILL, outputs[0]  # killed at its first log, before its commit
    assert [p.returncode for p in processes[1:]] == [0, 0], outputs
    found = rows(tmp_path / "other", lake_uri, "SELECT count(*) AS batches, sum(rows_valid) AS n FROM batches")
    assert found == [{"batches": 6, "n": 6 * 12}]  # every batch of the two others, none of the killed one
    for path in logs[0]:
        ok(tmp_path / "root0", lake_uri, "ingest", str(path))  # the rerun: recovery, then each batch once
    assert rows(tmp_path / "other", lake_uri, "SELECT count(*) AS batches FROM batches") == [{"batches": 9}]
    assert not any((tmp_path / "root0" / "staging").iterdir())


def test_a_lake_location_file_of_a_newer_distill_is_refused_naming_it_and_its_version(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "lake.json").write_text(json.dumps({"format_version": 2, "uri": "s3://bucket/lake"}))
    result, output = distill(home, "s3://bucket/lake", "sql", "SELECT 1 AS one")
    assert result.exit_code != 0
    said = " ".join(output.split())
    assert f"{home / 'lake.json'} is a lake location of format version 2; this Distill reads version 1" in said
    (home / "lake.json").write_text(json.dumps({"format_version": 1, "uri": "s3://bucket/lake", "extra": 1}))
    result, output = distill(home, "s3://bucket/lake", "sql", "SELECT 1 AS one")
    assert result.exit_code != 0 and "is not a valid lake location: extra" in " ".join(output.split())
