"""The vectorised self-play environment: many games on the batched core, one learner seat in each.

:class:`CommanderVecEnv` is a stable-baselines3 ``VecEnv`` of ``n_envs``
games stepped together. A step applies the learner's action in every game
at once, then lets the opponents play, all games together, until each game
is back at a learner decision: every round of that loop asks each distinct
opponent once for all the games where it acts (one vectorised heuristic
call, one forward pass of a policy), through the core's
:class:`~toolkit.game.core.Seating`; the league's heuristics that share the
value attack rule (the default and the tuned one) are asked as one, each
row with its own parameters.

Each env holds its next game dealt ahead, in a second row of the state: the
next game's opening (the opponents' turns before the learner's first
decision) is played in the rounds of the step after it was dealt, alongside
the other games' turns, and when the env's episode ends its next game,
already waiting on the learner, takes its place at once. A step's loop so
runs as many rounds as the longest opponent turn, never an opening after
it (issue 26: a step ran ~22 rounds, ~10 of them the openings of restarted
games, a few games each, where numpy's fixed cost per call is the whole
cost). ``action_masks()`` serves the masks of every env from one array,
which is what sb3-contrib's ``MaskablePPO`` asks for
(``env_method("action_masks")``).

Episodes follow the single-game :class:`~toolkit.game.env.CommanderEnv`
exactly: env ``i`` draws its episodes (learner seat, opponents from the
pool, the deal) in order from a generator seeded
:func:`~toolkit.game.league.env_seed` ``(seed, i)``; rewards are the learner's shaped terms and, when its episode
ends, ``rules.outcome_reward`` (+1 win, -1 otherwise, the turn limit
included, unless ``turn_limit_reward`` sets the turn limit's own). A
finished env is reset at once, as sb3 expects: its last observation is in
``info["terminal_observation"]`` and its episode in ``info["episode"]``
(``r`` return, ``l`` length, as sb3's Monitor writes it), with ``won``,
``placement``, ``timed_out`` and ``opponents`` (pool indices of its table).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from toolkit.errors import ConfigError
from toolkit.game import DEFAULT_MAX_ROUNDS, core, rules
from toolkit.game.env import action_space, learner_observation, observation_space
from toolkit.game.league import OpponentPool, draw_episode, env_seed
from toolkit.game.players import DecisionBatch, HeuristicParams, HeuristicPlayer, Player, attack_target

LEARNER = -1  # the learner's entry in the seating table: asked through step(), never by the core


class MaskedVecEnv(VecEnv):
    """What sb3 asks of a vectorised env beyond stepping, for one whose envs all live in one object and answer
    ``action_masks()`` for all of them at once (MaskablePPO's ``env_method("action_masks")``)."""

    def action_masks(self) -> np.ndarray:
        raise NotImplementedError

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        if method_name != "action_masks":
            raise AttributeError(f"{type(self).__name__} has no per-env method {method_name!r}")
        return list(self.action_masks()[self._get_indices(indices)])

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self, attr_name, value)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks" or hasattr(self, attr_name)


class CommanderVecEnv(MaskedVecEnv):
    """``n_envs`` games, one learner seat each, opponents answered in batches."""

    def __init__(
        self,
        n_envs: int,
        opponents: Sequence[str | Player] | OpponentPool = ("heuristic", "heuristic", "heuristic"),
        *,
        seed: int = 0,
        learner_seat: int | None = None,
        pod_size: int | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        turn_limit_reward: float = rules.LOSS_REWARD,
    ) -> None:
        """Args:
        n_envs: games stepped together.
        opponents: a fixed table (one per other seat) or an :class:`OpponentPool` league.
        seed: env ``i`` draws its episodes from ``default_rng(env_seed(seed, i))``.
        learner_seat: the learner's seat, or None to draw it per episode.
        pod_size: seats at the table (default: one more than a fixed table's opponents, else 4).
        max_rounds: rounds before a game stops at the turn limit.
        turn_limit_reward: the learner's terminal reward when its game ends at the turn limit (default: the
            rules' -1, the same as a loss; below -1 a stall costs more than a loss: a training knob for
            decisive play, the rules and their records are unchanged).
        """
        if n_envs < 1:
            raise ConfigError(f"n_envs must be at least 1, got {n_envs}", hint="step one game or more")
        self.pool = opponents if isinstance(opponents, OpponentPool) else OpponentPool(opponents)
        n = pod_size or (len(self.pool.players) + 1 if self.pool.fixed else 4)
        self.config = rules.RulesConfig(n_seats=n, max_rounds=max_rounds)
        if learner_seat is not None and not 0 <= learner_seat < n:
            raise ConfigError(f"learner_seat {learner_seat} is outside the pod of {n}", hint=f"use 0..{n - 1}")
        self.render_mode = None  # nothing to render (sb3 reads it through get_attr)
        super().__init__(n_envs, observation_space(), action_space())
        self.fixed_seat = learner_seat
        self.turn_limit_reward = turn_limit_reward
        rows = 2 * n_envs  # each env's current game and its next one, dealt ahead
        self.state = rules.new_state(rows, self.config)
        self.row = np.arange(n_envs)  # env -> the state row of its current game
        self.spare = np.arange(n_envs, rows)  # env -> the row of its next game
        self._env_of = np.concatenate([self.row, self.row])  # row -> its env
        self._ready = np.zeros(rows, bool)  # a next game played up to its learner's first decision
        self._heuristics = _Heuristics(rows, n)
        self.seating = core.Seating([], rows, n)
        self._entries, self._variants = self._seat_entries(self.pool)
        self.learner = np.zeros(rows, np.intp)  # per row: the learner's seat
        self.opponents = np.zeros((rows, n - 1), np.int64)  # per row: the pool index at each other seat
        self._episode_rngs = [np.random.default_rng(env_seed(seed, i)) for i in range(n_envs)]
        self._rng = np.random.default_rng([seed, 2**31])  # random players' draws
        self._mask = np.zeros((rows, rules.PASS + 1), bool)  # per row: the learner's legal actions when it waits
        self._returns = np.zeros(rows)
        self._lengths = np.zeros(rows, np.int64)
        self._actions = np.zeros(n_envs, np.intp)
        self.illegal_actions = 0

    # -- the VecEnv interface -------------------------------------------------------------

    def reset(self) -> np.ndarray:
        self._start(self.row)  # each env draws its current episode, then its next
        self._start(self.spare)
        self._play()
        return learner_observation(self.state, self.row, self._mask[self.row])

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, np.intp).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        rows = self.row
        actions = self._actions
        illegal = ~self._mask[rows, actions]
        if illegal.any():  # only a policy without masking asks for one (e.g. a recurrent one): pass instead
            self.illegal_actions += int(illegal.sum())
            actions = np.where(illegal, rules.PASS, actions)
        targets = np.full(self.num_envs, -1, np.intp)
        attacks = np.flatnonzero(actions == rules.ATTACK)
        if len(attacks):
            targets[attacks] = attack_target(self.state, rows[attacks], self.learner[rows[attacks]])[0]
        rewards = rules.apply(self.state, rows, actions, targets, self._mask[rows]).reward.astype(np.float32)
        dones = np.zeros(self.num_envs, bool)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._play(rewards, dones, infos)
        going = self.row[~dones]  # a done env's row is its next episode's, which starts at 0
        self._returns[going] += rewards[~dones]
        self._lengths[going] += 1
        return learner_observation(self.state, self.row, self._mask[self.row]), rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """The legal-action masks of every env's current learner decision, [n_envs, 8] bool."""
        return self._mask[self.row]

    def close(self) -> None:
        pass

    def set_pool(self, pool: OpponentPool) -> None:
        """Draw the opponents of every episode that starts from now on from ``pool`` (a curriculum's next stage):
        the next games dealt ahead are dealt again (each env's generator draws them anew)."""
        self.pool = pool
        self._entries, self._variants = self._seat_entries(pool)
        self._start(self.spare)

    def _seat_entries(self, pool: OpponentPool) -> tuple[np.ndarray, np.ndarray]:
        """Per pool player: its seating entry (the heuristics share one) and its heuristic variant (-1: none)."""
        entries, variants = [], []
        for player in pool.players:
            variant = self._heuristics.variant(player)
            entries.append(self.seating.index_of(self._heuristics if variant >= 0 else player))
            variants.append(variant)
        return np.array(entries, np.int32), np.array(variants, np.intp)

    # -- episodes ---------------------------------------------------------------------------

    def _start(self, rows: np.ndarray) -> None:
        """Deal in each of ``rows`` its env's next episode (learner seat and table drawn from the env's generator)."""
        n = self.config.n_seats
        deals = []
        for row, i in zip(rows.tolist(), self._env_of[rows].tolist(), strict=True):
            episode = draw_episode(self._episode_rngs[i], n, self.fixed_seat, self.pool)
            self.learner[row] = episode.learner_seat
            self.opponents[row] = episode.opponents
            seats = episode.seat_players(n)
            self.seating.table[row] = np.where(seats < 0, LEARNER, self._entries[np.maximum(seats, 0)])
            self._heuristics.table[row] = self._variants[np.maximum(seats, 0)]
            deals.append(episode.deal)
        rules.deal(self.state, rows, deals, self.config)
        self._returns[rows] = 0.0
        self._lengths[rows] = 0
        self._ready[rows] = False

    def _close(self, ended: np.ndarray, rewards: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """End the episodes in rows ``ended``: add the outcome to their envs' ``rewards``, report them in
        ``infos``."""
        st = self.state
        envs = self._env_of[ended]
        won = st.done[ended] & ~st.truncated[ended] & (st.winner[ended] == self.learner[ended])
        outcome = rules.outcome_reward(won)
        outcome[st.truncated[ended] & ~won] = self.turn_limit_reward
        rewards[envs] += outcome.astype(np.float32)
        self._mask[ended] = False
        self._mask[ended, rules.PASS] = True  # a finished episode still offers one legal action
        terminal = learner_observation(st, ended, self._mask[ended])
        for k, (row, i) in enumerate(zip(ended.tolist(), envs.tolist(), strict=True)):
            infos[i] = {
                "terminal_observation": terminal[k],
                "episode": {"r": float(self._returns[row] + rewards[i]), "l": int(self._lengths[row] + 1)},
                "won": bool(won[k]),
                "placement": int(st.placement[row, self.learner[row]]),
                "timed_out": bool(st.truncated[row]),
                "opponents": self.opponents[row].tolist(),
            }

    def _play(
        self,
        rewards: np.ndarray | None = None,
        dones: np.ndarray | None = None,
        infos: list[dict[str, Any]] | None = None,
    ) -> None:
        """Opponents play, all games together, until every env's current game waits on its learner and every next
        game dealt ahead has played its opening.

        In a step (``rewards`` given), an episode that ends (by the learner's
        action or the opponents' play) is closed at once (outcome reward, info,
        its last observation); when the loop is over its env's next game, by
        then waiting on its learner, becomes the current one, and the row it
        leaves is dealt the env's following episode, whose opening plays in the
        next step's rounds. Games are independent: each plays the moves it would
        alone (only a random player's draws, from one generator, come in
        another order).
        """
        st = self.state
        current = np.zeros(len(self._ready), bool)
        current[self.row] = True
        slots = np.sort(np.concatenate([self.row, self.spare[~self._ready[self.spare]]]))
        closed = []
        while True:
            ended = st.done[slots] | st.eliminated[slots, self.learner[slots]]
            if ended.any():
                over = slots[ended]
                if dones is None or not current[over].all():  # no seat can be hit before every seat's first turn
                    raise RuntimeError(f"games {over.tolist()} ended before their learner's first decision")
                self._close(over, rewards, infos)  # type: ignore[arg-type]
                dones[self._env_of[over]] = True
                closed.append(over)
                slots = slots[~ended]
            if not len(slots):
                break
            waiting = st.seat[slots] == self.learner[slots]
            mask = rules.legal_mask(st, slots)
            self._mask[slots[waiting]] = mask[waiting]
            g = slots[~waiting]
            if not len(g):
                break
            mask = mask[~waiting]
            slots = g
            actions, targets = self.seating.ask(st, g, mask, self._rng)
            rules.apply(st, g, actions, targets, mask)
        self._ready[self.spare] = True
        if closed:
            envs = self._env_of[np.concatenate(closed)]
            freed = self.row[envs]
            self.row[envs] = self.spare[envs]  # the next game, waiting on its learner, is the current one now
            self.spare[envs] = freed
            self._start(np.sort(freed))  # played in the next step's rounds


# The parameters that may differ between the heuristics asked together (each row gets its own); every other one must
# be equal, as the attack rule's (``target="value"``) code reads them for a subset of the rows.
_ROW_PARAMS = ("ramp_until", "removal_min_power", "draw_below", "commander_first", "hold_when_behind")


class _Heuristics:
    """The scripted players of one env's league asked as one: one call per round for all the games where any of
    them acts (the default and the tuned heuristic are two calls otherwise, each with its fixed cost), each row
    with its own player's parameters. Each row's choice is the one its own player makes alone: the parameters
    that differ are handed to :meth:`HeuristicPlayer.act` as one value per row, which its numpy expressions
    broadcast (``test_vec_env`` plays a league of both against single envs, move for move).
    """

    source = "forge"

    def __init__(self, n_envs: int, n_seats: int) -> None:
        self.params: list[HeuristicParams] = []
        self.table = np.full((n_envs, n_seats), -1, np.intp)  # the variant at each seat of each game
        self._ids: dict[int, int] = {}
        self._player = HeuristicPlayer()
        self._shared: dict[str, Any] = {}  # the parameters every variant shares, as they are
        self._varying: dict[str, np.ndarray] = {}  # the others, one entry per variant

    def variant(self, player: Player) -> int:
        """The variant index of ``player``, added if new; -1 if it is no plain heuristic sharing the first one's
        attack rule (it is then asked on its own)."""
        if id(player) in self._ids:
            return self._ids[id(player)]
        if type(player) is not HeuristicPlayer:
            return -1
        params = player.params
        first = self.params[0] if self.params else params
        shared = [name for name in type(params).model_fields if name not in _ROW_PARAMS]
        if params.target != "value" or any(getattr(params, k) != getattr(first, k) for k in shared):
            return -1
        self._ids[id(player)] = len(self.params)
        self.params.append(params)
        columns = {name: [getattr(p, name) for p in self.params] for name in type(params).model_fields}
        self._shared = {name: c[0] for name, c in columns.items() if len(set(c)) == 1}
        self._varying = {name: np.array(c) for name, c in columns.items() if name not in self._shared}
        return self._ids[id(player)]

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        variant = self.table[batch.games, batch.seats]
        values = {**self._shared, **{name: column[variant] for name, column in self._varying.items()}}
        self._player.params = SimpleNamespace(**values)  # type: ignore[assignment]
        return self._player.act(batch)
