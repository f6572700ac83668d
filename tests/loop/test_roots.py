"""A data root moves: nothing in it names its place, so a copy resumes, evaluates, builds, exports and serves
with the original deleted. And the loop deletes its own logs once ingested, never a user's."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.factories import SMALL_SHARDS_BACKEND, normalised, tiny
from toolkit.catalog.store import Catalog
from toolkit.cli.main import app
from toolkit.layout import ROOT_FOLDERS, Layout
from toolkit.loop.run import resume_loop, run_loop
from toolkit.loop.state import RunFolder
from toolkit.progress import Progress

# What still records the data root's absolute path: the Delta log's table-creation commit (its commitInfo names
# the table's location, written by delta-rs; the lake stage's). Nothing reads it: the log's files are relative.
DELTA_LOG = "lake/_delta_log/"


class _Crash(Exception):
    pass


def _crash_before(step: str, generation: int) -> Callable[[Progress], None]:
    def crash(event: Progress) -> None:
        if event.item.startswith(f"gen-{generation:03d}") and event.item.endswith(f": {step}"):
            raise _Crash(event.item)

    return crash


def _naming(home: Path, text: str) -> list[str]:
    """The files under ``home`` whose bytes hold ``text``."""
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Layout, Path]:
    """A tiny loop interrupted in generation 1 in one root, copied to another, the first deleted, resumed there:
    (the new root, the old root's path)."""
    base = tmp_path_factory.mktemp("roots")
    first = Layout.at(base / "first")
    with pytest.raises(_Crash):
        run_loop(first, tiny(), progress=_crash_before("student_gate", generation=1))
    shutil.copytree(first.home, base / "second")
    shutil.rmtree(first.home)
    second = Layout.at(base / "second")
    assert resume_loop(second, "tiny").status == "finished"
    return second, first.home


def test_a_copied_root_resumes_where_the_original_stopped_and_reaches_the_same_history(moved, loop_home) -> None:
    layout, _ = moved
    assert normalised(RunFolder(layout, "tiny").records()) == normalised(RunFolder(loop_home, "tiny").records())


def test_a_checkpoint_named_by_the_copys_state_evaluates_from_it(moved) -> None:
    layout, _ = moved
    student = RunFolder(layout, "tiny").load().current_student
    assert student is not None and student.startswith("runs/tiny/")  # relative to the data root
    result = CliRunner().invoke(
        app,
        [
            "--home",
            str(layout.home),
            "evaluate",
            "--policy",
            student,
            "--vs",
            f"{student},heuristic,{student}",  # checkpoints at the table too, found under the data root
            "--games",
            "8",
            "--backend",
            "inprocess",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    evaluated = json.loads(result.stdout)
    assert evaluated["games"] == 8 and evaluated["opponents"][1] == "heuristic"


def test_the_copy_builds_and_exports_from_its_lake(moved, tmp_path: Path) -> None:
    layout, _ = moved
    home = ["--home", str(layout.home)]
    built = CliRunner().invoke(app, [*home, "build", "--name", "after-move", "--json"])
    assert built.exit_code == 0, built.output
    exported = CliRunner().invoke(app, [*home, "export", "loop-tiny", "--out", str(tmp_path), "--json"])
    assert exported.exit_code == 0, exported.output


def test_the_dashboard_serves_the_copy(moved) -> None:
    from toolkit.serve.app import create_app
    from toolkit.serve.security import Access

    layout, _ = moved
    client = TestClient(create_app(layout, Access.for_bind("127.0.0.1", 8765, None)), base_url="http://127.0.0.1:8765")
    for page in ("/", "/runs/tiny", "/lake", "/api/runs", "/api/lake", "/api/distill/generations?name=tiny"):
        assert client.get(page).status_code == 200, page
    detail = client.get("/api/distill/run", params={"name": "tiny"}).json()
    report = next(link["reports"][0] for link in detail["gates"] if link["reports"])
    assert client.get(f"/reports/{report}").status_code == 200
    assert detail["tensorboard"] == f"tensorboard --logdir {layout.home / 'runs' / 'tiny'}"


def test_nothing_in_a_root_names_its_path_but_the_delta_logs_creation(moved) -> None:
    layout, old = moved
    for home in (old, layout.home):  # what the first root wrote, and what the resumed run wrote
        naming = _naming(layout.home, str(home))
        assert all(name.startswith(DELTA_LOG) for name in naming), naming


def test_the_loop_deleted_its_own_logs_once_ingested(moved) -> None:
    layout, _ = moved
    folder = layout.runs / "tiny"
    assert not [p for p in folder.rglob("*") if p.is_file() and p.name.startswith(("sim-", "ml-decisions-"))]
    state = RunFolder(layout, "tiny").load()
    for gen, step in ((0, "simulate"), (1, "selfplay")):
        steps = state.generations[gen].steps
        deleted = steps["0:retain"].result["deleted"]
        assert deleted and all(f.endswith(".jsonl.zst") for f in deleted)
        assert deleted == (steps[f"0:{step}"].result.get("files") or steps[f"0:{step}"].result["export"]["files"])
        with Catalog.open(layout) as catalog:  # the lake holds their rows
            batches = steps["0:ingest"].result["batches"]
            rows = catalog.con.execute(
                f"SELECT count(*) FROM decisions WHERE batch_id IN ({', '.join('?' * len(batches))})", batches
            ).fetchall()[0][0]
        assert rows == steps["0:ingest"].result["rows"] > 0


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_loop_never_touches_a_users_logs(tmp_path: Path) -> None:
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate

    players = ("heuristic", "tuned", "heuristic", "tuned")
    given = simulate(SimulateConfig(games=30, players=players, seed=5, out=tmp_path / "forge", max_rounds=20)).files
    before = {path: _sha256(path) for path in given}
    layout = Layout.at(tmp_path / "home")
    logs = [str(p) for p in given]
    with pytest.raises(_Crash):
        run_loop(layout, tiny(name="mine", bootstrap={"logs": logs}), progress=_crash_before("ppo_gate", 1))
    assert {path: _sha256(path) for path in given} == before
    state = RunFolder(layout, "mine").load()
    steps = state.generations[0].steps
    assert steps["0:simulate"].input["logs"] == logs and "0:retain" not in steps
    assert "0:retain" in state.generations[1].steps  # its own export is deleted


def test_a_deletion_cut_short_is_finished_on_resume(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    with pytest.raises(_Crash):
        run_loop(layout, tiny(backend=SMALL_SHARDS_BACKEND), progress=_crash_before("retain", generation=0))
    written = RunFolder(layout, "tiny").load().generations[0].steps["0:simulate"].result["files"]
    assert len(written) > 1 and all(layout.resolve(f).is_file() for f in written)
    layout.resolve(written[0]).unlink()  # as if the step died after its first file
    with pytest.raises(_Crash):
        resume_loop(layout, "tiny", progress=_crash_before("data_gate", generation=0))
    retained = RunFolder(layout, "tiny").load().generations[0].steps["0:retain"].result
    assert retained["deleted"] == written and not any(layout.resolve(f).exists() for f in written)


def test_retention_refuses_a_file_outside_the_runs_own_folder(tmp_path: Path) -> None:
    from toolkit.errors import ConfigError, OutsideRootError
    from toolkit.loop.steps import retain
    from toolkit.loop.steps.base import StepContext

    layout = Layout.at(tmp_path / "home")
    users = tmp_path / "forge.jsonl"
    users.write_text("{}\n")
    context = StepContext(layout, tiny(), layout.runs / "tiny" / "retain", seed=0, generation=0, attempt=0)
    with pytest.raises(OutsideRootError, match="leads outside the data root"):
        retain.retain_step(context, retain.RetainInput(files=[str(users)]))
    with pytest.raises(ConfigError, match="only the loop's own logs"):
        retain.retain_step(context, retain.RetainInput(files=["runs/other/sim.jsonl.zst"]))
    assert users.exists()


@pytest.mark.parametrize(("retention", "suffix"), [("keep", ".jsonl"), ("compress", ".jsonl.zst")])
def test_kept_logs_stay_plain_or_compressed(tmp_path: Path, retention: str, suffix: str) -> None:
    layout = Layout.at(tmp_path / "home")
    with pytest.raises(_Crash):
        run_loop(layout, tiny(retention=retention), progress=_crash_before("data_gate", generation=0))
    steps = RunFolder(layout, "tiny").load().generations[0].steps
    written = steps["0:simulate"].result["files"]
    assert written and all(f.endswith(suffix) and layout.resolve(f).is_file() for f in written)
    assert "0:retain" not in steps


def _absolute(value: Any, root: str) -> Any:
    """``value`` with its root-relative paths made absolute under ``root``: the version-2 form."""
    if isinstance(value, dict):
        return {k: _absolute(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v, root) for v in value]
    if isinstance(value, str) and value.split("/", 1)[0] in ROOT_FOLDERS and "/" in value:
        return f"{root}/{value}"
    return value


def test_a_version_2_state_from_a_root_that_moved_reads_with_its_paths_relative(loop_home, tmp_path: Path) -> None:
    original = RunFolder(loop_home, "tiny")
    state = json.loads(original.state_path.read_text())
    old = {**_absolute(state, "/gone/old-home"), "format_version": 2}
    old["generations"][0]["steps"]["0:simulate"]["input"]["logs"] = ["/elsewhere/forge.jsonl"]  # a user's: kept
    assert json.dumps(state) != json.dumps(old)
    layout = Layout.at(tmp_path / "home")
    moved = RunFolder(layout, "tiny")
    moved.root.mkdir(parents=True)
    moved.state_path.write_text(json.dumps(old))
    moved.generations_path.write_text(
        "".join(json.dumps(_absolute(r, "/gone/old-home")) + "\n" for r in original.records())
    )
    expected = original.load()
    expected.generations[0].steps["0:simulate"].input["logs"] = ["/elsewhere/forge.jsonl"]
    assert moved.load() == expected
    assert moved.records() == original.records()
