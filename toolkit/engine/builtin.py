"""Distill's own game as an engine: the reference implementation of the engine protocol (``distill engine builtin``).

One process plays many games at once on the batched core: games of one pod
size and turn limit share a :class:`_Table` (one :class:`~toolkit.game.rules.GameState`,
a slot per game), and every step of a table asks the engine's own AI
(profiles ``heuristic``, ``tuned``, ``random``) locally and Distill's seats in
one :class:`~toolkit.schema.engine.Decisions` frame, all games' requests
together. A game is dealt from ``default_rng(seed)`` alone and the AI profiles
draw nothing but from the game's own generator, so a game is a function of
its start message (determinism ``replay``); Distill's evaluation sends
``seed = run_seed + deal * 2**32``, which deals exactly what the in-process
core deals for that deal (``default_rng([run_seed, deal])``), so the same
games are played over the wire and in process.

Its standard output carries frames only; anything it has to say goes to
standard error. It exits on ``shutdown`` (after ``bye``) or at the end of
its input.
"""

from __future__ import annotations

import os
import selectors
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Any, Final

import numpy as np
from pydantic import ValidationError

from toolkit import __version__
from toolkit.engine.wire import FrameBuffer, FrameError, decode, encode
from toolkit.game import rules
from toolkit.game.cards import NAMES
from toolkit.game.core import Seating
from toolkit.game.observation import SEAT_FIELDS, seat_features
from toolkit.game.players import TUNED, DecisionBatch, HeuristicPlayer, policy_targets
from toolkit.schema.engine import ACTIONS, MAJOR, MAX_FRAME_BYTES, MINOR, PROTOCOL, Start
from toolkit.schema.vocab import SCHEMA_VERSION

ENGINE_NAME: Final = "distill-game"
PROFILES: Final = ("heuristic", "tuned", "random")
MAX_POD: Final = 6  # the game's rules seat 2 to 6
DEFAULT_GAMES: Final = 256
_PHASE_NAMES: Final = ("main_1", "main_2")  # indexed by rules.MAIN_1 / MAIN_2


def hello(games_per_process: int = DEFAULT_GAMES) -> dict[str, Any]:
    return {
        "type": "hello",
        "protocol": PROTOCOL,
        "major": MAJOR,
        "minor": MINOR,
        "contract_version": SCHEMA_VERSION,
        "actions": ACTIONS,
        "max_pod_size": MAX_POD,
        "games_per_process": games_per_process,
        "capabilities": {"engine_ai": list(PROFILES), "ai_records": False, "determinism": "replay"},
        "engine": {"name": ENGINE_NAME, "version": __version__},
    }


class _Stop(Exception):
    """Distill said shutdown, or closed our input."""


class _Wire:
    """Our standard input (frames, read without blocking when asked) and output (frames only)."""

    def __init__(self, stdin: int, stdout: IO[bytes]) -> None:
        self.fd, self.out = stdin, stdout
        self.buffer = FrameBuffer(MAX_FRAME_BYTES)
        self.frames: deque[bytes] = deque()
        self.selector = selectors.DefaultSelector()
        self.selector.register(stdin, selectors.EVENT_READ)
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(encode(message))
        self.out.flush()

    def poll(self, wait: bool) -> None:
        """Read what is there now; with ``wait``, first wait until there is a frame (or the input ends)."""
        while not self.closed:
            if not self.selector.select(None if wait and not self.frames else 0):
                return
            data = os.read(self.fd, 1 << 16)
            if not data:
                self.closed = True
                return
            try:
                self.frames.extend(self.buffer.feed(data))
            except FrameError as error:
                self.send({"type": "error", "code": "bad_frame", "message": str(error)})
                self.buffer = FrameBuffer(MAX_FRAME_BYTES)

    def next(self, wait: bool) -> dict[str, Any] | None:
        """The next message (None: none waiting and not ``wait``); a bad frame is answered with an error."""
        while True:
            self.poll(wait)
            if not self.frames:
                if self.closed:
                    raise _Stop
                return None
            try:
                return decode(self.frames.popleft())
            except FrameError as error:
                self.send({"type": "error", "code": "bad_frame", "message": str(error)})


@dataclass
class _Game:
    start: Start
    rng: np.random.Generator  # the engine AI's draws in this game
    requests: int = 0
    decisions: int = 0


class _RandomProfile:
    """Uniform over the legal actions, drawn from each game's own generator (replayable)."""

    source = "random"

    def __init__(self, table: _Table) -> None:
        self.table = table

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        noise = np.stack([self.table.games[int(g)].rng.random(batch.mask.shape[1]) for g in batch.games])
        return (noise + batch.mask).argmax(1), None


class _Distill:
    """Distill's seats: every game's request of this step in one frame, the answers read back."""

    source = "distill"

    def __init__(self, table: _Table) -> None:
        self.table = table

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        table = self.table
        requests = {}
        rows = table.rows(batch)
        for slot, row in zip(batch.games.tolist(), rows, strict=True):
            game = table.games[slot]
            requests[(game.start.game, game.requests)] = slot
            game.requests += 1
        frame = [{"game": g, "request": r, "row": row} for (g, r), row in zip(requests, rows, strict=True)]
        table.server.wire.send({"type": "decisions", "requests": frame})
        actions = np.full(len(batch.games), -1, np.intp)
        where = {key: i for i, key in enumerate(requests)}
        while (actions < 0).any():
            message = table.server.await_message()
            for answer in message.get("answers", []):
                key = (answer.get("game"), answer.get("request"))
                i = where.get(key)
                if i is None:
                    table.server.refuse_answer(answer, "unknown_game", "no open request of that game and number")
                    continue
                action = answer.get("action")
                if not isinstance(action, int) or not 0 <= action < len(ACTIONS) or not batch.mask[i, action]:
                    legal = [ACTIONS[a] for a in np.flatnonzero(batch.mask[i])]
                    table.server.refuse_answer(answer, "illegal_action", f"action {action!r} is not legal: {legal}")
                    continue
                actions[i] = action
        return actions, policy_targets(batch, actions)


class _Table:
    """The games of one pod size and turn limit, stepped together."""

    def __init__(self, server: _Server, pod: int, turn_limit: int, capacity: int) -> None:
        self.server = server
        self.config = rules.RulesConfig(n_seats=pod, max_rounds=turn_limit)
        self.state = rules.new_state(capacity, self.config)
        self.state.done[:] = True
        self.games: dict[int, _Game] = {}
        self.players = [_Distill(self), HeuristicPlayer(), HeuristicPlayer(TUNED), _RandomProfile(self)]
        self.seating = Seating(self.players, capacity, pod)
        self.rng = np.random.default_rng(0)  # never drawn from: every profile uses its game's generator

    @property
    def free(self) -> list[int]:
        return [s for s in range(self.state.n_games) if s not in self.games]

    def add(self, start: Start, slot: int) -> None:
        self.games[slot] = _Game(start, np.random.default_rng([start.seed, 1]))
        self.seating.table[slot] = [
            0 if s.player == "distill" else 1 + PROFILES.index(s.profile or "") for s in start.seats
        ]
        rules.deal(self.state, np.array([slot]), [np.random.default_rng(start.seed)], self.config)

    def step(self) -> None:
        state = self.state
        g = np.array(sorted(self.games), np.intp)
        g = g[~state.done[g]]
        mask = rules.legal_mask(state, g)
        actions, targets = self.seating.ask(state, g, mask, self.rng)
        rules.apply(state, g, actions, targets, mask)
        for slot in g.tolist():
            self.games[slot].decisions += 1
        for slot in g[state.done[g]].tolist():
            self.server.report(self, slot)
            del self.games[slot]

    def rows(self, batch: DecisionBatch) -> list[dict[str, Any]]:
        """The contract rows (without label) of the acting seats of ``batch``."""
        state, g = self.state, batch.games
        counts = seat_features(state, g).tolist()
        rows = []
        for i, slot in enumerate(g.tolist()):
            game, seat = self.games[slot], int(state.seat[slot])
            players = []
            for p in range(state.n_seats):
                entry: dict[str, Any] = {"seat": p}
                entry.update(zip(SEAT_FIELDS[:-1], counts[i][p][:-1], strict=True))
                entry["eliminated"] = bool(counts[i][p][-1])
                entry["hand"] = _names(state.hand[slot, p]) if p == seat else None
                creatures = [NAMES[c] for c in state.creatures[slot, p].tolist() if c >= 0]
                entry["battlefield"] = _names(state.permanents[slot, p]) + creatures
                entry["graveyard"] = _names(state.graveyard[slot, p])
                entry["command_zone"] = [NAMES[int(state.commander[slot, p])]] if state.in_command_zone[slot, p] else []
                players.append(entry)
            rows.append(
                {
                    "schema_version": SCHEMA_VERSION,
                    "engine": ENGINE_NAME,
                    "game_id": game.start.game,
                    "decision_index": game.decisions,
                    "turn": int(state.turn[slot]),
                    "phase": _PHASE_NAMES[int(state.phase[slot])],
                    "seat": seat,
                    "pod_size": state.n_seats,
                    "players": players,
                    "legal_actions": batch.mask[i].tolist(),
                }
            )
        return rows


def _names(counts: np.ndarray) -> list[str]:
    """Card names from counts by card id, in id order."""
    ids = np.flatnonzero(counts)
    return [NAMES[c] for c in ids.tolist() for _ in range(int(counts[c]))]


@dataclass
class _Server:
    wire: _Wire
    capacity: int
    tables: dict[tuple[int, int], _Table] = field(default_factory=dict)
    queue: deque[Start] = field(default_factory=deque)
    played: int = 0
    stopping: bool = False

    def run(self) -> int:
        self.wire.send(hello(self.capacity))
        try:
            answer = self.wire.next(wait=True)
        except _Stop:
            return 0
        if answer is None or answer.get("type") != "welcome":
            reason = (answer or {}).get("reason", answer)
            print(f"{ENGINE_NAME}: Distill refused us: {reason}", file=sys.stderr, flush=True)
            return 2
        try:
            while not (self.stopping and not self.live):
                self.take(wait=not self.live and not self.queue)
                self.seat_queued()
                for table in list(self.tables.values()):
                    if table.games:
                        table.step()
        except _Stop:
            return 0
        self.wire.send({"type": "bye", "games": self.played})
        return 0

    @property
    def live(self) -> int:
        return sum(len(t.games) for t in self.tables.values())

    def take(self, wait: bool) -> None:
        """Handle the messages waiting (at least one when ``wait``)."""
        while (message := self.wire.next(wait)) is not None:
            wait = False
            self.handle(message)

    def await_message(self) -> dict[str, Any]:
        """The next ``actions`` message, handling any other in between (a start is queued)."""
        while True:
            message = self.wire.next(wait=True)
            assert message is not None
            if message.get("type") == "actions":
                return message
            self.handle(message)

    def handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "start":
            self.queue_start(message)
        elif kind == "shutdown":
            self.stopping = True
            for table in self.tables.values():  # games not finished are abandoned: no result
                table.games.clear()
            self.queue.clear()
        elif kind == "actions":
            for answer in message.get("answers", []):
                self.refuse_answer(answer, "unknown_game", "no open request of that game and number")
        else:
            self.wire.send({"type": "error", "code": "bad_frame", "message": f"unexpected message {kind!r}"})

    def queue_start(self, message: dict[str, Any]) -> None:
        try:
            start = Start.model_validate(message)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            self.bad_start(message, f"{where}: {problem['msg']}")
            return
        if start.pod_size != len(start.seats) or start.pod_size > MAX_POD or start.turn_limit > 1000:
            self.bad_start(
                message,
                f"a pod of {start.pod_size} with {len(start.seats)} seats (2 to {MAX_POD}), "
                f"turn limit {start.turn_limit} (at most 1000)",
            )
            return
        unknown = [s.profile for s in start.seats if s.player == "engine" and s.profile not in PROFILES]
        if unknown:
            self.bad_start(message, f"unknown engine AI profile {unknown[0]!r}: this engine has {list(PROFILES)}")
            return
        self.queue.append(start)

    def bad_start(self, message: dict[str, Any], why: str) -> None:
        self.wire.send({"type": "error", "code": "bad_start", "message": why, "game": str(message.get("game"))})

    def seat_queued(self) -> None:
        while self.queue:
            start = self.queue[0]
            key = (start.pod_size, start.turn_limit)
            table = self.tables.get(key)
            if table is None:
                table = self.tables[key] = _Table(self, start.pod_size, start.turn_limit, self.capacity)
            free = table.free
            if not free:
                return
            table.add(self.queue.popleft(), free[0])

    def refuse_answer(self, answer: Any, code: str, why: str) -> None:
        game = answer.get("game") if isinstance(answer, dict) else None
        request = answer.get("request") if isinstance(answer, dict) else None
        self.wire.send({"type": "error", "code": code, "message": why, "game": game, "request": request})

    def report(self, table: _Table, slot: int) -> None:
        state, game = table.state, table.games[slot]
        winner = int(state.winner[slot])
        truncated = bool(state.truncated[slot])
        self.played += 1
        self.wire.send(
            {
                "type": "result",
                "game": game.start.game,
                "winner_seat": None if winner < 0 or truncated else winner,
                "placements": [int(p) or None for p in state.placement[slot].tolist()],
                "truncated": truncated,
                "turns": int(state.turn[slot]),
                "decisions": game.decisions,
                "settings": game.start.model_dump(mode="json"),
            }
        )


def serve(games_per_process: int = DEFAULT_GAMES, stdin: int | None = None, stdout: IO[bytes] | None = None) -> int:
    """Serve the built-in game over the protocol on standard input and output; returns the exit code."""
    wire = _Wire(sys.stdin.fileno() if stdin is None else stdin, stdout or sys.stdout.buffer)
    return _Server(wire, games_per_process).run()
