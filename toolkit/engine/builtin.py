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

import heapq
import os
import selectors
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Any, Final

import numpy as np
from pydantic import ValidationError

from toolkit import __version__
from toolkit.engine.records import complete
from toolkit.engine.wire import FrameBuffer, FrameError, decode, encode_frame
from toolkit.game import rules
from toolkit.game.cards import NAMES
from toolkit.game.observation import SEAT_FIELDS, seat_features
from toolkit.game.players import TUNED, DecisionBatch, HeuristicPlayer, policy_targets
from toolkit.schema.engine import ACTIONS, MAJOR, MAX_FRAME_BYTES, MINOR, PROTOCOL, Start
from toolkit.schema.vocab import SCHEMA_VERSION

ENGINE_NAME: Final = "distill-game"
PROFILES: Final = ("heuristic", "tuned", "random")
MAX_POD: Final = 6  # the game's rules seat 2 to 6
DEFAULT_GAMES: Final = 1024
LANES: Final = 2  # tables per pod size and turn limit: one steps while the other's requests are out
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
        "capabilities": {"engine_ai": list(PROFILES), "ai_records": True, "determinism": "replay"},
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
        self.selector = selectors.PollSelector()  # epoll refuses a regular file or /dev/null as input
        self.selector.register(stdin, selectors.EVENT_READ)
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(encode_frame(message))
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
    records: list[tuple[dict[str, Any], int]] = field(default_factory=list)  # its AI's (row, action), if asked


class _RandomProfile:
    """Uniform over the legal actions, drawn from each game's own generator (replayable)."""

    source = "random"

    def __init__(self, table: _Table) -> None:
        self.table = table

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        noise = np.stack([self.table.games[int(g)].rng.random(batch.mask.shape[1]) for g in batch.games])
        return (noise + batch.mask).argmax(1), None


class _Table:
    """Games of one pod size and turn limit, stepped together in two halves: :meth:`begin` takes a step's
    local decisions (the engine AI's) and sends Distill's requests without waiting, :meth:`finish` applies the
    step once every answer is in. The server keeps one table's requests in flight while it works on another,
    so the engine never idles waiting for Distill's answers while it has work."""

    def __init__(self, server: _Server, pod: int, turn_limit: int, capacity: int) -> None:
        self.server = server
        self.config = rules.RulesConfig(n_seats=pod, max_rounds=turn_limit)
        self.state = rules.new_state(capacity, self.config)
        self.state.done[:] = True
        self.games: dict[int, _Game] = {}
        self.players = [HeuristicPlayer(), HeuristicPlayer(TUNED), _RandomProfile(self)]
        self.table = np.zeros((capacity, pod), np.int32)  # per slot and seat: -1 Distill, else a profile's player
        self.rng = np.random.default_rng(0)  # never drawn from: every profile uses its game's generator
        self.step_state: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.waiting: list[tuple[str, int]] = []
        self.slots = list(range(capacity))  # the free slots, a heap

    @property
    def free(self) -> int:
        return self.state.n_games - len(self.games)

    def add(self, start: Start) -> None:
        slot = heapq.heappop(self.slots)  # the lowest free slot
        self.games[slot] = _Game(start, np.random.default_rng([start.seed, 1]))
        self.table[slot] = [-1 if s.player == "distill" else PROFILES.index(s.profile or "") for s in start.seats]
        rules.deal(self.state, np.array([slot]), [np.random.default_rng(start.seed)], self.config)

    def begin(self) -> None:
        """The step's engine-AI decisions, and Distill's requests sent (not waited for). Games still waiting on
        answers from a partial :meth:`finish` keep their requests: the new ones join them in the step."""
        state = self.state
        g = np.array(sorted(self.games), np.intp)
        g = g[~state.done[g]]
        residual, held = self.step_state, self.waiting
        if residual is not None:
            g = np.setdiff1d(g, residual[0])
            if not len(g):
                return
        seats = state.seat[g]
        mask = rules.legal_mask(state, g)
        who = self.table[g, seats]
        actions = np.full(len(g), -1, np.intp)
        targets = np.full(len(g), -1, np.intp)
        for index in np.unique(who[who >= 0]).tolist():
            pick = np.flatnonzero(who == index)
            chosen, chosen_targets = self.players[index].act(
                DecisionBatch(state, g[pick], seats[pick], mask[pick], self.rng)
            )
            actions[pick] = chosen
            if chosen_targets is not None:
                targets[pick] = chosen_targets
        if self.recording:
            self.record(g, seats, mask, who, actions)
        remote = np.flatnonzero(who < 0)
        waiting = []
        if len(remote):
            batch = DecisionBatch(state, g[remote], seats[remote], mask[remote], self.rng)
            frame = []
            for i, row in zip(remote.tolist(), self.rows(batch), strict=True):
                game = self.games[int(g[i])]
                key = (game.start.game, game.requests)
                game.requests += 1
                self.server.expect(key, mask[i])
                waiting.append(key)
                frame.append({"game": key[0], "request": key[1], "row": row})
            self.server.wire.send({"type": "decisions", "requests": frame})
        step = (g, seats, mask, actions, targets)
        if residual is None:
            self.step_state, self.waiting = step, waiting
        else:  # the residual's rows first: its requests come first in waiting, as its rows in the arrays
            self.step_state = tuple(np.concatenate([r, n]) for r, n in zip(residual, step, strict=True))  # type: ignore[assignment]
            self.waiting = held + waiting

    @property
    def recording(self) -> bool:
        return any(game.start.records for game in self.games.values())

    def record(self, g: np.ndarray, seats: np.ndarray, mask: np.ndarray, who: np.ndarray, actions: np.ndarray) -> None:
        """Keep the rows of the engine AI's decisions in the games that asked for its records."""
        mine = [k for k in np.flatnonzero(who >= 0).tolist() if self.games[int(g[k])].start.records]
        if not mine:
            return
        pick = np.array(mine)
        batch = DecisionBatch(self.state, g[pick], seats[pick], mask[pick], self.rng)
        for k, row in zip(mine, self.rows(batch), strict=True):
            self.games[int(g[k])].records.append((row, int(actions[k])))

    @property
    def ready(self) -> bool:
        return self.step_state is not None and all(key in self.server.answers for key in self.waiting)

    @property
    def appliable(self) -> bool:
        """Some games of the step can be applied now: the engine AI's, or those whose answers are in."""
        if self.step_state is None:
            return False
        return bool((self.step_state[3] >= 0).any()) or any(key in self.server.answers for key in self.waiting)

    @property
    def movable(self) -> bool:
        """Something can go on while answers are held back: games to apply, or games seated since the step began."""
        if self.step_state is None:
            return False
        return self.appliable or len(self.games) > len(self.step_state[0])

    def finish(self, partial: bool = False) -> None:
        """Apply the step begun, every answer in; report the games it ended. ``partial``: apply it to the games
        whose answers are in (and the engine AI's), the others keep waiting (Distill holds an answer back while it
        waits for other games: a self-play env answers its learner once every game waits on it)."""
        assert self.step_state is not None
        g, seats, mask, actions, targets = self.step_state
        remote = np.flatnonzero(actions < 0)
        waiting = np.array([key in self.server.answers for key in self.waiting], bool)
        if partial and not waiting.all():
            held = remote[~waiting]
            go = np.ones(len(g), bool)
            go[held] = False
            residual = tuple(x[held] for x in (g, seats, mask, actions, targets))
            still = [key for key, in_ in zip(self.waiting, waiting.tolist(), strict=True) if not in_]
            self.waiting = [key for key, in_ in zip(self.waiting, waiting.tolist(), strict=True) if in_]
            g, seats, mask, actions, targets = (x[go] for x in (g, seats, mask, actions, targets))
            remote = np.flatnonzero(actions < 0)
        else:
            residual, still = None, []
        if len(remote):
            actions[remote] = [self.server.answers.pop(key) for key in self.waiting]
            batch = DecisionBatch(self.state, g[remote], seats[remote], mask[remote], self.rng)
            targets[remote] = policy_targets(batch, actions[remote])
        self.step_state, self.waiting = residual, still  # type: ignore[assignment]
        state = self.state
        rules.apply(state, g, actions, targets, mask)
        for slot in g.tolist():
            self.games[slot].decisions += 1
        for slot in g[state.done[g]].tolist():
            self.server.report(self, slot)
            del self.games[slot]
            heapq.heappush(self.slots, slot)

    def rows(self, batch: DecisionBatch) -> list[dict[str, Any]]:
        """The contract rows (without label) of the acting seats of ``batch`` (every zone of every row named in
        a few numpy passes: no per-card Python)."""
        state, g = self.state, batch.games
        m, n = len(g), state.n_seats
        counts = seat_features(state, g).tolist()
        hands = _zone_names(state.hand[g, batch.seats])
        zones = _zone_names(np.stack([state.permanents[g], state.graveyard[g]], axis=2))
        on_board = _creature_names(state.creatures[g])
        commanders = _NAME_ARRAY[state.commander[g]].tolist()
        in_zone = state.in_command_zone[g].tolist()
        slots, seats, turns, phases = (x.tolist() for x in (g, state.seat[g], state.turn[g], state.phase[g]))
        masks = batch.mask.tolist()
        rows = []
        for i in range(m):
            seat = seats[i]
            players = []
            for p in range(n):
                c, k = counts[i][p], i * n + p
                players.append(
                    {
                        "seat": p,
                        "life": c[0],
                        "commander_damage_taken": c[1],
                        "mana_available": c[2],
                        "commander_tax": c[3],
                        "hand_size": c[4],
                        "graveyard_size": c[5],
                        "creatures": c[6],
                        "lands": c[7],
                        "permanents": c[8],
                        "total_power": c[9],
                        "eliminated": bool(c[10]),
                        "hand": hands[i] if p == seat else None,
                        "battlefield": zones[2 * k] + on_board[k],
                        "graveyard": zones[2 * k + 1],
                        "command_zone": [commanders[i][p]] if in_zone[i][p] else [],
                    }
                )
            game = self.games[slots[i]]
            rows.append(
                {
                    "schema_version": SCHEMA_VERSION,
                    "engine": ENGINE_NAME,
                    "game_id": game.start.game,
                    "decision_index": game.decisions,
                    "turn": turns[i],
                    "phase": _PHASE_NAMES[phases[i]],
                    "seat": seat,
                    "pod_size": n,
                    "players": players,
                    "legal_actions": masks[i],
                }
            )
        return rows


_NAME_ARRAY: Final = np.array(NAMES, dtype=object)
_COUNTS_ORDER: Final = (
    "life",
    "commander_damage_taken",
    "mana_available",
    "commander_tax",
    "hand_size",
    "graveyard_size",
    "creatures",
    "lands",
    "permanents",
    "total_power",
    "eliminated",
)
if SEAT_FIELDS != _COUNTS_ORDER:  # pragma: no cover - rows() writes the counts by position
    raise RuntimeError(f"the seat fields changed order ({SEAT_FIELDS}): update _Table.rows")


def _creature_names(creatures: np.ndarray) -> list[list[str]]:
    """Per seat of ``creatures`` [M, N, K] (card ids, -1: an empty place), its creatures' names, flattened."""
    flat = creatures.reshape(-1, creatures.shape[-1])
    owner, place = np.nonzero(flat >= 0)
    names = _NAME_ARRAY[flat[owner, place]].tolist()
    bounds = np.searchsorted(owner, np.arange(len(flat) + 1)).tolist()
    return [names[a:b] for a, b in zip(bounds, bounds[1:])]  # noqa: B905 - one shorter by design


def _zone_names(zones: np.ndarray) -> list[list[str]]:
    """Per zone of ``zones`` [..., C] (card counts by id), its card names in id order, flattened in C order."""
    flat = zones.reshape(-1, zones.shape[-1])
    owner, card = np.nonzero(flat)
    repeats = flat[owner, card].astype(np.intp)
    names = _NAME_ARRAY[np.repeat(card, repeats)].tolist()
    bounds = np.searchsorted(np.repeat(owner, repeats), np.arange(len(flat) + 1)).tolist()
    return [names[a:b] for a, b in zip(bounds, bounds[1:])]  # noqa: B905 - one shorter by design


@dataclass
class _Server:
    wire: _Wire
    capacity: int
    tables: dict[tuple[int, int, int], _Table] = field(default_factory=dict)
    queue: deque[Start] = field(default_factory=deque)
    expected: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)  # open requests: their masks
    answers: dict[tuple[str, int], int] = field(default_factory=dict)
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
                busy = [t for t in self.tables.values() if t.games]
                stuck = bool(busy) and all(t.step_state is not None and not t.ready for t in busy)
                if stuck:  # nothing to step until an answer comes, unless Distill holds some back (self-play)
                    if not self.take(wait=False):
                        partial = [t for t in busy if t.movable]
                        for table in partial:
                            if table.appliable:
                                table.finish(partial=True)
                            table.begin()
                        if not partial:
                            self.take(wait=True)
                else:
                    self.take(wait=not busy and not self.queue)
                self.seat_queued()
                for table in list(self.tables.values()):
                    if table.ready:
                        table.finish()
                    if table.games and table.step_state is None:
                        table.begin()
        except _Stop:
            return 0
        self.wire.send({"type": "bye", "games": self.played})
        return 0

    @property
    def live(self) -> int:
        return sum(len(t.games) for t in self.tables.values())

    def take(self, wait: bool) -> int:
        """Handle the messages waiting (at least one when ``wait``); returns how many."""
        handled = 0
        while (message := self.wire.next(wait)) is not None:
            wait = False
            self.handle(message)
            handled += 1
        return handled

    def expect(self, key: tuple[str, int], mask: np.ndarray) -> None:
        self.expected[key] = mask

    def handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "start":
            self.queue_start(message)
        elif kind == "shutdown":
            self.stopping = True
            for table in self.tables.values():  # games not finished are abandoned: no result
                table.games.clear()
                table.step_state, table.waiting = None, []
            self.queue.clear()
        elif kind == "actions":
            for answer in message.get("answers") or []:
                self.take_answer(answer)
        else:
            self.wire.send({"type": "error", "code": "bad_frame", "message": f"unexpected message {kind!r}"})

    def take_answer(self, answer: Any) -> None:
        """Keep a legal answer to an open request; an error reply for anything else (the request stays open)."""
        key = (answer.get("game"), answer.get("request")) if isinstance(answer, dict) else (None, None)
        mask = self.expected.get(key)  # type: ignore[arg-type]
        if mask is None:
            self.refuse_answer(answer, "unknown_game", "no open request of that game and number")
            return
        action = answer.get("action")
        if (
            not isinstance(action, int)
            or isinstance(action, bool)
            or not 0 <= action < len(ACTIONS)
            or not mask[action]
        ):
            legal = [ACTIONS[a] for a in np.flatnonzero(mask)]
            self.refuse_answer(answer, "illegal_action", f"action {action!r} is not legal: {legal}")
            return
        del self.expected[key]  # type: ignore[arg-type]
        self.answers[key] = action  # type: ignore[index]

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
        """Seat queued games in the lane of their pod and turn limit with the most free slots (two lanes each)."""
        while self.queue:
            start = self.queue[0]
            lanes = []
            for lane in range(LANES):
                key = (start.pod_size, start.turn_limit, lane)
                if key not in self.tables:
                    self.tables[key] = _Table(self, start.pod_size, start.turn_limit, -(-self.capacity // LANES))
                lanes.append(self.tables[key])
            table = max(lanes, key=lambda t: t.free)
            if not table.free:
                return
            table.add(self.queue.popleft())

    def refuse_answer(self, answer: Any, code: str, why: str) -> None:
        game = answer.get("game") if isinstance(answer, dict) else None
        request = answer.get("request") if isinstance(answer, dict) else None
        self.wire.send({"type": "error", "code": code, "message": why, "game": game, "request": request})

    def report(self, table: _Table, slot: int) -> None:
        state, game = table.state, table.games[slot]
        winner = int(state.winner[slot])
        truncated = bool(state.truncated[slot])
        self.played += 1
        placements = [int(p) or None for p in state.placement[slot].tolist()]
        if game.records:  # its AI's decisions, as this engine logs them (the teacher's role: forge), before the result
            lineup = [
                {
                    "seat": k,
                    "kind": s.profile if s.player == "engine" else "unknown",
                    "model_version": None,
                    "name": s.profile if s.player == "engine" else s.name,
                }
                for k, s in enumerate(game.start.seats)
            ]
            rows = complete(
                game.records,
                winner_seat=None if winner < 0 else winner,
                truncated=truncated,
                placements=placements,
                game_id=game.start.game,
                source="forge",
                lineup=lineup,
            )
            self.wire.send({"type": "records", "game": game.start.game, "rows": rows})
        self.wire.send(
            {
                "type": "result",
                "game": game.start.game,
                "winner_seat": None if winner < 0 or truncated else winner,
                "placements": placements,
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
