"""The engine protocol: the conformance check on the built-in engine and on broken ones, the driver's faults,
and evaluation over the wire equal to evaluation in process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from toolkit.cli.main import app
from toolkit.engine.check import check_engine
from toolkit.engine.config import EngineConfig
from toolkit.engine.driver import EngineDriver, GameSpec, ProtocolBreach
from toolkit.errors import EngineError
from toolkit.game.players import PolicyPlayer
from toolkit.loop.state import RunFolder
from toolkit.train.config import EvaluateConfig
from toolkit.train.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]
TOY = Path(__file__).with_name("toy_engine.py")
BUILTIN = [sys.executable, "-m", "toolkit", "engine", "builtin", "--games-per-process", "32"]
runner = CliRunner()


def toy(mode: str = "ok") -> list[str]:
    return [sys.executable, str(TOY), mode]


def first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return masks.argmax(1)


def test_the_builtin_engine_passes_every_check() -> None:
    report = check_engine(BUILTIN, deadline=20)
    assert report.passed, [c for c in report.checks if not c.passed]
    assert [c.name for c in report.checks][-1] == "throughput" and (report.decisions_per_second or 0) > 0


def test_the_toy_engine_passes_what_it_can() -> None:
    report = check_engine(toy(), deadline=5)
    assert report.passed, [c for c in report.checks if not c.passed]


def test_the_java_demo_engine_builds_with_javac_and_passes_every_check() -> None:
    built = subprocess.run(["bash", str(ROOT / "clients/java/build.sh")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    report = check_engine([str(ROOT / "clients/java/bin/demo-engine")], deadline=30)
    assert report.passed, [c for c in report.checks if not c.passed]
    # and PPO's env trains in it: its games go on while Distill holds the learner's answers back
    from toolkit.engine.vec_env import EngineVecEnv
    from toolkit.game.league import OpponentPool

    java = EngineConfig(command=[str(ROOT / "clients/java/bin/demo-engine")], processes=2)
    env = EngineVecEnv(8, java, OpponentPool(["heuristic", "random", "heuristic"]), seed=2, max_rounds=30)
    try:
        _, rewards, dones, _ = _play_env(env, 200)
    finally:
        env.close()
    assert dones.sum() > 0 and set(np.unique(rewards[dones])) <= {-1.0, 1.0}
    assert report.engine and "demo" in report.engine.lower(), report.engine


# (mode, the check that must fail, a part of its message)
BROKEN = [
    ("silent", "hello", "said nothing for the hello deadline"),
    ("major2", "hello", "major version 1"),
    ("vocabulary", "hello", "action vocabulary"),
    ("log-on-stdout", "hello", "carries protocol frames only"),
    ("flood", "games", "longer than"),
    ("oversized", "games", "bytes"),
    ("unknown-game", "games", "never started"),
    ("invalid-row", "games", "breaks the contract"),
    ("exit-mid-game", "games", "exited (exit code 3)"),
    ("sleep-forever", "games", "said nothing for the game deadline"),
    ("ignore-eof", "eof", "end of its input"),
    ("substitute", "illegal", "never substitutes"),
    ("no-echo", "games", "echoes settings"),
    ("lockstep", "held", "let each game go on alone"),
]


@pytest.mark.parametrize(("mode", "check", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_the_checker_fails_each_broken_engine_with_the_right_message(mode: str, check: str, message: str) -> None:
    started = time.monotonic()
    report = check_engine(toy(mode), deadline=1.5, only=[check])
    found = {c.name: c for c in report.checks}
    assert not found[check].passed and message in found[check].detail, found[check]
    assert not report.passed
    assert time.monotonic() - started < 60  # every wait had its deadline


def test_the_check_command_prints_a_table_and_exits_1_on_a_failure() -> None:
    result = runner.invoke(app, ["engine", "check", "--deadline", "1.5", "--", *toy("major2")])
    assert result.exit_code == 1 and "FAIL" in result.stdout and "major version 1" in result.stdout


def test_a_missing_engine_program_is_a_clear_error() -> None:
    result = runner.invoke(app, ["evaluate", "--policy", "x.json", "--engine", "no-such-engine-program"])
    assert result.exit_code != 0
    with pytest.raises(EngineError, match="not found"):
        EngineDriver(EngineConfig(command="no-such-engine-program")).__enter__()


def test_an_engine_of_another_major_is_refused_naming_both_versions() -> None:
    with pytest.raises(EngineError, match=r"distill-engine 2\.0; this Distill speaks major version 1") as error:
        EngineDriver(EngineConfig(command=toy("major2"), hello_seconds=5)).__enter__()
    assert error.value.phase == "hello"


def specs(n: int, seats: int = 4, turns: int = 3) -> list[GameSpec]:
    return [
        GameSpec(
            f"g{k}", k, tuple({"player": "distill"} for _ in range(seats)), turns, dict.fromkeys(range(seats), "p")
        )
        for k in range(n)
    ]


def test_a_crash_mid_game_is_voided_and_replayed_on_a_new_process(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TOY_MARKER", str(tmp_path / "crashed"))
    config = EngineConfig(command=toy("crash-once"), processes=2, frame_seconds=10)
    with EngineDriver(config, log_dir=tmp_path / "logs") as driver:
        results = list(driver.play(specs(10), {"p": first_legal}))
        faults = list(driver.faults)
    assert sorted(r.spec.game for r in results) == [f"g{k}" for k in range(10)]  # each once: the voided replayed
    assert all(r.decisions == 12 for r in results)
    assert len(faults) == 1 and "exited (exit code 3)" in faults[0]
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["engine-0.stderr.log", "engine-1.stderr.log"]


def test_past_the_restart_budget_the_run_stops_naming_the_fault() -> None:
    config = EngineConfig(command=toy("exit-mid-game"), restarts=2, frame_seconds=10)
    with pytest.raises(EngineError, match=r"failed 3 times, past the restart budget of 2.*exit code 3"):
        with EngineDriver(config) as driver:
            list(driver.play(specs(2), {"p": first_legal}))


def test_a_request_read_with_the_end_of_an_engines_output_is_voided_with_its_game() -> None:
    """The engine's last request and its end come in one read: its games are replayed on a new process, which is
    never asked for that request's answer (a breach: 'a game it was not playing')."""

    def slow_first_legal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        time.sleep(1.0)  # the engine asks for its second game and closes its output meanwhile
        return first_legal(observations, masks)

    config = EngineConfig(command=toy("ask-and-close"), games_per_process=2, restarts=1, frame_seconds=10)
    with pytest.raises(EngineError, match=r"failed 2 times, past the restart budget of 1.*exited") as error:
        with EngineDriver(config) as driver:
            list(driver.play(specs(2), {"p": slow_first_legal}))
    assert not isinstance(error.value, ProtocolBreach), error.value


def test_an_error_frame_stops_the_run_at_once_without_a_restart() -> None:
    def illegal(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return (~masks).argmax(1)  # an action the engine says is not legal

    with pytest.raises(EngineError, match="reports illegal_action") as error:
        with EngineDriver(EngineConfig(command=toy(), frame_seconds=10)) as driver:
            list(driver.play(specs(2), {"p": illegal}))
    assert driver.faults == [] and driver.restarts == 0 and error.value.phase == "game"


def test_a_hung_engine_is_killed_at_its_deadline_and_counted(tmp_path: Path) -> None:
    config = EngineConfig(command=toy("sleep-forever"), restarts=1, frame_seconds=1)
    started = time.monotonic()
    with pytest.raises(EngineError, match="said nothing for 1 s"):
        with EngineDriver(config) as driver:
            list(driver.play(specs(1), {"p": first_legal}))
    assert time.monotonic() - started < 30


def test_evaluation_through_the_builtin_engine_equals_evaluation_in_process() -> None:
    def player() -> PolicyPlayer:
        return PolicyPlayer(first_legal)

    config = EvaluateConfig(games=48, seed=7, max_rounds=30)
    here = evaluate(player, config)
    there = evaluate(player, config, engine=EngineConfig(command=BUILTIN, processes=2))
    assert there.outcomes == here.outcomes and there.decisions == here.decisions
    assert there.engine_faults == []


def test_a_student_checkpoint_evaluates_the_same_over_the_wire(loop_home) -> None:
    from toolkit.train.agents import policy_blob

    card = loop_home.resolve(RunFolder(loop_home, "tiny").records()[-1]["student"])
    config = EvaluateConfig(games=40, seed=3, opponents=("heuristic", "tuned", "heuristic"))
    blob = policy_blob(card)
    here = evaluate(blob, config)
    there = evaluate(blob, config, engine=EngineConfig(command=BUILTIN))
    assert there.outcomes == here.outcomes and here.wins > 0


def test_an_engine_killed_mid_evaluation_gives_the_same_results() -> None:
    def player() -> PolicyPlayer:
        return PolicyPlayer(first_legal)

    config = EvaluateConfig(games=64, seed=11, max_rounds=30)
    here = evaluate(player, config)
    engine = EngineConfig(command=BUILTIN, processes=2, games_per_process=4)
    import toolkit.engine.driver as driver_module

    original = driver_module.EngineDriver._read
    killed: list[int] = []

    def read_and_kill(self, i, requests, finished):  # the first engine is killed once it finished some games
        original(self, i, requests, finished)
        if finished and not killed:
            pid = self.engines[0].process.proc.pid
            os.killpg(pid, signal.SIGKILL)
            killed.append(pid)

    driver_module.EngineDriver._read = read_and_kill
    try:
        there = evaluate(player, config, engine=engine)
    finally:
        driver_module.EngineDriver._read = original
    assert killed and len(there.engine_faults) == 1
    assert there.outcomes == here.outcomes


def test_no_engine_outlives_a_killed_driver(tmp_path: Path) -> None:
    code = (
        "import sys, time; from toolkit.engine.driver import EngineConfig, EngineDriver\n"
        f"driver = EngineDriver(EngineConfig(command={BUILTIN!r}, processes=2)).__enter__()\n"
        "print(' '.join(str(e.process.proc.pid) for e in driver.engines), flush=True); time.sleep(600)"
    )
    process = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    pids = [int(p) for p in process.stdout.readline().split()]
    assert len(pids) == 2
    process.kill()
    process.wait(30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for its reaper is gone
        return stat.read().split()[2] != "Z"


def test_evaluate_takes_an_engine_from_the_command_line(loop_home) -> None:
    card = loop_home.resolve(RunFolder(loop_home, "tiny").records()[-1]["student"])
    command = " ".join(BUILTIN)
    result = runner.invoke(
        app,
        ["evaluate", "--policy", str(card), "--games", "8", "--engine", command, "--engine-processes", "2", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert '"games": 8' in result.stdout and '"engine_faults": []' in result.stdout


def test_driver_threads_do_not_leak() -> None:
    before = threading.active_count()
    with EngineDriver(EngineConfig(command=toy())) as driver:
        list(driver.play(specs(2), {"p": first_legal}))
    time.sleep(0.2)
    assert threading.active_count() <= before


def builtin_rows(games: int = 6) -> list[dict]:
    """Decision rows the built-in engine sends (its first frames), every seat Distill's."""
    from toolkit.engine.process import EngineProcess

    process = EngineProcess(BUILTIN)
    try:
        process.read(time.monotonic() + 20, "hello")
        process.send({"type": "welcome", "protocol": "distill-engine", "major": 1, "minor": 0}, "hello")
        for k in range(games):
            seats = [{"player": "distill"} for _ in range(3 + k % 3)]
            process.send(
                {"type": "start", "game": f"r{k}", "seed": k, "pod_size": len(seats), "seats": seats, "turn_limit": 30},
                "start",
            )
        rows: list[dict] = []
        while len(rows) < 60:
            frame = process.read(time.monotonic() + 20, "game")
            mine = frame["requests"]
            rows += [r["row"] for r in mine]
            answers = [
                {"game": r["game"], "request": r["request"], "action": r["row"]["legal_actions"].index(True)}
                for r in mine
            ]
            process.send({"type": "actions", "answers": answers}, "game")
        return rows
    finally:
        process.close(0.5)


def test_the_drivers_row_encoder_gives_the_numbers_of_the_arrow_encoder_models_were_trained_with() -> None:
    import pyarrow as pa

    from toolkit import features, features_arrow
    from toolkit.engine.rows import encode_rows, read_decisions

    rows = builtin_rows()
    assert len({r["pod_size"] for r in rows}) == 3 and len(rows) >= 60
    rows[0]["players"][1]["commander_tax"] = None  # a null and a field left out read as 0, as the lake reads them
    del rows[1]["players"][0]["total_power"]
    observations, masks = encode_rows(rows)
    arrow = features_arrow.state_arrays_from_arrow(pa.RecordBatch.from_pylist(rows))
    np.testing.assert_array_equal(observations, features.encode(arrow))
    np.testing.assert_array_equal(masks, arrow.mask)
    # the driver's typed reading of a decisions frame gives the same numbers
    frame = orjson.dumps(
        {"type": "decisions", "requests": [{"game": "g", "request": k, "row": r} for k, r in enumerate(rows)]}
    )
    typed = read_decisions(frame)
    assert typed is not None and [r.request for r in typed] == list(range(len(rows)))
    typed_observations, typed_masks = encode_rows([r.row for r in typed])
    np.testing.assert_array_equal(typed_observations, observations)
    np.testing.assert_array_equal(typed_masks, masks)
    odd = {**rows[2], "players": [{**p, "eliminated": 0} for p in rows[2]["players"]]}
    for other in [
        {"type": "result", "game": "g"},
        {"type": "decisions", "requests": [{"game": "g", "request": 0, "row": odd}]},
    ]:
        assert read_decisions(orjson.dumps(other)) is None  # read the generic way, whose errors name the field
    assert read_decisions(b"not json") is None
    four = next(r for r in rows if r["pod_size"] == 4)  # "none" has 4 letters: it passes the pod's count
    for broken, why in [
        ({"legal_actions": [1, 0, 0, 0, 0, 0, 0, 0]}, "legal_actions is not 8 booleans"),
        ({"legal_actions": [False] * 8}, "no legal action"),
        ({"seat": 7}, "players for a pod"),
        ({"phase": "upkeep"}, "phase 'upkeep' is not one of"),
        ({"players": "none"}, "wrong shape"),
        ({"turn": None}, "wrong shape"),
        ({"seat": None, "players": None}, "wrong shape"),
    ]:
        with pytest.raises(ValueError, match=why):
            encode_rows([{**four, **broken}])
    with pytest.raises(ValueError, match="without the field 'turn'"):
        encode_rows([{k: v for k, v in four.items() if k != "turn"}])


def test_a_tiny_loop_generation_plays_every_game_in_the_builtin_engine(tmp_path: Path) -> None:
    from tests.factories import tiny
    from toolkit.layout import Layout
    from toolkit.loop.run import run_loop

    started = tmp_path / "engines-started"
    command = f"echo started >> {started}; exec {' '.join(BUILTIN)}"
    layout = Layout.at(tmp_path / "home")
    state = run_loop(layout, tiny(engine={"command": ["sh", "-c", command], "processes": 2}))
    assert state.status == "finished", state.message
    there = RunFolder(layout, "tiny").records()
    assert [sorted(r["evaluation"]["student"]) for r in there] == [["heuristic", "tuned"]] * len(there)
    assert all(t["games"] == 16 for r in there for t in r["evaluation"]["student"].values())
    assert [r["outcome"] for r in there] == ["passed"] * len(there) and there[-1]["ratings"]
    # every evaluation, gate and tournament of the run started its engine processes (2 each)
    assert len(started.read_text().splitlines()) >= 2 * 6
    logs = list((tmp_path / "home").rglob("engine-1.stderr.log"))
    steps = {"simulate", "evaluate", "ratings", "selfplay", "ppo_gate", "student_gate"}
    assert {p.parent.name for p in logs} == {"engine-logs"} and {p.parent.parent.name for p in logs} == steps
    # the bootstrap (the engine AI's records) and the teacher's export games were played in the engine too: their
    # rows in the lake carry no shaped reward
    sql = "select source, count(*) as n, count(*) filter (where reward <> 0 and not is_terminal and not truncated) "
    sql += "as shaped from decisions group by source order by source"
    result = runner.invoke(app, ["--home", str(layout.home), "sql", sql, "--json"])
    assert result.exit_code == 0, result.output
    counted = orjson.loads(result.stdout)
    assert [c["source"] for c in counted] == ["forge", "ppo"] and all(c["n"] > 0 and c["shaped"] == 0 for c in counted)


def test_a_tournament_seats_checkpoints_and_engine_ai_profiles_in_the_engine(loop_home) -> None:
    card = loop_home.resolve(RunFolder(loop_home, "tiny").records()[-1]["student"])
    command = " ".join(BUILTIN)
    argv = ["tournament", "heuristic", "tuned", "random", f"student={card}", "--deals", "2", "--json"]
    result = runner.invoke(app, [*argv, "--engine", command, "--engine-processes", "2"])
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert report["games"] == 8 and {s["name"] for s in report["standings"]} == {
        "heuristic",
        "tuned",
        "random",
        "student",
    }
    assert sum(s["wins"] for s in report["standings"]) + report["truncations"]["truncated"] == 8
    again = orjson.loads(runner.invoke(app, [*argv, "--engine", command]).stdout)  # the engine replays each game
    assert again["games_sha256"] == report["games_sha256"]


def test_any_ai_profile_of_the_engine_takes_a_seat_by_name(loop_home) -> None:
    card = str(loop_home.resolve(RunFolder(loop_home, "tiny").records()[-1]["student"]))
    command = " ".join(BUILTIN)

    def run(vs: str, *extra: str) -> object:
        return runner.invoke(app, ["evaluate", "--policy", card, "--games", "8", "--vs", vs, *extra, "--json"])

    named = run("ai:heuristic,ai:tuned,random", "--engine", command)
    typed = run("heuristic,tuned,random", "--engine", command)
    assert named.exit_code == 0, named.output
    same = ("opponents", "wins", "per_seat", "decisions", "truncations")
    assert [orjson.loads(named.stdout)[k] for k in same] == [orjson.loads(typed.stdout)[k] for k in same]
    missing = run("ai:Reckless,heuristic,heuristic", "--engine", command)
    assert missing.exit_code != 0 and "no AI profile 'Reckless'" in missing.output
    outside = run("ai:heuristic,heuristic,heuristic")  # without an engine there is no engine AI to seat
    assert outside.exit_code != 0 and "neither a player type nor a checkpoint" in outside.output


def test_decisions_exported_from_engine_games_are_the_in_process_records_less_the_shaping(
    tmp_path: Path, loop_home
) -> None:
    from toolkit.schema.models import DecisionSnapshot
    from toolkit.train.agents import policy_blob
    from toolkit.train.export import DecisionExporter

    blob = policy_blob(loop_home.resolve(RunFolder(loop_home, "tiny").records()[-1]["student"]))
    config = EvaluateConfig(games=16, seed=5, opponents=("heuristic", "tuned", "heuristic"))
    rows = {}
    for where, engine in [("here", None), ("there", EngineConfig(command=BUILTIN, processes=2))]:
        exporter = DecisionExporter(tmp_path / where, batch="b", generation=2, seed=5, source="ppo-eval")
        evaluate(blob, config, exporter=exporter, engine=engine)
        counts = exporter.close()
        lines = [orjson.loads(line) for f in counts.files for line in Path(f).read_bytes().splitlines()]
        assert len(lines) == counts.exported_decisions > 0
        for line in lines:
            DecisionSnapshot.model_validate(line)  # a contract record, whichever the engine
        rows[where] = lines

    def same(row: dict) -> tuple:  # what both give alike (the engine shapes no reward, names no card)
        lineup = tuple((s["kind"], s["name"], s["model_version"]) for s in row["lineup"])
        counts = tuple(tuple(p[f] for f in ("life", "hand_size", "lands", "creatures")) for p in row["players"])
        return (
            row["decision_index"],
            row["turn"],
            row["phase"],
            row["seat"],
            counts,
            row["action"]["index"],
            tuple(row["legal_actions"]),
            row["outcome"],
            row["placement"],
            row["timed_out"],
            lineup,
        )

    assert sorted(map(same, rows["there"])) == sorted(map(same, rows["here"]))
    there = rows["there"]
    assert {r["source"] for r in there} == {"ppo-eval"} and {r["model_version"] for r in there} == {"gen-002"}
    assert all(r["reward"] == (r["outcome"] if r["is_terminal"] or r["truncated"] else 0.0) for r in there)


def _play_env(env, steps: int, reset: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
    observations, rewards, dones, infos = [env.reset()] if reset else [], [], [], []
    for _ in range(steps):
        env.step_async(env.action_masks().argmax(1))
        obs, reward, done, info = env.step_wait()
        observations.append(obs), rewards.append(reward), dones.append(done), infos.extend(info)
    return np.array(observations), np.array(rewards), np.array(dones), infos


def test_the_engine_vec_env_replays_its_episodes_and_ends_them_with_the_outcome() -> None:
    from toolkit.engine.vec_env import EngineVecEnv
    from toolkit.game.league import OpponentPool

    runs = []
    for processes in (1, 2):  # the same episodes however the games are spread and interleaved
        pool = OpponentPool(["heuristic", "tuned", "random"], weights=[1, 1, 1])
        env = EngineVecEnv(6, EngineConfig(command=BUILTIN, processes=processes), pool, seed=3, max_rounds=20)
        try:
            runs.append(_play_env(env, 150))
        finally:
            env.close()
    (obs_a, rewards_a, dones_a, infos), (obs_b, rewards_b, dones_b, _) = runs
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(rewards_a, rewards_b)
    np.testing.assert_array_equal(dones_a, dones_b)
    assert dones_a.sum() >= 6  # episodes ended, each with its outcome as its only reward
    assert set(np.unique(rewards_a[dones_a])) <= {-1.0, 1.0} and not rewards_a[~dones_a].any()
    ended = [i for i in infos if "episode" in i]
    assert len(ended) == dones_a.sum() and all(i["episode"]["r"] == (1.0 if i["won"] else -1.0) for i in ended)
    assert all(len(i["opponents"]) == 3 and i["terminal_observation"].shape == obs_a.shape[2:] for i in ended)


def test_an_engine_killed_mid_training_voids_its_episodes_and_the_env_goes_on() -> None:
    from toolkit.engine.vec_env import EngineVecEnv
    from toolkit.game.league import OpponentPool

    env = EngineVecEnv(4, EngineConfig(command=BUILTIN, processes=2), OpponentPool(["heuristic"] * 3), seed=1)
    try:
        _play_env(env, 5)
        os.killpg(env.driver.engines[1].process.proc.pid, signal.SIGKILL)
        _, _, dones, infos = _play_env(env, 40, reset=False)
        voided = [i for i in infos if i.get("voided")]
        assert env.voided == len(voided) >= 1 and env.driver.restarts == 1
        assert all("episode" not in i for i in voided)  # no result: the statistics and the league skip it
    finally:
        env.close()


def test_train_ppo_learns_in_the_engine_and_exports_the_engines_rows(tmp_path: Path) -> None:
    command = " ".join(BUILTIN)
    argv = ["--home", str(tmp_path / "home"), "train", "ppo", "--steps", "256", "--envs", "8", "--export-games", "8"]
    argv += ["--eval-games", "4", "--out", str(tmp_path / "ppo"), "--engine", command, "--engine-processes", "2"]
    result = runner.invoke(app, [*argv, "--json"])
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert report["steps"] >= 256 and report["export"]["exported_decisions"] > 0
    rows = [orjson.loads(line) for f in report["export"]["files"] for line in Path(f).read_bytes().splitlines()]
    assert {r["source"] for r in rows} == {"ppo"} and not [
        r for r in rows if r["reward"] and not r["is_terminal"] and not r["truncated"]
    ]


def test_simulate_in_the_engine_writes_its_ais_records_the_same_games_as_in_process(tmp_path: Path) -> None:
    argv = ["simulate", "--games", "12", "--players", "heuristic,tuned,heuristic,tuned", "--seed", "3", "--json"]
    logs = {}
    for where, extra in [("here", []), ("there", ["--engine", " ".join(BUILTIN), "--engine-processes", "2"])]:
        result = runner.invoke(app, [*argv, "--out", str(tmp_path / where), *extra])
        assert result.exit_code == 0, result.output
        report = orjson.loads(result.stdout)
        logs[where] = [orjson.loads(line) for f in report["files"] for line in Path(f).read_bytes().splitlines()]
        assert len(logs[where]) == report["decisions"]
    assert runner.invoke(app, ["validate", str(tmp_path / "there")]).exit_code == 0  # every record valid

    def same(row: dict) -> tuple:  # what both give alike (the engine shapes no reward, names no card)
        return (
            row["game_id"],
            row["decision_index"],
            row["seat"],
            row["turn"],
            row["action"]["index"],
            row["outcome"],
            row["placement"],
            row["source"],
            tuple(s["kind"] for s in row["lineup"]),
        )

    assert [same(r) for r in logs["there"]] == [same(r) for r in logs["here"]]


def test_an_ended_engine_group_is_killed_before_its_leader_is_reaped(monkeypatch) -> None:
    """A reaped leader's id may be given to another process, whose group the kill would then hit (a loop
    started by ``distill serve`` leads its own group): the engine's code is read without reaping it, its group
    is killed while the leader is a zombie, and only then is it reaped."""
    from toolkit.engine.process import EngineProcess

    process = EngineProcess([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"])
    reaped_at_kill: list[bool] = []
    real_killpg = os.killpg

    def watching_killpg(pgid: int, sig: int) -> None:
        reaped_at_kill.append(process.proc.returncode is not None)
        # the leader still waits to be reaped: waiting without reaping finds it
        assert os.waitid(os.P_PID, pgid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        real_killpg(pgid, sig)

    monkeypatch.setattr(os, "killpg", watching_killpg)
    assert process.close(grace=10.0) == 3
    assert reaped_at_kill == [False] and process.proc.returncode == 3
    assert process.exit_status() == "exit code 3"
    with pytest.raises(ChildProcessError):  # reaped now
        os.waitid(os.P_PID, process.proc.pid, os.WEXITED | os.WNOHANG)


def test_the_builtin_engine_starts_without_pyarrow_duckdb_or_torch() -> None:
    """An engine process is started per pool of games, many times in a run: it imports the game and the encoder of
    live states, not the lake's or training's libraries (pyarrow alone was a third of its start)."""
    code = (
        "import sys; import toolkit.engine.builtin; "
        "print(sorted(m for m in ('pyarrow', 'duckdb', 'torch', 'pandas') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]", found.stdout
