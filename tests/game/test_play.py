"""The batched core, the players, the logger, the environment and the simulate command."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from toolkit.game import core, records, rules
from toolkit.game.config import SimulateConfig
from toolkit.game.env import CommanderEnv
from toolkit.game.players import DecisionBatch, HeuristicPlayer, PolicyPlayer, RandomPlayer, make_player
from toolkit.game.simulate import simulate
from toolkit.schema.models import DecisionSnapshot


class _CheckingRandom(RandomPlayer):
    """A random player that also counts its decisions and checks the masks it is given."""

    def __init__(self) -> None:
        self.decisions = 0

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        assert batch.mask[:, rules.PASS].all()
        self.decisions += len(batch.games)
        return super().act(batch)


def test_random_legal_players_never_trigger_an_illegal_move() -> None:
    player = _CheckingRandom()  # rules.apply raises GameError on any illegal action
    finished = list(core.play([player] * 4, 300, seed=11, batch_size=128))
    assert player.decisions > 50_000
    assert sum(len(f.game) for f in finished) == 300


@pytest.mark.parametrize("n_seats", [2, 3, 6])
def test_every_pod_size_plays_to_an_end(n_seats: int) -> None:
    players = [make_player("heuristic")] + [make_player("random")] * (n_seats - 1)
    finished = list(core.play(players, 40, seed=2, batch_size=16))
    winners = np.concatenate([f.winner for f in finished])
    assert len(winners) == 40 and (winners < n_seats).all()


def test_same_seed_same_games_whatever_the_batch() -> None:
    players = [HeuristicPlayer()] * 4
    a = np.concatenate([f.winner for f in core.play(players, 60, seed=5, batch_size=7)])
    b = np.concatenate([f.winner for f in core.play(players, 60, seed=5, batch_size=60)])
    c = np.concatenate([f.winner for f in core.play(players, 60, seed=6, batch_size=60)])
    assert (a == b).all() and (a != c).any()


def test_a_policy_plugs_in_through_observations_and_masks() -> None:
    seen = []

    def always_last_legal(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        seen.append(obs.shape)
        return mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)

    players = [PolicyPlayer(always_last_legal), HeuristicPlayer(), HeuristicPlayer(), HeuristicPlayer()]
    finished = list(core.play(players, 10, seed=1, batch_size=10, record=True))
    assert seen and seen[0][1] == CommanderEnv().observation_space.shape[0]
    lines = records.build_rows(
        finished[0], seed=1, sources=[p.source for p in players], model_version="gen-003", generation=3
    )
    rows = [orjson.loads(line) for line in lines]
    assert {r["source"] for r in rows if r["seat"] == 0} == {"ppo"}
    assert all(r["model_version"] == "gen-003" for r in rows if r["seat"] == 0)


def _rows(config: SimulateConfig) -> list[bytes]:
    result = simulate(config)
    lines: list[bytes] = []
    for path in result.files:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:
            lines.extend(handle.read().splitlines())
    return lines


def test_every_written_row_is_a_valid_canonical_record(tmp_path: Path) -> None:
    config = SimulateConfig(
        games=30, players=("heuristic", "random", "tuned", "random"), seed=4, out=tmp_path, max_rounds=12
    )
    lines = _rows(config)
    rows = [DecisionSnapshot.model_validate_json(line) for line in lines]
    by_game = defaultdict(list)
    for row in rows:
        by_game[row.game_id].append(row)
    assert len(by_game) == 30
    assert any(r.timed_out for r in rows) and any(r.winner_seat is not None for r in rows)
    for game in by_game.values():
        assert [r.decision_index for r in game] == list(range(len(game)))
        for seat in {r.seat for r in game}:
            mine = [r for r in game if r.seat == seat]
            assert [r.is_terminal or r.truncated for r in mine] == [False] * (len(mine) - 1) + [True]
            assert mine[-1].episode_return == pytest.approx(sum(r.reward for r in mine), abs=1e-4)
            assert {r.source for r in mine} == {"forge" if seat in (0, 2) else "random"}
            if mine[-1].winner_seat is not None:
                assert mine[-1].seat_won == (seat == mine[-1].winner_seat)
                assert mine[-1].reward >= 0.99 if mine[-1].seat_won else mine[-1].reward <= -0.9
        for r in game:
            assert r.legal_actions[r.action.index]
            if r.action.macro == "attack_opponent":
                assert r.phase == "main_1" and r.action.target_seat not in (None, r.seat)
            if r.action.macro.startswith("cast_"):
                assert r.action.card
            assert r.players[r.seat].hand is not None  # only the acting seat's hand is written


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        config = SimulateConfig(
            games=12,
            players=("random", "heuristic", "random"),
            seed=9,
            out=tmp_path / name,
            compression="gzip",
            batch_size=5,
        )
        runs.append(b"\n".join(_rows(config)))
    assert runs[0] == runs[1] and len(runs[0]) > 0


def test_the_environment_passes_the_gymnasium_checker() -> None:
    from gymnasium.utils.env_checker import check_env

    check_env(CommanderEnv(opponents=("random", "heuristic", "tuned")), skip_render_check=True)


def test_the_environment_is_seeded_and_masked() -> None:
    def episode(seed: int) -> list[tuple]:
        env = CommanderEnv(opponents=("random", "heuristic", "random"), learner_seat=None)
        obs, _ = env.reset(seed=seed)
        rng, trace, done = np.random.default_rng(0), [], False
        while not done:
            mask = env.action_masks()
            assert mask.dtype == bool and mask.shape == (8,) and mask[rules.PASS]
            obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            assert "illegal_action" not in info and env.observation_space.contains(obs)
            trace.append((obs.tobytes(), reward))
            done = terminated or truncated
        return trace

    assert episode(3) == episode(3)
    assert episode(3) != episode(4)


def test_the_environment_replaces_an_illegal_action_by_pass() -> None:
    env = CommanderEnv()
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    *_, info = env.step(illegal)
    assert info["illegal_action"]


def test_simulate_command_writes_logs_that_validate(tmp_path: Path) -> None:
    from toolkit.cli.main import app

    out = tmp_path / "logs"
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "simulate",
            "--games",
            "16",
            "--players",
            "heuristic,random,random,random",
            "--seed",
            "3",
            "--out",
            str(out),
            "--compress",
            "zstd",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["games"] == 16 and sum(summary["wins_per_seat"]) + summary["truncations"] == 16
    assert set(summary["win_rate_per_player_type"]) == {"heuristic", "random"}
    assert [Path(f).name for f in summary["files"]] == ["sim-3-part-0000.jsonl.zst"]
    pytest.importorskip("toolkit.ingest.dry_run")
    checked = runner.invoke(app, ["validate", str(out), "--json"])
    assert checked.exit_code == 0, checked.output


def test_simulate_command_refuses_an_unknown_player(tmp_path: Path) -> None:
    from toolkit.cli.main import app

    result = CliRunner().invoke(app, ["simulate", "--games", "2", "--players", "heuristic,alphago"])
    assert result.exit_code != 0


def test_the_heuristic_clearly_beats_random_players() -> None:
    players = [HeuristicPlayer(), RandomPlayer(), RandomPlayer(), RandomPlayer()]
    winners = np.concatenate([f.winner for f in core.play(players, 400, seed=21, batch_size=400)])
    assert (winners == 0).mean() > 0.45  # bench/bench_game.py measures it over 20,000 games
