"""The rules of the Distill game: a small, honest Commander free-for-all.

One implementation, written over numpy arrays whose first axis is the game:
the same code steps one game (the Gymnasium wrapper) or thousands (the
batched core). Functions take ``g``, an array of game indices, and act on
those games only.

The game
--------
- 2 to 6 seats (4 by default), each with a 99-card deck of one archetype
  (aggro, control, midrange, combo, ramp; see ``cards``) and its commander in
  the command zone. Life starts at 40. Seats, archetypes, commanders, deck
  order and the starting seat are drawn per game from the game's own seed.
- Each seat draws 7. Turns go in seat order from the starting seat, skipping
  eliminated seats. At the start of its turn a seat untaps its creatures,
  its creatures lose summoning sickness, its mana pool is refilled to the
  mana its lands and rocks make, and it draws a card (not on the very first
  turn of the game). Drawing from an empty library draws nothing.
- Mana: each land makes 1, each rock (ramp card) makes its listed amount
  (Sol Ring 2, Thran Dynamo 3...). A land or rock makes mana the turn it
  enters. One land may be played per turn.
- A turn is a sequence of decisions by its seat, one macro action each:
  0 ``cast_creature``: cast the most expensive creature in hand it can pay
    for (a free creature slot is needed; 10 per seat). It has summoning
    sickness: it can block but not attack until its controller's next turn.
  1 ``cast_removal``: cast the cheapest removal spell it can pay for; it
    destroys the strongest threat among the opponents' creatures (highest
    power, then toughness, then the opponent next in turn order). Legal only
    when an opponent has a creature.
  2 ``cast_draw``: cast the most expensive draw spell it can pay for.
  3 ``cast_ramp``: play a land if the land drop is unused and a land is in
    hand, else cast the most expensive rock it can pay for.
  4 ``cast_commander``: cast the commander from the command zone for its cost
    plus the commander tax; the tax rises by 2 with every cast. A commander
    that dies or is destroyed returns to the command zone.
  5 ``attack_opponent`` (before combat only, once a turn): every untapped
    creature without summoning sickness attacks one opponent and taps.
    Target: the ``target`` given with the action if it is a live opponent,
    otherwise the stated rule: the opponent with the lowest life, ties to
    the one next in turn order. After combat the turn is in its second main
    phase: casting is still allowed, attacking is not.
  6 ``hold_mana`` (legal with 2+ mana open): end the turn keeping the unspent
    mana open. Until its next turn, when the seat is attacked and holds a
    removal spell it can pay for with that mana, it casts it at once on the
    strongest attacker (before blocks).
  7 ``pass``: end the turn; unspent mana is lost. Always legal.
- Blocks are decided by a stated rule, not by the defender: attackers are
  ranked by power (strongest first), the defender's untapped creatures by
  toughness (sturdiest first), and the k-th blocker faces the k-th attacker
  if it survives (toughness > attacker's power) or trades (power >= the
  attacker's toughness). If the unblocked damage would be lethal, every
  available pairing blocks (chump blocks). Blocked creatures deal damage to
  each other; a creature dies when the damage reaches its toughness.
  Unblocked attackers deal their power to the defender's life; an unblocked
  commander's damage also counts as commander damage from that commander.
- A seat is eliminated when its life is 0 or less, or when it has taken 21
  or more commander damage from ONE commander. Its cards leave the game.
  Its placement is the number of seats alive just before (4th, then 3rd...).
  The last seat alive wins (placement 1). Only the defender can lose in a
  combat, so seats are eliminated one at a time and draws cannot happen.
- Turn limit: when the global turn counter would pass ``max_rounds`` x the
  number of seats, the game stops as a truncation: no winner, not a draw,
  not a loss; seats still alive have no placement.

Rewards (per decision, for the acting seat)
-------------------------------------------
Success has one definition: a win. Terminal terms, on each seat's last
decision of every game: +1 for the winner, -1 for every other seat (see
:func:`outcome_reward`). A game that hits the turn limit is nobody's win, so
it ends with -1 for every seat: surviving without winning earns nothing.
Shaped terms, small by design, reward only progress towards a win: +0.002 per
point of life damage dealt to an opponent and +0.05 per opponent eliminated
by the action.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Final

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import GameError
from toolkit.game import DEFAULT_MAX_ROUNDS
from toolkit.game.cards import (
    ARCHETYPE_NAMES,
    COMMANDER,
    COMMANDER_IDS,
    COST,
    CREATURE,
    DECK_SIZE,
    DECKS,
    DRAW,
    DRAWS,
    KIND,
    LAND,
    MANA,
    N_CARDS,
    NO_CARD,
    POWER,
    RAMP,
    REMOVAL,
    TOUGHNESS,
)
from toolkit.limits import MaxRounds
from toolkit.schema.vocab import ACTION_INDEX, N_ACTIONS

CAST_CREATURE: Final = ACTION_INDEX["cast_creature"]
CAST_REMOVAL: Final = ACTION_INDEX["cast_removal"]
CAST_DRAW: Final = ACTION_INDEX["cast_draw"]
CAST_RAMP: Final = ACTION_INDEX["cast_ramp"]
CAST_COMMANDER: Final = ACTION_INDEX["cast_commander"]
ATTACK: Final = ACTION_INDEX["attack_opponent"]
HOLD: Final = ACTION_INDEX["hold_mana"]
PASS: Final = ACTION_INDEX["pass"]

MAIN_1, MAIN_2 = 0, 1  # the two phases a decision can be taken in
SLOTS: Final = 10  # creature slots per seat
COMMANDER_LETHAL: Final = 21
OPENING_HAND: Final = 7
TAX_STEP: Final = 2
HOLD_MIN_MANA: Final = 2
DAMAGE_REWARD: Final = 0.002
ELIMINATION_REWARD: Final = 0.05
WIN_REWARD, LOSS_REWARD = 1.0, -1.0


# A combat line is its creatures ranked by the block rule, as int32 keys: the rank in the high bits, then the
# slot, then the card's power, toughness, commander flag and presence (0 for an empty slot). The keys are
# distinct, so one plain np.sort gives the stable order (a stable argsort of int16 ranks, a radix sort per row
# of 10, costs ~10x more), and the stats read back with shifts, not table lookups (~10x dearer than a shift
# with int16 indices). Attackers rank by power, strongest first; blockers by toughness, sturdiest first, an
# empty slot last.
_SLOT_SHIFT, _RANK_SHIFT = 10, 14
if max(POWER.max(), TOUGHNESS.max()) > 15 or SLOTS > 16 or NO_CARD != -1:
    raise ValueError("card power, toughness or the creature slots do not fit the combat keys (a bug)")
_ON = (np.arange(N_CARDS + 1) < N_CARDS).astype(np.int32)  # indexed by card id: 0 for NO_CARD (-1)
_CARD_STATS = POWER.astype(np.int32) | TOUGHNESS.astype(np.int32) << 4 | (KIND == COMMANDER).astype(np.int32) << 8
_CARD_STATS |= _ON << 9
_ATTACKER_KEY = ((int(POWER.max()) - POWER.astype(np.int32)) << _RANK_SHIFT | _CARD_STATS).astype(np.int32)
_BLOCKER_KEY = ((int(TOUGHNESS.max()) + 1 - TOUGHNESS.astype(np.int32) - _ON) << _RANK_SHIFT | _CARD_STATS).astype(
    np.int32
)
_SLOT_KEY = np.arange(SLOTS, dtype=np.int32) << _SLOT_SHIFT
_THREAT_SCORE = POWER.astype(np.int32) * 4096 + TOUGHNESS * 16  # power first, then toughness (then turn order)


def _line(keys: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """The ranked keys of ``cards`` [...,SLOTS] (creature card ids, -1 empty) under ``keys`` (a key table above)."""
    return np.sort(keys[cards.astype(np.intp)] + _SLOT_KEY, axis=-1)


def _emptied(cards: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """``cards`` with the ``flags`` slots emptied (NO_CARD is -1, all bits set: an or, far cheaper than np.where)."""
    return cards | np.negative(flags.view(np.int8))


def _stats(line: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(power, toughness, is commander, present) of each ranked creature of a line."""
    return line & 15, (line >> 4) & 15, (line & 1 << 8) != 0, (line & 1 << 9) != 0


def _order(line: np.ndarray) -> np.ndarray:
    """The slot of each ranked creature of a line."""
    return (line >> _SLOT_SHIFT) & 15


def _sum_slots(values: np.ndarray) -> np.ndarray:
    """Sum over the last axis (the slots or seats): einsum runs ~5x faster than .sum(-1) over so short an axis."""
    return np.einsum("...k->...", values)


def _any_slot(flags: np.ndarray) -> np.ndarray:
    """Any over the last axis of a bool array (see :func:`_sum_slots`)."""
    return np.einsum("...k->...", flags.view(np.uint8)) > 0


def max_slots(values: np.ndarray) -> np.ndarray:
    """Max over the last axis, one elementwise maximum per entry (~7x faster than .max(-1) over 10 slots)."""
    out = values[..., 0].copy()
    for k in range(1, values.shape[-1]):
        np.maximum(out, values[..., k], out=out)
    return out


def argmax_slots(values: np.ndarray) -> np.ndarray:
    """The first index of the largest value over the last axis, as ``argmax(-1)`` gives it.

    numpy's own argmax where it is fast: over 8 or more entries, or a few
    thousand values in all (the rounds of PPO and evaluation: 0.4-3 us a call
    where the loop below took 4-17 us). Over a short axis of many rows it
    slows (49 us for 4,096 rows of 3 entries), and one comparison per entry
    is faster (28 us).
    """
    if values.shape[-1] >= 8 or values.size <= 4096:
        return values.argmax(axis=-1)
    best = values[..., 0].copy()
    index = np.zeros(best.shape, np.intp)
    for k in range(1, values.shape[-1]):
        np.copyto(index, k, where=values[..., k] > best)  # strictly larger: ties keep the first, as argmax does
        np.maximum(best, values[..., k], out=best)
    return index


def _columns(kind: int) -> slice:
    """The card ids of ``kind``, contiguous in the card table, as a slice (it reads columns without a copy)."""
    ids = np.flatnonzero(KIND[:-1] == kind)
    if not len(ids) or ids[-1] - ids[0] != len(ids) - 1:  # the card table lists each kind together: a bug if not
        raise ValueError(f"the cards of kind {kind} are not contiguous in the card table")
    return slice(int(ids[0]), int(ids[-1]) + 1)


_KIND_COLUMNS = {kind: _columns(kind) for kind in (LAND, CREATURE, REMOVAL, DRAW, RAMP)}
_KIND_IDS = {kind: np.arange(N_CARDS)[columns] for kind, columns in _KIND_COLUMNS.items()}


def any_of_kind(cards: np.ndarray, kind: int) -> np.ndarray:
    """Whether any card of ``kind`` is flagged in ``cards`` [M,C] bool."""
    return _any_slot(cards[:, _KIND_COLUMNS[kind]])


def outcome_reward(won: np.ndarray) -> np.ndarray:
    """The terminal reward of each seat's last decision: +1 for a win, -1 for anything else (turn limit included)."""
    return np.where(won, WIN_REWARD, LOSS_REWARD)


class RulesConfig(BaseModel):
    """The knobs of the rules (defaults are the game described above)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_seats: int = Field(4, ge=2, le=6, description="Seats in the pod (--players sets it in the CLI).")
    starting_life: int = Field(40, ge=1, le=1000, description="Life each seat starts with.")
    max_rounds: MaxRounds = DEFAULT_MAX_ROUNDS
    archetypes: tuple[str, ...] = Field(ARCHETYPE_NAMES, min_length=1, description="Archetypes decks are drawn from.")


@dataclass
class GameState:
    """Every game's full state; axis 0 is the game, axis 1 the seat."""

    life: np.ndarray  # [B,N] int16
    cmd_damage: np.ndarray  # [B,N,N] int16: damage seat i took from seat j's commander
    sources: np.ndarray  # [B,N] int16: mana made each turn by lands and rocks
    pool: np.ndarray  # [B,N] int16: untapped mana
    holding: np.ndarray  # [B,N] bool: the pool is held open for a reaction
    permanents: np.ndarray  # [B,N,C] int8: lands and rocks by card id
    hand: np.ndarray  # [B,N,C] int8: cards in hand by card id
    graveyard: np.ndarray  # [B,N,C] int8
    library: np.ndarray  # [B,N,99] int16: deck order
    drawn: np.ndarray  # [B,N] int16: cards drawn from the library so far
    creatures: np.ndarray  # [B,N,SLOTS] int16: creature card ids, -1 for an empty slot
    sick: np.ndarray  # [B,N,SLOTS] bool: summoning sickness
    tapped: np.ndarray  # [B,N,SLOTS] bool
    commander: np.ndarray  # [B,N] int16: the seat's commander card id
    in_command_zone: np.ndarray  # [B,N] bool
    commander_casts: np.ndarray  # [B,N] int16
    archetype: np.ndarray  # [B,N] int8
    eliminated: np.ndarray  # [B,N] bool
    placement: np.ndarray  # [B,N] int8, 0 while unknown
    seat: np.ndarray  # [B] int8: the acting seat
    phase: np.ndarray  # [B] int8: MAIN_1 or MAIN_2
    turn: np.ndarray  # [B] int16: global turn counter, from 1
    land_played: np.ndarray  # [B] bool
    alive: np.ndarray  # [B] int8: seats still in the game
    done: np.ndarray  # [B] bool
    truncated: np.ndarray  # [B] bool
    winner: np.ndarray  # [B] int8, -1 for none
    max_turn: int

    @property
    def n_games(self) -> int:
        return self.life.shape[0]

    @property
    def n_seats(self) -> int:
        return self.life.shape[1]


def new_state(n_games: int, config: RulesConfig) -> GameState:
    """Allocate ``n_games`` empty games; :func:`deal` starts them."""
    b, n, c = n_games, config.n_seats, N_CARDS
    z = np.zeros
    return GameState(
        life=z((b, n), np.int16),
        cmd_damage=z((b, n, n), np.int16),
        sources=z((b, n), np.int16),
        pool=z((b, n), np.int16),
        holding=z((b, n), bool),
        permanents=z((b, n, c), np.int8),
        hand=z((b, n, c), np.int8),
        graveyard=z((b, n, c), np.int8),
        library=z((b, n, DECK_SIZE), np.int16),
        drawn=z((b, n), np.int16),
        creatures=np.full((b, n, SLOTS), NO_CARD, np.int16),
        sick=z((b, n, SLOTS), bool),
        tapped=z((b, n, SLOTS), bool),
        commander=z((b, n), np.int16),
        in_command_zone=z((b, n), bool),
        commander_casts=z((b, n), np.int16),
        archetype=z((b, n), np.int8),
        eliminated=z((b, n), bool),
        placement=z((b, n), np.int8),
        seat=z(b, np.int8),
        phase=z(b, np.int8),
        turn=z(b, np.int16),
        land_played=z(b, bool),
        alive=z(b, np.int8),
        done=np.ones(b, bool),
        truncated=z(b, bool),
        winner=np.full(b, -1, np.int8),
        max_turn=config.max_rounds * n,
    )


def deal(state: GameState, g: np.ndarray, seeds: list[np.random.Generator], config: RulesConfig) -> None:
    """Start a fresh game in each slot of ``g``, each drawn from its own generator."""
    n = state.n_seats
    allowed = np.array([ARCHETYPE_NAMES.index(name) for name in config.archetypes])
    for game, rng in zip(g.tolist(), seeds, strict=True):
        arche = allowed[rng.integers(len(allowed), size=n)]
        state.archetype[game] = arche
        state.commander[game] = COMMANDER_IDS[arche, rng.integers(2, size=n)]
        state.library[game] = rng.permuted(DECKS[arche], axis=1)
        state.seat[game] = rng.integers(n)
    for array in (
        state.cmd_damage,
        state.sources,
        state.pool,
        state.holding,
        state.permanents,
        state.hand,
        state.graveyard,
        state.sick,
        state.tapped,
        state.commander_casts,
        state.eliminated,
        state.placement,
        state.phase,
        state.land_played,
        state.truncated,
    ):
        array[g] = 0
    state.life[g] = config.starting_life
    state.creatures[g] = NO_CARD
    state.in_command_zone[g] = True
    state.turn[g] = 1
    state.alive[g] = n
    state.done[g] = False
    state.winner[g] = -1
    # The opening hands: each seat draws the top OPENING_HAND cards of its library, all games and seats at once.
    top = state.library[g, :, :OPENING_HAND].astype(np.intp)  # [G,N,7]
    np.add.at(state.hand, (g[:, None, None], np.arange(n)[None, :, None], top), 1)
    state.drawn[g] = OPENING_HAND


# --------------------------------------------------------------------------- queries


def seat_power(state: GameState, g: np.ndarray) -> np.ndarray:
    """Summed creature power of every seat, [M,N]."""
    return _sum_slots(POWER[state.creatures[g].astype(np.intp)])


def ready_attackers(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Which creature slots of seat ``s`` can attack now, [M,SLOTS]."""
    return (state.creatures[g, s] >= 0) & ~state.sick[g, s] & ~state.tapped[g, s]


def turn_order_distance(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """For every seat, how many seats after ``s`` it comes in turn order (0 for ``s``), [M,N]."""
    return (np.arange(state.n_seats)[None, :] - s[:, None]) % state.n_seats


def best_in_hand(state: GameState, g: np.ndarray, s: np.ndarray, kind: int, cheapest: bool) -> np.ndarray:
    """Card id of the most expensive (or cheapest) affordable card of ``kind`` in hand; -1 if none."""
    columns = _KIND_COLUMNS[kind]
    cost = COST[:-1][columns]
    ok = (state.hand[g, s, columns] > 0) & (cost <= state.pool[g, s][:, None])
    score = ok * ((-cost if cheapest else cost) + 1000)  # 0 where not ok, below any card's score
    best = _KIND_IDS[kind][argmax_slots(score)]
    return np.where(_any_slot(ok), best, NO_CARD)


def commander_cost(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """What casting the commander costs now: its cost plus the tax."""
    return COST[state.commander[g, s]] + TAX_STEP * state.commander_casts[g, s]


def strongest_threat(state: GameState, g: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The opponents' strongest creature: (seat, slot, power), seat -1 when there is none."""
    cards = state.creatures[g]  # [M,N,K]
    n = state.n_seats
    later = (n - turn_order_distance(state, g, s))[:, :, None]  # the next seat in turn order scores highest
    score = _THREAT_SCORE[cards.astype(np.intp)] + later
    valid = (cards >= 0) & (np.arange(n)[None, :, None] != s[:, None, None])
    flat = np.where(valid, score, -1).reshape(len(g), -1)
    best = flat.argmax(1)
    seat, slot = best // SLOTS, best % SLOTS
    found = valid.reshape(len(g), -1).any(1)
    power = np.where(found, POWER[cards.reshape(len(g), -1)[np.arange(len(g)), best]], 0)
    return np.where(found, seat, -1), slot, power


def weakest_opponent(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The live opponent with the lowest life, ties to the one next in turn order (the attack rule)."""
    distance = turn_order_distance(state, g, s)
    score = state.life[g].astype(np.int32) * 16 + distance
    score = np.where(state.eliminated[g] | (distance == 0), np.int32(1 << 30), score)
    return score.argmin(1)


def legal_mask(state: GameState, g: np.ndarray) -> np.ndarray:
    """The legal-action mask of the acting seat of each game in ``g``, [M,8] bool."""
    if native is None:
        return legal_mask_numpy(state, g)
    mask = np.empty((len(g), N_ACTIONS), bool)
    native.legal_mask(native_arrays(state), state.max_turn, np.ascontiguousarray(g, np.intp), mask)
    return mask


def legal_mask_numpy(state: GameState, g: np.ndarray) -> np.ndarray:
    """:func:`legal_mask` in numpy: the definition the native rules follow."""
    s = state.seat[g].astype(np.intp)
    m = len(g)
    mask = np.empty((m, N_ACTIONS), bool)
    hand, pool = state.hand[g, s], state.pool[g, s]
    affordable = (hand > 0) & (COST[:-1] <= pool[:, None])
    on_board = np.einsum("mnk->mn", (state.creatures[g] >= 0).view(np.uint8))  # [M,N] creatures per seat
    free_slot = on_board[np.arange(m), s] < SLOTS
    opponent_creature = _any_slot((on_board > 0) & (np.arange(state.n_seats)[None, :] != s[:, None]))
    mask[:, CAST_CREATURE] = any_of_kind(affordable, CREATURE) & free_slot
    mask[:, CAST_REMOVAL] = any_of_kind(affordable, REMOVAL) & opponent_creature
    mask[:, CAST_DRAW] = any_of_kind(affordable, DRAW)
    land_ok = ~state.land_played[g] & any_of_kind(hand > 0, LAND)
    mask[:, CAST_RAMP] = land_ok | any_of_kind(affordable, RAMP)
    mask[:, CAST_COMMANDER] = state.in_command_zone[g, s] & (commander_cost(state, g, s) <= pool) & free_slot
    mask[:, ATTACK] = (state.phase[g] == MAIN_1) & _any_slot(ready_attackers(state, g, s))
    mask[:, HOLD] = pool >= HOLD_MIN_MANA
    mask[:, PASS] = True
    return mask


# --------------------------------------------------------------------------- state changes


def _draw(state: GameState, g: np.ndarray, s: np.ndarray, count: np.ndarray | int) -> None:
    count = np.broadcast_to(count, g.shape)
    for i in range(int(count.max(initial=0))):
        go = (count > i) & (state.drawn[g, s] < DECK_SIZE)
        gg, ss = g[go], s[go]
        card = state.library[gg, ss, state.drawn[gg, ss]]
        state.hand[gg, ss, card] += 1
        state.drawn[gg, ss] += 1


def _put_creature(state: GameState, g: np.ndarray, s: np.ndarray, card: np.ndarray) -> None:
    slot = argmax_slots(state.creatures[g, s] < 0)
    state.creatures[g, s, slot] = card
    state.sick[g, s, slot] = True
    state.tapped[g, s, slot] = False


def _destroy(state: GameState, g: np.ndarray, s: np.ndarray, dead: np.ndarray) -> None:
    """Destroy the creatures of seat ``s`` marked in ``dead`` [M,SLOTS]: to the graveyard, commanders home."""
    cards = state.creatures[g, s]
    is_commander = KIND[cards.astype(np.intp)] == COMMANDER
    to_grave = dead & ~is_commander
    rows, slots = np.nonzero(to_grave)
    np.add.at(state.graveyard, (g[rows], s[rows], cards[rows, slots]), 1)
    state.in_command_zone[g, s] |= _any_slot(dead & is_commander)
    state.creatures[g, s] = _emptied(cards, dead)


def _cast(state: GameState, g: np.ndarray, s: np.ndarray, card: np.ndarray) -> None:
    state.hand[g, s, card] -= 1
    state.pool[g, s] -= COST[card]


def _cast_creature(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    card = best_in_hand(state, g, s, CREATURE, cheapest=False)
    _cast(state, g, s, card)
    _put_creature(state, g, s, card)
    return card


def _cast_removal(state: GameState, g: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    card = best_in_hand(state, g, s, REMOVAL, cheapest=True)
    _cast(state, g, s, card)
    state.graveyard[g, s, card] += 1
    seat, slot, _ = strongest_threat(state, g, s)
    dead = np.zeros((len(g), SLOTS), bool)
    dead[np.arange(len(g)), slot] = True
    _destroy(state, g, seat, dead)
    return card, seat


def _cast_draw(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    card = best_in_hand(state, g, s, DRAW, cheapest=False)
    _cast(state, g, s, card)
    state.graveyard[g, s, card] += 1
    _draw(state, g, s, DRAWS[card])
    return card


def _cast_ramp(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    lands = state.hand[g, s, _KIND_COLUMNS[LAND]]
    play_land = ~state.land_played[g] & _any_slot(lands > 0)
    card = _KIND_IDS[LAND][argmax_slots(lands)]  # the land the most copies of are in hand
    rock = np.flatnonzero(~play_land)
    if len(rock):
        card[rock] = best_in_hand(state, g[rock], s[rock], RAMP, cheapest=False)
    state.hand[g, s, card] -= 1
    state.pool[g, s] += MANA[card] - np.where(play_land, 0, COST[card])
    state.sources[g, s] += MANA[card]
    state.permanents[g, s, card] += 1
    state.land_played[g] |= play_land
    return card


def _cast_commander(state: GameState, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    state.pool[g, s] -= commander_cost(state, g, s)
    state.commander_casts[g, s] += 1
    state.in_command_zone[g, s] = False
    card = state.commander[g, s]
    _put_creature(state, g, s, card)
    return card


def _eliminate(state: GameState, g: np.ndarray, s: np.ndarray) -> None:
    state.placement[g, s] = state.alive[g]
    state.alive[g] -= 1
    state.eliminated[g, s] = True
    state.creatures[g, s] = NO_CARD
    state.permanents[g, s] = 0
    state.sources[g, s] = 0
    state.pool[g, s] = 0
    state.holding[g, s] = False
    over = state.alive[g] == 1
    won = g[over]
    winner = (~state.eliminated[won]).argmax(1)
    state.done[won] = True
    state.winner[won] = winner
    state.placement[won, winner] = 1


def _react_with_removal(state: GameState, g: np.ndarray, d: np.ndarray, a: np.ndarray, attacking: np.ndarray) -> None:
    """A defender holding mana and removal destroys the strongest attacker (before blocks)."""
    react = state.holding[g, d] & _any_slot(attacking)
    if react.any():  # only a holding defender that is attacked looks at its hand
        card = np.full(len(g), NO_CARD, np.intp)
        card[react] = best_in_hand(state, g[react], d[react], REMOVAL, cheapest=True)
        react &= card >= 0
    if not react.any():
        return
    g, d, a, card = g[react], d[react], a[react], card[react]
    _cast(state, g, d, card)
    state.graveyard[g, d, card] += 1
    cards = state.creatures[g, a]
    score = np.where(attacking[react], POWER[cards] * 64 + TOUGHNESS[cards], -1)
    dead = np.zeros(cards.shape, bool)
    dead[np.arange(len(g)), score.argmax(1)] = True
    _destroy(state, g, a, dead)
    attacking[react] &= ~dead


@dataclass
class Combat:
    """How a combat resolves under the block rule, per game (nothing is changed by computing it).

    ``a_order`` / ``b_order`` [M,SLOTS] map the ranked attackers / blockers back to their slots;
    ``a_dead`` / ``b_dead`` are in ranked order.
    """

    damage: np.ndarray  # [M] life damage to the defender
    commander_damage: np.ndarray  # [M] the defender's commander damage from the attacker afterwards
    eliminates: np.ndarray  # [M] the defender is out afterwards
    a_order: np.ndarray
    b_order: np.ndarray
    a_dead: np.ndarray  # [M,SLOTS] ranked attackers that die
    b_dead: np.ndarray  # [M,SLOTS] ranked blockers that die
    power_lost: np.ndarray  # [M] summed power of the attacker's creatures that die
    power_killed: np.ndarray  # [M] summed power of the defender's creatures that die


def resolve_combat(
    state: GameState, g: np.ndarray, a: np.ndarray, d: np.ndarray, attacking: np.ndarray | None = None
) -> Combat:
    """The block rule applied to ``attacking`` [M,SLOTS] (default: every ready creature) of seat ``a`` against ``d``.

    Pure: players use it to foresee an attack (without the defender's held
    removal, which they cannot see); :func:`_attack` applies it.
    """
    attacking = ready_attackers(state, g, a) if attacking is None else attacking
    a_line = _line(_ATTACKER_KEY, _emptied(state.creatures[g, a], ~attacking))
    b_line = _line(_BLOCKER_KEY, _emptied(state.creatures[g, d], state.tapped[g, d]))
    others = np.where(np.arange(state.n_seats)[None, :] == a[:, None], 0, state.cmd_damage[g, d]).max(1)
    return _block(a_line, b_line, state.life[g, d], state.cmd_damage[g, d, a], others)


def resolve_combats(state: GameState, g: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, Combat]:
    """:func:`resolve_combat` of every ready creature of seat ``a`` against each live opponent.

    Returns ``(rows, defenders, combat)``: one entry per (decision, live
    opponent) pair, ``rows`` indexing ``g``. The attackers are ranked once per
    decision and their line reused against each opponent, which is what a
    player foreseeing each possible target needs.
    """
    a_line = _line(_ATTACKER_KEY, _emptied(state.creatures[g, a], ~ready_attackers(state, g, a)))
    rows, d = np.nonzero(~state.eliminated[g] & (np.arange(state.n_seats)[None, :] != a[:, None]))
    g, a = g[rows], a[rows]
    b_line = _line(_BLOCKER_KEY, _emptied(state.creatures[g, d], state.tapped[g, d]))
    cmd = state.cmd_damage[g, d]  # [P,N] what each defender took from each seat's commander
    others = max_slots(np.where(np.arange(state.n_seats)[None, :] == a[:, None], 0, cmd))
    taken = cmd[np.arange(len(g)), a]
    return rows, d, _block(a_line[rows], b_line, state.life[g, d], taken, others)


def _block(a_line: np.ndarray, b_line: np.ndarray, life: np.ndarray, taken: np.ndarray, others: np.ndarray) -> Combat:
    """The block rule on ranked lines [M,SLOTS] (see :func:`_line`), the defender's ``life``, its commander
    damage ``taken`` from the attacker and the most it took from any other commander."""
    a_pow, a_tough, a_cmd, a_on = _stats(a_line)
    b_pow, b_tough, _, b_on = _stats(b_line)
    pair = a_on & b_on
    good = pair & ((b_tough > a_pow) | (b_pow >= a_tough))
    open_ = a_on & ~good
    open_dmg = _sum_slots(a_pow * open_)
    open_cmd = _sum_slots(a_pow * (open_ & a_cmd))
    lethal = (open_dmg >= life) | (taken + open_cmd >= COMMANDER_LETHAL)
    block = good | (lethal[..., None] & pair)  # good blocks are pairs: every pair blocks when lethal
    unblocked = a_on & ~block
    damage = _sum_slots(a_pow * unblocked)
    commander_damage = taken + _sum_slots(a_pow * (unblocked & a_cmd))
    a_dead = block & (b_pow >= a_tough)
    b_dead = block & (a_pow >= b_tough)
    return Combat(
        damage=damage,
        commander_damage=commander_damage,
        eliminates=(life - damage <= 0) | (np.maximum(commander_damage, others) >= COMMANDER_LETHAL),
        a_order=_order(a_line),
        b_order=_order(b_line),
        a_dead=a_dead,
        b_dead=b_dead,
        power_lost=_sum_slots(a_pow * a_dead),
        power_killed=_sum_slots(b_pow * b_dead),
    )


def _attack(state: GameState, g: np.ndarray, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Resolve combat of seat ``a`` against seat ``d``; returns (life damage dealt, defender eliminated)."""
    m, rows = len(g), np.arange(len(g))[:, None]
    attacking = ready_attackers(state, g, a)
    state.tapped[g, a] |= attacking
    _react_with_removal(state, g, d, a, attacking)
    combat = resolve_combat(state, g, a, d, attacking)
    state.life[g, d] -= combat.damage
    state.cmd_damage[g, d, a] = combat.commander_damage
    a_dead, b_dead = np.zeros((m, SLOTS), bool), np.zeros((m, SLOTS), bool)
    a_dead[rows, combat.a_order] = combat.a_dead
    b_dead[rows, combat.b_order] = combat.b_dead
    _destroy(state, g, a, a_dead)
    _destroy(state, g, d, b_dead)
    out = combat.eliminates
    _eliminate(state, g[out], d[out])
    state.phase[g] = MAIN_2
    return combat.damage, out


def _end_turn(state: GameState, g: np.ndarray, hold: np.ndarray) -> None:
    """End the turn of the acting seat (keeping its mana open if ``hold``) and start the next seat's turn."""
    s = state.seat[g].astype(np.intp)
    state.holding[g, s] = hold
    state.pool[g, s] = np.where(hold, state.pool[g, s], 0)
    n = state.n_seats
    later = (s[:, None] + np.arange(1, n)[None, :]) % n
    nxt = later[np.arange(len(g)), argmax_slots(~state.eliminated[g[:, None], later])]
    state.turn[g] += 1
    over = state.turn[g] > state.max_turn
    state.done[g[over]] = True
    state.truncated[g[over]] = True
    g, nxt = g[~over], nxt[~over]
    state.seat[g] = nxt
    state.phase[g] = MAIN_1
    state.land_played[g] = False
    state.tapped[g, nxt] = False
    state.sick[g, nxt] = False
    state.holding[g, nxt] = False
    state.pool[g, nxt] = state.sources[g, nxt]
    _draw(state, g, nxt, 1)


@dataclass
class StepResult:
    """What one decision did, per game: shaped reward, card cast (-1 none), seat attacked or targeted (-1 none)."""

    reward: np.ndarray
    card: np.ndarray
    target: np.ndarray


def apply(
    state: GameState,
    g: np.ndarray,
    action: np.ndarray,
    target: np.ndarray | None = None,
    mask: np.ndarray | None = None,
) -> StepResult:
    """Apply each game's chosen action for its acting seat; ``target`` (-1 = the rule) picks whom to attack.

    ``mask`` is the legal mask of these decisions when the caller has it
    already (it is computed otherwise); every action is checked against it.

    Raises:
        GameError: if an action is illegal for its game (a bug in the player that chose it).
    """
    mask = legal_mask(state, g) if mask is None else mask
    action = np.ascontiguousarray(action, dtype=np.intp)
    illegal = ~mask[np.arange(len(g)), action]
    if illegal.any():
        i = int(np.argmax(illegal))
        raise GameError(
            f"illegal action {int(action[i])} in game slot {int(g[i])} (mask {mask[i].astype(int).tolist()})",
            hint="choose among the actions the legal mask allows",
        )
    if native is None:
        return apply_numpy(state, g, action, target)
    result = StepResult(np.zeros(len(g), np.float32), np.full(len(g), NO_CARD, np.int16), np.full(len(g), -1, np.int8))
    games = np.ascontiguousarray(g, np.intp)
    targets = None if target is None else np.ascontiguousarray(target, np.intp)
    native.apply(
        native_arrays(state), state.max_turn, games, action, targets, result.reward, result.card, result.target
    )
    return result


def apply_numpy(state: GameState, g: np.ndarray, action: np.ndarray, target: np.ndarray | None = None) -> StepResult:
    """:func:`apply` in numpy (legal actions only): the definition the native rules follow."""
    action = np.asarray(action, dtype=np.intp)
    s = state.seat[g].astype(np.intp)
    reward = np.zeros(len(g), np.float32)
    card = np.full(len(g), NO_CARD, np.int16)
    tgt = np.full(len(g), -1, np.int8)
    for code, cast in (
        (CAST_CREATURE, _cast_creature),
        (CAST_DRAW, _cast_draw),
        (CAST_RAMP, _cast_ramp),
        (CAST_COMMANDER, _cast_commander),
    ):
        i = np.flatnonzero(action == code)
        if len(i):
            card[i] = cast(state, g[i], s[i])
    i = np.flatnonzero(action == CAST_REMOVAL)
    if len(i):
        card[i], tgt[i] = _cast_removal(state, g[i], s[i])
    i = np.flatnonzero(action == ATTACK)
    if len(i):
        gi, si = g[i], s[i]
        rule = weakest_opponent(state, gi, si)
        if target is not None:
            want = np.asarray(target, dtype=np.intp)[i]
            ok = (want >= 0) & (want < state.n_seats) & (want != si)
            ok[ok] &= ~state.eliminated[gi[ok], want[ok]]
            rule = np.where(ok, want, rule)
        damage, out = _attack(state, gi, si, rule)
        tgt[i] = rule
        reward[i] = DAMAGE_REWARD * damage + ELIMINATION_REWARD * out
    i = np.flatnonzero((action == HOLD) | (action == PASS))
    if len(i):
        _end_turn(state, g[i], action[i] == HOLD)
    return StepResult(reward, card, tgt)


def copy_state(state: GameState) -> GameState:
    """A deep copy (tests use it to compare before and after)."""
    return GameState(
        **{f.name: (v.copy() if isinstance(v := getattr(state, f.name), np.ndarray) else v) for f in fields(state)}
    )


# --------------------------------------------------------------------------- the native rules

# GameState's arrays in the order the native rules take them (every field but ``max_turn``).
_FIELDS: Final = tuple(f.name for f in fields(GameState) if f.name != "max_turn")


def native_arrays(state: GameState) -> tuple[np.ndarray, ...]:
    """The state as the native loops take it: GameState's arrays in field order."""
    return _GET_ARRAYS(state)  # type: ignore[no-any-return]


_GET_ARRAYS: Final = attrgetter(*_FIELDS)  # one call for the tuple: ~10x cheaper than a loop of getattr


def _load_native() -> object | None:
    """The C loops of :func:`legal_mask` and :func:`apply` (``toolkit/game/_rules.c``, built when the package is
    installed), given the card tables; None where it was not built or ``DISTILL_RULES=numpy`` asks for numpy.
    Both play the same games bit for bit (tests/game/test_native_rules.py); the C loops cost microseconds a step
    where numpy's fixed cost per call is ~2 ms a step at any batch size."""
    if os.environ.get("DISTILL_RULES", "native") == "numpy":
        return None
    try:
        from toolkit.game import _rules
    except ImportError:
        return None
    kinds = (LAND, CREATURE, REMOVAL, DRAW, RAMP, COMMANDER)
    if kinds != tuple(range(len(kinds))):
        raise ValueError("card kinds are not numbered 0..5 as the native rules index them (a bug)")
    ranges = tuple((_columns(kind).start, _columns(kind).stop) for kind in kinds)
    _rules.init(
        N_CARDS,
        *(np.ascontiguousarray(t) for t in (COST, POWER, TOUGHNESS, MANA, DRAWS, KIND)),
        *(np.ascontiguousarray(t, np.int32) for t in (_ATTACKER_KEY, _BLOCKER_KEY, _THREAT_SCORE)),
        ranges,
        (SLOTS, DECK_SIZE, COMMANDER_LETHAL, TAX_STEP, HOLD_MIN_MANA, _SLOT_SHIFT, MAIN_1, MAIN_2),
        kinds,
        (CAST_CREATURE, CAST_REMOVAL, CAST_DRAW, CAST_RAMP, CAST_COMMANDER, ATTACK, HOLD, PASS),
        (DAMAGE_REWARD, ELIMINATION_REWARD),
    )
    return _rules


native = _load_native()
