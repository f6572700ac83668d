"""A game job's logs staged by its workers at a shared lake and committed by the driver as one version."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.catalog.lake import Lake
from toolkit.game.config import SimulateConfig
from toolkit.game.simulate import simulate
from toolkit.ingest.ingest import ingest_paths
from toolkit.ingest.shards import commit_shards, fetch_logs, staging_for
from toolkit.jobs.config import BackendConfig
from toolkit.layout import Layout

POOL = BackendConfig(kind="pool", workers=2, shard_games=6)


def _simulate(layout: Layout, folder: str, *, backend: BackendConfig = POOL):
    out = layout.home / folder
    return simulate(SimulateConfig(games=12, seed=3, out=out), backend=backend, handoff=staging_for(layout, out))


def _rows(layout: Layout) -> list[tuple]:
    with Lake.open(layout).at() as catalog:
        table = catalog.read(
            "SELECT batch_id, source_file, source_line, game_id, seat, decision_index, action, reward "
            "FROM decisions ORDER BY ALL"
        )
    return [tuple(row.values()) for row in table.to_pylist()]


def test_workers_stage_their_shards_and_the_driver_commits_them_as_one_version_with_the_ingest_rows(
    tmp_path: Path, shared_lake: str, s3_env
) -> None:
    layout = Layout.at(tmp_path / "home")
    played = _simulate(layout, "logs")
    assert len(played.staged) == 2 and not (layout.home / "logs").exists()  # nothing on the driver's disk yet
    bucket = shared_lake.removeprefix("s3://").split("/")[0]
    keys = s3_env.keys(bucket)
    assert all(any(name in key for key in keys) for s in played.staged for name in s.lake_files)
    before = Lake.open(layout).version()

    result = commit_shards(played.staged, layout)

    assert [f.status for f in result.files] == ["ingested", "ingested"]
    with Lake.open(layout) as lake:
        assert lake.version() == before + 1  # one version for the whole job
        [version] = [v for v in lake.history() if v.version == before + 1]
        assert version.operation == "ingest" and sorted(version.batches) == sorted(result.batches)
        assert {b.batch_id for b in lake.batches()} == set(result.batches)
    assert [layout.stored(f) for f in played.files] == [s.recorded for s in played.staged]
    assert all(f.is_file() for f in played.files)  # the logs fetched where a local run writes them
    assert [k for k in s3_env.keys(bucket) if "/_staged/" in k] == ["lake/_staged/"]  # the workers' leftovers cleared
    # the same rows, lineage and batches as the ordinary ingest of the same logs into a local lake
    local = Layout(tmp_path / "local")
    (local.home / "logs").mkdir(parents=True)
    for f in played.files:
        (local.home / "logs" / f.name).write_bytes(f.read_bytes())
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DISTILL_LAKE")
        ingest_paths([local.home / "logs"], local)
        assert _rows(local) == _rows(layout)

    again = commit_shards(played.staged, layout)  # a rerun of the step: the batches are in the lake
    assert [f.status for f in again.files] == ["already_ingested", "already_ingested"]
    assert Lake.open(layout).version() == before + 1


def test_shards_repeating_lake_decisions_are_ingested_from_their_logs_the_ordinary_way(
    tmp_path: Path, shared_lake: str, s3_env
) -> None:
    layout = Layout.at(tmp_path / "home")
    commit_shards(_simulate(layout, "first").staged, layout)
    rows = _rows(layout)
    # the same games cut into other shards: other files (other batches), every decision's key in the lake already
    again = _simulate(layout, "again", backend=BackendConfig(kind="pool", workers=2, shard_games=4))
    result = commit_shards(again.staged, layout)
    assert len(result.files) == 3
    assert all(f.held + f.duplicates == f.report.lines for f in result.files)  # judged as `distill ingest` judges
    assert _rows(layout) == rows  # nothing new in the lake
    keys = s3_env.keys(shared_lake.removeprefix("s3://").split("/")[0])
    assert not [k for k in keys for s in again.staged for name in s.lake_files if k.endswith(name)]  # discarded


def test_the_logs_fetched_when_the_job_returns_and_shards_whose_uploads_are_gone_come_from_them(
    tmp_path: Path, shared_lake: str, s3_env
) -> None:
    layout = Layout.at(tmp_path / "home")
    played = _simulate(layout, "logs")
    fetch_logs(played.staged, layout)  # as the loop's step does once its job returned
    assert all(f.is_file() for f in played.files)
    bucket, prefix = shared_lake.removeprefix("s3://").split("/", 1)
    assert not [k for k in s3_env.keys(bucket) if k.endswith((".jsonl", ".jsonl.zst", ".jsonl.gz"))]
    gone = played.staged[0]  # a vacuum deleted its uncommitted upload (older than an hour), say
    s3_env.client().delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": f"{prefix}/{name}"} for name in gone.lake_files]}
    )
    result = commit_shards(played.staged, layout)
    assert [f.status for f in result.files] == ["ingested", "ingested"]
    assert [f.batch_id for f in result.files] == [s.batch_id for s in played.staged]
    with Lake.open(layout) as lake:
        ingests = [v for v in lake.history() if v.operation == "ingest"]
    assert [v.batches for v in ingests] == [[played.staged[1].batch_id], [gone.batch_id]]  # the job's, then its log


def test_staging_is_for_a_lake_at_a_location_only(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "home")
    assert staging_for(layout, layout.home / "logs") is None


@pytest.mark.parametrize(
    "field, name",
    [
        ("lake_files", ["../../outside.parquet"]),
        ("lake_files", ["/etc/passwd.parquet"]),
        ("lake_files", ["_delta_log/00000000000000000000.json"]),
        ("lake_files", ["source=forge/../../x.parquet"]),
        ("log", "_staged/../../../home/x.jsonl"),
        ("log", "elsewhere/x.jsonl"),
        ("rejects", "s3://bucket/other/rejects.parquet"),
    ],
)
def test_a_staged_record_naming_a_path_out_of_its_place_is_refused(field: str, name: object) -> None:
    """What a run's state records of a worker's staging (read back on a resume) never leads a download or a delete
    out of the staging folder or the table."""
    from pydantic import ValidationError

    from toolkit.ingest.handover import StagedShard
    from toolkit.ingest.parts import FileReport

    good = {
        "recorded": "runs/x/logs/sim-3-part-0000.jsonl",
        "sha256": "0" * 64,
        "size_bytes": 1,
        "batch_id": "b0000000000000000",
        "token": "t" * 32,
        "report": FileReport(path="runs/x/logs/sim-3-part-0000.jsonl"),
        "lake_files": ["source=forge/generation=0/batch-b0000000000000000~tttttttttttt.parquet"],
        "rejects": None,
        "log": "_staged/b0000000000000000~tttttttttttt/sim-3-part-0000.jsonl.zst",
    }
    StagedShard.model_validate(good)
    with pytest.raises(ValidationError, match="is not a"):
        StagedShard.model_validate({**good, field: name})
