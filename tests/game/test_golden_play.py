"""Seeded games replay exactly: the decisions of a fixed batch of games are pinned by a digest (issue 26).

The digest was computed from the code before the batched core was optimised; a change of speed must leave
every decision, state snapshot and outcome as it was. Every player kind takes part (each heuristic target
rule, the tuned heuristic, random players), in a batch smaller than the run so that slots are refilled, and
a few steps of the vectorised env are pinned as well.
"""

from __future__ import annotations

import hashlib

import numpy as np

from toolkit.game import core
from toolkit.game.players import HeuristicParams, HeuristicPlayer, RandomPlayer, make_player
from toolkit.game.vec_env import CommanderVecEnv

GOLDEN_PLAY = "05cc2a43a6d3bf4c418746574ddae265d1867e62899669f7a80aa989f5eff13b"
GOLDEN_VEC_ENV = "3a98ad099ca9dc9b653b0ef275b5ec8ece6142b9d3bf451f538f467cbc50b7e9"


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


def vec_env_digest() -> str:
    """sha256 over the observations, rewards, dones and masks of 40 steps of 16 envs, a seeded random agent."""
    env = CommanderVecEnv(16, ("heuristic", "tuned", "random"), seed=3)
    digest, rng = hashlib.sha256(), np.random.default_rng(1)
    _update(digest, env.reset())
    for _ in range(40):
        masks = env.action_masks()
        obs, rewards, dones, _ = env.step((rng.random(masks.shape) + masks).argmax(1))
        for array in (masks, obs, rewards, dones):
            _update(digest, array)
    return digest.hexdigest()


def test_a_seeded_batch_of_games_takes_the_same_decisions_as_before() -> None:
    assert play_digest() == GOLDEN_PLAY


def test_the_vectorised_env_steps_through_the_same_states_as_before() -> None:
    assert vec_env_digest() == GOLDEN_VEC_ENV
