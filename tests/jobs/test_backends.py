"""Game jobs give the same results in-process and on the process pool; a dead worker's shards are re-run."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest

from toolkit.errors import ConfigError, JobError
from toolkit.game.config import SimulateConfig
from toolkit.game.simulate import simulate
from toolkit.jobs.config import BackendConfig
from toolkit.jobs.plan import Shard, shards
from toolkit.jobs.run import run_shards
from toolkit.ratings import TournamentConfig, play_tournament
from toolkit.train.agents import agent_from_blob, player_from_ref, policy_blob
from toolkit.train.config import SELF, EvaluateConfig, ExportConfig
from toolkit.train.evaluate import evaluate
from toolkit.train.export import export_league_games

INPROCESS = BackendConfig(kind="inprocess", shard_games=100)
POOL = BackendConfig(kind="pool", workers=2, shard_games=100)
TIMINGS = {"seconds", "decisions_per_second", "games_per_second"}


def _bytes(files: list[Path]) -> list[tuple[str, bytes]]:
    return [(f.name, f.read_bytes()) for f in files]


def test_the_shard_plan_depends_only_on_the_job_size() -> None:
    plan = shards(250, 100)
    assert [(s.start, s.stop, s.of, s.name) for s in plan] == [
        (0, 100, 3, "s00000"),
        (100, 200, 3, "s00001"),
        (200, 250, 3, "s00002"),
    ]
    assert shards(0, 100) == [] and sum(s.size for s in shards(1001, 7)) == 1001


def test_simulate_writes_the_same_files_in_process_and_on_the_pool(tmp_path: Path) -> None:
    players = ("heuristic", "random", "tuned", "heuristic")  # random players draw from their shard's own stream
    runs = {}
    for backend in (INPROCESS, POOL):
        out = tmp_path / backend.kind
        result = simulate(SimulateConfig(games=250, players=players, seed=7, out=out), backend=backend)
        runs[backend.kind] = result
        assert [f.name for f in result.files] == [f"sim-7-s0000{j}-part-0000.jsonl" for j in range(3)]
        assert not list(out.glob("*.tmp"))
    a, b = runs["inprocess"], runs["pool"]
    assert _bytes(a.files) == _bytes(b.files)
    assert a.model_dump(exclude=TIMINGS | {"files"}) == b.model_dump(exclude=TIMINGS | {"files"})
    assert a.games == 250 and sum(a.wins_per_seat) + a.draws + a.truncations == 250


def test_a_one_shard_simulation_is_what_an_unsharded_one_always_wrote(tmp_path: Path) -> None:
    result = simulate(SimulateConfig(games=30, seed=2, out=tmp_path), backend=INPROCESS)
    assert [f.name for f in result.files] == ["sim-2-part-0000.jsonl"]


def test_evaluate_tournament_and_export_are_the_same_in_process_and_on_the_pool(
    checkpoint: Path, tmp_path: Path
) -> None:
    blob = policy_blob(checkpoint)
    config = EvaluateConfig(opponents=("heuristic", "random", "tuned"), games=300, seed=3)
    a, b = (evaluate(blob, config, backend=backend) for backend in (INPROCESS, POOL))
    assert a.games == 300 and len({o.deal for o in a.outcomes}) == 75
    assert a.model_dump(exclude=TIMINGS) == b.model_dump(exclude=TIMINGS)
    mixed = EvaluateConfig(opponents=(str(checkpoint), "heuristic", str(checkpoint)), games=240, seed=3)
    a, b = (evaluate(blob, mixed, backend=backend) for backend in (INPROCESS, POOL))  # checkpoints at the table
    assert a.opponents == [blob.name, "heuristic", blob.name] and a.games == 240
    assert a.model_dump(exclude=TIMINGS) == b.model_dump(exclude=TIMINGS)

    entrants = {"student": blob, "heuristic": "heuristic", "tuned": "tuned", "random": "random", "h2": "heuristic"}
    tournament = TournamentConfig(deals_per_lineup=10, seed=4)
    games = [
        play_tournament(entrants, ["student"], tournament, load=player_from_ref, backend=backend)
        for backend in (INPROCESS, POOL)
    ]
    assert len(games[0]) == 4 * 4 * 10 and games[0] == games[1]

    exports = [
        export_league_games(
            blob,
            [SELF, "heuristic", "random"],
            tmp_path / backend.kind,
            weights=[1, 1, 1],
            games=220,
            seed=5,
            batch="gen-001",
            generation=1,
            config=ExportConfig(min_decisions=1),
            backend=backend,
        )
        for backend in (INPROCESS, POOL)
    ]
    assert [f.name for f in exports[0].files][-1] == "ml-decisions-ppo-gen-001-s00002-part-0000.jsonl"
    assert _bytes(exports[0].files) == _bytes(exports[1].files)
    assert exports[0].model_dump(exclude={"files"}) == exports[1].model_dump(exclude={"files"})


def test_a_checkpoint_is_loaded_once_per_process_whatever_the_number_of_games(checkpoint: Path) -> None:
    blob = policy_blob(checkpoint)
    assert agent_from_blob(blob) is agent_from_blob(policy_blob(checkpoint))  # kept under its sha256
    assert player_from_ref(blob) is not player_from_ref(blob)  # but each table gets a fresh player


def _die_once(shard: Shard, marker: Path) -> int:
    """Kill this worker (kill -9) the first time shard 1 runs; the re-run finds the marker and completes."""
    flag = marker / f"{shard.name}.died"
    if shard.index == 1 and not flag.exists():
        flag.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return shard.start * 1000 + shard.stop


def _always_die(shard: Shard, _: object) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return 0


def _refuse(shard: Shard, _: object) -> int:
    raise ConfigError(f"shard {shard.name} refuses", hint="none")


def test_a_pool_worker_killed_mid_job_is_replaced_and_its_shard_re_run(tmp_path: Path) -> None:
    plan = shards(40, 10)
    results = run_shards(_die_once, plan, tmp_path, POOL.model_copy(update={"retries": 2}))
    assert (tmp_path / "s00001.died").exists()  # the worker did die
    assert results == [s.start * 1000 + s.stop for s in plan]  # every shard once, in order
    with pytest.raises(JobError, match="lost its worker"):
        run_shards(_always_die, shards(2, 1), None, POOL.model_copy(update={"retries": 1}))


def test_pool_workers_are_kept_between_jobs_until_the_pools_are_closed(tmp_path: Path) -> None:
    from toolkit.jobs import backends

    backends.close_pools()
    assert run_shards(_square, shards(4, 1), None, POOL) == [0, 1, 4, 9]
    workers = [p for pool in backends._pools.values() for p in (pool[1]._processes or {}).values()]
    assert len(workers) == 2 and all(w.is_alive() for w in workers)
    assert run_shards(_square, shards(2, 1), None, POOL) == [0, 1]  # the same workers: kept for the next job
    assert [p for pool in backends._pools.values() for p in (pool[1]._processes or {}).values()] == workers
    backends.close_pools()  # as the CLI does when a command ends
    assert not backends._pools and not any(w.is_alive() for w in workers)


def _env_of_worker(_shard: Any, name: str) -> str | None:
    import os

    return os.environ.get(name)


def test_a_pool_started_under_another_environment_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    # a worker reads its settings (a shared lake's AWS_* variables) from the environment it was spawned with
    assert run_shards(_env_of_worker, shards(2, 1), "AWS_DISTILL_TEST", POOL) == [None, None]
    monkeypatch.setenv("AWS_DISTILL_TEST", "set")
    assert run_shards(_env_of_worker, shards(2, 1), "AWS_DISTILL_TEST", POOL) == ["set", "set"]
    monkeypatch.setenv("DISTILL_UNRELATED", "x")  # what workers do not read keeps the pool
    from toolkit.jobs import backends

    kept = backends._pools[2][1]
    assert run_shards(_env_of_worker, shards(2, 1), "AWS_DISTILL_TEST", POOL) == ["set", "set"]
    assert backends._pools[2][1] is kept


def test_a_command_leaves_no_pool_worker_behind(tmp_path: Path) -> None:
    import subprocess
    import sys

    argv = ["distill", "simulate", "--games", "40", "--shard-games", "10", "--backend", "pool", "--workers", "2"]
    argv += ["--out", str(tmp_path / "logs")]
    probe = f"""
import multiprocessing, sys
from toolkit.cli.main import main
sys.argv = {argv!r}
try:
    main()
except SystemExit as end:
    assert not end.code, end.code
print(len(multiprocessing.active_children()))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0"  # the command's pool workers exited with it


def _square(shard: Shard, shared: None) -> int:
    return shard.start**2


def test_an_error_in_a_shard_comes_back_as_itself(tmp_path: Path) -> None:
    for backend in (INPROCESS, POOL):
        with pytest.raises(ConfigError, match="refuses"):
            run_shards(_refuse, shards(3, 1), None, backend)


def test_a_live_policy_is_played_in_process_on_the_same_shard_plan(checkpoint: Path) -> None:
    config = EvaluateConfig(opponents=("heuristic",) * 3, games=240, seed=1)
    live = evaluate(lambda: player_from_ref(policy_blob(checkpoint)), config, backend=POOL)
    shipped = evaluate(policy_blob(checkpoint), config, backend=POOL)
    assert live.model_dump(exclude=TIMINGS) == shipped.model_dump(exclude=TIMINGS)


def test_a_ray_address_nothing_answers_at_fails_at_once_with_a_clear_error() -> None:
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    with pytest.raises(JobError, match=f"no Ray cluster answers at 127.0.0.1:{port}"):
        run_shards(_refuse, shards(2, 1), None, BackendConfig(kind="ray", address=f"127.0.0.1:{port}"))
