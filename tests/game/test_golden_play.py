"""Seeded games replay exactly: the decisions of a fixed batch of games are pinned by a digest (issue 26).

The digest was computed from the code before the batched core was optimised; a change of speed must leave
every decision, state snapshot and outcome as it was. Every player kind takes part (each heuristic target
rule, the tuned heuristic, random players), in a batch smaller than the run so that slots are refilled, and
steps of the vectorised env are pinned as well: 200 steps of a league of deterministic players, episodes
ending and restarting (pinned before the env dealt each env's next game ahead, at 120e795), and 40 steps
with a random player. Random players draw from one generator in the order the env asks them, so that
digest moves when the env plays its games in another order: it was re-pinned (the last observations of
ended episodes added) when each env's next game began to play its opening ahead, in an earlier step's
rounds; the games themselves did not move.
"""

from __future__ import annotations

import hashlib

import numpy as np

from toolkit.game import core
from toolkit.game.league import OpponentPool
from toolkit.game.players import HeuristicParams, HeuristicPlayer, RandomPlayer, make_player
from toolkit.game.vec_env import CommanderVecEnv

GOLDEN_PLAY = "05cc2a43a6d3bf4c418746574ddae265d1867e62899669f7a80aa989f5eff13b"
GOLDEN_VEC_ENV = "a452cc9b681b978f55e772f96bde68294b88b7780650370f61cd7519aee999ff"
GOLDEN_VEC_ENV_LEAGUE = "3c3cfe8a7334aa3d006ad7b1c6dda4f7decf19eedf890e02caea5206db521953"


def _update(digest: "hashlib._Hash", array: np.ndarray) -> None:
    array = np.ascontiguousarray(array)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())


def play_digest() -> str:
    """sha256 over every field of every finished chunk and every column of its decision log."""
    pool = [
        HeuristicPlayer(),
        make_player("tuned"),
        RandomPlayer(),
        HeuristicPlayer(HeuristicParams(target="leader")),
        HeuristicPlayer(HeuristicParams(target="open", finish_kills=True, max_hits_to_kill=3)),
        HeuristicPlayer(HeuristicParams(target="weakest", attack_when_outnumbered=False, hold_when_behind=False)),
    ]
    lineups = np.random.default_rng(0).integers(len(pool), size=(96, 4))
    lineups[:24] = 0  # a quarter of the games: four default heuristics
    digest = hashlib.sha256()
    for f in core.play(pool, 96, seed=7, batch_size=40, record=True, flush_every=16, lineups=lineups):
        for name in ("game", "winner", "truncated", "placement", "archetype", "commander", "decisions"):
            _update(digest, getattr(f, name))
        assert f.log is not None
        for name in core.LOG_FIELDS:
            _update(digest, f.log[name])
    return digest.hexdigest()


def vec_env_digest(
    opponents: tuple[str, ...] | OpponentPool = ("heuristic", "tuned", "random"), steps: int = 40
) -> str:
    """sha256 over the observations, rewards, dones, masks and last observations of ``steps`` steps of 16 envs,
    a seeded random agent."""
    env = CommanderVecEnv(16, opponents, seed=3)
    digest, rng = hashlib.sha256(), np.random.default_rng(1)
    _update(digest, env.reset())
    for _ in range(steps):
        masks = env.action_masks()
        obs, rewards, dones, infos = env.step((rng.random(masks.shape) + masks).argmax(1))
        for array in (masks, obs, rewards, dones):
            _update(digest, array)
        for i in np.flatnonzero(dones):
            _update(digest, infos[i]["terminal_observation"])
    return digest.hexdigest()


def league_vec_env_digest() -> str:
    """:func:`vec_env_digest` over 200 steps of a league of the three heuristic target rules: every env's
    episodes end and restart."""
    pool = OpponentPool(
        ["heuristic", "tuned", HeuristicPlayer(HeuristicParams(target="leader"))], weights=[1, 1, 1], mirror=0.5
    )
    return vec_env_digest(pool, steps=200)


def test_a_seeded_batch_of_games_takes_the_same_decisions_as_before() -> None:
    assert play_digest() == GOLDEN_PLAY


def test_the_vectorised_env_steps_through_the_same_states_as_before() -> None:
    assert vec_env_digest() == GOLDEN_VEC_ENV


def test_a_league_in_the_vectorised_env_plays_the_same_episodes_as_before() -> None:
    assert league_vec_env_digest() == GOLDEN_VEC_ENV_LEAGUE
