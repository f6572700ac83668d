"""The decision logger: finished games -> canonical DecisionSnapshot rows -> JSONL files.

Rows are plain dicts serialised with orjson (no Pydantic on the hot path;
the tests validate samples with ``DecisionSnapshot``). A seat's state is
usually unchanged between consecutive decisions, so each distinct seat state
is serialised only when it changed and reused as an ``orjson.Fragment``.

Field conventions (see ``docs`` of the contract): ``source`` is the role of
the acting seat's player (``forge`` for the heuristic, ``random``, ``ppo``...),
``dialect`` ``canonical``, ``engine`` ``distill-game``, ``game_id``
``sim-<seed>-<game>``. ``phase`` is ``combat`` for attacks, ``end`` for hold
and pass, otherwise the main phase the decision was taken in. ``reward`` is
the shaped reward plus, on each seat's last decision of a game with a result,
+1 (winner) or -1; ``episode_return`` sums the acting seat's rewards over the
game. A truncated game has ``timed_out`` true, no winner, ``seat_won`` false,
``truncated`` true on each seat's last decision and ``placement`` null for the
seats still alive.
"""

from __future__ import annotations

import gc
import gzip
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Final, Literal

import numpy as np
import orjson

from toolkit.game import cards as C
from toolkit.game import rules
from toolkit.game.core import Finished
from toolkit.game.observation import SEAT_FIELDS
from toolkit.schema.vocab import MACRO_ACTIONS, SCHEMA_VERSION

ENGINE: Final = "distill-game"
Compression = Literal["none", "gzip", "zstd"]
SUFFIX: Final[dict[str, str]] = {"none": ".jsonl", "gzip": ".jsonl.gz", "zstd": ".jsonl.zst"}
_NAMES = np.array(C.NAMES + ("",), dtype=object)
_NAMES_C = _NAMES[: C.N_CARDS]
_N_CARDS = C.N_CARDS


def game_id(seed: int, game: int) -> str:
    """The deterministic id of game ``game`` of the run seeded ``seed``."""
    return f"sim-{seed}-{game}"


def _phase_names(phase: np.ndarray, action: np.ndarray) -> np.ndarray:
    names = np.where(phase == rules.MAIN_1, "main_1", "main_2").astype(object)
    names[action == rules.ATTACK] = "combat"
    names[(action == rules.HOLD) | (action == rules.PASS)] = "end"
    return names


def _changed(segment: np.ndarray, new_game: np.ndarray) -> np.ndarray:
    """[R,N] bool: the seat's ``segment`` differs from the previous row of the same game."""
    changed = np.ones(segment.shape[:2], bool)
    changed[1:] = (segment[1:] != segment[:-1]).reshape(len(segment) - 1, segment.shape[1], -1).any(-1)
    return changed | new_game[:, None]


def _json_list(names: list[str]) -> orjson.Fragment:
    return orjson.Fragment(orjson.dumps(names))


def _render_names(counts: np.ndarray) -> orjson.Fragment:
    return _json_list(_NAMES_C.repeat(counts).tolist())


def _render_battlefield(permanents_and_slots: np.ndarray) -> orjson.Fragment:
    perms, slots = permanents_and_slots[:_N_CARDS], permanents_and_slots[_N_CARDS:]
    return _json_list(_NAMES_C.repeat(perms).tolist() + _NAMES[slots[slots >= 0]].tolist())


def _fragments(changed: np.ndarray, build) -> np.ndarray:
    """[R,N] object array: ``build(r, p)`` where ``changed[r, p]``, else the value of row r-1."""
    ids = np.cumsum(changed.ravel(order="F")).reshape(changed.shape, order="F") - 1  # per-seat running ids
    made = np.empty(int(changed.sum()), dtype=object)
    seats, rows = np.nonzero(changed.T)
    made[:] = [build(r, p) for p, r in zip(seats.tolist(), rows.tolist())]
    return made[ids]


def _seat_fragments(counts: np.ndarray, cards: np.ndarray, commander: np.ndarray, new_game: np.ndarray,
                    acting: np.ndarray) -> list[list]:
    """``players[i]`` entries as orjson fragments: result[r][p] for row r, seat p.

    A seat's state rarely changes between consecutive decisions of a game, so
    each entry (and each of its card lists) is serialised only when it
    changed. Hands are hidden information: only the acting seat's is written.
    """
    c = _N_CARDS
    lists = {
        "battlefield": (cards[:, :, 2 * c : -1], lambda v, cmd: _render_battlefield(v)),
        "graveyard": (cards[:, :, c : 2 * c], lambda v, cmd: _render_names(v)),
        "command_zone": (cards[:, :, -1:], lambda v, cmd: _json_list([C.NAMES[cmd]] if v[0] else [])),
    }
    entry_changed = _changed(counts, new_game)
    rendered: dict[str, np.ndarray] = {}
    for name, (segment, render) in lists.items():
        changed = _changed(segment, new_game)
        entry_changed |= changed
        rendered[name] = _fragments(changed, lambda r, p, seg=segment, f=render: f(seg[r, p], commander[r, p]))
    counts_list = counts.tolist()

    def entry(r: int, p: int, hand: orjson.Fragment | None = None) -> dict:
        e = dict(zip(SEAT_FIELDS, counts_list[r][p], strict=True))
        e["eliminated"] = bool(e["eliminated"])
        return {"seat": p, **e, "hand": hand, **{k: rendered[k][r, p] for k in lists}}

    public = _fragments(entry_changed, lambda r, p: orjson.Fragment(orjson.dumps(entry(r, p))))
    rows = np.arange(len(acting))
    hands = cards[rows, acting, :c]
    public[rows, acting] = [orjson.Fragment(orjson.dumps(entry(r, p, _render_names(h))))
                            for r, p, h in zip(rows.tolist(), acting.tolist(), hands)]
    return public.tolist()


def build_rows(finished: Finished, *, seed: int, sources: Sequence[str], model_version: str | None = None,
               generation: int | None = None) -> list[bytes]:
    """The canonical JSON lines (without newlines) of every decision of the finished games (see ``_build_rows``)."""
    # Row building allocates millions of short-lived acyclic objects; the cyclic GC's scans of them
    # cost ~30% of the time and free nothing, so it is paused here.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_rows(finished, seed=seed, sources=sources, model_version=model_version, generation=generation)
    finally:
        if was_enabled:
            gc.enable()


def _build_rows(finished: Finished, *, seed: int, sources: Sequence[str], model_version: str | None,
                generation: int | None) -> list[bytes]:
    """The canonical JSON lines (without newlines) of every decision of the finished games.

    Args:
        finished: games from ``core.play(..., record=True)``.
        seed: the run's seed (it names the games).
        sources: the role of each seat's player.
        model_version, generation: stamped on rows of policy seats (sources other than forge/random).
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
    key = at * n + seat
    last = np.zeros(r, bool)
    last[r - 1 - np.unique(key[::-1], return_index=True)[1]] = True
    truncated = finished.truncated[at]
    winner = finished.winner[at].astype(np.int64)
    won = (winner == seat) & ~truncated
    reward = log["reward"].astype(np.float64)
    reward[last & ~truncated] += np.where(won, rules.WIN_REWARD, rules.LOSS_REWARD)[last & ~truncated]
    reward = np.round(reward, 6)
    episode = np.round(np.bincount(key, weights=reward, minlength=len(finished.game) * n)[key], 6)
    placement = finished.placement[at, seat]
    commander = finished.commander[at]  # [R,N]
    archetype = finished.archetype[at, seat]
    phase = _phase_names(log["phase"], log["action"])
    card = log["card"].astype(np.int64)
    action = log["action"].astype(np.int64)
    target = log["target"].astype(np.int64)
    cols = [x.tolist() for x in (seat, decision, log["turn"], phase, action, card, target, reward, episode,
                                 winner, truncated, won, placement, last, archetype, commander[np.arange(r), seat])]
    masks = log["mask"].tolist()
    game_ids = [game_id(seed, int(k)) for k in finished.game]
    at_list = at.tolist()
    new_game = np.zeros(r, bool)
    new_game[starts] = True
    seat_entries = _seat_fragments(log["seats"], log["cards"], commander, new_game, seat)
    actions: dict[tuple[int, int, int], orjson.Fragment] = {}
    lines = []
    for i, (s, d, turn, ph, a, cd, tg, rw, ep, wn, tr, sw, pl, ls, ar, cm) in enumerate(zip(*cols, strict=True)):
        act = actions.get((a, cd, tg))
        if act is None:
            act = actions[(a, cd, tg)] = orjson.Fragment(orjson.dumps(
                {"macro": MACRO_ACTIONS[a], "index": a, "label_source": "logged", "raw_type": None,
                 "card": C.NAMES[cd] if cd >= 0 else None, "target": None,
                 "target_seat": tg if tg >= 0 else None, "raw": None, "requested_index": None}))
        source = sources[s]
        policy = source not in ("forge", "random")
        row = {
            "schema_version": SCHEMA_VERSION, "source": source, "dialect": "canonical", "engine": ENGINE,
            "game_id": game_ids[at_list[i]], "decision_index": d, "turn": turn, "phase": ph, "seat": s,
            "pod_size": n, "players": seat_entries[i], "action": act,
            "legal_actions": masks[i], "reward": rw, "episode_return": ep,
            "winner_seat": None if tr or wn < 0 else wn, "is_draw": False, "timed_out": tr, "seat_won": sw,
            "placement": pl or None, "is_terminal": ls and not tr, "truncated": ls and tr,
            "model_version": model_version if policy else None, "generation": generation if policy else None,
            "deck_name": f"{C.ARCHETYPE_NAMES[ar].title()}: {C.NAMES[cm]}", "commander": C.NAMES[cm],
            "archetype": C.ARCHETYPE_NAMES[ar], "raw_outcome": None, "flags": None,
        }
        lines.append(orjson.dumps(row))
    return lines


class DecisionWriter:
    """Writes JSON lines into numbered part files, each staged as ``.tmp`` and renamed when complete."""

    def __init__(self, out: Path, prefix: str, compression: Compression = "none", rows_per_file: int = 1_000_000):
        self.out, self.prefix, self.compression, self.rows_per_file = out, prefix, compression, rows_per_file
        self.files: list[Path] = []
        self._handle: IO[bytes] | None = None
        self._raw: IO[bytes] | None = None
        self._rows = 0
        out.mkdir(parents=True, exist_ok=True)

    def write(self, lines: list[bytes]) -> None:
        """Append lines, starting a new part file when the current one is full."""
        if not lines:
            return
        if self._handle is None:
            self._open()
        self._handle.write(b"\n".join(lines) + b"\n")  # type: ignore[union-attr]
        self._rows += len(lines)
        if self._rows >= self.rows_per_file:
            self.close()

    def _open(self) -> None:
        final = self.out / f"{self.prefix}-part-{len(self.files):04d}{SUFFIX[self.compression]}"
        self._final, self._tmp = final, final.with_name(final.name + ".tmp")
        self._raw = open(self._tmp, "wb")
        if self.compression == "gzip":
            self._handle = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=1, mtime=0)
        elif self.compression == "zstd":
            import zstandard

            self._handle = zstandard.ZstdCompressor(level=3).stream_writer(self._raw, closefd=False)
        else:
            self._handle = self._raw
        self._rows = 0

    def close(self) -> None:
        """Finish the current part file and publish it with an atomic rename."""
        if self._handle is None:
            return
        if self._handle is not self._raw:
            self._handle.close()
        self._raw.close()  # type: ignore[union-attr]
        os.replace(self._tmp, self._final)
        self.files.append(self._final)
        self._handle = self._raw = None
