"""The batched core: many games stepped at once, each distinct player asked once per step for all its games.

:func:`play` keeps ``batch_size`` game slots busy: every step, all unfinished
games take one decision; a game that ends is replaced by the next one to
play. Each game seats its own lineup (``lineups``), so seat rotations and
whole tournaments run in one pass, and game ``k`` is dealt from its own
generator ``default_rng([seed, deals[k]])`` (one deal can be replayed in
several seatings), so with deterministic players a game does not depend on
the batch it ran in; random players draw from one generator per run, so a
run is identical for the same seed and batch size. :class:`Seating` (who
sits where, and the batched asking) is shared with the vectorised env.

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
        [
            state.hand[g],
            state.graveyard[g],
            state.permanents[g],
            state.creatures[g].astype(np.int8),
            state.in_command_zone[g][:, :, None].astype(np.int8),
        ],
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


class Seating:
    """Who sits where: distinct players, and per game slot and seat the index of its player (-1: nobody here).

    The same player object at several seats is one entry, so it is asked
    once per step for all of them (one forward pass for a policy).
    """

    def __init__(self, players: Sequence[Player], n_slots: int, n_seats: int) -> None:
        self.players: list[Player] = []
        self._index: dict[int, int] = {}
        for player in players:
            self.index_of(player)
        self.table = np.full((n_slots, n_seats), -1, np.int32)

    def index_of(self, player: Player) -> int:
        """The entry of ``player``, added if new."""
        key = id(player)
        if key not in self._index:
            self._index[key] = len(self.players)
            self.players.append(player)
        return self._index[key]

    def ask(
        self, state: rules.GameState, g: np.ndarray, mask: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Actions and attack targets for the acting seat of each game in ``g``: one call per distinct player."""
        seats = state.seat[g]
        who = self.table[g, seats]
        actions = np.full(len(g), rules.PASS, np.intp)
        targets = np.full(len(g), -1, np.intp)
        for index in np.unique(who).tolist():
            pick = np.flatnonzero(who == index)
            batch = DecisionBatch(state, g[pick], seats[pick], mask[pick], rng)
            chosen, chosen_targets = self.players[index].act(batch)
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
    lineups: np.ndarray | None = None,
    deals: np.ndarray | None = None,
    stream: int | None = None,
) -> Iterator[Finished]:
    """Play ``n_games`` games; yield finished games as they come.

    Args:
        players: one player per seat (the same object may sit at several
            seats); with ``lineups``, the pool the lineups index into.
        n_games: games to play, numbered 0..n_games-1.
        seed: the run's seed; game k is dealt from ``default_rng([seed, deals[k]])``.
        config: the rules (the pod size must equal ``len(players)``, or the lineups' width).
        batch_size: games stepped at once.
        record: keep every decision's state for the decision logger.
        flush_every: yield once at least this many games have finished (and at the end).
        lineups: [n_games, seats] indices into ``players``: game k's player at each
            seat (tournaments and seat rotations in one run). Default: ``players`` in seat order.
        deals: [n_games] the deal of each game (one deal replayed in several
            seatings); default: game k is deal k.
        stream: which of the seed's streams random players draw from (a
            job's shard ``j > 0`` uses ``j``, so shards never share draws); None: the run's own.

    Raises:
        ConfigError: if the seats do not match the pod size.
    """
    width = len(players) if lineups is None else lineups.shape[1]
    config = config or rules.RulesConfig(n_seats=width)
    if width != config.n_seats:
        raise ConfigError(f"{width} players for a pod of {config.n_seats}", hint="give one player per seat")
    if lineups is not None and (lineups.shape[0] != n_games or lineups.min() < 0 or lineups.max() >= len(players)):
        raise ConfigError(
            f"lineups must be [{n_games}, {width}] indices into {len(players)} players",
            hint="give one row of player indices per game",
        )
    lineups = np.broadcast_to(np.arange(width), (n_games, width)) if lineups is None else lineups
    size = max(1, min(batch_size, n_games))
    state = rules.new_state(size, config)
    seating = Seating(players, size, width)
    entry = np.array([seating.index_of(p) for p in players], np.int32)  # pool position -> seating entry
    dealer = _Dealer(
        state, seating, entry[lineups], np.arange(n_games) if deals is None else np.asarray(deals), seed, config
    )
    rng = np.random.default_rng([seed, 2**31] if stream is None else [seed, 2**31, stream])
    log = _Log() if record else None
    pending: list[Finished] = []
    dealer.refill(np.arange(size))
    while True:
        g = np.flatnonzero(~state.done)
        if not len(g):
            break
        mask = rules.legal_mask(state, g)
        actions, targets = seating.ask(state, g, mask, rng)
        if log is not None:
            chunk = {
                "game": dealer.slot_game[g],
                "seat": state.seat[g].copy(),
                "turn": state.turn[g].copy(),
                "phase": state.phase[g].copy(),
                "action": actions.astype(np.int8),
                "mask": mask,
                **_snapshot(state, g),
            }
        result = rules.apply(state, g, actions, targets, mask)
        dealer.decisions[g] += 1
        if log is not None:
            chunk.update(target=result.target, card=result.card, reward=result.reward)
            log.add(chunk)
        over = g[state.done[g]]
        if len(over):
            pending.append(_finish(state, dealer.slot_game, dealer.decisions, over))
            dealer.refill(over)
            if sum(len(f.game) for f in pending) >= flush_every:
                yield _merge(pending, log)
                pending = []
    if pending:
        yield _merge(pending, log)


class _Dealer:
    """Deals the next games into free slots, seating each game's lineup."""

    def __init__(
        self,
        state: rules.GameState,
        seating: Seating,
        lineups: np.ndarray,
        deals: np.ndarray,
        seed: int,
        config: rules.RulesConfig,
    ) -> None:
        self.state, self.seating, self.lineups, self.deals, self.seed, self.config = (
            state,
            seating,
            lineups,
            deals,
            seed,
            config,
        )
        self.slot_game = np.full(state.n_games, -1, np.int64)
        self.decisions = np.zeros(state.n_games, np.int64)
        self.next_game = 0

    def refill(self, slots: np.ndarray) -> None:
        """Deal the next games (if any are left) into ``slots``."""
        slots = slots[: max(0, len(self.deals) - self.next_game)]
        numbers = np.arange(self.next_game, self.next_game + len(slots))
        self.next_game += len(slots)
        self.slot_game[slots] = numbers
        self.decisions[slots] = 0
        if len(slots):
            self.seating.table[slots] = self.lineups[numbers]
            rules.deal(
                self.state,
                slots,
                [np.random.default_rng([self.seed, int(k)]) for k in self.deals[numbers]],
                self.config,
            )


def _finish(state: rules.GameState, slot_game: np.ndarray, decisions: np.ndarray, over: np.ndarray) -> Finished:
    return Finished(
        game=slot_game[over].copy(),
        winner=state.winner[over].copy(),
        truncated=state.truncated[over].copy(),
        placement=state.placement[over].copy(),
        archetype=state.archetype[over].copy(),
        commander=state.commander[over].copy(),
        decisions=decisions[over].copy(),
    )


def _merge(pending: list[Finished], log: _Log | None) -> Finished:
    merged = Finished(
        **{
            k: np.concatenate([getattr(f, k) for f in pending])
            for k in ("game", "winner", "truncated", "placement", "archetype", "commander", "decisions")
        }
    )
    order = np.argsort(merged.game, kind="stable")
    merged = Finished(
        **{
            k: getattr(merged, k)[order]
            for k in ("game", "winner", "truncated", "placement", "archetype", "commander", "decisions")
        }
    )
    if log is not None:
        merged.log = log.take(merged.game)
    return merged
