"""The closed loop end to end on a tiny config: gates, rejection, resume, requests, records."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolkit.catalog.store import Catalog
from toolkit.checks.suite import default_suite_path
from toolkit.cli.main import app
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.run import resume_loop, run_loop
from toolkit.loop.state import PAUSE, RunFolder

# Small enough for the test suite; the win-rate gate plays against random players with a low bar so that the
# whole generation (data gate, build, BC, regression gate, merge) runs.
TINY: dict[str, Any] = {
    "name": "tiny",
    "max_generations": 1,
    "max_rounds": 20,
    "bootstrap": {"games": 30},
    "bc": {"epochs": 2, "hidden": [16, 16]},
    "ppo": {"total_steps": 512, "n_envs": 2, "n_steps": 64, "batch_size": 64, "n_epochs": 1, "eval_games": 4,
            "opponents": ["random"], "export_losses": True},
    "win_rate_gate": {"mode": "threshold", "threshold": 0.05, "threshold_games": 8, "games_per_round": 8,
                      "opponents": ["random", "random", "random"]},
    "retry": {"max_retries": 0},
    "data": {"weights": {"forge": 1.0, "ppo": 1.0, "random": 0.0}},
    "regression_gate": {"floor": 0.05, "margin": 1.0},
    "tournament": {"deals_per_lineup": 1},
}
VOLATILE = {"timings", "seconds", "recorded_at", "finished_at", "steps_per_second", "samples_per_second",
            "reports", "updated_at"}


def tiny(**changes: Any) -> LoopConfig:
    return LoopConfig.model_validate({**TINY, **changes})


def normalised(records: list[dict[str, Any]], home: Path) -> list[dict[str, Any]]:
    """Records without timings and with the data root's path taken out (to compare two runs)."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value.replace(str(home), "<home>") if isinstance(value, str) else value

    return clean(json.loads(json.dumps(records)))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Layout, list[dict[str, Any]]]:
    layout = Layout.at(tmp_path_factory.mktemp("reference") / "home")
    state = run_loop(layout, tiny())
    assert state.status == "finished", state.message
    return layout, RunFolder(layout, "tiny").records()


def _batch_status(layout: Layout, batch: str) -> tuple[str, str | None, int]:
    with Catalog.open(layout, read_only=True) as catalog:
        status, reason = catalog.con.execute("SELECT status, status_reason FROM batches WHERE batch_id = ?", [batch]).fetchall()[0]
        (rows,) = catalog.con.execute("SELECT count(*) FROM decisions WHERE batch_id = ?", [batch]).fetchall()[0]
    return status, reason, rows


def test_a_tiny_loop_runs_every_step_and_records_every_field(reference) -> None:
    layout, records = reference
    assert [r["generation"] for r in records] == [0, 1] and [r["outcome"] for r in records] == ["passed", "passed"]
    gen1 = records[1]["attempts"][0]
    assert gen1["win_rate_gate"]["passed"] and gen1["data_gate"]["passed"] and gen1["regression_gate"]["passed"]
    assert gen1["ppo"]["export"]["exported_episodes"] > 0 and gen1["batches"]
    assert set(gen1["build"]["rows_by_source"]) == {"forge", "ppo"}
    assert records[1]["bc_holdout_accuracy"] is not None and records[1]["baseline_accuracy"] is not None
    assert gen1["hyperparameters"] == {"learning_rate": 3e-4, "ent_coef": 0.01}
    assert {"gen-001-ppo", "gen-001-bc", "gen-000-bc", "heuristic"} <= {s["name"] for s in records[1]["ratings"]}
    for batch in gen1["batches"]:
        assert _batch_status(layout, batch)[0] == "accepted"
    result = CliRunner().invoke(app, ["--home", str(layout.home), "sql", "--json",
                                      "SELECT generation, outcome FROM generations ORDER BY generation"])
    assert json.loads(result.output) == [{"generation": 0, "outcome": "passed"}, {"generation": 1, "outcome": "passed"}]
    shown = CliRunner().invoke(app, ["--home", str(layout.home), "loop", "history", "--name", "tiny"])
    assert shown.exit_code == 0 and "gen-001-ppo" in shown.output


@pytest.mark.parametrize(
    ("changes", "gate"),
    [
        ({"win_rate_gate": {"mode": "sprt", "max_games": 8, "games_per_round": 8, "min_games": 8}}, "win-rate gate"),
        ({"data_gate_suite": "COLLAPSE_SUITE", "data_gate_entropy_floor": 1.0}, "data gate"),
        ({"regression_gate": {"floor": 0.99}}, "regression gate"),
    ],
)
def test_a_failing_gate_rejects_the_batch_keeps_it_and_builds_without_it(tmp_path: Path, changes, gate) -> None:
    layout = Layout.at(tmp_path / "home")
    if changes.get("data_gate_suite") == "COLLAPSE_SUITE":  # the policy-collapse check, on however few rows
        suite = json.loads(default_suite_path("lake").read_text())
        for expectation in suite["expectations"]:
            if expectation["id"] == "collapse.policy":
                expectation["kwargs"]["min_rows"] = 1
        changes = {**changes, "data_gate_suite": tmp_path / "lake.json"}
        changes["data_gate_suite"].write_text(json.dumps(suite))
    state = run_loop(layout, tiny(name="failing", **changes))
    record = RunFolder(layout, "failing").records()[1]
    assert state.status == "finished" and record["outcome"] == "failed" and record["reason"].startswith(gate)
    assert record["attempts"][0]["batches"]
    for batch in record["attempts"][0]["batches"]:
        status, reason, rows = _batch_status(layout, batch)
        assert status == "rejected" and reason.startswith(gate) and rows > 0  # kept, with the reason
    from toolkit.build.build import build_dataset
    from toolkit.build.config import BuildConfig

    inputs = {i["batch_id"] for i in build_dataset(layout, BuildConfig(name="after")).manifest.inputs}
    assert not inputs & set(record["attempts"][0]["batches"])


class _Crash(Exception):
    pass


GENERATION_STEPS = ["selfplay", "ingest", "win_rate_gate", "data_gate", "build", "train_bc", "regression_gate",
                    "accept", "ratings"]


@pytest.mark.parametrize("step", GENERATION_STEPS)
def test_resume_after_a_crash_at_a_step_gives_the_same_history(tmp_path: Path, reference, step: str) -> None:
    layout = Layout.at(tmp_path / "home")

    def crash(message: str) -> None:
        if message.startswith("gen-001") and message.endswith(f": {step}"):
            raise _Crash(message)

    with pytest.raises(_Crash):
        run_loop(layout, tiny(), progress=crash)
    state = resume_loop(layout, "tiny")
    assert state.status == "finished"
    assert normalised(RunFolder(layout, "tiny").records(), layout.home) == normalised(reference[1], reference[0].home)


def test_resume_after_kill_9_mid_run_gives_the_same_history(tmp_path: Path, reference) -> None:
    layout = Layout.at(tmp_path / "home")
    code = (
        "import sys; sys.path.insert(0, '.'); from tests.loop.test_loop import tiny; from toolkit.layout import Layout; "
        f"from toolkit.loop.run import run_loop; run_loop(Layout.at({str(layout.home)!r}), tiny())"
    )
    events = RunFolder(layout, "tiny").events_path
    process = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if events.exists() and len(events.read_text().splitlines()) >= 9:  # in generation 1's self-play or after
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    state = resume_loop(layout, "tiny")
    assert state.status == "finished"
    assert normalised(RunFolder(layout, "tiny").records(), layout.home) == normalised(reference[1], reference[0].home)


def test_a_pause_request_halts_at_the_next_step_and_resume_finishes(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    run = RunFolder(layout, "tiny")

    def pause_after_bootstrap_ingest(message: str) -> None:
        if message.endswith(": ingest"):
            run.request(PAUSE)

    state = run_loop(layout, tiny(max_generations=1, ppo={**TINY["ppo"], "total_steps": 128}),
                     progress=pause_after_bootstrap_ingest)
    assert state.status == "paused" and len(state.generations[0].steps) == 2  # simulate, ingest: then it paused
    assert run.requested() is None
    assert resume_loop(layout, "tiny").status == "finished"


def test_a_second_run_with_the_same_name_is_refused(reference) -> None:
    from toolkit.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape("resume")):
        run_loop(reference[0], tiny())


def _ppo_parent(record: dict[str, Any]) -> str | None:
    from toolkit.train.agents import load_agent

    return load_agent(Path(record["attempts"][0]["ppo"]["final"])).card.parent


def test_ppo_starts_from_the_promoted_bc_student_or_continues_the_promoted_ppo(reference, tmp_path: Path) -> None:
    _, records = reference  # default: from the BC student promoted by the generation before
    assert _ppo_parent(records[1]) == Path(records[0]["models"]["bc"]).name.removesuffix(".json")
    layout = Layout.at(tmp_path / "home")
    ppo = {**TINY["ppo"], "warm_start": "ppo"}
    state = run_loop(layout, tiny(name="continued", max_generations=2, ppo=ppo))
    assert state.status == "finished", state.message
    records = RunFolder(layout, "continued").records()
    assert _ppo_parent(records[1]) == Path(records[0]["models"]["bc"]).name.removesuffix(".json")
    assert _ppo_parent(records[2]) == Path(records[1]["models"]["ppo"]).name.removesuffix(".json")


def test_a_run_leaves_out_what_other_runs_ingested_unless_told_otherwise(tmp_path: Path) -> None:
    home = Layout.at(tmp_path / "home")
    assert run_loop(home, tiny(name="first")).status == "finished"
    first = RunFolder(home, "first").load().batches()
    for name, other_runs, seed in (("second", "exclude", 11), ("third", "include", 12)):
        data = {**TINY["data"], "other_runs": other_runs}
        assert run_loop(home, tiny(name=name, data=data, seed=seed)).status == "finished"
        own = RunFolder(home, name).load().batches()
        theirs = first - own
        assert theirs and own
        for record in RunFolder(home, name).records():
            used = set(record["attempts"][0]["build"]["batches"])
            assert used & own
            assert used.isdisjoint(theirs) if other_runs == "exclude" else theirs <= used
    # Same seed: every log it writes has the content of one of "first"'s, so each
    # batch is "first"'s by path and this run's too: it keeps them all.
    assert run_loop(home, tiny(name="fourth")).status == "finished"
    [bootstrap] = RunFolder(home, "fourth").records()[0]["attempts"][0]["batches"]
    assert bootstrap in first
    for record in RunFolder(home, "fourth").records():
        assert bootstrap in record["attempts"][0]["build"]["batches"]
