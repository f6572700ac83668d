"""The decision logger: finished games -> canonical DecisionSnapshot rows -> JSONL files.

Rows are assembled from precomputed byte pieces, never from per-row dicts
(no Pydantic and no Python loop per row on the hot path; the tests validate
the rows with ``DecisionSnapshot`` and check they equal the logged state):
a row is a fixed template whose constant parts (keys, the per-game header
and result, card names, numbers with their keys) are made once per chunk of
games and picked for every row by numpy, then concatenated by
``bytes.join``. Each piece is made with orjson or ``%d``, so the bytes are
those ``orjson.dumps`` gives for the row dict, keys in the contract's order.
A seat's state is usually unchanged between consecutive decisions, so it is
made only where it changed and reused by the rows after.

Field conventions (see ``docs`` of the contract): ``source`` is the role of
the acting seat's player (``forge`` for the heuristic, ``random``, ``ppo``...),
``dialect`` ``canonical``, ``engine`` ``distill-game``, ``game_id``
``sim-<seed>-<game>``. ``phase`` is the main phase the decision was taken in
(never the phase the action leads to: that would leak the label into the
features). ``reward`` is
what the env gives: the shaped terms of the decision (``rules``: +0.002 per
point of damage dealt, +0.05 per elimination) plus, on each seat's last
decision, the terminal +1 for the winner and -1 for every other seat, at the
turn limit too (``rules.outcome_reward``); ``episode_return`` sums the acting
seat's rewards over the game (a winner's is above 1, a loser's above -1).
``outcome`` is the result alone, +1 the acting seat won and -1 it did not,
on every row: a win is the only success. ``lineup`` names every seat's
player (:class:`~toolkit.game.lineup.Entrant`) when the writer gives them,
else null. A truncated game has ``timed_out`` true, no winner, ``seat_won``
false, ``truncated`` true on each seat's last decision and ``placement`` null
for the seats still alive.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import secrets
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

import numpy as np
import orjson

from toolkit.game import Compression, rules
from toolkit.game.cards import ARCHETYPE_NAMES, N_CARDS, NAMES
from toolkit.game.core import Finished
from toolkit.game.lineup import Entrant, lineup_entries
from toolkit.game.observation import SEAT_FIELDS
from toolkit.schema.vocab import MACRO_ACTIONS, MAX_POD_SIZE, SCHEMA_VERSION

ENGINE: Final = "distill-game"
SUFFIX: Final[dict[str, str]] = {"none": ".jsonl", "gzip": ".jsonl.gz", "zstd": ".jsonl.zst"}
_N_CARDS = N_CARDS


def _table(pieces: Sequence[bytes]) -> np.ndarray:
    """A 1-D object array of byte pieces, to be indexed by numpy."""
    table = np.empty(len(pieces), dtype=object)
    table[:] = pieces
    return table


_NAME_FIRST = _table([orjson.dumps(name) for name in NAMES])  # the first name of a JSON list
_NAME_NEXT = _table([b"," + orjson.dumps(name) for name in NAMES])
# By the legal-action mask packed into a byte (np.packbits: action 0 is the high bit).
_MASKS = _table([b',"legal_actions":' + orjson.dumps([bool(b >> (7 - i) & 1) for i in range(8)]) for b in range(256)])
_JOIN_BATCH = 4096
_PHASES = ("main_1", "main_2")  # indexed by rules.MAIN_1 / MAIN_2


@dataclass
class _Names:
    """A list slot of the row template: each row's card names, ``lengths[r]`` pieces for row r."""

    pieces: np.ndarray  # object [sum(lengths)]: the pieces of every row, in row order
    lengths: np.ndarray  # [R]
    rank: np.ndarray  # [sum(lengths)]: position of each piece within its row


Slot = bytes | np.ndarray | _Names  # a fixed slot is one piece for every row or an object array [R] of pieces


def game_id(seed: int, game: int, prefix: str = "sim") -> str:
    """The deterministic id of game ``game`` of the run seeded ``seed`` (``prefix`` names the kind of run)."""
    return f"{prefix}-{seed}-{game}"


def _ints(prefix: bytes, values: np.ndarray) -> np.ndarray:
    """[R] pieces ``prefix`` + the JSON of each integer value."""
    values = values.astype(np.int64)
    low, high = int(values.min()), int(values.max())
    return _table([prefix + b"%d" % v for v in range(low, high + 1)])[values - low]


def _floats(prefix: bytes, values: np.ndarray) -> np.ndarray:
    """[R] pieces ``prefix`` + orjson's JSON of each float (unique by bits, so -0.0 stays -0.0)."""
    bits, inverse = np.unique(values.astype(np.float64).view(np.int64), return_inverse=True)
    return _table([prefix + orjson.dumps(v) for v in bits.view(np.float64).tolist()])[inverse.ravel()]


def _names(ids: np.ndarray, lengths: np.ndarray, after: np.ndarray | None = None) -> _Names:
    """The list slot of card ``ids`` (row-major, ``lengths[r]`` per row), after ``after[r]`` names of the same list."""
    lengths = lengths.astype(np.int64)
    rank = np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    follows = rank > 0 if after is None else rank + np.repeat(after, lengths) > 0
    return _Names(np.where(follows, _NAME_NEXT[ids], _NAME_FIRST[ids]), lengths, rank)


def _counted_names(counts: np.ndarray) -> _Names:
    """The list slot of card counts [R,C]: each card's name repeated, in card order."""
    rows, cards = np.nonzero(counts)
    return _names(np.repeat(cards, counts[rows, cards]), counts.sum(1, dtype=np.int64))


def _join(slots: list[Slot], n_rows: int) -> list[bytes]:
    """The slots of every row, row after row, concatenated into consecutive blocks of a few KB to a few 100 KB."""
    lengths = np.ones((n_rows, len(slots)), np.int64)
    for s, slot in enumerate(slots):
        if isinstance(slot, _Names):
            lengths[:, s] = slot.lengths
    flat = lengths.ravel()
    starts = (np.cumsum(flat) - flat).reshape(lengths.shape)
    out = np.empty(int(flat.sum()), dtype=object)
    for s, slot in enumerate(slots):
        if isinstance(slot, _Names):
            out[np.repeat(starts[:, s], slot.lengths) + slot.rank] = slot.pieces
        else:
            out[starts[:, s]] = slot
    pieces = out.tolist()
    # bytes.join keeps a buffer record per piece: joining a few thousand at a time keeps them in the CPU cache.
    return [b"".join(pieces[i : i + _JOIN_BATCH]) for i in range(0, len(pieces), _JOIN_BATCH)]


def _fragments(slots: list[Slot], n: int) -> np.ndarray:
    """[n] object array of the fragments the slots make, one per slot row (JSON has no raw newline to split on)."""
    return _table(b"".join(_join([*slots, b"\n"], n)).split(b"\n")[:-1])


def _changed(segment: np.ndarray, new_game: np.ndarray) -> np.ndarray:
    """[R] bool: row r of ``segment`` differs from row r-1 or starts a game."""
    changed = new_game.copy()
    changed[1:] |= (segment[1:] != segment[:-1]).reshape(len(segment) - 1, -1).any(1)
    return changed


def _repeated(changed: np.ndarray, make: Callable[[np.ndarray], list[Slot]]) -> np.ndarray:
    """[R] object array: ``make(rows)`` for the rows where ``changed``, reused by the rows after them."""
    rows = np.flatnonzero(changed)
    return _fragments(make(rows), len(rows))[np.cumsum(changed) - 1]


def _player_pieces(
    p: int, counts: np.ndarray, cards: np.ndarray, commander: np.ndarray, acting: np.ndarray, new_game: np.ndarray
) -> list[np.ndarray]:
    """``players[p]`` in three [R] pieces: up to ``"hand":``, the hand (the acting seat's only, else null), the rest.

    A seat's counts and cards rarely change between consecutive decisions
    of a game, so the first and last pieces are made where they changed and
    reused by the rows after.
    """
    c = _N_CARDS
    counts, cards, acts = counts[:, p], cards[:, p], acting == p

    def make_counts(rows: np.ndarray) -> list[Slot]:
        values = counts[rows]
        slots: list[Slot] = [_ints(b'%s{"seat":%d,"life":' % (b"," if p else b"", p), values[:, 0])]
        slots += [_ints(b',"%s":' % name.encode(), values[:, f]) for f, name in enumerate(SEAT_FIELDS[1:-1], 1)]
        eliminated = (values[:, -1] > 0).astype(np.int64)
        slots.append(_table([b',"eliminated":false,"hand":', b',"eliminated":true,"hand":'])[eliminated])
        return slots

    def make_zones(rows: np.ndarray) -> list[Slot]:
        zones = cards[rows]
        permanents = _counted_names(zones[:, 2 * c : 3 * c])
        creatures = zones[:, 3 * c : -1]
        on_board = creatures >= 0
        command = [b'],"command_zone":[]}'] + [b'],"command_zone":[%s]}' % name for name in _NAME_FIRST]
        return [
            b',"battlefield":[',
            permanents,
            _names(creatures[on_board].astype(np.int64), on_board.sum(1), after=permanents.lengths),
            b'],"graveyard":[',
            _counted_names(zones[:, c : 2 * c]),
            _table(command)[np.where(zones[:, -1] > 0, commander[rows, p].astype(np.int64) + 1, 0)],
        ]

    hand = np.full(len(acting), b"null", dtype=object)
    mine = np.flatnonzero(acts)
    hand[mine] = _fragments([b"[", _counted_names(cards[mine, :c]), b"]"], len(mine))
    return [
        _repeated(_changed(counts, new_game), make_counts),
        hand,
        _repeated(_changed(cards[:, c:], new_game), make_zones),
    ]


def build_rows(
    finished: Finished,
    *,
    seed: int,
    sources: Sequence[str],
    model_version: str | None = None,
    generation: int | None = None,
    keep: np.ndarray | None = None,
    requested: np.ndarray | None = None,
    game_prefix: str = "sim",
    entrants: Sequence[Entrant] | None = None,
    seating: np.ndarray | None = None,
) -> list[bytes]:
    """The canonical JSON lines (without newlines) of every decision of the finished games (see ``build_jsonl``)."""
    blocks = build_jsonl(
        finished,
        seed=seed,
        sources=sources,
        model_version=model_version,
        generation=generation,
        keep=keep,
        requested=requested,
        game_prefix=game_prefix,
        entrants=entrants,
        seating=seating,
    )
    return b"".join(blocks).split(b"\n")[:-1]


def build_jsonl(
    finished: Finished,
    *,
    seed: int,
    sources: Sequence[str],
    model_version: str | None = None,
    generation: int | None = None,
    keep: np.ndarray | None = None,
    requested: np.ndarray | None = None,
    game_prefix: str = "sim",
    entrants: Sequence[Entrant] | None = None,
    seating: np.ndarray | None = None,
) -> list[bytes]:
    """The canonical JSON lines of every decision of the finished games, as consecutive blocks of bytes.

    The blocks concatenated are the JSONL text, each line ending in a
    newline (a block may end mid-line; they are written as they are). A row
    is a fixed template of byte pieces: per game and seat (the header, the
    result), per value (numbers, the action, the mask), per seat state and
    per card name. numpy picks every row's pieces column by column and
    ``bytes.join`` concatenates them, so no Python code runs per row.

    Args:
        finished: games from ``core.play(..., record=True)``.
        seed: the run's seed (it names the games).
        sources: the role of each seat's player.
        model_version, generation: stamped on rows of policy seats (sources other than forge/random).
        keep: [R] bool over the log's rows: write only these (e.g. one learner's decisions). Decision
            indices, rewards and episode returns are still those of the whole log.
        requested: [R] int over the log's rows: the action a policy asked for when it was replaced by a
            legal fallback (``action.requested_index``), -1 where it was not.
        game_prefix: game ids are ``<game_prefix>-<seed>-<game>`` (see :func:`game_id`).
        entrants: the players of the games, for the rows' ``lineup``; None: the lineup is unknown (null).
        seating: [G, N] which of ``entrants`` sat at each seat of each finished game; None: ``entrants[i]``
            sat at seat ``i`` of every game.
    """
    log = finished.log
    if log is None or not len(log["game"]):
        return []
    n = finished.placement.shape[1]
    r = len(log["game"])
    at = np.searchsorted(finished.game, log["game"])  # row -> finished game
    seat = log["seat"].astype(np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(log["game"])) + 1]
    decision = np.arange(r) - np.repeat(starts, np.diff(np.r_[starts, r]))
    key = at * n + seat  # row -> (game, seat)
    last = np.zeros(r, bool)
    last[r - 1 - np.unique(key[::-1], return_index=True)[1]] = True
    truncated = finished.truncated[at]
    won = (finished.winner[at] == seat) & ~truncated
    reward = log["reward"].astype(np.float64)
    reward[last] += rules.outcome_reward(won)[last]
    reward = np.round(reward, 6)
    episode = np.round(np.bincount(key, weights=reward, minlength=len(finished.game) * n)[key], 6)
    lineups = _lineups(finished, entrants, seating)
    heads, tails = _game_seat_pieces(finished, seed, sources, model_version, generation, game_prefix, lineups)
    phase_seat = _table(
        [b',"phase":"%s","seat":%d,"pod_size":%d,"players":[' % (ph.encode(), s, n) for ph in _PHASES for s in range(n)]
    )
    commander = finished.commander[at]
    new_game = np.zeros(r, bool)
    new_game[starts] = True
    slots: list[Slot] = [
        heads[key],
        _ints(b"", decision),
        _ints(b',"turn":', log["turn"]),
        phase_seat[log["phase"].astype(np.intp) * n + seat],
    ]
    for p in range(n):
        slots += _player_pieces(p, log["seats"], log["cards"], commander, seat, new_game)
    slots += [
        _actions(log["action"], log["card"], log["target"], requested),
        _MASKS[np.packbits(log["mask"], axis=1)[:, 0]],
        _floats(b',"reward":', reward),
        _floats(b',"episode_return":', episode),
        tails[2 * key + last],
    ]
    if keep is not None:
        rows = np.flatnonzero(keep)
        if not len(rows):
            return []
        slots = [_kept(slot, rows) for slot in slots]
        r = len(rows)
    return _join(slots, r)


def _kept(slot: Slot, rows: np.ndarray) -> Slot:
    """The pieces of ``rows`` only."""
    if isinstance(slot, bytes):
        return slot
    if isinstance(slot, np.ndarray):
        return slot[rows]
    starts = np.cumsum(slot.lengths) - slot.lengths
    lengths = slot.lengths[rows]
    kept_starts = np.cumsum(lengths) - lengths
    pieces = np.repeat(starts[rows] - kept_starts, lengths) + np.arange(int(lengths.sum()))
    return _Names(slot.pieces[pieces], lengths, slot.rank[pieces])


def _actions(
    action: np.ndarray, card: np.ndarray, target: np.ndarray, requested: np.ndarray | None = None
) -> np.ndarray:
    """[R] pieces closing ``players`` and holding the ``action`` record."""
    card, target = card.astype(np.int64) + 1, target.astype(np.int64) + 1  # -1 (none) -> 0
    asked = np.zeros(len(action), np.int64) if requested is None else requested.astype(np.int64) + 1
    key = ((asked * (rules.PASS + 1) + action.astype(np.int64)) * (N_CARDS + 1) + card) * (MAX_POD_SIZE + 1) + target
    keys, inverse = np.unique(key, return_inverse=True)
    pieces = []
    for code in keys.tolist():
        rest, tg = divmod(code, MAX_POD_SIZE + 1)
        rest, cd = divmod(rest, N_CARDS + 1)
        rq, a = divmod(rest, rules.PASS + 1)
        pieces.append(
            b'],"action":'
            + orjson.dumps(
                {
                    "macro": MACRO_ACTIONS[a],
                    "index": a,
                    "label_source": "logged",
                    "raw_type": None,
                    "card": NAMES[cd - 1] if cd else None,
                    "target": None,
                    "target_seat": tg - 1 if tg else None,
                    "raw": None,
                    "requested_index": rq - 1 if rq else None,
                }
            )
        )
    return _table(pieces)[inverse.ravel()]


def _lineups(
    finished: Finished, entrants: Sequence[Entrant] | None, seating: np.ndarray | None
) -> list[list[dict[str, object]] | None]:
    """Each finished game's canonical ``lineup`` (None where the writer gave no entrants)."""
    if entrants is None:
        return [None] * len(finished.game)
    n = finished.placement.shape[1]
    if seating is None:
        seating = np.broadcast_to(np.arange(n), (len(finished.game), n))
    return [lineup_entries([entrants[i] for i in row]) for row in seating.tolist()]


def _game_seat_pieces(
    finished: Finished,
    seed: int,
    sources: Sequence[str],
    model_version: str | None,
    generation: int | None,
    game_prefix: str,
    lineups: list[list[dict[str, object]] | None],
) -> tuple[np.ndarray, np.ndarray]:
    """A row's start up to ``decision_index`` by (game, seat); its end from ``winner_seat`` by (game, seat, last)."""
    heads, tails = [], []
    for g, k in enumerate(finished.game.tolist()):
        winner, truncated = int(finished.winner[g]), bool(finished.truncated[g])
        for s, source in enumerate(sources):
            head = orjson.dumps(
                {
                    "schema_version": SCHEMA_VERSION,
                    "source": source,
                    "dialect": "canonical",
                    "engine": ENGINE,
                    "game_id": game_id(seed, k, game_prefix),
                }
            )
            heads.append(head[:-1] + b',"decision_index":')
            policy = source not in ("forge", "random")
            commander = NAMES[finished.commander[g, s]]
            archetype = ARCHETYPE_NAMES[finished.archetype[g, s]]
            won = winner == s and not truncated
            for last in (False, True):
                tail = orjson.dumps(
                    {
                        "winner_seat": None if truncated or winner < 0 else winner,
                        "is_draw": False,
                        "timed_out": truncated,
                        "seat_won": won,
                        "placement": int(finished.placement[g, s]) or None,
                        "is_terminal": last and not truncated,
                        "truncated": last and truncated,
                        "model_version": model_version if policy else None,
                        "generation": generation if policy else None,
                        "deck_name": f"{archetype.title()}: {commander}",
                        "commander": commander,
                        "archetype": archetype,
                        "raw_outcome": None,
                        "flags": None,
                        "lineup": lineups[g],
                        "outcome": 1 if won else -1,
                    }
                )
                tails.append(b"," + tail[1:] + b"\n")
    return _table(heads), _table(tails)


class DecisionWriter:
    """Writes JSON lines into numbered part files, each staged as ``.tmp`` and renamed when complete.

    Writing happens on one background thread, in the order of the calls:
    file writes and compression release the GIL, so they overlap with
    playing and row building. At most ``_QUEUED`` writes wait; the first
    error is raised by the next ``write`` or by ``close``.
    """

    _QUEUED: Final = 1  # chunks of rows waiting in memory (~2.3 KB a row: ~110 MB for 256 games)

    def __init__(self, out: Path, prefix: str, compression: Compression = "none", rows_per_file: int = 1_000_000):
        self.out, self.prefix, self.compression, self.rows_per_file = out, prefix, compression, rows_per_file
        self.files: list[Path] = []
        self._handle: IO[bytes] | None = None
        self._raw: IO[bytes] | None = None
        self._rows = 0
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="decision-writer")
        self._queued: deque[Future[None]] = deque()
        out.mkdir(parents=True, exist_ok=True)

    def write(self, blocks: Sequence[bytes], rows: int) -> None:
        """Queue ``rows`` lines (``blocks`` concatenated), starting a new part file when the current one is full."""
        if rows:
            self._queued.append(self._thread.submit(self._write, blocks, rows))
        while len(self._queued) > self._QUEUED:
            self._queued.popleft().result()

    def close(self) -> None:
        """Wait for the queued writes, then finish the current part file and publish it."""
        try:
            while self._queued:
                self._queued.popleft().result()
            self._thread.submit(self._publish).result()
        finally:
            self._thread.shutdown()

    def abandon(self) -> None:
        """Stop without publishing the current part file (a failed run): its temporary file is removed."""
        self._thread.shutdown(wait=True, cancel_futures=True)
        self._queued.clear()
        for handle in (self._handle, self._raw):
            if handle is not None:
                with contextlib.suppress(OSError, ValueError):
                    handle.close()
        if self._handle is not None:
            self._tmp.unlink(missing_ok=True)
        self._handle = self._raw = None

    @staticmethod
    def discard_unfinished(out: Path, prefix: str) -> None:
        """Remove the temporary files writers of ``prefix`` left in ``out`` (a killed worker's unfinished parts)."""
        for stale in out.glob(f"{prefix}*.tmp"):
            stale.unlink(missing_ok=True)

    def _write(self, blocks: Sequence[bytes], rows: int) -> None:
        if self._handle is None:
            self._open()
        for block in blocks:  # joining them first would hold the GIL that playing needs
            self._handle.write(block)  # type: ignore[union-attr]
        self._rows += rows
        if self._rows >= self.rows_per_file:
            self._publish()

    def _open(self) -> None:
        final = self.out / f"{self.prefix}-part-{len(self.files):04d}{SUFFIX[self.compression]}"
        # a private temporary name: a repeated shard (a retried job) may write the same file at the same time
        self._final, self._tmp = final, final.with_name(f"{final.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        self._raw = open(self._tmp, "wb")
        if self.compression == "gzip":
            self._handle = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=1, mtime=0)
        elif self.compression == "zstd":
            import zstandard

            self._handle = zstandard.ZstdCompressor(level=3).stream_writer(self._raw, closefd=False)
        else:
            self._handle = self._raw
        self._rows = 0

    def _publish(self) -> None:
        """Finish the current part file and publish it with an atomic rename."""
        if self._handle is None:
            return
        if self._handle is not self._raw:
            self._handle.close()
        self._raw.close()  # type: ignore[union-attr]
        os.replace(self._tmp, self._final)
        self.files.append(self._final)
        self._handle = self._raw = None
