"""What a data root contains never leads Distill outside it: symlinks inside the root that lead out, and paths or
names recorded in its files (state, manifests, pointers, results), are refused before anything is read, written
or deleted through them.

Each test builds a data root with one hostile thing in it beside an outside folder whose every file is watched.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from tests.cli.test_names import snapshot
from tests.serve.conftest import client_for
from toolkit.ablate.result import VariantRun
from toolkit.cli.main import app
from toolkit.datasets.dataset import PartFile, read_latest, read_manifest
from toolkit.errors import BuildError, ConfigError, OutsideRootError
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.state import LoopState, RunFolder, now
from toolkit.loop.steps import retain
from toolkit.loop.steps.base import StepContext

runner = CliRunner()
MARKER = "OUTSIDE-MARKER"
FINGERPRINT = "0123456789abcdef"


@pytest.fixture(scope="module")
def lake_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data root whose lake holds six simulated games, and a build of them, ``mix``."""
    home = tmp_path_factory.mktemp("lake") / "home"
    logs = home.parent / "logs"
    assert runner.invoke(app, ["--home", str(home), "simulate", "--games", "6", "--out", str(logs)]).exit_code == 0
    assert runner.invoke(app, ["--home", str(home), "ingest", str(logs)]).exit_code == 0
    assert runner.invoke(app, ["--home", str(home), "build", "--name", "mix"]).exit_code == 0
    return home


@pytest.fixture
def root(tmp_path: Path, lake_home: Path) -> Iterator[tuple[Layout, Path]]:
    """A data root (a copy of ``lake_home``) and an outside folder beside it (a build's files, a victim file),
    unchanged when the test ends."""
    shutil.copytree(lake_home, tmp_path / "home", symlinks=True)
    layout = Layout.at(tmp_path / "home")
    outside = tmp_path / "outside"
    (outside / FINGERPRINT / "train").mkdir(parents=True)
    (outside / "LATEST").write_text(FINGERPRINT + "\n")
    (outside / FINGERPRINT / "manifest.json").write_text(json.dumps({"name": MARKER, "format_version": 1}))
    (outside / "victim.txt").write_text(MARKER)
    (outside / "other").mkdir()
    (outside / "other" / "keep.txt").write_text(MARKER)
    (outside / "generations.jsonl").write_text(json.dumps({"loop": MARKER, "generation": 0}) + "\n")
    (tmp_path / "inputs").mkdir()  # what a test writes or plants outside the root (not watched)
    before = snapshot(tmp_path, leave_out=layout.home, also=tmp_path / "inputs")
    yield layout, outside
    after = snapshot(tmp_path, leave_out=layout.home, also=tmp_path / "inputs")
    assert after == before, "a file outside the data root changed"
    assert (outside / "victim.txt").read_text() == MARKER


def distill(layout: Layout, *args: str):
    result = runner.invoke(app, ["--home", str(layout.home), *args])
    return result, result.stdout + result.stderr


def stopped_run(layout: Layout, name: str) -> RunFolder:
    """A run folder holding the state of a stopped run (nothing else), as a test's starting point."""
    run = RunFolder(layout, name)
    run.root.mkdir(parents=True)
    run.save(LoopState(name=name, status="stopped", started_at=now(), updated_at=now()))
    return run


def link(path: Path, target: Path) -> None:
    """Make ``path`` (in place of what is there) a symlink to ``target``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    path.unlink(missing_ok=True)
    path.symlink_to(target, target_is_directory=target.is_dir())


# Commands that take a name, run on a folder of the data root that is a symlink leading out.
LINKED = {
    "datasets show": ("builds/evil", ["datasets", "show", "evil"]),
    "datasets show --fingerprint": ("builds/evil", ["datasets", "show", "evil", "--fingerprint", FINGERPRINT]),
    "datasets diff": ("builds/evil", ["datasets", "diff", "evil", FINGERPRINT, FINGERPRINT]),
    "datasets rm": ("builds/evil", ["datasets", "rm", "evil", FINGERPRINT]),
    "check dataset": ("builds/evil", ["check", "dataset", "evil"]),
    "check labels": ("builds/evil", ["check", "labels", "evil"]),
    "export": ("builds/evil", ["export", "evil", "--format", "minari"]),
    "train bc --dataset": ("builds/evil", ["train", "bc", "--dataset", "evil"]),
    "build --name": ("builds/evil", ["build", "--name", "evil"]),
    "loop status": ("runs/evil", ["loop", "status", "--name", "evil"]),
    "loop resume": ("runs/evil", ["loop", "resume", "--name", "evil"]),
    "loop history": ("runs/evil", ["loop", "history", "--name", "evil"]),
    "loop stop": ("runs/evil", ["loop", "stop", "--name", "evil"]),
    "ablate --name": ("ablations/evil", ["ablate", "--build", "mix", "--name", "evil", "--vary", "student.epochs=1,2"]),
}


@pytest.mark.parametrize("linked,argv", LINKED.values(), ids=LINKED.keys())
def test_a_named_folder_that_is_a_symlink_leading_out_is_refused(
    root: tuple[Layout, Path], linked: str, argv: list[str]
) -> None:
    layout, outside = root
    link(layout.home / linked, outside)
    result, output = distill(layout, *argv)
    assert result.exit_code != 0, output
    assert "leads outside the data root" in output, output
    assert MARKER not in output and "Traceback" not in output, output


def test_a_build_staging_folder_leading_out_is_never_emptied(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    link(layout.builds / ".staging", outside)  # builds/.staging/other is the outside folder other/
    result, output = distill(layout, "build", "--name", "other")
    assert result.exit_code == 1 and "leads outside the data root" in output, output
    assert (outside / "other" / "keep.txt").exists()


def test_a_lock_file_that_is_a_symlink_is_never_written_through(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    lock = layout.builds / ".locks" / "mix.lock"
    link(lock, outside / "victim.txt")
    result, output = distill(layout, "build", "--name", "mix")
    assert result.exit_code == 1 and "leads outside the data root" in output, output
    lock.unlink()
    inside = layout.home / "notes.txt"  # a link inside the root: still never written through
    inside.write_text("kept")
    link(lock, inside)
    result, output = distill(layout, "build", "--name", "mix")
    assert result.exit_code == 1 and "mix.lock is a symlink" in output, output
    assert inside.read_text() == "kept"


def test_a_symlinked_run_log_or_generation_record_is_not_read(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    link(layout.runs / "evil", outside)
    result, output = distill(layout, "sql", "SELECT * FROM generations", "--json")
    assert result.exit_code == 0, output
    assert json.loads(result.stdout) == [] and MARKER not in output


def test_recorded_paths_resolve_only_inside_the_root_or_under_what_the_user_named(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    assert layout.resolve("runs/a/x.json") == layout.home / "runs/a/x.json"
    moved = Path("/elsewhere/old-home/runs/a/gen-000")  # a root that moved here: the same place under this one
    (layout.runs / "a").mkdir(parents=True)
    assert layout.resolve(moved) == layout.runs / "a" / "gen-000"
    for hostile in ("../outside/victim.txt", "runs/../../outside/victim.txt", str(outside / "victim.txt")):
        with pytest.raises(OutsideRootError, match="leads outside the data root"):
            layout.resolve(hostile)
    assert layout.resolve(outside / "victim.txt", outside=[outside]) == outside / "victim.txt"
    link(layout.runs / "b", outside)
    with pytest.raises(OutsideRootError, match="runs/b/victim.txt leads outside"):
        layout.resolve("runs/b/victim.txt")


def test_retention_deletes_nothing_a_tampered_state_names_outside_the_run(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    config = LoopConfig(name="demo")
    ctx = StepContext(layout, config, layout.runs / "demo" / "out", seed=0, generation=0, attempt=0)
    (layout.runs / "demo").mkdir(parents=True)
    for named in ("../outside/victim.txt", str(outside / "victim.txt")):
        with pytest.raises(OutsideRootError):
            retain.retain_step(ctx, retain.RetainInput(files=[named]))
    link(layout.runs / "demo" / "gen-000", outside)  # the run's own folder, but a link leading out
    with pytest.raises(OutsideRootError):
        retain.retain_step(ctx, retain.RetainInput(files=["runs/demo/gen-000/victim.txt"]))
    link(layout.runs / "demo" / "own.jsonl", layout.home / "catalog.duckdb")  # a link to another file of the root
    with pytest.raises(ConfigError, match="retention deletes only"):
        retain.retain_step(ctx, retain.RetainInput(files=["runs/demo/own.jsonl"]))
    assert (layout.runs / "demo" / "own.jsonl").is_symlink()


def test_a_manifest_latest_or_part_naming_a_path_is_refused(root: tuple[Layout, Path], tmp_path: Path) -> None:
    layout, outside = root
    with pytest.raises(ValidationError):
        PartFile(path="../../outside/victim.txt", rows=1, sha256="0")
    with pytest.raises(ValidationError):
        PartFile(path="/etc/passwd", rows=1, sha256="0")
    layout.build_root("new").mkdir(parents=True)
    layout.latest_pointer("new").write_text("../../outside\n")
    with pytest.raises(BuildError, match="not a build fingerprint"):
        read_latest(layout, "new")
    # a manifest of another build copied into this folder
    folder = layout.build_dir("new", FINGERPRINT)
    (folder / "train").mkdir(parents=True)
    body = {"name": "other", "fingerprint": "abc", "format_version": 1}
    (folder / "manifest.json").write_text(json.dumps(body))
    with pytest.raises(BuildError):
        read_manifest(folder)


def test_a_build_split_folder_leading_out_is_not_read(
    root: tuple[Layout, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    layout, outside = root
    train = layout.build_dir("mix", read_latest(layout, "mix")) / "train"
    moved = tmp_path_factory.mktemp("moved") / "train"
    train.rename(moved)  # the split's files, moved out of the root and linked back
    link(train, moved)
    for argv in (["check", "dataset", "mix"], ["train", "bc", "--dataset", "mix", "--epochs", "1"]):
        result, output = distill(layout, *argv)
        assert result.exit_code == 1 and "leads outside its build" in output, (argv, output)


def test_a_variant_result_naming_a_path_is_refused() -> None:
    base = {"key": "0123abcd", "checkpoint": "student.json", "holdout_accuracy": 0.5, "train_rows": 1, "epochs": 1}
    VariantRun(**base, evaluations={"t": "eval-t.json"}, seconds=1.0)
    for hostile in ({"evaluations": {"t": "../../x.json"}}, {"checkpoint": "/etc/passwd"}, {"key": "../x"}):
        with pytest.raises(ValidationError):
            VariantRun(**{**base, "evaluations": {}, "seconds": 1.0, **hostile})


def test_a_run_whose_config_names_files_outside_is_not_resumed_from_the_dashboard(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    run = RunFolder(layout, "old")  # a run started from the command line on logs outside the root
    run.root.mkdir(parents=True)
    config = LoopConfig(name="old", bootstrap={"logs": [outside]}).recorded(layout)
    run.config_path.write_text(config.model_dump_json())
    run.save(LoopState(name="old", status="stopped", started_at=now(), updated_at=now()))
    answer = client_for(layout).post("/api/distill/resume", json={"name": "old"})
    assert answer.status_code == 422 and "outside the data root" in answer.text, answer.text
    assert run.load().status == "stopped" and not run.log_path.exists()  # nothing spawned


def test_a_run_folder_holding_another_runs_config_is_not_resumed(root: tuple[Layout, Path]) -> None:
    layout, _ = root
    run = RunFolder(layout, "old")
    run.root.mkdir(parents=True)
    run.config_path.write_text(LoopConfig(name="other").model_dump_json())
    run.save(LoopState(name="old", status="stopped", started_at=now(), updated_at=now()))
    result, output = distill(layout, "loop", "resume", "--name", "old")
    assert result.exit_code == 2 and "is the config of run 'other', not of 'old'" in output, output


def test_nothing_writes_through_a_symlinked_loop_request(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    run = RunFolder(layout, "old")
    run.root.mkdir(parents=True)
    os.symlink(outside / "victim.txt", run.root / "STOP")
    with pytest.raises(OutsideRootError):
        run.request("STOP")
    inside = layout.home / "notes.txt"
    inside.write_text("kept")
    os.symlink(inside, run.root / "PAUSE")
    run.request("PAUSE")  # a link inside the root is replaced, never written through
    assert not (run.root / "PAUSE").is_symlink() and inside.read_text() == "kept"


# -- what a hostile tester found after the first round (each failed before its fix) --------------------------------


def test_a_leftover_intent_never_deletes_through_a_quarantine_folder_leading_out(root: tuple[Layout, Path]) -> None:
    from toolkit.catalog.intent import TAIL_BYTES

    layout, outside = root
    shutil.rmtree(layout.quarantine, ignore_errors=True)
    link(layout.home / "quarantine", outside)
    victim = outside / "victim.txt"
    tail = hashlib.sha256(victim.read_bytes()[-TAIL_BYTES:]).hexdigest()
    staged = layout.home / "staging" / "bdeadbeef"
    staged.mkdir(parents=True)
    files = [{"name": "quarantine/victim.txt", "size": victim.stat().st_size, "tail_sha256": tail}]
    (staged / "intent.json").write_text(json.dumps({"format": 2, "token": "0" * 32, "base_version": 0, "files": files}))
    distill(layout, "lake", "compact")  # a writer: recovery runs (the command may then stop at the link)
    assert victim.read_text() == MARKER


def test_an_ingest_never_writes_through_a_quarantine_folder_leading_out(
    root: tuple[Layout, Path], tmp_path: Path
) -> None:
    layout, outside = root
    shutil.rmtree(layout.quarantine, ignore_errors=True)
    link(layout.home / "quarantine", outside)
    bad = tmp_path / "inputs" / "bad.jsonl"
    bad.write_text('{"not": "a decision"}\n')
    result, output = distill(layout, "ingest", str(bad))
    assert result.exit_code == 1 and "leads outside the data root" in output, output


@pytest.mark.parametrize("name", ["catalog.duckdb", "catalog.duckdb.wal", "catalog.read.duckdb"])
def test_a_catalog_file_leading_out_is_refused(root: tuple[Layout, Path], name: str, tmp_path: Path) -> None:
    layout, outside = root
    link(layout.home / name, outside / "new.duckdb")  # dangling: DuckDB would create it out there
    result, output = distill(layout, "ingest", str(log_file(tmp_path / "inputs")))
    assert result.exit_code == 1 and "leads outside the data root" in output, output
    assert not (outside / "new.duckdb").exists()


def log_file(folder: Path) -> Path:
    from tests.datasets.conftest import game_records

    path = folder / "more.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in game_records("more-0")))
    return path


def test_an_atomic_write_never_writes_through_a_planted_temporary_name(root: tuple[Layout, Path]) -> None:
    from toolkit.storage import write_text_atomic

    layout, outside = root
    target = layout.home / "note.json"
    for pid in {os.getpid(), *range(1, 64)}:  # the names a pid-named temporary would take
        link(layout.home / f".note.json.{pid}.tmp", outside / "victim.txt")
    link(target, outside / "victim.txt")
    write_text_atomic(target, "{}")
    assert target.read_text() == "{}" and not target.is_symlink()


def test_training_never_writes_through_a_runs_train_folder_leading_out(root: tuple[Layout, Path]) -> None:
    layout, outside = root
    link(layout.runs / "train", outside)
    result, output = distill(layout, "train", "bc", "--dataset", "mix", "--epochs", "1")
    assert result.exit_code == 1 and "leads outside the data root" in output, output


def test_a_climb_out_of_a_named_folder_is_not_under_it(root: tuple[Layout, Path], tmp_path: Path) -> None:
    layout, outside = root
    named = tmp_path / "inputs" / "named"
    named.mkdir()
    with pytest.raises(OutsideRootError):
        layout.resolve(f"{named}/../../outside/victim.txt", outside=[named])
    link(named / "out", outside)
    with pytest.raises(OutsideRootError):
        layout.resolve(named / "out" / "victim.txt", outside=[named])
    (named / "out").unlink()
    assert layout.resolve(named / "keep.txt", outside=[named]) == named / "keep.txt"


def test_a_quarantine_file_leading_out_is_not_read(root: tuple[Layout, Path], tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    layout, _ = root
    batch = json.loads(distill(layout, "sql", "SELECT batch_id FROM batches LIMIT 1", "--json")[0].stdout)[0]
    planted = tmp_path / "inputs" / "q"
    planted.mkdir()
    pq.write_table(pa.table({"raw": [MARKER.encode()]}), planted / "rejects.parquet")
    shutil.rmtree(layout.quarantine / f"batch={batch['batch_id']}", ignore_errors=True)
    link(layout.quarantine / f"batch={batch['batch_id']}", planted)
    result, output = distill(layout, "sql", "SELECT * FROM rejects")
    assert MARKER not in output, output


@pytest.mark.parametrize("name", ["state.json", "generations.jsonl", "config.json"])
def test_a_run_file_leading_out_is_not_read(root: tuple[Layout, Path], name: str, tmp_path: Path) -> None:
    layout, _ = root
    outside = tmp_path / "inputs"
    run = stopped_run(layout, "t")
    (outside / "state.json").write_text(json.dumps({"format_version": 3, "name": "t", "message": MARKER}))
    link(run.root / name, outside / "state.json")
    for argv in (["loop", "status", "--name", "t"], ["loop", "history", "--name", "t"]):
        result, output = distill(layout, *argv)
        assert result.exit_code != 0 and MARKER not in output and "Traceback" not in output, output


def test_a_manifest_leading_out_is_not_read(root: tuple[Layout, Path], tmp_path: Path) -> None:
    layout, _ = root
    outside = tmp_path / "inputs"
    folder = layout.build_dir("mix", read_latest(layout, "mix"))
    (outside / "manifest.json").write_text(json.dumps({"format_version": 1, "name": MARKER}))
    (folder / "manifest.json").unlink()
    link(folder / "manifest.json", outside / "manifest.json")
    result, output = distill(layout, "datasets", "show", "mix")
    assert result.exit_code == 1 and "leads outside its build" in output and MARKER not in output, output


def test_a_restore_never_makes_a_file_outside_the_table_live(root: tuple[Layout, Path], tmp_path: Path) -> None:
    layout, _ = root
    batch = json.loads(distill(layout, "sql", "SELECT batch_id FROM batches LIMIT 1", "--json")[0].stdout)[0]
    assert distill(layout, "lake", "retire", batch["batch_id"], "--reason", "x")[0].exit_code == 0
    partition = next(layout.lake.rglob("*.parquet")).parent
    moved = tmp_path / "inputs" / "partition"
    shutil.copytree(partition, moved)
    shutil.rmtree(partition)
    link(partition, moved)
    result, output = distill(layout, "lake", "restore", batch["batch_id"])
    assert result.exit_code == 1 and "outside the table" in output, output


@pytest.mark.parametrize("line", ["not json {", "[1, 2]", '{"generation": "../x"}', '{"loop": "t", "generation": 0}'])
def test_a_damaged_generation_record_is_a_clear_error(root: tuple[Layout, Path], line: str) -> None:
    layout, _ = root
    run = stopped_run(layout, "t")
    run.generations_path.write_text(line + "\n")
    result, output = distill(layout, "loop", "history", "--name", "t")
    assert result.exit_code == 2 and "generations.jsonl:1 is not a generation record" in output, output
    assert "Traceback" not in output
    page = client_for(layout).get("/runs/t")
    assert page.status_code in (200, 404, 422, 500) and "Traceback" not in page.text


# -- round 3 -------------------------------------------------------------------------------------------------------


def test_a_data_root_whose_path_is_a_pattern_is_refused(tmp_path: Path) -> None:
    for name in ("st*r", "a?b", "x[12]", "{a,b}"):
        result, output = distill(Layout(tmp_path / name), "sql", "SELECT 1")
        assert result.exit_code == 2 and "in its path" in output, (name, output)


def test_a_run_folder_named_as_a_pattern_is_not_read_by_the_generations_view(
    root: tuple[Layout, Path], tmp_path: Path
) -> None:
    layout, _ = root
    planted = tmp_path / "inputs" / "gen"
    planted.mkdir()
    (planted / "generations.jsonl").write_text(json.dumps({"loop": MARKER, "generation": 0}) + "\n")
    link(layout.runs / "evil", planted)
    (layout.runs / "*").mkdir()
    (layout.runs / "*" / "generations.jsonl").write_text(json.dumps({"loop": MARKER, "generation": 1}) + "\n")
    result, output = distill(layout, "sql", "SELECT * FROM generations", "--json")
    assert result.exit_code == 0 and MARKER not in output, output


def test_the_dashboard_draws_no_curve_from_a_file_a_link_leads_out_to(
    root: tuple[Layout, Path], tmp_path: Path
) -> None:
    from toolkit.serve.curves import training_curves

    layout, _ = root
    run = RunFolder(layout, "t")
    step = run.gen_dir(0, 0) / "selfplay"
    step.mkdir(parents=True)
    planted = tmp_path / "inputs" / "metrics.csv"
    planted.write_text("steps,win_rate\n1,0.5\n2,0.7\n")
    (step / "ppo-x-metrics-update.csv").symlink_to(planted)
    assert training_curves(run, 1) == []


@pytest.mark.parametrize("where", ["lake.json", "builds/mix/LATEST", "runs/t/state.json", "runs/t/generations.jsonl"])
def test_a_fifo_in_place_of_a_file_is_an_error_not_a_hang(root: tuple[Layout, Path], where: str) -> None:
    layout, _ = root
    stopped_run(layout, "t")
    target = layout.home / where
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    argv = {
        "lake.json": ["sql", "SELECT 1"],
        "builds/mix/LATEST": ["datasets", "show", "mix"],
        "runs/t/state.json": ["loop", "status", "--name", "t"],
        "runs/t/generations.jsonl": ["loop", "history", "--name", "t"],
    }[where]
    result, output = distill(layout, *argv)  # a hang fails the suite's own timeout
    assert result.exit_code != 0 and "not a regular file" in output and "Traceback" not in output, output
