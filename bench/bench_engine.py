"""The engine protocol's speed: Distill's game served over the wire, against the targets of the engine issue.

Run: ``.venv/bin/python bench/bench_engine.py [--repeat 3] [--eval-games 2000]``.

Each figure is measured in a fresh process (``_common.run_child``), the best
of ``--repeat`` runs:

(a) batched frames: the driver and 2 built-in engine processes of 256 games
    each, every seat Distill's (every decision crosses the wire), answered
    with the first legal action (the wire, the rows and the encoder, no
    network): decisions per second, target >= 20,000;
(b) one decision per frame: 2 processes of one game each (so each frame
    carries one request), target >= 2,500; one process alone is reported;
(c) ``evaluate`` of a student (an untrained policy network of the default
    shape: the real forward pass) in 2,000 games against three heuristics,
    through 2 built-in engine processes (their default games per process) against the same in this process
    (the in-process back end): the ratio of speeds, target >= 0.5x; the
    outcomes are checked equal;
(d) the driver's peak memory (its own process; the engines are others)
    with 16 and with 256 games in flight, the same 512 games;
(e) PPO's env, reported (no target): env steps per second of 256 envs
    stepped with the first legal action against three heuristics, through
    2 built-in engine processes (``EngineVecEnv``) and in this process
    (``CommanderVecEnv``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Tee, best_of, report_child, run_child, timed, verdict  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
TARGET_BATCHED = 20_000
TARGET_PER_FRAME = 2_500
TARGET_EVAL = 0.5


def builtin(games_per_process: int) -> list[str]:
    return [sys.executable, "-m", "toolkit", "engine", "builtin", "--games-per-process", str(games_per_process)]


def first_legal(observations, masks):  # type: ignore[no-untyped-def]
    return masks.argmax(1)


def child_wire(processes: int, per_process: int, games: int, turn_limit: int) -> None:
    from toolkit.engine.config import EngineConfig
    from toolkit.engine.driver import EngineDriver, GameSpec

    specs = [
        GameSpec(f"b{k}", k, tuple({"player": "distill"} for _ in range(4)), turn_limit, dict.fromkeys(range(4), "p"))
        for k in range(games)
    ]
    config = EngineConfig(command=builtin(per_process), processes=processes)
    with EngineDriver(config) as driver:
        with timed() as t:
            results = list(driver.play(specs, {"p": first_legal}))
        asked = driver.decisions_asked
    assert len(results) == games
    report_child(asked, t, in_flight=processes * per_process)


def child_evaluate(games: int, where: str) -> None:
    import hashlib

    import torch

    from toolkit.engine.builtin import DEFAULT_GAMES
    from toolkit.engine.config import EngineConfig
    from toolkit.game.players import PolicyPlayer
    from toolkit.jobs.config import BackendConfig
    from toolkit.train.config import EvaluateConfig, PolicySpec
    from toolkit.train.evaluate import evaluate
    from toolkit.train.policy import ActorNet, greedy_policy

    torch.manual_seed(0)
    policy = greedy_policy(ActorNet(PolicySpec()))

    def player() -> PolicyPlayer:
        return PolicyPlayer(policy)

    config = EvaluateConfig(games=games, seed=1)
    engine = EngineConfig(command=builtin(DEFAULT_GAMES), processes=2) if where == "engine" else None
    with timed() as t:
        result = evaluate(player, config, backend=BackendConfig(kind="inprocess"), engine=engine)
    digest = hashlib.sha256(str([o.model_dump() for o in result.outcomes]).encode()).hexdigest()[:16]
    report_child(result.decisions, t, games=result.games, outcomes=digest, win_rate=result.win_rate)


def child_env(envs: int, steps: int, where: str) -> None:
    from toolkit.engine.config import EngineConfig
    from toolkit.engine.vec_env import EngineVecEnv
    from toolkit.game.league import OpponentPool
    from toolkit.game.vec_env import CommanderVecEnv

    pool = OpponentPool(["heuristic"] * 3)
    if where == "engine":
        env = EngineVecEnv(envs, EngineConfig(command=builtin(envs), processes=2), pool, seed=1)
    else:
        env = CommanderVecEnv(envs, pool, seed=1)
    with timed() as t:
        env.reset()
        for _ in range(steps):
            env.step_async(env.action_masks().argmax(1))
            env.step_wait()
    env.close()
    report_child(envs * steps, t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--eval-games", type=int, default=2000)
    args = parser.parse_args()
    script = str(Path(__file__).resolve())
    tee = Tee()
    tee(f"# bench_engine  {dt.datetime.now().isoformat(timespec='seconds')}  {platform.node()}")

    def wire(name: str, processes: int, per_process: int, games: int) -> object:
        argv = [script, "--child-wire", str(processes), str(per_process), str(games), "30"]
        return best_of([run_child(name, argv) for _ in range(args.repeat)])

    batched = wire("batched", 2, 256, 512)
    rate = batched.rows / batched.wall_s
    judged = verdict("engine: batched frames, 2 processes", rate, TARGET_BATCHED, unit="decisions/s")
    tee(f"(a) batched frames, 2 processes x 256 games: {rate:,.0f} decisions/s (target {TARGET_BATCHED:,}) {judged}")
    single = wire("per frame", 2, 1, 40)
    rate = single.rows / single.wall_s
    judged = verdict("engine: one decision per frame", rate, TARGET_PER_FRAME, unit="decisions/s")
    alone = wire("per frame, 1 process", 1, 1, 20)
    tee(
        f"(b) one decision per frame, 2 processes x 1 game: {rate:,.0f} decisions/s (target {TARGET_PER_FRAME:,}) "
        f"{judged}; 1 process: {alone.rows / alone.wall_s:,.0f} decisions/s ({alone.wall_s / alone.rows * 1e3:.2f} "
        "ms a round trip)"
    )
    here = best_of(
        [run_child("evaluate here", [script, "--child-eval", str(args.eval_games), "here"]) for _ in range(args.repeat)]
    )
    there = best_of(
        [
            run_child("evaluate engine", [script, "--child-eval", str(args.eval_games), "engine"])
            for _ in range(args.repeat)
        ]
    )
    ratio = here.wall_s / there.wall_s
    judged = verdict(
        "engine: evaluate through the built-in engine / in process", ratio, TARGET_EVAL, unit="x", against="in process"
    )
    same = here.extra["outcomes"] == there.extra["outcomes"]
    tee(
        f"(c) evaluate {there.extra['games']:,} games: in process {here.wall_s:.2f}s, through 2 engine processes "
        f"{there.wall_s:.2f}s: {ratio:.2f}x the in-process speed (target >= {TARGET_EVAL}x) {judged}; the same "
        f"outcomes: {same} (win rate {there.extra['win_rate']:.1%})"
    )
    small, large = wire("16 in flight", 1, 16, 512), wire("256 in flight", 1, 256, 512)
    tee(
        f"(d) the driver's peak memory: {small.peak_rss_mb:.0f} MiB with 16 games in flight, {large.peak_rss_mb:.0f} "
        f"MiB with 256 ({large.peak_rss_mb / small.peak_rss_mb:.2f}x; {small.rows / small.wall_s:,.0f} and "
        f"{large.rows / large.wall_s:,.0f} decisions/s)"
    )
    envs = {
        where: best_of([run_child(f"env {where}", [script, "--child-env", "256", "100", where]) for _ in range(2)])
        for where in ("engine", "here")
    }
    there_rate = envs["engine"].rows / envs["engine"].wall_s
    here_rate = envs["here"].rows / envs["here"].wall_s
    tee(
        f"(e) PPO's env, 256 envs vs three heuristics: {there_rate:,.0f} steps/s through 2 engine processes, "
        f"{here_rate:,.0f} steps/s in process ({there_rate / here_rate:.2f}x; reported, no target)"
    )
    OUT.mkdir(parents=True, exist_ok=True)
    tee.write(OUT / "bench_engine.txt")


if __name__ == "__main__":
    if len(sys.argv) > 5 and sys.argv[1] == "--child-wire":
        child_wire(*(int(a) for a in sys.argv[2:6]))
    elif len(sys.argv) > 4 and sys.argv[1] == "--child-env":
        child_env(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) > 3 and sys.argv[1] == "--child-eval":
        child_evaluate(int(sys.argv[2]), sys.argv[3])
    else:
        main()
