"""Evaluation in pods, and recurrent policies: LSTM state kept within a game, reset between games."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.train.conftest import SMALL, tiny_ppo
from toolkit.game import core
from toolkit.game.players import make_player
from toolkit.train import checkpoints
from toolkit.train.agents import RecurrentPlayer, load_agent, make_recurrent_policy
from toolkit.train.config import EvaluateConfig
from toolkit.train.evaluate import compare, evaluate
from toolkit.train.ppo import train_ppo


def test_pods_rotate_the_policy_through_every_seat_on_the_same_deals() -> None:
    config = EvaluateConfig(opponents=("random",) * 3, games=30, seed=5)
    result = evaluate(lambda: make_player("heuristic"), config)
    assert result.games == 32 and [s.seat for s in result.per_seat] == [0, 1, 2, 3]
    assert all(s.games == 8 for s in result.per_seat)
    assert {o.deal for o in result.outcomes if o.seat == 0} == {o.deal for o in result.outcomes if o.seat == 3}
    assert result.win_low < result.win_rate < result.win_high
    assert result.win_rate > 0.25 and result.placement_score > 0.5  # the heuristic beats random players
    assert evaluate(lambda: make_player("heuristic"), config).outcomes == result.outcomes
    weak = evaluate(lambda: make_player("random"), config)
    diff = compare(result, weak)
    assert diff.win_rate_diff == round((result.wins - weak.wins) / result.games, 4)
    assert diff.win_rate_diff_low < diff.win_rate_diff


class _Recording:
    """The real sb3-contrib policy, with every predict call's LSTM state in and out kept."""

    def __init__(self, policy: Any) -> None:
        self.policy, self.calls = policy, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def predict(self, obs, state, episode_start, deterministic):
        actions, out = self.policy.predict(obs, state=state, episode_start=episode_start, deterministic=deterministic)
        self.calls.append((state[0].copy(), episode_start.copy(), out[0].copy()))
        return actions, out


def test_lstm_state_persists_within_a_game_and_resets_between_games() -> None:
    policy = _Recording(make_recurrent_policy(SMALL, 16))
    player = RecurrentPlayer(policy)
    seat_decisions = []
    for finished in core.play([player] + [make_player("heuristic")] * 3, 3, seed=2, batch_size=1, record=True):
        for g in finished.game:
            seat_decisions.append(int(((finished.log["game"] == g) & (finished.log["seat"] == 0)).sum()))
    starts = np.cumsum([0] + seat_decisions[:-1])
    assert player.episode_starts == 3 and len(policy.calls) == sum(seat_decisions)
    for i, (state_in, start, _) in enumerate(policy.calls):
        if i in starts:
            assert start[0] == 1 and not state_in.any()  # a new game starts from a zero state
        else:
            assert start[0] == 0 and np.array_equal(state_in, policy.calls[i - 1][2])  # carried over
    assert any(np.abs(c[2]).sum() > 0 for c in policy.calls)


def test_a_recurrent_run_trains_checkpoints_and_plays_with_sanitised_actions(tmp_path: Path) -> None:
    config = tiny_ppo(
        policy_kind="recurrent",
        lstm_hidden=16,
        n_steps=64,
        batch_size=128,
        total_steps=128,
        eval_every=0,
        opponents=("random", "heuristic"),
    )
    result = train_ppo(config, tmp_path)
    assert result.kind == "ppo-recurrent" and result.final.name.startswith("ppo-recurrent-test-")
    assert checkpoints.read_card(result.final).arch.lstm_hidden == 16
    agent = load_agent(result.final)
    assert agent.recurrent is not None
    played = evaluate(agent.player, EvaluateConfig(opponents=("random",) * 3, games=8, seed=1))
    assert played.games == 8 and played.decisions > 0 and played.illegal_actions >= 0
    assert all(np.isfinite(u.grad_norm) for u in result.updates)
