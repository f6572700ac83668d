"""A vectorised self-play environment over engine processes: PPO's games played in a lab's engine.

:class:`EngineVecEnv` is a stable-baselines3 ``VecEnv`` of ``n_envs`` games,
each in flight in one of the driver's engine processes
(:class:`~toolkit.engine.driver.EngineDriver`, step by step). A step answers
every env's pending learner request in one frame per engine, then runs
exchange rounds until every env again waits on its learner: the other
Distill seats (league checkpoints, ``self``) are answered in those rounds, one
forward pass per policy over all engines; scripted league players sit as the
engine's own AI profiles of their names and never cross the wire.

Episodes are drawn as :class:`~toolkit.game.vec_env.CommanderVecEnv` draws
them (env ``i`` from ``default_rng(env_seed(seed, i))``: the learner's seat,
the opponents from the pool), plus the game's start seed. What differs from
the in-process env: an engine reports no shaped reward, so a step's reward is
0 but at the end of the learner's episode, +1 a win, -1 otherwise
(``turn_limit_reward`` at the turn limit); an episode ends when the engine
reports the game's result (a learner knocked out waits for it); and a game an
engine fault voided ends its episode with reward 0 and ``info["voided"]``
(the driver starts a new process within its restart budget). Observations
are the rows' features by the models' encoder (clipped as the in-process
env clips them); ``action_masks()`` are the rows' legal actions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from toolkit.engine.config import EngineConfig
from toolkit.engine.driver import Decider, EngineDriver, GameSpec, Held, decider
from toolkit.errors import ConfigError
from toolkit.game import DEFAULT_MAX_ROUNDS, rules
from toolkit.game.env import OBS_BOUND, action_space, observation_space
from toolkit.game.league import OpponentPool, draw_episode, env_seed
from toolkit.game.players import PLAYER_TYPES, PolicyPlayer
from toolkit.game.vec_env import MaskedVecEnv
from toolkit.schema.engine import MAX_SEED

LEARNER: Final = "learner"


class EngineVecEnv(MaskedVecEnv):
    """``n_envs`` games in engine processes, one learner seat each (see the module's docstring)."""

    def __init__(
        self,
        n_envs: int,
        engine: EngineConfig,
        opponents: OpponentPool,
        *,
        seed: int = 0,
        pod_size: int = 4,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        turn_limit_reward: float = rules.LOSS_REWARD,
    ) -> None:
        """Args:
        n_envs: games in flight, one per env.
        engine: the engine and its processes (their games per process must hold ``n_envs`` together).
        opponents: the league; a player type plays as the engine's AI profile of its name, a flat policy
            (a checkpoint, ``self``) as a Distill seat.
        seed: env ``i`` draws its episodes from ``default_rng(env_seed(seed, i))``.
        pod_size: seats at the table.
        max_rounds: the games' turn limit.
        turn_limit_reward: the learner's terminal reward at the turn limit.

        Raises:
            ConfigError: a league player that cannot sit in an engine's game (a recurrent policy).
            EngineError: the engines did not start.
        """
        if n_envs < 1:
            raise ConfigError(f"n_envs must be at least 1, got {n_envs}", hint="step one game or more")
        self.render_mode = None
        super().__init__(n_envs, observation_space(), action_space())
        self.pool, self.n_seats, self.max_rounds = opponents, pod_size, max_rounds
        self.turn_limit_reward = turn_limit_reward
        self.game_seed = seed  # (not `seed`: a VecEnv method sb3 calls)
        self.deciders: dict[str, Decider] = {}
        self._seats: list[dict[str, Any]] = []  # pool index -> its seat in a start message
        self._keys: list[str | None] = []  # pool index -> its decider's key (None: the engine's AI)
        self.set_pool(opponents)
        self._rngs = [np.random.default_rng(env_seed(seed, i)) for i in range(n_envs)]
        self._episodes = [0] * n_envs
        self._game = [""] * n_envs  # env -> its game's id
        self._env_of: dict[str, int] = {}
        self._learner = [0] * n_envs
        self._opponents: list[list[int]] = [[] for _ in range(n_envs)]
        self._waiting: dict[int, Held] = {}  # env -> its learner request, not yet answered
        self._obs = np.zeros((n_envs, *observation_space().shape), np.float32)
        self._mask = np.zeros((n_envs, rules.PASS + 1), bool)
        self._returns = np.zeros(n_envs)
        self._lengths = np.zeros(n_envs, np.int64)
        self._actions = np.zeros(n_envs, np.intp)
        self.illegal_actions = 0
        self.voided = 0
        self.engine = engine.model_copy(update={"games_per_process": -(-n_envs // engine.processes)})
        self.driver = self._open()

    def _open(self) -> EngineDriver:
        """Start the engine processes, checking they hold every env's game at once."""
        driver = EngineDriver(self.engine)
        driver.__enter__()
        try:
            offered = sum(e.capacity for e in driver.engines)
            if offered < self.num_envs:
                raise ConfigError(
                    f"{self.num_envs} envs need {self.num_envs} games in flight; the engines play {offered} at once",
                    hint="start more engine processes (--engine-processes), or use fewer envs",
                )
            driver.begin()
        except BaseException:
            driver.close()
            raise
        return driver

    # -- the VecEnv interface -------------------------------------------------------------

    def reset(self) -> np.ndarray:
        if self._waiting or any(e.games for e in self.driver.engines):  # the protocol has no abort: new processes
            self.driver.close()
            self._waiting.clear()
            self.driver = self._open()
        for i in range(self.num_envs):
            self._start(i)
        self._run(np.zeros(self.num_envs, np.float32), np.zeros(self.num_envs, bool), [{}] * self.num_envs)
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, np.intp).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        actions = self._actions
        illegal = ~self._mask[np.arange(self.num_envs), actions]
        if illegal.any():  # only a policy without masking asks for one: pass instead, as the in-process env does
            self.illegal_actions += int(illegal.sum())
            actions = np.where(illegal, rules.PASS, actions)
        answers = []
        for i in range(self.num_envs):
            held = self._waiting.pop(i)
            answers.append((held.game, held.request, int(actions[i])))
        self._lengths += 1
        rewards = np.zeros(self.num_envs, np.float32)
        dones = np.zeros(self.num_envs, bool)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._void(self.driver.reply(answers), rewards, dones, infos)
        self._run(rewards, dones, infos)
        self._returns[~dones] += rewards[~dones]
        return self._obs.copy(), rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """The legal-action masks of every env's current learner decision, [n_envs, 8] bool."""
        return self._mask.copy()

    def close(self) -> None:
        self.driver.close()

    def set_pool(self, pool: OpponentPool) -> None:
        """Draw the opponents of every episode that starts from now on from ``pool`` (a curriculum's next stage)."""
        self.pool = pool
        self.deciders = {k: v for k, v in self.deciders.items() if k == LEARNER}
        self._seats, self._keys = [], []
        for j, (player, name) in enumerate(zip(pool.players, pool.names, strict=True)):
            if name in PLAYER_TYPES and not isinstance(player, PolicyPlayer):
                self._seats.append({"player": "engine", "profile": name})
                self._keys.append(None)
            else:
                self.deciders[f"pool-{j}"] = decider(player)
                self._seats.append({"player": "distill", "name": name})
                self._keys.append(f"pool-{j}")

    # -- episodes ---------------------------------------------------------------------------

    def _start(self, i: int) -> None:
        """Start env ``i``'s next episode: drawn from its generator, then sent to an engine."""
        rng = self._rngs[i]
        episode = draw_episode(rng, self.n_seats, None, self.pool)
        seed = int(rng.integers(MAX_SEED))
        table = episode.seat_players(self.n_seats).tolist()
        seats = tuple({"player": "distill", "name": LEARNER} if j < 0 else self._seats[j] for j in table)
        policies = {s: LEARNER if j < 0 else self._keys[j] for s, j in enumerate(table)}
        game = f"ppo-{self.game_seed}-{i}-{self._episodes[i]}"
        self._episodes[i] += 1
        self._env_of.pop(self._game[i], None)
        self._game[i], self._env_of[game] = game, i
        self._learner[i] = episode.learner_seat
        self._opponents[i] = [int(j) for j in episode.opponents]
        self._returns[i], self._lengths[i] = 0.0, 0
        spec = GameSpec(game, seed, seats, self.max_rounds, {s: k for s, k in policies.items() if k is not None})
        self.driver.start(spec, {**self.deciders, LEARNER: _never})

    def _run(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Exchange rounds until every env waits on its learner; episodes that end are closed and restarted."""
        while len(self._waiting) < self.num_envs:
            held, finished, voided = self.driver.exchange({**self.deciders, LEARNER: _never}, LEARNER)
            self._void(voided, rewards, dones, infos)
            for request in held:
                i = self._env_of.get(request.game)
                if i is None:
                    continue
                self._waiting[i] = request
                self._obs[i] = np.clip(request.observation, -OBS_BOUND, OBS_BOUND)
                self._mask[i] = request.mask
            for result in finished:
                i = self._env_of.get(result.spec.game)
                if i is None:
                    continue
                won = not result.truncated and result.winner_seat == self._learner[i]
                reward = 1.0 if won else (self.turn_limit_reward if result.truncated else rules.LOSS_REWARD)
                rewards[i] += reward
                dones[i] = True
                placement = result.placements[self._learner[i]]
                infos[i] = {
                    "terminal_observation": self._obs[i].copy(),
                    "episode": {"r": float(self._returns[i] + rewards[i]), "l": int(self._lengths[i])},
                    "won": won,
                    "placement": int(placement or 0),
                    "timed_out": result.truncated,
                    "opponents": list(self._opponents[i]),
                }
                self._waiting.pop(i, None)
                self._start(i)

    def _void(self, voided: Sequence[GameSpec], rewards: np.ndarray, dones: np.ndarray, infos: list[dict]) -> None:
        """Games an engine fault voided: their episodes end (reward 0, ``info["voided"]``) and start again."""
        for spec in voided:
            i = self._env_of.get(spec.game)
            if i is None:
                continue
            self.voided += 1
            dones[i] = True
            # no "episode" nor "opponents": a voided game is no result (the episode statistics and the league's
            # tally skip it)
            infos[i] = {"terminal_observation": self._obs[i].copy(), "voided": True}
            self._waiting.pop(i, None)
            self._start(i)


def _never(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:  # pragma: no cover - held, never asked
    raise AssertionError("the learner's requests are answered by step()")
