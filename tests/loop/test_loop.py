"""The closed loop end to end on a tiny config: gates, rejection, resume, requests, records."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.factories import SMALL_SHARDS, SMALL_SHARDS_BACKEND, TINY, normalised, tiny
from toolkit.catalog import Catalog, Lake
from toolkit.cli.main import app
from toolkit.layout import Layout
from toolkit.loop.run import resume_loop, run_loop
from toolkit.loop.state import PAUSE, RunFolder
from toolkit.progress import Progress


@pytest.fixture(scope="module")
def reference(loop_home: Layout) -> tuple[Layout, list[dict[str, Any]]]:
    return loop_home, RunFolder(loop_home, "tiny").records()


def _batch_status(layout: Layout, batch: str) -> tuple[str, str | None, int]:
    with Catalog.open(layout) as catalog:
        status, reason = catalog.con.execute(
            "SELECT status, status_reason FROM batches WHERE batch_id = ?", [batch]
        ).fetchall()[0]
        (rows,) = catalog.con.execute("SELECT count(*) FROM decisions WHERE batch_id = ?", [batch]).fetchall()[0]
    return status, reason, rows


def test_a_tiny_loop_runs_every_step_and_records_every_field(reference) -> None:
    layout, records = reference
    assert [r["generation"] for r in records] == [0, 1] and [r["outcome"] for r in records] == ["passed", "passed"]
    assert records[1]["teacher_promoted"] and records[1]["student_promoted"]
    steps = records[1]["attempts"][0]["steps"]
    order = [key.split(":")[1] for key in RunFolder(layout, "tiny").load().generations[1].steps]
    assert order == list(GENERATION_STEPS) and set(steps) == set(GENERATION_STEPS)
    assert steps["ppo_gate"]["passed"] and steps["data_gate"]["passed"] and steps["accuracy_guard"]["passed"]
    assert steps["selfplay"]["export"]["exported_episodes"] >= 16  # every game of the teacher, losses too
    assert [e["name"] for e in steps["selfplay"]["league"]] == ["random", "self", "gen-000-student"]
    played = {o["name"]: o for o in steps["selfplay"]["opponents"]}  # the training games PFSP weighs by
    assert set(played) <= {"random", "self", "gen-000-student"} and all(
        o["games"] >= o["wins"] for o in played.values()
    )
    beat = steps["student_gate"]["head_to_head"]
    assert beat["tables"][0]["opponents"] == [Path(records[0]["student"]).stem] * 3  # three of the previous student
    assert records[1]["exploitability"] is None  # the probe is off in the tiny config
    assert set(records[1]["rows_by_source"]) == {"forge", "ppo"}
    assert records[1]["holdout_accuracy"] is not None and records[1]["previous_accuracy"] is not None
    for record in records:  # fixed-size evaluations of the promoted models, on the same deals
        assert record["evaluation"]["student"]["heuristic"]["games"] == 16
    assert records[1]["evaluation"]["ppo"]["tuned"]["games"] == 16 and "ppo" not in records[0]["evaluation"]
    assert records[1]["student_gain"]["heuristic"]["deals"] == 4 and records[0]["student_gain"] is None
    assert {"gen-001-ppo", "gen-001-student", "gen-000-student", "heuristic"} <= {
        s["name"] for s in records[1]["ratings"]
    }
    for batch in steps["ingest"]["batches"]:
        assert _batch_status(layout, batch)[0] == "accepted"
    result = CliRunner().invoke(
        app,
        [
            "--home",
            str(layout.home),
            "sql",
            "--json",
            "SELECT generation, outcome FROM generations ORDER BY generation",
        ],
    )
    assert json.loads(result.output) == [{"generation": 0, "outcome": "passed"}, {"generation": 1, "outcome": "passed"}]
    shown = CliRunner().invoke(app, ["--home", str(layout.home), "loop", "history", "--name", "tiny"])
    assert shown.exit_code == 0 and "gen-001-ppo" in shown.output


def test_the_exploiter_probe_puts_the_students_exploitability_in_the_history_and_the_status(tmp_path: Path) -> None:
    from toolkit.loop.run import request
    from toolkit.loop.status import run_status

    layout = Layout.at(tmp_path / "home")

    def stop_after_the_probe(event: Progress) -> None:
        if event.item.endswith(": exploit"):
            request(layout, "probed", "stop")  # honoured at the next step boundary: generation 1's first step

    config = tiny(name="probed", exploiter={"total_steps": 128, "games": 8})
    state = run_loop(layout, config, progress=stop_after_the_probe)
    [record] = RunFolder(layout, "probed").records()
    assert state.status == "stopped" and record["generation"] == 0
    probe = record["attempts"][-1]["steps"]["exploit"]
    assert probe["target"] == record["student"] and probe["games"] == 8 and probe["steps"] >= 128
    assert Path(layout.resolve(probe["exploiter"])).is_file()  # a fresh PPO run's final card
    assert record["exploitability"] == probe["exploitability"] == probe["wins"] / probe["games"]
    assert record["exploitability_low"] <= record["exploitability"] <= record["exploitability_high"]
    assert run_status(layout, "probed").exploitability == record["exploitability"]
    shown = CliRunner().invoke(app, ["--home", str(layout.home), "loop", "status", "--name", "probed"])
    assert shown.exit_code == 0 and f"exploitability: {record['exploitability']}" in shown.output
    from toolkit.serve.views import run_detail  # the dashboard's run page shows it per generation

    [row] = run_detail(layout, "probed").rows
    assert (row.exploitability.rate, row.exploitability.steps) == (record["exploitability"], probe["steps"])


def test_steps_are_saved_with_typed_inputs_and_reloaded_as_their_types(reference) -> None:
    from toolkit.loop.steps.build import BuildStepResult
    from toolkit.loop.steps.selfplay import SelfPlayInput

    layout, _ = reference
    state = RunFolder(layout, "tiny").load()
    gen = state.generations[1]
    play = gen.steps["0:selfplay"]
    checkpoint = state.generations[0].steps["0:train_student"].result["checkpoint"]
    assert SelfPlayInput.model_validate(play.input).warm_start == checkpoint
    assert not Path(checkpoint).is_absolute() and layout.resolve(checkpoint).is_file()  # relative to the data root
    assert BuildStepResult.model_validate(gen.steps["0:build"].result).rows_by_source["ppo"] > 0
    assert [p.name for p in state.promoted] == ["gen-000-student", "gen-001-ppo", "gen-001-student"]


@pytest.mark.parametrize(
    ("changes", "gate"),
    [
        ({"floor": {"win_rate": 0.99, "games": 8}}, "PPO gate: floor"),
        ({"head_to_head": {**TINY["head_to_head"], "delta0": 0.9, "delta1": 1.0}}, "PPO gate: head to head"),
        ({"data_gate_entropy_floor": 1.0}, "data gate"),  # no policy plays all 8 actions evenly
    ],
)
def test_a_failing_teacher_gate_rejects_the_batch_keeps_it_and_builds_without_it(tmp_path: Path, changes, gate) -> None:
    layout = Layout.at(tmp_path / "home")
    state = run_loop(layout, tiny(name="failing", **changes))
    record = RunFolder(layout, "failing").records()[1]
    assert state.status == "finished" and record["outcome"] == "failed" and record["reason"].startswith(gate)
    assert not record["teacher_promoted"] and not record["student_promoted"] and record["ppo"] is None
    batches = record["attempts"][0]["steps"]["ingest"]["batches"]
    assert batches
    for batch in batches:
        status, reason, rows = _batch_status(layout, batch)
        assert status == "rejected" and reason.startswith(gate) and rows > 0  # kept, with the reason
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig

    inputs = {i.batch_id for i in build_dataset(layout, BuildConfig(name="after")).manifest.inputs}
    assert not inputs & set(batches)


def test_a_student_no_better_than_the_last_is_not_promoted_but_the_teacher_is(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    # +90% wins a game over the last student is out of reach where the heuristics win most games (against random
    # players a tiny student may win every deal of a short gate)
    impossible = {**TINY["strength_gate"], "delta0": 0.9, "delta1": 1.0, "opponents": ["heuristic"] * 3}
    state = run_loop(layout, tiny(name="kept", student_gate=impossible))
    first, record = RunFolder(layout, "kept").records()
    assert state.status == "finished" and record["outcome"] == "passed"
    assert record["teacher_promoted"] and not record["student_promoted"]
    assert record["student"] == first["student"] and "student kept: scripted floor: no better" in record["reason"]
    gate = record["attempts"][0]["steps"]["student_gate"]
    assert gate["head_to_head"]["passed"] and gate["strength"]["decision"] == "accept_h0" and not gate["passed"]
    for batch in record["attempts"][0]["steps"]["ingest"]["batches"]:
        assert _batch_status(layout, batch)[0] == "accepted"  # the teacher's data is merged all the same


def test_a_first_student_below_the_accuracy_floor_stops_the_run(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    state = run_loop(layout, tiny(name="guarded", accuracy_guard={"floor": 0.99}))
    [record] = RunFolder(layout, "guarded").records()
    assert state.status == "failed" and "accuracy guard" in state.message
    assert record["outcome"] == "failed" and record["student"] is None and record["evaluation"] is None


class _Crash(Exception):
    pass


GENERATION_STEPS = [
    "selfplay",
    "ingest",
    "retain",
    "ppo_gate",
    "data_gate",
    "accept",
    "build",
    "train_student",
    "accuracy_guard",
    "student_gate",
    "evaluate",
    "ratings",
]


def _crash_at(step: str) -> Any:
    def crash(event: Progress) -> None:
        if event.item.startswith("gen-001") and event.item.endswith(f": {step}"):
            raise _Crash(event.item)

    return crash


@pytest.fixture(scope="module")
def crashed_at(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Data roots whose tiny run crashed in generation 1 as each of its steps began, by step: what each resume below
    starts from, a copy each (a copied root resumes as the original: tests/loop/test_roots.py).

    One chain makes them all: the run crashes as generation 1 begins (generation 0 done), and each root after the
    first is the one before it resumed until it crashed at the next step (a root is copied before it resumes), so
    generation 1's steps run once here instead of once per root; each test then resumes its root to the end."""
    base = tmp_path_factory.mktemp("crashed")
    layout = Layout.at(base / GENERATION_STEPS[0] / "home")
    with pytest.raises(_Crash):
        run_loop(layout, tiny(), progress=_crash_at(GENERATION_STEPS[0]))
    roots = {GENERATION_STEPS[0]: layout.home}
    for step in GENERATION_STEPS[1:]:
        layout = _copy_of(layout.home, base / step)
        with pytest.raises(_Crash):
            resume_loop(layout, "tiny", progress=_crash_at(step))
        roots[step] = layout.home
    return roots


def _copy_of(root: Path, tmp_path: Path) -> Layout:
    shutil.copytree(root, tmp_path / "home", symlinks=True)
    return Layout.at(tmp_path / "home")


def test_a_run_that_finishes_while_its_status_is_read_shows_as_finished(tmp_path: Path, reference, monkeypatch) -> None:
    from toolkit.loop.status import run_status

    home = _copy_of(reference[0].home, tmp_path)
    run = RunFolder(home, "tiny")
    last = run.load()
    assert last.status == "finished"
    running = contextlib.ExitStack()
    running.enter_context(run.hold())  # this process runs the loop ...
    run.save(last.model_copy(update={"status": "running"}))
    assert run_status(home, "tiny").status == "running"
    looked, ended = RunFolder.process, []

    def finished_as_it_looks(self: RunFolder) -> int | None:  # ... and ends the moment the status looks for it
        if not ended:
            run.save(last)
            running.close()
            ended.append(True)
        return looked(self)

    monkeypatch.setattr(RunFolder, "process", finished_as_it_looks)
    status = run_status(home, "tiny")
    assert (status.status, status.pid) == ("finished", None)  # not "interrupted": its last state was read


def test_a_run_shows_as_running_while_its_process_holds_its_lock_whatever_its_last_state(
    tmp_path: Path, reference
) -> None:
    from toolkit.loop.status import run_status

    home = _copy_of(reference[0].home, tmp_path)
    run = RunFolder(home, "tiny")
    last = run.load()
    for saved in ("paused", "stopped", "finished"):  # saved as the loop lets go of its lock (or resumed, not yet saved)
        run.save(last.model_copy(update={"status": saved}))
        with run.hold():
            status = run_status(home, "tiny")
            assert (status.status, status.pid, status.controls) == ("running", os.getpid(), ["pause", "stop"])
        status = run_status(home, "tiny")
        assert (status.status, status.pid) == (saved, None)  # let go: its last state shows
        controls = {"paused": ["resume", "stop"], "stopped": ["resume"], "finished": []}
        assert status.controls == controls[saved]


@pytest.mark.parametrize("step", GENERATION_STEPS)
def test_resume_after_a_crash_at_a_step_gives_the_same_history(
    tmp_path: Path, reference, crashed_at: dict[str, Path], step: str
) -> None:
    layout = _copy_of(crashed_at[step], tmp_path)
    state = resume_loop(layout, "tiny")
    assert state.status == "finished"
    assert normalised(RunFolder(layout, "tiny").records()) == normalised(reference[1])


def test_resume_after_a_crash_between_the_ingest_commit_and_its_saved_result_gives_the_same_history(
    tmp_path: Path, reference, crashed_at: dict[str, Path]
) -> None:
    layout = _copy_of(crashed_at["retain"], tmp_path)
    run = RunFolder(layout, "tiny")
    state = run.load()
    del state.generations[1].steps["0:ingest"]  # the catalog holds the batch; the state never heard of it
    run.save(state)
    assert resume_loop(layout, "tiny").status == "finished"
    assert normalised(RunFolder(layout, "tiny").records()) == normalised(reference[1])


def test_resume_after_kill_9_mid_run_gives_the_same_history(tmp_path: Path, reference) -> None:
    layout = Layout.at(tmp_path / "home")
    code = (
        "import sys; sys.path.insert(0, '.'); from tests.factories import tiny; from toolkit.layout import Layout; "
        f"from toolkit.loop.run import run_loop; run_loop(Layout.at({str(layout.home)!r}), tiny())"
    )
    events = RunFolder(layout, "tiny").events_path
    process = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if events.exists() and len(events.read_text().splitlines()) >= 10:  # in generation 1's self-play or after
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    state = resume_loop(layout, "tiny")
    assert state.status == "finished"
    assert normalised(RunFolder(layout, "tiny").records()) == normalised(reference[1])


@pytest.fixture(scope="module")
def small_shards_reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The records of the tiny run in process with :data:`SMALL_SHARDS` (several shards in every step that plays
    games): what the pool's runs below must record (a shard's games are dealt from its own stream)."""
    layout = Layout.at(tmp_path_factory.mktemp("small-shards") / "home")
    state = run_loop(layout, tiny(backend=SMALL_SHARDS_BACKEND))
    assert state.status == "finished", state.message
    return RunFolder(layout, "tiny").records()


def test_the_loop_on_the_process_pool_records_what_it_records_in_process(
    tmp_path: Path, small_shards_reference
) -> None:
    layout = Layout.at(tmp_path / "home")
    state = run_loop(layout, tiny(backend={"kind": "pool", "workers": 2, "shard_games": SMALL_SHARDS}))
    assert state.status == "finished", state.message
    assert normalised(RunFolder(layout, "tiny").records()) == normalised(small_shards_reference)


def test_the_loop_on_the_pool_with_its_lake_on_s3_records_what_it_records_on_a_local_lake(
    tmp_path: Path, small_shards_reference, shared_lake: str
) -> None:
    layout = Layout.at(tmp_path / "home")  # DISTILL_LAKE names the lake (S3, moto's server on the loopback)
    assert layout.lake_uri == shared_lake
    state = run_loop(layout, tiny(backend={"kind": "pool", "workers": 2, "shard_games": SMALL_SHARDS}))
    assert state.status == "finished", state.message
    records = RunFolder(layout, "tiny").records()
    assert normalised(_without_staged(records)) == normalised(_without_staged(small_shards_reference))
    with Lake.open(Layout.at(tmp_path / "elsewhere")) as other, Lake.open(layout) as own:
        assert other.version() == own.version() > 0  # another data root reads the run's lake
        ingests = [v for v in own.history() if v.operation == "ingest"]
    # the workers staged every log at the lake, and each generation's data is one version holding all its batches
    ingested = [a["steps"]["ingest"]["batches"] for r in records for a in r["attempts"] if "ingest" in a["steps"]]
    assert [sorted(v.batches) for v in ingests] == [sorted(b) for b in ingested]
    assert len(ingests[0].batches) > 1
    first = records[0]["attempts"][0]["steps"]["simulate"]
    assert [s["recorded"] for s in first["staged"]] == first["files"]
    export = records[1]["attempts"][0]["steps"]["selfplay"]["export"]
    assert export["staged"] and [s["recorded"] for s in export["staged"]] == export["files"]


def _without_staged(value: Any) -> Any:
    """A run's records without what its workers staged at a shared lake (tokens: its one difference)."""
    if isinstance(value, dict):
        return {k: _without_staged(v) for k, v in value.items() if k != "staged"}
    if isinstance(value, list):
        return [_without_staged(v) for v in value]
    return value


def test_a_pause_request_halts_at_the_next_step_and_resume_finishes(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    run = RunFolder(layout, "tiny")

    def pause_after_bootstrap_ingest(event: Progress) -> None:
        if event.item.endswith(": ingest"):
            run.request(PAUSE)

    state = run_loop(
        layout, tiny(max_generations=1, ppo={**TINY["ppo"], "total_steps": 256}), progress=pause_after_bootstrap_ingest
    )
    assert state.status == "paused" and len(state.generations[0].steps) == 2  # simulate, ingest: then it paused
    assert run.requested() is None
    assert resume_loop(layout, "tiny").status == "finished"


def test_a_second_run_with_the_same_name_is_refused(reference) -> None:
    from toolkit.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape("resume")):
        run_loop(reference[0], tiny())


def _ppo_parent(layout: Layout, record: dict[str, Any]) -> str | None:
    from toolkit.train.agents import load_agent

    return load_agent(layout.resolve(record["attempts"][0]["steps"]["selfplay"]["final"])).card.parent


def _stem(card: str) -> str:
    return Path(card).name.removesuffix(".json")


@pytest.mark.parametrize("warm_start", ["ppo", "student"])
def test_ppo_continues_the_promoted_ppo_or_starts_from_the_promoted_student(tmp_path: Path, warm_start: str) -> None:
    layout = Layout.at(tmp_path / "home")
    state = run_loop(
        layout,
        tiny(
            name="gens",
            max_generations=2,
            ppo={**TINY["ppo"], "warm_start": warm_start},
            data={**TINY["data"], "teacher_generations": 1},
        ),
    )
    assert state.status == "finished", state.message
    records = RunFolder(layout, "gens").records()
    assert _ppo_parent(layout, records[1]) == _stem(records[0]["student"])  # generation 1 starts from the student
    expected = records[1]["ppo"] if warm_start == "ppo" else records[1]["student"]
    assert _ppo_parent(layout, records[2]) == _stem(expected)
    league = [e["name"] for e in records[2]["attempts"][0]["steps"]["selfplay"]["league"]]
    assert league == ["random", "self", "gen-000-student", "gen-001-ppo", "gen-001-student"]
    # the student of generation 2 learns from generation 2's teacher only (teacher_generations 1)
    built = set(records[2]["attempts"][0]["steps"]["build"]["batches"])
    assert not built & set(records[1]["attempts"][0]["steps"]["ingest"]["batches"])
    assert set(records[2]["attempts"][0]["steps"]["ingest"]["batches"]) <= built


def test_a_run_leaves_out_what_other_runs_ingested_unless_told_otherwise(tmp_path: Path, reference) -> None:
    home = _copy_of(reference[0].home, tmp_path)  # a finished tiny run, "tiny": the first run here
    first = RunFolder(home, "tiny").load().batches()
    for name, other_runs, seed in (("second", "exclude", 11), ("third", "include", 12)):
        data = {**TINY["data"], "other_runs": other_runs}
        # (a tiny greedy teacher may play one action only: this test is about which batches a build reads)
        assert run_loop(home, tiny(name=name, data=data, seed=seed, data_gate=False)).status == "finished"
        own = RunFolder(home, name).load().batches()
        theirs = first - own
        assert theirs and own
        for record in RunFolder(home, name).records():
            used = set(record["attempts"][0]["steps"]["build"]["batches"])
            assert used & own
            assert used.isdisjoint(theirs) if other_runs == "exclude" else theirs <= used
    # Same seed: every log it writes has the content of one of "tiny"'s, so each
    # batch is "tiny"'s by path and this run's too: it keeps them all.
    assert run_loop(home, tiny(name="fourth")).status == "finished"
    bootstrap = set(RunFolder(home, "fourth").records()[0]["attempts"][0]["steps"]["ingest"]["batches"])
    assert bootstrap and bootstrap <= first  # one batch per shard of the bootstrap's games
    for record in RunFolder(home, "fourth").records():
        assert bootstrap <= set(record["attempts"][0]["steps"]["build"]["batches"])
    # Same seed, fewer bootstrap games: other logs (or the same, shard by shard), each game one "tiny" played.
    # The lake holds every decision already: no batch is added, nothing is quarantined, and the run names the
    # batches that hold its games and trains on them.
    lake_before = _lake_counts(home)
    fifth = run_loop(home, tiny(name="fifth", bootstrap={"games": 20}, max_generations=1))
    assert fifth.status == "finished", fifth.message
    steps = RunFolder(home, "fifth").records()[0]["attempts"][0]["steps"]
    assert steps["ingest"]["held"] > 0 and steps["ingest"]["rejected"] == 0
    holding = {*steps["ingest"]["batches"], *steps["ingest"]["held_by"]}
    assert steps["ingest"]["held_by"] and holding <= first and holding <= set(steps["build"]["batches"])
    assert _lake_counts(home)[1:] == lake_before[1:]  # (its self-play adds a batch of its own)


def _lake_counts(layout: Layout) -> tuple[int, ...]:
    with Catalog.open(layout) as catalog:
        return catalog.con.execute(
            "SELECT (SELECT count(*) FROM batches), (SELECT count(*) FROM rejects), "
            "(SELECT count(*) FROM files WHERE path LIKE '%/simulate/%')"
        ).fetchone()


def test_the_loop_never_trains_on_a_batch_retired_while_it_runs(tmp_path: Path) -> None:

    layout = Layout.at(tmp_path / "home")
    run = RunFolder(layout, "tiny")

    def pause_after_bootstrap_ingest(event: Progress) -> None:
        if event.item.endswith(": ingest"):
            run.request(PAUSE)

    # four shards: four batches, one of them retired
    config = tiny(bootstrap={"games": 64}, backend=SMALL_SHARDS_BACKEND)
    assert run_loop(layout, config, progress=pause_after_bootstrap_ingest).status == "paused"
    bootstrap = sorted(run.load().batches())
    assert len(bootstrap) == 4
    with Lake.open(layout, write=True) as lake:
        lake.retire([bootstrap[0]], "a broken engine build")
    assert resume_loop(layout, "tiny").status == "finished"
    for record in run.records():
        for attempt in record["attempts"]:
            assert bootstrap[0] not in attempt["steps"]["build"]["batches"]
    gate = run.records()[0]["attempts"][0]["steps"]["data_gate"]
    assert gate["passed"] and "1 retired batch(es) not checked" in gate["reason"]
