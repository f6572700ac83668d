"""Who sits at the table: the random player, the scripted heuristic, and a plugged-in policy.

Every player answers a :class:`DecisionBatch` (many games at once, one
acting seat each) with an action per game and, optionally, an attack target
per game (-1 leaves the target to the rule). ``source`` is the role written
in the records: ``forge`` for the heuristic (the Forge stand-in), ``random``
for the random player, the policy's own source (``ppo`` by default).

A learned policy plugs in through :class:`PolicyPlayer`: a function from
observations [M, obs] float32 and masks [M, 8] bool to actions [M] int.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ConfigError
from toolkit.game import PLAYER_TYPES, rules
from toolkit.game.cards import LAND, POWER, REMOVAL
from toolkit.game.observation import observe


@dataclass
class DecisionBatch:
    """Decisions to take now: game slots ``games`` whose acting seats are ``seats``, with their masks."""

    state: rules.GameState
    games: np.ndarray
    seats: np.ndarray
    mask: np.ndarray
    rng: np.random.Generator

    def observations(self) -> np.ndarray:
        """The policy observation of each decision (see ``observation``)."""
        return observe(self.state, self.games, self.mask)


class Player(Protocol):
    """Anything that can take decisions for a seat."""

    source: str

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        """Actions [M] (legal under ``batch.mask``) and attack targets [M] (-1: the rule) or None."""
        ...


class RandomPlayer:
    """Uniform over the legal actions; attacks follow the target rule."""

    source = "random"

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        noise = batch.rng.random(batch.mask.shape) + batch.mask  # legal actions always score above illegal ones
        return noise.argmax(1), None


class HeuristicParams(BaseModel):
    """The knobs of the scripted player, in the spirit of Forge's AI."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ramp_until: int = Field(5, ge=0, le=50, description="Cast rocks while mana sources are below this.")
    removal_min_power: int = Field(4, ge=0, le=50, description="Spend removal on a threat at least this strong.")
    draw_below: int = Field(1, ge=0, le=50, description="Cast card draw when the hand holds at most this.")
    attack_min_power: int = Field(1, ge=0, le=100, description="Attack when ready power is at least this.")
    attack_when_outnumbered: bool = Field(True, description="Attack even if the target has more blockers.")
    target: Literal["value", "weakest", "leader", "open", "rule"] = Field(
        "value",
        description="value: the opponent where the attack is worth most as the block rule resolves it (a kill, "
        "then damage through and the trade; see attack_values); or the lowest-life opponent, the strongest board, "
        "the fewest untapped blockers, or the rule (the older, exploitable choices).",
    )
    attack_min_value: float = Field(0.5, description="value target: attack only when the best attack is worth this.")
    max_hits_to_kill: int = Field(
        0, ge=0, le=100, description="Attack only a target this many attacks can kill (0: any), or in a duel."
    )
    finish_kills: bool = Field(False, description="Attack an opponent the ready creatures can kill now, if any.")
    hold_when_behind: bool = Field(True, description="Hold removal mana when an opponent's board is bigger.")
    commander_first: bool = Field(False, description="Cast the commander before other creatures.")


# Found by a parameter sweep (bench/bench_game.py measures it): draw whenever possible, keep ramping,
# commander first, save removal for big threats. It beats the defaults clearly (~41% against three), so
# there is headroom.
TUNED = HeuristicParams(draw_below=50, ramp_until=16, removal_min_power=5, commander_first=True)


# The heuristic's choices in order of priority (see HeuristicPlayer.act's conditions); PASS when none holds.
_CHOICES: Final = np.array(
    [
        rules.CAST_RAMP,
        rules.CAST_REMOVAL,
        rules.CAST_COMMANDER,
        rules.CAST_CREATURE,
        rules.CAST_COMMANDER,
        rules.CAST_DRAW,
        rules.ATTACK,
        rules.HOLD,
    ]
)


class HeuristicPlayer:
    """A scripted player: develops mana, deploys threats, removes the biggest threat, attacks, holds removal."""

    def __init__(self, params: HeuristicParams | None = None, source: str = "forge") -> None:
        self.params = params or HeuristicParams()
        self.source = source

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        if rules.native is not None and self.params.target == "value":
            return self._act_native(batch)
        return self.act_numpy(batch)

    def _act_native(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`act_numpy` in C (``toolkit/game/_rules.c``), decision by decision: the same actions and targets."""
        p, m = self.params, len(batch.games)
        actions, targets = np.empty(m, np.intp), np.empty(m, np.intp)
        # one value per decision: the vectorised env asks several heuristics as one, each row with its own
        per_row = (p.ramp_until, p.removal_min_power, p.draw_below, p.hold_when_behind, p.commander_first)
        rules.native.heuristic_act(  # type: ignore[attr-defined]
            rules.native_arrays(batch.state),
            batch.state.max_turn,
            np.ascontiguousarray(batch.games, np.intp),
            np.ascontiguousarray(batch.seats, np.intp),
            np.ascontiguousarray(batch.mask, bool),
            (*(_per_row(value, m) for value in per_row), p.attack_min_value),
            tuple(_CHOICES.tolist()),
            actions,
            targets,
        )
        return actions, targets

    def act_numpy(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        """The heuristic's decisions in numpy: the definition (every ``target``; the native one covers ``value``)."""
        p, st, g, s, mask = self.params, batch.state, batch.games, batch.seats.astype(np.intp), batch.mask
        creature_power = POWER[st.creatures[g].astype(np.intp)]  # [M,N,SLOTS]; intp indices: ~3x faster than int16
        power = np.einsum("mns->mn", creature_power)  # rules.seat_power, from the lookup the threat reads too
        mine = power[np.arange(len(g)), s]
        own = np.arange(st.n_seats)[None, :] == s[:, None]
        others = np.where(own, -1, power)
        # The power of rules.strongest_threat: it ranks by power first, so the most powerful opponent creature.
        threat = rules.max_slots(np.where(own, 0, rules.max_slots(creature_power)))
        target, attack_ok = self._attack(st, g, s, mask, power)
        hand = st.hand[g, s]
        land_drop = ~st.land_played[g] & rules.any_of_kind(hand > 0, LAND)
        hold = mask[:, rules.HOLD] & p.hold_when_behind & (rules.max_slots(others) > mine)
        if hold.any():  # whether it holds removal matters only where it would hold
            hold[hold] = rules.best_in_hand(st, g[hold], s[hold], REMOVAL, cheapest=True) >= 0
        conditions = [
            mask[:, rules.CAST_RAMP] & (land_drop | (st.sources[g, s] < p.ramp_until)),
            mask[:, rules.CAST_REMOVAL] & (threat >= p.removal_min_power),
            mask[:, rules.CAST_COMMANDER] & p.commander_first,
            mask[:, rules.CAST_CREATURE],
            mask[:, rules.CAST_COMMANDER],
            mask[:, rules.CAST_DRAW] & (np.einsum("mc->m", hand, dtype=np.int16) <= p.draw_below),
            mask[:, rules.ATTACK] & attack_ok,
            hold,
        ]
        # np.select(conditions, _CHOICES, default=PASS), in three calls instead of its ~16 us: the first that holds
        ready = np.stack(conditions, axis=1)
        first = ready.argmax(axis=1)
        return np.where(ready[np.arange(len(g)), first], _CHOICES[first], rules.PASS), target

    def _attack(
        self, st: rules.GameState, g: np.ndarray, s: np.ndarray, mask: np.ndarray, power: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Whom to attack, and whether an attack is worth it, per decision."""
        p = self.params
        if p.target == "value":  # foreseen only where an attack is legal: combat is the costly part
            target, attack_ok = np.full(len(g), -1, np.intp), np.zeros(len(g), bool)
            can = np.flatnonzero(mask[:, rules.ATTACK])
            if len(can):
                target[can], value = attack_target(st, g[can], s[can])
                attack_ok[can] = value >= p.attack_min_value
            return target, attack_ok
        ready = rules.ready_attackers(st, g, s)
        ready_power = (POWER[st.creatures[g, s]] * ready).sum(1)
        target = self._preferred_target(st, g, s, power)
        if p.finish_kills:
            weakest = rules.weakest_opponent(st, g, s)
            target = np.where(st.life[g, weakest] <= ready_power, weakest, target)
        blockers = ((st.creatures[g, target] >= 0) & ~st.tapped[g, target]).sum(1)
        attack_ok = (ready_power >= p.attack_min_power) & (p.attack_when_outnumbered | (ready.sum(1) > blockers))
        if p.max_hits_to_kill:
            close = st.life[g, target] <= ready_power * p.max_hits_to_kill
            attack_ok &= close | (st.alive[g] <= 2)
        return target, attack_ok

    def _preferred_target(self, st: rules.GameState, g: np.ndarray, s: np.ndarray, power: np.ndarray) -> np.ndarray:
        if self.params.target in ("weakest", "rule"):
            return rules.weakest_opponent(st, g, s)
        distance = rules.turn_order_distance(st, g, s)
        if self.params.target != "open":
            return leader_target(st, g, s, power)
        untapped = ((st.creatures[g] >= 0) & ~st.tapped[g]).sum(-1)
        score = -untapped.astype(np.int32) * 4096 - st.life[g] * 16 - distance  # fewest blockers, then lowest life
        return np.where(st.eliminated[g] | (distance == 0), np.int32(-(1 << 30)), score).argmax(1)


def _per_row(value: int | np.ndarray, m: int) -> int | np.ndarray:
    """A heuristic's parameter as the native loop takes it: an int for every row, or one int32 per row."""
    if isinstance(value, (int, np.integer, np.bool_)):  # bool is an int
        return int(value)
    rows = np.broadcast_to(np.asarray(value), m)
    if rows.dtype.kind not in "biu" or (len(rows) and (rows.min() < -(2**31) or rows.max() >= 2**31)):
        raise TypeError(f"a heuristic parameter per row must be integers within int32, got {rows.dtype}")
    return np.ascontiguousarray(rows, np.int32)


KILL_VALUE: Final = 1000.0  # an attack that eliminates its target is worth more than any damage
TRADE_WEIGHT: Final = 1.0  # value of a point of the defender's power killed, less the attacker's power lost


def attack_values(st: rules.GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """What attacking each seat now is worth to seat ``s``, [M,N] (-inf for itself and eliminated seats).

    Every opponent's combat is foreseen with the block rule
    (:func:`rules.resolve_combat`): a kill is worth :data:`KILL_VALUE`, each
    point of damage through 1, and the trade :data:`TRADE_WEIGHT` per point of
    power killed less power lost. A small board is no shelter: an opponent
    that blocks nothing takes all the damage and is the best target; ties go
    to the opponent next in turn order.
    """
    rows, defender, combat = rules.resolve_combats(st, g, s)  # one entry per live opponent
    distance = (defender - s[rows]) % st.n_seats
    values = np.full((len(g), st.n_seats), -np.inf)
    values[rows, defender] = (
        KILL_VALUE * combat.eliminates
        + combat.damage
        + TRADE_WEIGHT * (combat.power_killed.astype(float) - combat.power_lost)
        - 1e-3 * distance
    )
    return values


def attack_target(st: rules.GameState, g: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The opponent worth attacking most (see :func:`attack_values`) and that worth, per game.

    The reference heuristic attacks it; learned policies attack it too (their
    action space has no target), so an imitation plays its attacks as the
    player it imitates.
    """
    values = attack_values(st, g, s)
    target = rules.argmax_slots(values)
    return target, values[np.arange(len(g)), target]


def leader_target(st: rules.GameState, g: np.ndarray, s: np.ndarray, power: np.ndarray | None = None) -> np.ndarray:
    """The live opponent with the biggest board (then the lowest life, then the nearest in turn order).

    The older heuristic's choice (``target="leader"``): it leaves players with
    small boards alone, which a passive player exploits.
    """
    power = rules.seat_power(st, g) if power is None else power
    distance = rules.turn_order_distance(st, g, s)
    score = power.astype(np.int32) * 4096 - st.life[g] * 16 - distance
    return np.where(st.eliminated[g] | (distance == 0), np.int32(-(1 << 30)), score).argmax(1)


class PolicyPlayer:
    """A learned policy: ``policy(observations, masks) -> actions``; illegal choices are a bug and raise.

    Attacks go to :func:`attack_target` (the reference heuristic's choice).
    """

    def __init__(self, policy: Callable[[np.ndarray, np.ndarray], np.ndarray], source: str = "ppo") -> None:
        self.policy = policy
        self.source = source

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        actions = np.asarray(self.policy(batch.observations(), batch.mask), dtype=np.intp)
        return actions, policy_targets(batch, actions)


def policy_targets(batch: DecisionBatch, actions: np.ndarray) -> np.ndarray:
    """Attack targets of a learned policy's ``actions``: :func:`attack_target` where it attacks, -1 elsewhere."""
    targets = np.full(len(actions), -1, np.intp)
    attacks = np.flatnonzero(actions == rules.ATTACK)
    if len(attacks):
        targets[attacks] = attack_target(batch.state, batch.games[attacks], batch.seats[attacks].astype(np.intp))[0]
    return targets


def make_player(name: str) -> Player:
    """A player by name: ``random``, ``heuristic`` (default parameters) or ``tuned`` (the stronger variant).

    Raises:
        ConfigError: for an unknown name.
    """
    if name == "random":
        return RandomPlayer()
    if name == "heuristic":
        return HeuristicPlayer()
    if name == "tuned":
        return HeuristicPlayer(TUNED)
    raise ConfigError(f"unknown player {name!r}", hint=f"--players takes names among {', '.join(PLAYER_TYPES)}")
