"""The vectorised env: the same games as the single-game env, move for move, with masks that hold."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit.game import rules
from toolkit.game.env import CommanderEnv
from toolkit.game.league import OpponentPool, env_seed
from toolkit.game.players import HeuristicParams, HeuristicPlayer, PolicyPlayer
from toolkit.game.vec_env import CommanderVecEnv


def _pools():
    return {
        "fixed table": lambda: ("heuristic", "tuned", "heuristic"),
        "league": lambda: OpponentPool(["heuristic", "tuned"], weights=[1, 2]),
        "mirror league": lambda: OpponentPool(
            ["heuristic", "tuned", HeuristicPlayer(HeuristicParams(target="leader"))], weights=[1, 2, 1], mirror=0.5
        ),
        # the env asks the two value-rule heuristics as one, row by row; the leader-rule one on its own
        "mixed rules": lambda: OpponentPool(
            ["heuristic", "tuned", HeuristicPlayer(HeuristicParams(target="leader"))], weights=[1, 1, 1]
        ),
    }


@pytest.mark.parametrize("pool", sorted(_pools()))
@pytest.mark.parametrize("seat", [None, 2])
def test_the_vectorised_env_matches_single_envs_move_for_move(pool: str, seat: int | None) -> None:
    make = _pools()[pool]
    n, seed = 8, 5
    vec = CommanderVecEnv(n, make(), seed=seed, learner_seat=seat)
    singles = [CommanderEnv(make(), learner_seat=seat) for _ in range(n)]
    obs = vec.reset()
    assert np.array_equal(obs, np.stack([e.reset(seed=env_seed(seed, i))[0] for i, e in enumerate(singles)]))
    rng = np.random.default_rng(0)
    ended = 0
    returns = np.zeros(n)
    for _ in range(80):  # about 35 episodes: several per env, resets included
        masks = vec.action_masks()
        assert np.array_equal(masks, np.stack([e.action_masks() for e in singles]))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, dones, infos = vec.step(actions)
        for i, env in enumerate(singles):
            o, r, terminated, truncated, info = env.step(int(actions[i]))
            assert r == pytest.approx(rewards[i], abs=1e-6) and terminated == dones[i] and not truncated
            returns[i] += r
            if terminated:
                ended += 1
                assert np.array_equal(o, infos[i]["terminal_observation"])
                assert (info["won"], info["timed_out"]) == (infos[i]["won"], infos[i]["timed_out"])
                assert infos[i]["episode"]["r"] == pytest.approx(returns[i], abs=1e-4)
                returns[i] = 0.0
                o, _ = env.reset()
            assert np.array_equal(o, obs[i])
    assert ended > 3 * n  # several episodes per env, resets included


def test_masks_are_never_violated_and_episodes_end_with_the_outcome_reward() -> None:
    live = PolicyPlayer(lambda obs, mask: np.where(mask, np.arange(8)[None, :], -1).argmax(1))  # a policy opponent
    pool = OpponentPool(["random", "heuristic", live], weights=[1, 1, 1], names=["random", "heuristic", "policy"])
    vec = CommanderVecEnv(64, pool, seed=1, max_rounds=15)
    vec.reset()
    rng = np.random.default_rng(2)
    finals, timed_out = [], 0
    for _ in range(400):
        masks = vec.action_masks()
        assert masks.any(1).all() and masks[:, rules.PASS].all()
        actions = (rng.random(masks.shape) + masks).argmax(1)  # random legal actions
        _, rewards, dones, infos = vec.step(actions)
        for i in np.flatnonzero(dones):
            finals.append((infos[i]["won"], rewards[i]))
            timed_out += infos[i]["timed_out"]
    assert vec.illegal_actions == 0
    assert finals and timed_out  # short games: some reach the turn limit
    for won, reward in finals:  # the terminal reward dominates the small shaped terms
        assert (reward > 0.5) if won else (reward < -0.5)


def test_illegal_requests_become_pass_and_are_counted() -> None:
    vec = CommanderVecEnv(8, ("random",) * 3, seed=3)
    vec.reset()
    masks = vec.action_masks()
    illegal = np.array([np.flatnonzero(~m)[0] if (~m).any() else rules.PASS for m in masks])
    vec.step(illegal)
    assert vec.illegal_actions == int((~masks).any(1).sum())


def test_maskable_ppo_reads_every_mask_at_once() -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    vec = CommanderVecEnv(16, ("heuristic",) * 3, seed=0)
    vec.reset()
    assert is_masking_supported(vec)
    assert np.array_equal(get_action_masks(vec), vec.action_masks())


def test_a_turn_limit_reward_changes_only_what_a_stalled_episode_ends_with() -> None:
    ends: dict[float, list[tuple[bool, bool, float]]] = {}
    for stall in (-1.0, -2.0):
        vec = CommanderVecEnv(16, ("heuristic",) * 3, seed=3, max_rounds=8, turn_limit_reward=stall)
        vec.reset()
        ends[stall] = []
        for _ in range(120):
            _, rewards, dones, infos = vec.step(np.full(16, rules.PASS))  # never attacks: no damage dealt
            ends[stall] += [(infos[i]["timed_out"], infos[i]["won"], float(rewards[i])) for i in np.flatnonzero(dones)]
    assert [e[:2] for e in ends[-1.0]] == [e[:2] for e in ends[-2.0]]  # the same games
    for (timed_out, won, before), (_, _, after) in zip(ends[-1.0], ends[-2.0], strict=True):
        assert after == pytest.approx(before - 1.0 if timed_out and not won else before)
    assert any(e[0] for e in ends[-2.0]) and any(not e[0] for e in ends[-2.0])


def test_episodes_after_a_new_pool_are_drawn_from_it_though_each_next_game_was_dealt_ahead() -> None:
    vec = CommanderVecEnv(16, OpponentPool(["heuristic", "tuned"], weights=[1, 0]), seed=4)
    vec.reset()
    vec.set_pool(OpponentPool(["heuristic", "tuned"], weights=[0, 1]))
    tables: dict[int, list[list[int]]] = {i: [] for i in range(16)}
    for _ in range(300):
        _, _, dones, infos = vec.step(vec.action_masks().argmax(1))  # the first legal action: games end
        for i in np.flatnonzero(dones):
            tables[i].append(infos[i]["opponents"])
    finished = [t for t in tables.values() if len(t) >= 2]
    assert finished
    for episodes in finished:  # the episode in play when the pool changed, then only the new pool's
        assert episodes[0] == [0, 0, 0] and all(t == [1, 1, 1] for t in episodes[1:])


def test_an_ended_episode_is_followed_by_a_game_dealt_ahead_and_the_next_one_is_dealt() -> None:
    # Each env's next game is dealt ahead and plays its opening in a later step's rounds: an env whose episode
    # ends continues, in the same step, with a game already waiting on its learner, and the one after it is
    # dealt then, its opening left to the next step; every other env's next game is ready.
    vec = CommanderVecEnv(64, ("heuristic",) * 3, seed=6, max_rounds=6)
    vec.reset()
    assert vec._ready[vec.spare].all()
    for _ in range(100):
        _, _, dones, _ = vec.step(np.full(64, rules.PASS))
        assert not vec._ready[vec.spare[dones]].any() and vec._ready[vec.spare[~dones]].all()
        assert (vec.state.seat[vec.row] == vec.learner[vec.row]).all()
