"""A Gymnasium single-agent view of the game: one learning seat, the others played by opponents.

``CommanderEnv`` steps one game with the same rules as the batched core
(a batch of one). Observations are the feature vectors of ``toolkit.features`` (float32, seat-relative),
actions are the 8 macro actions (attacks go to the opponent the reference
heuristic would attack: ``players.attack_target``), and
``action_masks()`` serves sb3-contrib's ``MaskablePPO``. An illegal action
(e.g. from ``check_env``'s random sampling) is replaced by ``pass`` and
reported in ``info["illegal_action"]``.

Opponents come from an :class:`~toolkit.game.league.OpponentPool`: a fixed
table (names or players, one per other seat) or a league drawn per episode.
Each episode starts with :func:`~toolkit.game.league.draw_episode` from the
env's generator, exactly as each env of the vectorised
:class:`~toolkit.game.vec_env.CommanderVecEnv` does, so the two play the
same games on the same seeds (a test holds them equal move for move). For
training at speed, use the vectorised env; this one is for users who want
a plain Gymnasium env (it passes the env checker).

Rewards are the learner's: the shaped terms of its own decisions (see
``rules``) and, when its episode ends, ``rules.outcome_reward``: +1 for a
win, -1 otherwise. The episode ends (``terminated``) when the learner is
eliminated or the game is over, at the turn limit too: the limit is part of
the game (the turn is observed) and is nobody's win, so it is never a
truncation to bootstrap from. ``info`` tells ``won``, ``placement`` and
``timed_out``.

With ``record=True`` the env also logs every decision of the learner in the
batched core's columnar form and hands the finished episode over in the
last step's ``info["episode_record"]`` (an :class:`EpisodeRecord`), so the
decision logger (``records.build_jsonl``) can write it. An episode that ends
with the learner's elimination stops there: the rest of the game is not
played, so its winner is unknown (-1) unless the game was over.

Example::

    env = CommanderEnv(opponents=("heuristic", "tuned", "random"), learner_seat=None)
    obs, info = env.reset(seed=7)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from toolkit.errors import ConfigError
from toolkit.game import DEFAULT_MAX_ROUNDS, core, rules
from toolkit.game.league import OpponentPool, draw_episode
from toolkit.game.observation import FEATURE_SIZE, observe
from toolkit.game.players import DecisionBatch, Player, attack_target

_G = np.zeros(1, np.intp)  # the env's one game slot
OBS_BOUND = 10.0


def observation_space() -> gym.spaces.Box:
    """The space of the feature vectors the envs hand out."""
    return gym.spaces.Box(-OBS_BOUND, OBS_BOUND, (FEATURE_SIZE,), np.float32)


def action_space() -> gym.spaces.Discrete:
    return gym.spaces.Discrete(rules.PASS + 1)


def learner_observation(state: rules.GameState, g: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The learner's observation in games ``g`` (clipped to the observation space)."""
    return np.clip(observe(state, g, mask), -OBS_BOUND, OBS_BOUND)


@dataclass
class EpisodeRecord:
    """One finished episode of the learner: its decisions as a one-game :class:`core.Finished` (game 0).

    ``requested`` [R] holds, per decision, the action the learner asked for
    when it was illegal and replaced by ``pass``, else -1.
    """

    finished: core.Finished
    requested: np.ndarray
    learner_seat: int
    seat_names: tuple[str | None, ...] = ()  # each seat's player as the opponent pool names it; None: the learner


class CommanderEnv(gym.Env):
    """One learning seat against configurable opponents, seeded, with action masks."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        opponents: Sequence[str | Player] | OpponentPool = ("heuristic", "heuristic", "heuristic"),
        *,
        learner_seat: int | None = 0,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        pod_size: int | None = None,
        record: bool = False,
    ) -> None:
        """Args:
        opponents: one player (or player name) per other seat, in seat order after the learner's, or a pool.
        learner_seat: the learner's seat, or None to draw it per episode.
        max_rounds: rounds before the game stops at the turn limit.
        pod_size: seats at the table (default: one more than a fixed table's opponents, else 4).
        record: log the learner's decisions and return each finished episode in ``info["episode_record"]``.
        """
        self.pool = opponents if isinstance(opponents, OpponentPool) else OpponentPool(opponents)
        n = pod_size or (len(self.pool.players) + 1 if self.pool.fixed else 4)
        self.config = rules.RulesConfig(n_seats=n, max_rounds=max_rounds)
        if learner_seat is not None and not 0 <= learner_seat < n:
            raise ConfigError(f"learner_seat {learner_seat} is outside the pod of {n}", hint=f"use 0..{n - 1}")
        self.record = record
        self._rows: list[dict[str, np.ndarray]] = []
        self.fixed_seat = learner_seat
        self.learner = learner_seat or 0
        self.players: list[Player | None] = []
        self._seat_names: tuple[str | None, ...] = ()
        self.observation_space = observation_space()
        self.action_space = action_space()
        self.state = rules.new_state(1, self.config)
        self._mask = np.zeros((1, rules.PASS + 1), bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        episode = draw_episode(self.np_random, self.config.n_seats, self.fixed_seat, self.pool)
        self.learner = episode.learner_seat
        table = episode.seat_players(self.config.n_seats).tolist()
        self.players = [None if i < 0 else self.pool.players[i] for i in table]
        self._seat_names = tuple(None if i < 0 else self.pool.names[i] for i in table)
        rules.deal(self.state, _G, [episode.deal], self.config)
        self._rows = []
        self._advance()
        return self._observe(), {"learner_seat": self.learner}

    def action_masks(self) -> np.ndarray:
        """The legal-action mask of the learner's current decision (bool, 8)."""
        return self._mask[0].copy()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        info: dict[str, Any] = {}
        action = requested = int(action)
        if not self._mask[0, action]:
            info["illegal_action"] = True
            action = rules.PASS
        row = self._log_row(action, requested) if self.record else None
        target = (
            attack_target(self.state, _G, self.state.seat[_G].astype(np.intp))[0] if action == rules.ATTACK else None
        )
        result = rules.apply(self.state, _G, np.array([action]), target, self._mask)
        reward = float(result.reward[0])
        if row is not None:
            row.update(target=result.target.copy(), card=result.card.copy(), reward=result.reward.copy())
            self._rows.append(row)
        self._advance()
        st = self.state
        terminated = bool(st.eliminated[0, self.learner] or st.done[0])
        if terminated:
            won = bool(st.done[0] and st.winner[0] == self.learner and not st.truncated[0])
            reward += float(rules.outcome_reward(np.array(won)))
            info.update(won=won, timed_out=bool(st.truncated[0]))
            if self.record:
                info["episode_record"] = self._episode_record()
        info["placement"] = int(st.placement[0, self.learner])
        return self._observe(), reward, terminated, False, info

    def _log_row(self, action: int, requested: int) -> dict[str, np.ndarray]:
        """The learner's decision about to be applied, in the core's log columns (see ``core.LOG_FIELDS``)."""
        st = self.state
        return {
            "game": np.zeros(1, np.int64),
            "seat": st.seat[_G].copy(),
            "turn": st.turn[_G].copy(),
            "phase": st.phase[_G].copy(),
            "action": np.array([action], np.int8),
            "mask": self._mask.copy(),
            "requested": np.array([-1 if requested == action else requested], np.int64),
            **core._snapshot(st, _G),
        }

    def _episode_record(self) -> EpisodeRecord:
        st = self.state
        log = {k: np.concatenate([row[k] for row in self._rows]) for k in self._rows[0]}
        requested = log.pop("requested")
        finished = core.Finished(
            game=np.zeros(1, np.int64),
            winner=np.where(st.done[_G], st.winner[_G], -1).astype(st.winner.dtype),
            truncated=st.truncated[_G].copy(),
            placement=st.placement[_G].copy(),
            archetype=st.archetype[_G].copy(),
            commander=st.commander[_G].copy(),
            decisions=np.array([len(self._rows)], np.int64),
            log=log,
        )
        self._rows = []
        return EpisodeRecord(finished, requested, self.learner, self._seat_names)

    def _advance(self) -> None:
        """Let the opponents play until the learner decides, is eliminated, or the game ends."""
        st = self.state
        while not st.done[0] and not st.eliminated[0, self.learner]:
            self._mask = rules.legal_mask(st, _G)
            seat = int(st.seat[0])
            if seat == self.learner:
                return
            batch = DecisionBatch(st, _G, st.seat[_G], self._mask, self.np_random)
            action, target = self.players[seat].act(batch)  # type: ignore[union-attr]
            rules.apply(st, _G, action, target, self._mask)
        self._mask = np.zeros_like(self._mask)
        self._mask[0, rules.PASS] = True  # a finished episode still offers one legal action

    def _observe(self) -> np.ndarray:
        return learner_observation(self.state, _G, self._mask)[0]
