"""Who the learner plays against: an opponent pool, how each episode draws its table, and how a league weighs its
past models (prioritised fictitious self-play).

A :class:`OpponentPool` is either a fixed table (one player per opponent
seat, in seat order after the learner's) or a league: players with weights,
each opponent seat drawn independently per episode, except that a share
``mirror`` of the episodes seats one drawn player in every opponent seat (the
learner against three copies: the tables the head-to-head gate and
``bench_learning`` judge by, and the only ones where a league of passive
players can stall a game). Both environments (the
single-game :class:`~toolkit.game.env.CommanderEnv` and the vectorised
:class:`~toolkit.game.vec_env.CommanderVecEnv`) start every episode with
:func:`draw_episode` from a per-env generator, so an env of each kind fed
the same seed plays the same deals at the same tables.

A league that keeps finding weaknesses weighs its past models by
prioritised fictitious self-play (:func:`pfsp_weights`, AlphaStar's
``f_hard``): the opponents the learner beats least are drawn most, by the
learner's win rates measured in its training games
(:class:`OpponentTally`, :func:`pairwise_win_rate`); :func:`keep_past`
is the rule of which past models stay (the latest few and a sample of the
older ones).
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
        mirror: float = 0.0,
    ) -> None:
        """Args:
        players: players (or player names) of the pool.
        weights: a league's relative weights, one per player; None: a fixed table, seat by seat.
        names: how each player is reported (default: its name, or its source).
        mirror: a league's share of episodes with one drawn player in every opponent seat.
        """
        by_name: dict[str, Player] = {}  # one player per name: it is asked once for all the seats it holds
        self.players = [by_name.setdefault(p, make_player(p)) if isinstance(p, str) else p for p in players]
        self.names = list(names) if names is not None else [p if isinstance(p, str) else p.source for p in players]
        if not self.players:
            raise ConfigError("an opponent pool needs at least one player", hint="name the opponents")
        self.p = league_probabilities(weights, len(self.players))
        self.mirror = check_mirror(mirror)

    @property
    def fixed(self) -> bool:
        return self.p is None

    def draw(self, rng: np.random.Generator, seats: int) -> np.ndarray:
        """Pool indices of the players of ``seats`` opponent seats (in seat order after the learner's)."""
        return draw_opponents(rng, self.p, len(self.players), seats, self.mirror)


def league_probabilities(weights: Sequence[float] | None, players: int) -> np.ndarray | None:
    """A league's draw probabilities from its relative ``weights`` (None: a fixed table, seat by seat).

    Raises:
        ConfigError: not one non-negative weight per player, or all zero.
    """
    if weights is None:
        return None
    w = np.asarray(weights, float)
    if len(w) != players or (w < 0).any() or w.sum() <= 0:
        raise ConfigError(
            f"league weights {list(weights)} do not fit {players} players",
            hint="give one non-negative weight per opponent, not all zero",
        )
    return w / w.sum()


def check_mirror(mirror: float) -> float:
    """``mirror`` if it is a share (0 to 1).

    Raises:
        ConfigError: it is not.
    """
    if not 0.0 <= mirror <= 1.0:
        raise ConfigError(f"mirror {mirror} is not a share of episodes", hint="give a number from 0 to 1")
    return float(mirror)


def draw_opponents(
    rng: np.random.Generator, p: np.ndarray | None, players: int, seats: int, mirror: float = 0.0
) -> np.ndarray:
    """Indices of the players of ``seats`` opponent seats: drawn with probabilities ``p``, or a fixed table in order.

    With ``mirror`` > 0 a league first draws whether this table is a mirror (one player drawn for every seat, with
    probability ``mirror``); with 0 it draws nothing more than the seats, so its tables are those of a league
    without the option.

    Raises:
        ConfigError: a fixed table without one player per opponent seat.
    """
    if p is None:
        if players != seats:
            raise ConfigError(
                f"{players} opponents for {seats} opponent seats",
                hint="give one opponent per other seat, or league weights",
            )
        return np.arange(seats)
    # The draws of rng.choice(players, size, p=p), without its checks of p (~9 us a call, an episode's whole draw):
    # the same cumulative sums, the same uniforms, the same search.
    cdf = p.cumsum()
    cdf /= cdf[-1]
    if mirror > 0.0 and rng.random() < mirror:
        return np.full(seats, int(cdf.searchsorted(rng.random(), side="right")))
    return cdf.searchsorted(rng.random(seats), side="right")


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


# -- prioritised fictitious self-play -------------------------------------------------------------------------


class OpponentTally:
    """The learner's results by opponent, from its training games: games each opponent sat in, learner wins.

    A game counts once for each distinct opponent at its table (a mixed table
    credits its result to every opponent in it); a game at the turn limit is
    no win.
    """

    def __init__(self) -> None:
        self.games: dict[str, int] = {}
        self.wins: dict[str, int] = {}

    def add(self, opponents: Sequence[str], won: bool) -> None:
        """One finished episode: the names of its opponents, and whether the learner won."""
        for name in set(opponents):
            self.games[name] = self.games.get(name, 0) + 1
            self.wins[name] = self.wins.get(name, 0) + int(won)


def pairwise_win_rate(wins: int, games: int, pod: int = 4, prior_games: float = 4.0) -> float:
    """The learner's pairwise win rate against an opponent from its wins in pods against it: 0.5 is even.

    In a pod of ``pod`` seats an even learner wins ``1 / pod`` of the games.
    Under the winner model the ratings use (``P(i wins) ∝ e^θi``), a share
    ``w`` of the games against ``pod - 1`` copies of the opponent means odds
    ``r = (pod - 1) w / (1 - w)`` between the two, a pairwise rate ``r / (1 + r)``. ``prior_games`` games at the even
    share are added first, so an opponent met a few times stays near 0.5.
    """
    share = (wins + prior_games / pod) / (games + prior_games)
    odds = (pod - 1) * share / max(1e-9, 1 - share)
    return float(odds / (1 + odds))


def pfsp_weights(win_rates: Sequence[float | None], power: float = 2.0) -> np.ndarray:
    """Prioritised fictitious self-play (AlphaStar's ``f_hard``): weights ``(1 - x) ** power``, normalised.

    Args:
        win_rates: the learner's pairwise win rate against each opponent, in [0, 1]
            (None: not measured yet, counted as even, 0.5).
        power: ``p``; larger focuses harder on the opponents the learner loses to.

    Returns:
        Weights summing to 1 (even when every opponent is always beaten).
    """
    x = np.array([0.5 if r is None else min(1.0, max(0.0, r)) for r in win_rates], float)
    if not len(x):
        return x
    w = (1.0 - x) ** power
    return w / w.sum() if w.sum() > 0 else np.full(len(x), 1.0 / len(x))


def keep_past(models: Sequence[str], latest: int, older: int, rng: np.random.Generator) -> list[str]:
    """The past models a league keeps: the ``latest`` last ones, plus a sample of ``older`` of the ones before them
    (in their original order), drawn with ``rng``."""
    recent = list(models[-latest:]) if latest else []
    before = list(models[: len(models) - len(recent)])
    picked = sorted(rng.choice(len(before), size=min(older, len(before)), replace=False).tolist()) if before else []
    return [before[i] for i in picked] + recent
