"""Driving engines: many games in flight over several engine processes, every ready request answered in one
batched policy pass, faults recovered within a budget.

:class:`EngineDriver` starts ``processes`` copies of an engine command (each
in its own process group: :class:`~toolkit.engine.process.EngineProcess`),
checks each one's hello (protocol, major version, contract, action
vocabulary), then :meth:`EngineDriver.play` keeps every process filled with
games up to what it said it plays at once. It waits on all pipes together;
the requests every ready process sent are encoded by the one feature encoder
(:mod:`toolkit.features`, from the rows: the numbers a model was trained on)
and answered, policy by policy, in one forward pass each; each process gets
its answers in one frame. Seats the engine's own AI plays never cross the
wire.

Every wait has a deadline: the hello, each process's next frame while it has
games in flight (a hung engine), each game. An engine that crashes, hangs or
breaks the protocol mid-run is killed: its games in flight are voided (no
result of theirs is kept) and played again from their start on a new
process, and the fault is counted (:attr:`EngineDriver.faults`); past the
restart budget the run stops with an :class:`~toolkit.errors.EngineError`
naming the phase and the engine's last stderr lines. What an engine did
wrong that a restart cannot mend (another major version or vocabulary, an
answer it calls illegal, a game it does not know) stops the run at once.
"""

from __future__ import annotations

import contextlib
import selectors
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from toolkit.engine.config import EngineConfig
from toolkit.engine.process import EngineProcess
from toolkit.engine.rows import Row, encode_rows, read_decisions
from toolkit.errors import ConfigError, EngineError
from toolkit.game.players import Player, PolicyPlayer
from toolkit.schema.engine import ACTIONS, MAJOR, MAX_SEED, PROTOCOL, Hello
from toolkit.schema.vocab import SCHEMA_VERSION

# policy(observations [M, FEATURE_SIZE] float32, masks [M, 8] bool) -> actions [M] int
Decider = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class GameSpec:
    """A game to play: the start message's fields, and which Distill policy plays each Distill seat."""

    game: str
    seed: int
    seats: tuple[dict[str, Any], ...]  # {"player": "distill"} or {"player": "engine", "profile": ...}
    turn_limit: int
    policies: dict[int, str] = field(default_factory=dict)  # seat -> key of its decider
    records: bool = False  # ask the engine for its own AI's decisions (EngineGame.records)

    @property
    def pod_size(self) -> int:
        return len(self.seats)

    def start(self) -> dict[str, Any]:
        return {
            "type": "start",
            "game": self.game,
            "seed": self.seed,
            "pod_size": self.pod_size,
            "seats": list(self.seats),
            "turn_limit": self.turn_limit,
            **({"records": True} if self.records else {}),
        }


@dataclass(frozen=True)
class EngineGame:
    spec: GameSpec
    winner_seat: int | None
    placements: tuple[int | None, ...]
    truncated: bool
    turns: int
    decisions: int
    played: tuple[tuple[dict[str, Any], int], ...] = ()  # with play(record=True): Distill's seats' (row, action)
    records: tuple[dict[str, Any], ...] = ()  # with GameSpec.records: the engine AI's decisions, as it sent them


@dataclass(frozen=True)
class Held:
    """A decision request left for the caller to answer (:meth:`EngineDriver.exchange`): encoded, and its row."""

    game: str
    request: int
    observation: np.ndarray
    mask: np.ndarray
    row: Row | dict[str, Any] | None


# A decision request read: (the engine's index, its game, the request's number in that game, its row)
_Asked = tuple[int, Any, Any, "Row | dict[str, Any] | None"]


@dataclass
class _Engine:
    """One engine process and the games it has in flight."""

    process: EngineProcess
    hello: Hello
    capacity: int
    games: dict[str, tuple[GameSpec, float]] = field(default_factory=dict)  # game -> (spec, started at)
    heard: float = field(default_factory=time.monotonic)
    held: set[tuple[str, int]] = field(default_factory=set)  # its requests the caller holds (step by step)


class ProtocolBreach(EngineError):
    """What an engine did that a restart cannot mend: it stops the run at once (see the module's docstring)."""


class EngineDriver:
    """Engine processes, held to the protocol (see the module's docstring)."""

    def __init__(self, config: EngineConfig, log_dir: Path | None = None) -> None:
        self.config = config
        self.log_dir = log_dir or config.log_dir
        self.engines: list[_Engine] = []
        self.faults: list[str] = []
        self.restarts = 0
        self.decisions_asked = 0
        self._record = False
        self._played: dict[str, list[tuple[dict[str, Any], int]]] = {}  # game -> its answered rows, in order
        self._records: dict[str, list[dict[str, Any]]] = {}  # game -> the engine AI's records sent so far

    def __enter__(self) -> EngineDriver:
        processes = []  # every engine started before the first handshake: they start up side by side
        try:
            for i in range(self.config.processes):
                processes.append(self._spawn(i))
            for process in processes:
                self.engines.append(self._ready(process))
        except BaseException:
            for process in processes[len(self.engines) :]:
                process.close(0.5)
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def hello(self) -> Hello:
        return self.engines[0].hello

    def close(self) -> None:
        """Ask every engine to shut down, and end every process (killed past the grace)."""
        selector = getattr(self, "_selector", None)
        if selector is not None:
            selector.close()
            self._selector = None
        for engine in self.engines:
            with contextlib.suppress(EngineError):
                engine.process.send({"type": "shutdown"}, "shutdown")
        for engine in self.engines:
            engine.process.close(self.config.shutdown_seconds)
        self.engines = []

    # -- starting -------------------------------------------------------------------

    def _start(self, index: int) -> _Engine:
        return self._ready(self._spawn(index))

    def _spawn(self, index: int) -> EngineProcess:
        log = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log = self.log_dir / f"engine-{index}.stderr.log"
        return EngineProcess(self.config.command, log, name=f"#{index}")

    def _ready(self, process: EngineProcess) -> _Engine:
        """The engine's handshake; it is closed if that fails."""
        try:
            hello = self._handshake(process)
        except BaseException:
            process.close(0.5)
            raise
        capacity = min(hello.games_per_process, self.config.games_per_process or hello.games_per_process)
        return _Engine(process, hello, capacity)

    def _handshake(self, process: EngineProcess) -> Hello:
        message = process.read(time.monotonic() + self.config.hello_seconds, "hello")
        try:
            hello = Hello.model_validate(message)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise process.error(f"sent a hello Distill cannot read: {where}: {problem['msg']}", "hello") from None
        refusal = refusal_of(hello)
        if refusal is not None:
            with contextlib.suppress(EngineError):
                process.send({"type": "refuse", "reason": refusal}, "hello")
            raise process.error(f"was refused: {refusal}", "hello")
        process.send({"type": "welcome", "protocol": PROTOCOL, "major": MAJOR, "minor": 0}, "hello")
        return hello

    # -- playing --------------------------------------------------------------------

    def play(
        self, games: Iterable[GameSpec], deciders: dict[str, Decider], *, record: bool = False, ordered: bool = False
    ) -> Iterator[EngineGame]:
        """Play ``games``, yielding each result as its game ends (in no particular order; with ``ordered``, in the
        order of ``games``, each held until the games before it are in). With ``record``, each result holds the
        rows Distill's seats answered and their actions (:attr:`EngineGame.played`; a voided game's are dropped
        with it).

        Raises:
            EngineError: an engine broke the protocol in a way a restart cannot mend, or the restart budget ran out.
            ConfigError: a game the engines cannot play (a pod too big, an AI profile they do not have).
        """
        pending = deque(games)
        for spec in pending:
            self._check_playable(spec, deciders)
        self._record, self._played, self._records = record, {}, {}
        position = {spec.game: k for k, spec in enumerate(pending)}
        results = self._play(pending, deciders)
        if not ordered:
            yield from results
            return
        held: dict[int, EngineGame] = {}
        next_ = 0
        for result in results:
            held[position[result.spec.game]] = result
            while next_ in held:
                yield held.pop(next_)
                next_ += 1

    def _play(self, pending: deque[GameSpec], deciders: dict[str, Decider]) -> Iterator[EngineGame]:
        with selectors.DefaultSelector() as selector, _one_torch_thread():
            for i, engine in enumerate(self.engines):
                selector.register(engine.process.fd, selectors.EVENT_READ, i)
            while pending or any(e.games for e in self.engines):
                self._fill(pending)
                finished: list[EngineGame] = []
                requests: list[_Asked] = []
                for key, _ in selector.select(self._wait()):
                    i = key.data
                    try:
                        self._read(i, requests, finished)
                    except ProtocolBreach:
                        raise
                    except EngineError as error:
                        self._fault(i, str(error), pending, selector)
                self._answer(requests, deciders, pending, selector)
                self._check_deadlines(pending, selector)
                yield from finished

    # -- step by step (a vectorised environment over engines) ----------------------------

    def begin(self) -> None:
        """Start playing step by step: games are started one by one (:meth:`start`), rounds run by
        :meth:`exchange`, held requests answered by :meth:`reply`; :meth:`close` ends it."""
        self._selector = selectors.DefaultSelector()
        self._pending: deque[GameSpec] = deque()
        for i, engine in enumerate(self.engines):
            self._selector.register(engine.process.fd, selectors.EVENT_READ, i)

    def start(self, spec: GameSpec, deciders: dict[str, Decider]) -> None:
        """Start one game on the engine with the most room.

        Raises:
            ConfigError: the game cannot be played (see :meth:`play`), or every engine is full.
        """
        self._check_playable(spec, deciders)
        engine = min(self.engines, key=lambda e: len(e.games) - e.capacity)
        if len(engine.games) >= engine.capacity:
            raise ConfigError(
                f"the engines are full ({sum(e.capacity for e in self.engines)} games in flight)",
                hint="start more engine processes, or play fewer games at once",
            )
        engine.games[spec.game] = (spec, time.monotonic())
        try:
            engine.process.send(spec.start(), "game")
        except EngineError as error:
            self._fault(self.engines.index(engine), str(error), self._pending, self._selector)

    def exchange(self, deciders: dict[str, Decider], held: str) -> tuple[list[Held], list[EngineGame], list[GameSpec]]:
        """One round: read every engine that has something, answer the requests of every policy but ``held`` in
        one pass each, and return the requests of ``held`` (to :meth:`reply` to), the games that ended, and the
        games voided by an engine's fault since the last round (not replayed: the caller starts what it wants).

        Raises:
            EngineError: as :meth:`play`.
        """
        finished: list[EngineGame] = []
        requests: list[_Asked] = []
        with _one_torch_thread():
            for key, _ in self._selector.select(self._wait()):
                i = key.data
                try:
                    self._read(i, requests, finished)
                except ProtocolBreach:
                    raise
                except EngineError as error:
                    self._fault(i, str(error), self._pending, self._selector)
            kept = self._answer(requests, deciders, self._pending, self._selector, held)
            self._check_deadlines(self._pending, self._selector)
        voided = list(self._pending)
        self._pending.clear()
        gone = {v.game for v in voided}
        kept = [k for k in kept if k.game not in gone]
        where = {game: engine for engine in self.engines for game in engine.games}
        for k in kept:
            where[k.game].held.add((k.game, k.request))
        return kept, finished, voided

    def reply(self, answers: Sequence[tuple[str, int, int]]) -> list[GameSpec]:
        """Answer held requests: (game, request, action) each, one frame per engine. Returns the games voided by
        an engine that could not take its frame."""
        frames: dict[int, list[dict[str, Any]]] = {}
        where = {game: i for i, engine in enumerate(self.engines) for game in engine.games}
        for game, request, action in answers:
            if game in where:
                frames.setdefault(where[game], []).append({"game": game, "request": request, "action": action})
                self.engines[where[game]].held.discard((game, request))
        for i, frame in frames.items():
            self.decisions_asked += len(frame)
            self.engines[i].heard = time.monotonic()  # its next frame's deadline runs from Distill's answer
            try:
                self.engines[i].process.send({"type": "actions", "answers": frame}, "game")
            except EngineError as error:
                self._fault(i, str(error), self._pending, self._selector)
        voided = list(self._pending)
        self._pending.clear()
        return voided

    def _check_playable(self, spec: GameSpec, deciders: dict[str, Decider]) -> None:
        hello = self.hello
        if spec.pod_size > hello.max_pod_size:
            raise ConfigError(
                f"game {spec.game}: a pod of {spec.pod_size}; the engine plays at most {hello.max_pod_size}",
                hint="seat fewer players",
            )
        for seat in spec.seats:
            if seat["player"] == "engine" and seat.get("profile") not in hello.capabilities.engine_ai:
                raise ConfigError(
                    f"the engine has no AI profile {seat.get('profile')!r}: it offers "
                    f"{', '.join(hello.capabilities.engine_ai) or 'none'}",
                    hint="name one of its profiles, or a checkpoint, for that seat",
                )
        if spec.records and not hello.capabilities.ai_records:
            raise ConfigError(
                f"game {spec.game}: the engine does not send its AI's records (its hello's ai_records is false)",
                hint="play its games without records, or use its own logs (distill ingest)",
            )
        missing = {k for k in spec.policies.values() if k not in deciders}
        if missing or not 0 <= spec.seed <= MAX_SEED:
            raise ConfigError(f"game {spec.game}: no policy {sorted(missing)} or a seed out of range")

    def _fill(self, pending: deque[GameSpec]) -> None:
        for engine in self.engines:
            while pending and len(engine.games) < engine.capacity:
                spec = pending.popleft()
                engine.games[spec.game] = (spec, time.monotonic())
                engine.process.send(spec.start(), "game")

    def _wait(self) -> float:
        now = time.monotonic()
        busy = [e.heard + self.config.frame_seconds - now for e in self.engines if e.games and not e.held]
        return max(0.0, min(busy, default=1.0))

    def _read(self, i: int, requests: list[_Asked], finished: list[EngineGame]) -> None:
        """Read engine ``i``'s frames: its requests onto ``requests``, the games it ended onto ``finished``.

        Raises:
            EngineError: the engine broke off; none of the requests read from it this round is kept (its games
                are voided and replayed on a new process, which must not be asked for their answers).
        """
        engine = self.engines[i]
        process = engine.process
        asked: list[_Asked] = []
        open_ = process.pump()
        if process.frames:
            engine.heard = time.monotonic()
        while process.frames:
            frame = process.frames.popleft()
            typed = None if self._record else read_decisions(frame)  # a recorded row is kept whole
            if typed is not None:
                asked.extend((i, r.game, r.request, r.row) for r in typed)
                continue
            message = process.message(frame, "game")
            kind = message["type"]
            if kind == "decisions":
                for request in message.get("requests") or []:
                    if not isinstance(request, dict):
                        raise process.error(f"sent a decision request that is not an object: {request!r}", "game")
                    asked.append((i, request.get("game"), request.get("request"), request.get("row")))
            elif kind == "result":
                finished.append(self._result(engine, message))
            elif kind == "records":
                self._keep_records(engine, message)
            elif kind == "error":  # a bug on one side or the other: replaying the game would meet it again
                raise ProtocolBreach(
                    f"the engine {process.name} reports {message.get('code')}: {message.get('message')} "
                    f"(game {message.get('game')}, request {message.get('request')})",
                    phase="game",
                    stderr=list(process.tail),
                    hint="an illegal_action report means the engine's legal_actions and its own rules disagree",
                )
            else:
                raise process.error(f"sent a {kind!r} message in the middle of the games", "game")
        if not open_ and engine.games:
            raise process.error(f"exited ({process.exit_status()}) with {len(engine.games)} games in flight", "game")
        requests.extend(asked)

    def _result(self, engine: _Engine, message: dict[str, Any]) -> EngineGame:
        game = message.get("game")
        if game not in engine.games:
            raise self._breach(engine, f"reported the result of a game it was not playing: {game!r}")
        spec, _ = engine.games.pop(game)
        placements = tuple(message.get("placements") or ())
        if len(placements) != spec.pod_size:
            raise engine.process.error(f"reported {len(placements)} placements for a pod of {spec.pod_size}", "game")
        return EngineGame(
            spec=spec,
            winner_seat=message.get("winner_seat"),
            placements=placements,
            truncated=bool(message.get("truncated")),
            turns=int(message.get("turns") or 0),
            decisions=int(message.get("decisions") or 0),
            played=tuple(self._played.pop(game, ())),
            records=tuple(self._records.pop(game, ())),
        )

    def _keep_records(self, engine: _Engine, message: dict[str, Any]) -> None:
        game, rows = message.get("game"), message.get("rows")
        if game not in engine.games or not engine.games[game][0].records:
            raise self._breach(engine, f"sent records of a game it was not asked records of: {game!r}")
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise engine.process.error(f"sent records of game {game} that are not a list of rows", "game")
        self._records.setdefault(game, []).extend(rows)

    def _answer(
        self,
        requests: list[_Asked],
        deciders: dict[str, Decider],
        pending: deque[GameSpec],
        selector: selectors.BaseSelector,
        held: str | None = None,
    ) -> list[Held]:
        """Answer every request read this round: each engine's rows encoded, one forward pass per policy over all
        engines' rows, one frame per engine. An engine whose request cannot be read is a fault. Requests of the
        policy ``held`` are not answered here: they are returned (encoded) for :meth:`reply`."""
        by_engine: dict[int, list[_Asked]] = {}
        for asked in requests:
            by_engine.setdefault(asked[0], []).append(asked)
        parts = []
        for i, mine in by_engine.items():
            try:
                keys = [self._policy_of(i, game, row) for _, game, _, row in mine]
                observations, masks = encode_rows([row for _, _, _, row in mine])
            except ValueError as error:
                self._fault(
                    i,
                    f"the engine {self.engines[i].process.name} sent a decision request Distill cannot read: {error}",
                    pending,
                    selector,
                )
                continue
            except ProtocolBreach:
                raise
            except EngineError as error:
                self._fault(i, str(error), pending, selector)
                continue
            parts.append((i, mine, keys, observations, masks))
        if not parts:
            return []
        keys = np.array([k for part in parts for k in part[2]])
        observations = np.concatenate([part[3] for part in parts])
        masks = np.concatenate([part[4] for part in parts])
        actions = np.full(len(keys), -1, np.int64)
        for key in dict.fromkeys(keys.tolist()):
            if key != held:
                rows = np.flatnonzero(keys == key)
                actions[rows] = np.asarray(deciders[key](observations[rows], masks[rows]), np.int64)
        hold = (keys == held).tolist() if held is not None else [False] * len(keys)
        kept: list[Held] = []
        start = 0
        for i, mine, _, _, _ in parts:
            chosen = actions[start : start + len(mine)].tolist()
            frame = []
            for k, (r, a) in enumerate(zip(mine, chosen, strict=True)):
                if hold[start + k]:
                    kept.append(Held(r[1], r[2], observations[start + k], masks[start + k], r[3]))
                    continue
                frame.append({"game": r[1], "request": r[2], "action": a})
                if self._record:
                    self._played.setdefault(r[1], []).append((r[3], a))
            start += len(mine)
            self.decisions_asked += len(frame)
            if not frame:
                continue
            try:
                self.engines[i].process.send({"type": "actions", "answers": frame}, "game")
            except EngineError as error:
                self._fault(i, str(error), pending, selector)
        return kept

    def _policy_of(self, i: int, game: object, row: Row | dict[str, Any] | None) -> str:
        engine = self.engines[i]
        if game not in engine.games:
            raise self._breach(engine, f"asked for a decision in a game it was not playing: {game!r}")
        if not isinstance(row, Row | dict):
            raise engine.process.error(f"sent a decision request in game {game} without a row", "game")
        spec, _ = engine.games[game]
        seat = row.seat if isinstance(row, Row) else row.get("seat")
        if seat not in spec.policies:
            raise self._breach(
                engine, f"asked Distill to decide for seat {seat!r} of game {game}, which its own AI plays"
            )
        return spec.policies[seat]

    @staticmethod
    def _breach(engine: _Engine, why: str) -> ProtocolBreach:
        return ProtocolBreach(f"the engine {engine.process.name} {why}", phase="game", stderr=list(engine.process.tail))

    def _check_deadlines(self, pending: deque[GameSpec], selector: selectors.BaseSelector) -> None:
        now = time.monotonic()
        for i, engine in enumerate(self.engines):
            if not engine.games:
                continue
            if now - engine.heard > self.config.frame_seconds and not engine.held:  # silent while Distill holds back
                self._fault(
                    i,
                    f"the engine {engine.process.name} said nothing for {self.config.frame_seconds:g} s "
                    f"with {len(engine.games)} games in flight (hung)",
                    pending,
                    selector,
                )
                continue
            oldest, (_, started) = next(iter(engine.games.items()))  # games are kept in the order they started
            if now - started > self.config.game_seconds:
                self._fault(
                    i, f"game {oldest} ran past its deadline of {self.config.game_seconds:g} s", pending, selector
                )

    def _fault(self, i: int, why: str, pending: deque[GameSpec], selector: selectors.BaseSelector) -> None:
        """Kill engine ``i``, void its games in flight (played again from their start), start a new process."""
        engine = self.engines[i]
        self.faults.append(why)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(engine.process.fd)
        engine.process.kill()
        engine.process.close(0.1)
        pending.extendleft(reversed([spec for spec, _ in engine.games.values()]))
        for game in engine.games:
            self._played.pop(game, None)
            self._records.pop(game, None)
        engine.games.clear()
        self.restarts += 1
        if self.restarts > self.config.restarts:
            raise EngineError(
                f"the engine failed {self.restarts} times, past the restart budget of {self.config.restarts}; "
                f"the last: {why}",
                phase="game",
                hint="see the engine's stderr log; raise the budget (restarts) only for an engine known to be flaky",
            )
        self.engines[i] = self._start(i)
        selector.register(self.engines[i].process.fd, selectors.EVENT_READ, i)


def game_seed(seed: int, deal: int) -> int:
    """The start seed of deal ``deal`` of a run seeded ``seed``. For seeds below 2**32 it is ``seed + deal * 2**32``:
    the built-in engine's ``default_rng(that)`` is the in-process core's ``default_rng([seed, deal])``, so the same
    deal is played (the evaluation through it equals the one in process). A larger seed (the loop's gates derive
    some) is folded into the protocol's 63 bits through numpy's SeedSequence: still one game per (seed, deal),
    paired across the players evaluated on it, but not the in-process deal."""
    if seed < 2**32 and 0 <= deal < 2**31:
        return seed + deal * 2**32
    low, high = np.random.SeedSequence([seed, deal]).generate_state(2, np.uint32).tolist()
    return (high & 0x7FFF_FFFF) << 32 | low


@contextlib.contextmanager
def _one_torch_thread() -> Iterator[None]:
    """Policies run single-threaded while engines play: the engine processes need the other cores, and a second
    torch thread would only spin on batches this small."""
    torch = sys.modules.get("torch")  # policies are torch models; without torch loaded there is nothing to set
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def decider(player: Player) -> Decider:
    """The policy function of a player that can sit in an engine's game (a flat policy: it answers from the
    request's row alone).

    Raises:
        ConfigError: a player that needs more than the row (a recurrent policy's memory, a scripted player's view
            of the whole game).
    """
    if not isinstance(player, PolicyPlayer):
        raise ConfigError(
            f"a {type(player).__name__} cannot play in an engine's game: only flat policies (bc, ppo) answer "
            "from a decision's row",
            hint="play recurrent checkpoints in Distill's own game (drop --engine); scripted players sit as the "
            "engine's own AI profiles",
        )
    return player.policy


def refusal_of(hello: Hello) -> str | None:
    """Why Distill cannot play with an engine that said ``hello`` (None: it can)."""
    if hello.protocol != PROTOCOL:
        return f"it speaks {hello.protocol!r}, not {PROTOCOL!r}"
    if hello.major != MAJOR:
        return f"it speaks {PROTOCOL} {hello.major}.{hello.minor}; this Distill speaks major version {MAJOR}"
    if hello.contract_version != SCHEMA_VERSION:
        return f"its rows follow contract version {hello.contract_version}; this Distill reads {SCHEMA_VERSION}"
    if hello.actions != ACTIONS:
        return f"its action vocabulary {hello.actions} is not Distill's {ACTIONS} (same names, same order)"
    return None
