"""Who the learner plays against: an opponent pool, and how each episode draws its table.

A :class:`OpponentPool` is either a fixed table (one player per opponent
seat, in seat order after the learner's) or a league: players with weights,
each opponent seat drawn independently per episode. Both environments (the
single-game :class:`~toolkit.game.env.CommanderEnv` and the vectorised
:class:`~toolkit.game.vec_env.CommanderVecEnv`) start every episode with
:func:`draw_episode` from a per-env generator, so an env of each kind fed
the same seed plays the same deals at the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolkit.errors import ConfigError
from toolkit.game.players import Player, make_player


class OpponentPool:
    """The players opponent seats are filled from: a fixed table, or a weighted league."""

    def __init__(
        self,
        players: Sequence[Player | str],
        weights: Sequence[float] | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        """Args:
        players: players (or player names) of the pool.
        weights: a league's relative weights, one per player; None: a fixed table, seat by seat.
        names: how each player is reported (default: its name, or its source).
        """
        by_name: dict[str, Player] = {}  # one player per name: it is asked once for all the seats it holds
        self.players = [by_name.setdefault(p, make_player(p)) if isinstance(p, str) else p for p in players]
        self.names = list(names) if names is not None else [p if isinstance(p, str) else p.source for p in players]
        if not self.players:
            raise ConfigError("an opponent pool needs at least one player", hint="name the opponents")
        if weights is None:
            self.p = None
        else:
            w = np.asarray(weights, float)
            if len(w) != len(self.players) or (w < 0).any() or w.sum() <= 0:
                raise ConfigError(
                    f"league weights {list(weights)} do not fit {len(self.players)} players",
                    hint="give one non-negative weight per opponent, not all zero",
                )
            self.p = w / w.sum()

    @property
    def fixed(self) -> bool:
        return self.p is None

    def draw(self, rng: np.random.Generator, seats: int) -> np.ndarray:
        """Pool indices of the players of ``seats`` opponent seats (in seat order after the learner's)."""
        if self.p is None:
            if len(self.players) != seats:
                raise ConfigError(
                    f"{len(self.players)} opponents for {seats} opponent seats",
                    hint="give one opponent per other seat, or league weights",
                )
            return np.arange(seats)
        return rng.choice(len(self.players), size=seats, p=self.p)


@dataclass(frozen=True)
class Episode:
    """How one episode starts: the learner's seat, each opponent seat's pool index, the deal's generator."""

    learner_seat: int
    opponents: np.ndarray  # [n_seats - 1] pool indices, in seat order skipping the learner
    deal: np.random.Generator

    def seat_players(self, n_seats: int) -> np.ndarray:
        """Pool index per seat, -1 at the learner's."""
        table = np.full(n_seats, -1, np.int64)
        table[[s for s in range(n_seats) if s != self.learner_seat]] = self.opponents
        return table


def draw_episode(rng: np.random.Generator, n_seats: int, fixed_seat: int | None, pool: OpponentPool) -> Episode:
    """Draw the next episode of an env from its generator: seat (unless fixed), opponents, then the deal."""
    seat = int(rng.integers(n_seats)) if fixed_seat is None else fixed_seat
    opponents = pool.draw(rng, n_seats - 1)
    return Episode(seat, opponents, np.random.default_rng(rng.integers(2**63)))


def env_seed(seed: int, index: int) -> int:
    """The seed of env ``index`` of a vectorised env seeded ``seed`` (reset a single env with it to replay it)."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1, np.uint64)[0] >> 1)
