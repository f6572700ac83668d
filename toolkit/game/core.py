"""The batched core: many games stepped at once, each seat's player asked in batch.

:func:`play` keeps ``batch_size`` game slots busy: every step, all unfinished
games take one decision; a game that ends is replaced by the next one to
play. Game ``k`` is dealt from its own generator ``default_rng([seed, k])``,
so with deterministic players a game does not depend on the batch it ran
in; random players draw from one generator per run, so a run is identical
for the same seed and batch size.

Finished games come out in :class:`Finished` chunks, with (when asked) the
columnar log of every decision of those games, in game then decision order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from toolkit.errors import ConfigError
from toolkit.game import rules
from toolkit.game.observation import seat_features
from toolkit.game.players import DecisionBatch, Player

LOG_FIELDS = ("game", "seat", "turn", "phase", "action", "target", "card", "mask", "reward", "seats", "cards")


@dataclass
class Finished:
    """Games that ended, and (if recorded) their decisions.

    ``log`` maps each name of :data:`LOG_FIELDS` to an array with one row per
    decision: ``seats`` [R,N,11] are the per-seat counts (see
    ``observation.SEAT_FIELDS``), ``cards`` [R,N,3C+SLOTS+1] int8 the hand,
    graveyard and permanents by card id, the creature slots and the command
    zone flag.
    """

    game: np.ndarray  # [G] game numbers
    winner: np.ndarray  # [G] -1 for none
    truncated: np.ndarray  # [G]
    placement: np.ndarray  # [G,N] 0 where unknown
    archetype: np.ndarray  # [G,N]
    commander: np.ndarray  # [G,N]
    decisions: np.ndarray  # [G]
    log: dict[str, np.ndarray] | None = None


def _snapshot(state: rules.GameState, g: np.ndarray) -> dict[str, np.ndarray]:
    cards = np.concatenate(
        [state.hand[g], state.graveyard[g], state.permanents[g], state.creatures[g].astype(np.int8),
         state.in_command_zone[g][:, :, None].astype(np.int8)],
        axis=2,
    )
    return {"seats": seat_features(state, g), "cards": cards}


class _Log:
    """Decision rows of unfinished games, kept as the columnar chunks the steps made.

    Taking the rows of finished games copies only those rows; a chunk is
    compacted once most of its rows were taken, and dropped when all were.
    """

    def __init__(self) -> None:
        self.chunks: list[dict[str, np.ndarray]] = []
        self.left: list[np.ndarray] = []  # per chunk, the rows not taken yet

    def add(self, chunk: dict[str, np.ndarray]) -> None:
        self.chunks.append(chunk)
        self.left.append(np.ones(len(chunk["game"]), bool))

    def take(self, games: np.ndarray) -> dict[str, np.ndarray]:
        """Remove and return the rows of ``games``, ordered by game then decision."""
        done = [np.isin(chunk["game"], games) for chunk in self.chunks]
        game = np.concatenate([chunk["game"][d] for chunk, d in zip(self.chunks, done, strict=True)])
        position = np.empty(len(game), np.int64)  # chunk rows in step order -> row of the result
        position[np.argsort(game, kind="stable")] = np.arange(len(game))
        taken = {k: np.empty((len(game), *v.shape[1:]), v.dtype) for k, v in self.chunks[0].items()}
        start, chunks, left = 0, [], []
        for chunk, rows_left, d in zip(self.chunks, self.left, done, strict=True):
            rows = position[start : start + int(d.sum())]
            start += len(rows)
            for k, v in chunk.items():
                taken[k][rows] = v[d]
            rows_left = rows_left & ~d
            n_left = int(rows_left.sum())
            if 2 * n_left < len(rows_left):  # keep taken rows alive in at most half of a chunk
                chunk, rows_left = {k: v[rows_left] for k, v in chunk.items()}, np.ones(n_left, bool)
            if n_left:
                chunks.append(chunk)
                left.append(rows_left)
        self.chunks, self.left = chunks, left
        return taken


def _ask(players: Sequence[Player], state: rules.GameState, g: np.ndarray, mask: np.ndarray,
         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each seat's player chooses for the games where that seat acts; one call per distinct player."""
    seats = state.seat[g]
    actions = np.full(len(g), rules.PASS, np.intp)
    targets = np.full(len(g), -1, np.intp)
    groups: dict[int, list[int]] = {}
    for i, player in enumerate(players):
        groups.setdefault(id(player), []).append(i)
    for seat_list in groups.values():
        pick = np.flatnonzero(np.isin(seats, seat_list)) if len(seat_list) > 1 else np.flatnonzero(seats == seat_list[0])
        if not len(pick):
            continue
        batch = DecisionBatch(state, g[pick], seats[pick], mask[pick], rng)
        chosen, chosen_targets = players[seat_list[0]].act(batch)
        actions[pick] = chosen
        if chosen_targets is not None:
            targets[pick] = chosen_targets
    return actions, targets


def play(
    players: Sequence[Player],
    n_games: int,
    *,
    seed: int,
    config: rules.RulesConfig | None = None,
    batch_size: int = 1024,
    record: bool = False,
    flush_every: int = 256,
) -> Iterator[Finished]:
    """Play ``n_games`` games with ``players[i]`` at seat ``i``; yield finished games as they come.

    Args:
        players: one player per seat (the same object may sit at several seats).
        n_games: games to play, numbered 0..n_games-1.
        seed: the run's seed; game k is dealt from ``default_rng([seed, k])``.
        config: the rules (the pod size must equal ``len(players)``).
        batch_size: games stepped at once.
        record: keep every decision's state for the decision logger.
        flush_every: yield once at least this many games have finished (and at the end).

    Raises:
        ConfigError: if the number of players does not match the pod size.
    """
    config = config or rules.RulesConfig(n_seats=len(players))
    if len(players) != config.n_seats:
        raise ConfigError(f"{len(players)} players for a pod of {config.n_seats}", hint="give one player per seat")
    size = max(1, min(batch_size, n_games))
    state = rules.new_state(size, config)
    slot_game = np.full(size, -1, np.int64)
    decisions = np.zeros(size, np.int64)
    rng = np.random.default_rng([seed, 2**31])
    log = _Log() if record else None
    pending: list[Finished] = []
    next_game = _refill(state, slot_game, decisions, np.arange(size), 0, n_games, seed, config)
    while True:
        g = np.flatnonzero(~state.done)
        if not len(g):
            break
        mask = rules.legal_mask(state, g)
        actions, targets = _ask(players, state, g, mask, rng)
        if log is not None:
            chunk = {"game": slot_game[g], "seat": state.seat[g].copy(), "turn": state.turn[g].copy(),
                     "phase": state.phase[g].copy(), "action": actions.astype(np.int8), "mask": mask,
                     **_snapshot(state, g)}
        result = rules.apply(state, g, actions, targets)
        decisions[g] += 1
        if log is not None:
            chunk.update(target=result.target, card=result.card, reward=result.reward)
            log.add(chunk)
        over = g[state.done[g]]
        if len(over):
            pending.append(_finish(state, slot_game, decisions, over))
            next_game = _refill(state, slot_game, decisions, over, next_game, n_games, seed, config)
            if sum(len(f.game) for f in pending) >= flush_every:
                yield _merge(pending, log)
                pending = []
    if pending:
        yield _merge(pending, log)


def _refill(state: rules.GameState, slot_game: np.ndarray, decisions: np.ndarray, slots: np.ndarray,
            next_game: int, n_games: int, seed: int, config: rules.RulesConfig) -> int:
    """Deal the next games into free ``slots``; returns the next game number to deal."""
    slots = slots[: max(0, n_games - next_game)]
    numbers = np.arange(next_game, next_game + len(slots))
    slot_game[slots] = numbers
    decisions[slots] = 0
    if len(slots):
        rules.deal(state, slots, [np.random.default_rng([seed, int(k)]) for k in numbers], config)
    return next_game + len(slots)


def _finish(state: rules.GameState, slot_game: np.ndarray, decisions: np.ndarray, over: np.ndarray) -> Finished:
    return Finished(
        game=slot_game[over].copy(), winner=state.winner[over].copy(), truncated=state.truncated[over].copy(),
        placement=state.placement[over].copy(), archetype=state.archetype[over].copy(),
        commander=state.commander[over].copy(), decisions=decisions[over].copy(),
    )


def _merge(pending: list[Finished], log: _Log | None) -> Finished:
    merged = Finished(**{k: np.concatenate([getattr(f, k) for f in pending])
                         for k in ("game", "winner", "truncated", "placement", "archetype", "commander", "decisions")})
    order = np.argsort(merged.game, kind="stable")
    merged = Finished(**{k: getattr(merged, k)[order]
                         for k in ("game", "winner", "truncated", "placement", "archetype", "commander", "decisions")})
    if log is not None:
        merged.log = log.take(merged.game)
    return merged
