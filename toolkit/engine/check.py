"""``distill engine check -- COMMAND``: the conformance suite an engine author runs.

Each check starts what it needs of the engine, talks to it directly (frame by
frame, every wait with a deadline) and says PASS or FAIL with what to fix:

- ``hello``: a hello within the deadline, of this protocol, major version,
  contract version and action vocabulary;
- ``games``: games answered with random legal actions end with a result
  echoing their settings, and every request is a valid decision state of the
  contract (a row without its label) whose seat Distill plays;
- ``engine-ai``: seats given to the engine's own AI never reach Distill;
- ``interleaved``: many games at once, their answers shuffled and split
  over frames, all end;
- ``illegal``: an illegal answer gets an ``illegal_action`` error and the
  request stays open; a legal answer then goes through;
- ``malformed``: a line that is not JSON gets ``bad_frame``, an answer for a
  game that does not exist ``unknown_game``, and the engine goes on;
- ``determinism``: at the level the hello declares (``replay``: the same
  start, twice, gives the same requests and result);
- ``shutdown``: ``shutdown`` gets ``bye`` and an exit, ``eof``: the end of
  its input ends it; no process of its group is left either way;
- ``throughput``: decisions per second with batched frames, and the round
  trip of a frame of one request (reported, not judged).

Every check also holds the engine to frames only on standard output (a log
line there fails the check it appears in, saying so).
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkit.engine.driver import refusal_of
from toolkit.engine.process import EngineProcess
from toolkit.errors import ConfigError, EngineError
from toolkit.schema.engine import MAJOR, PROTOCOL, DecisionState, Hello, Result
from toolkit.schema.models import DecisionSnapshot


class CheckResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    detail: str = Field(description="What was seen, or what to fix.")
    seconds: float


class CheckReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    command: list[str]
    engine: str | None
    checks: list[CheckResult]
    decisions_per_second: float | None = None
    round_trip_ms: float | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


class _Failed(Exception):
    """A check's failure, with what to fix."""


class _Session:
    """One engine process, welcomed, with frames read under a deadline."""

    def __init__(self, command: Sequence[str], deadline: float) -> None:
        self.deadline = deadline
        self.process = EngineProcess(command, name="under check")
        try:
            self.hello = Hello.model_validate(self.read("hello"))
            refusal = refusal_of(self.hello)
            if refusal is not None:
                self.send({"type": "refuse", "reason": refusal})
                raise _Failed(f"its hello is refused: {refusal}")
            self.send({"type": "welcome", "protocol": PROTOCOL, "major": MAJOR, "minor": 0})
        except BaseException:
            self.close()
            raise

    def read(self, phase: str) -> dict[str, Any]:
        try:
            return self.process.read(time.monotonic() + self.deadline, phase)
        except EngineError as error:
            raise _Failed(_said(error).replace("the engine under check ", "")) from None

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.process.send(message, "check")
        except EngineError as error:
            raise _Failed(_said(error)) from None

    def close(self) -> None:
        self.process.close(1.0)


def _said(error: EngineError) -> str:
    """An engine error in one line: what happened, and the engine's last words on stderr when it had any."""
    said = str(error).splitlines()[0]
    return f"{said} (its stderr's last line: {error.stderr[-1].strip()!r})" if error.stderr else said


def start_message(game: str, seed: int, seats: list[dict[str, Any]], turn_limit: int = 40) -> dict[str, Any]:
    return {
        "type": "start",
        "game": game,
        "seed": seed,
        "pod_size": len(seats),
        "seats": seats,
        "turn_limit": turn_limit,
    }


Answerer = Callable[[dict[str, Any]], int]


def first_legal(request: dict[str, Any]) -> int:
    return request["row"]["legal_actions"].index(True)


def random_legal(rng: random.Random) -> Answerer:
    def answer(request: dict[str, Any]) -> int:
        return rng.choice([i for i, ok in enumerate(request["row"]["legal_actions"]) if ok])

    return answer


def play_session(
    session: _Session,
    starts: list[dict[str, Any]],
    answer: Answerer,
    *,
    shuffle: random.Random | None = None,
    on_request: Callable[[dict[str, Any]], None] | None = None,
    on_records: Callable[[dict[str, Any], set[str]], None] | None = None,
) -> dict[str, Result]:
    """Play ``starts`` to their results, answering every request; returns the results by game."""
    for message in starts:
        session.send(message)
    seats = {s["game"]: s for s in starts}
    results: dict[str, Result] = {}
    while len(results) < len(starts):
        message = session.read("game")
        kind = message["type"]
        if kind == "decisions":
            requests = list(message.get("requests") or [])
            for request in requests:
                _check_request(request, seats)
                if on_request is not None:
                    on_request(request)
            answers = [{"game": r["game"], "request": r["request"], "action": answer(r)} for r in requests]
            if shuffle is not None and len(answers) > 1:
                shuffle.shuffle(answers)
                half = len(answers) // 2
                session.send({"type": "actions", "answers": answers[:half]})
                session.send({"type": "actions", "answers": answers[half:]})
            else:
                session.send({"type": "actions", "answers": answers})
        elif kind == "result":
            result = _check_result(message, seats)
            results[result.game] = result
        elif kind == "records":
            if on_records is not None:
                on_records(message, set(results))
        else:
            raise _Failed(f"sent {kind!r} while games were in play: {message}")
    return results


def _check_request(request: dict[str, Any], starts: dict[str, dict[str, Any]]) -> None:
    game = request.get("game")
    if game not in starts:
        raise _Failed(f"asked for a decision in a game never started: {game!r}")
    try:
        row = DecisionState.model_validate(request.get("row"))
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise _Failed(
            f"request {request.get('request')} of game {game}: the row breaks the contract: {where}: {problem['msg']}"
        ) from None
    seats = starts[game]["seats"]
    if row.seat >= len(seats) or seats[row.seat]["player"] != "distill":
        raise _Failed(f"game {game}: asked Distill to decide for seat {row.seat}, which its own AI plays")
    if row.game_id != game or row.pod_size != len(seats) or len(row.players) != row.pod_size:
        raise _Failed(f"game {game}: a row of game {row.game_id!r} with a pod of {row.pod_size}")
    if not any(row.legal_actions):
        raise _Failed(f"game {game}: a request with no legal action")


def _check_result(message: dict[str, Any], starts: dict[str, dict[str, Any]]) -> Result:
    try:
        result = Result.model_validate(message)
    except ValidationError as error:
        problem = error.errors()[0]
        raise _Failed(f"a result Distill cannot read: {'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None
    asked = starts.get(result.game)
    if asked is None:
        raise _Failed(f"a result of a game never started: {result.game!r}")
    played = result.settings.model_dump(mode="json")
    wanted = {k: v for k, v in asked.items() if k != "type"}
    echoed = {k: played.get(k) for k in wanted}
    seats_echoed = [{k: v for k, v in s.items() if v is not None} for s in echoed.get("seats") or []]
    if {**echoed, "seats": seats_echoed} != wanted:
        raise _Failed(f"game {result.game}: its result echoes settings {echoed}, not the start {wanted}")
    if len(result.placements) != len(asked["seats"]):
        raise _Failed(f"game {result.game}: {len(result.placements)} placements for a pod of {len(asked['seats'])}")
    return result


# -- the checks --------------------------------------------------------------------------


def _check_hello(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    session.close()
    h = session.hello
    return (
        f"{h.engine.name} {h.engine.version}: {h.protocol} {h.major}.{h.minor}, contract {h.contract_version}, "
        f"{h.games_per_process} games per process, AI {h.capabilities.engine_ai}, determinism "
        f"{h.capabilities.determinism}"
    )


def _pod(hello: Hello) -> int:
    return min(4, hello.max_pod_size)


def _check_games(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    try:
        n, rng = _pod(session.hello), random.Random(1)
        starts = [start_message(f"c-games-{k}", 100 + k, [{"player": "distill"}] * n) for k in range(4)]
        asked = [0]
        results = play_session(
            session, starts, random_legal(rng), on_request=lambda r: asked.__setitem__(0, asked[0] + 1)
        )
    finally:
        session.close()
    return f"{len(results)} games, {asked[0]} requests, every row a valid decision state, every result its settings"


def _check_engine_ai(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    try:
        profiles = session.hello.capabilities.engine_ai
        if not profiles:
            return "no engine AI offered (capabilities.engine_ai is empty): nothing to check"
        n = _pod(session.hello)
        seats = [{"player": "distill"}] + [
            {"player": "engine", "profile": profiles[k % len(profiles)]} for k in range(n - 1)
        ]
        results = play_session(session, [start_message(f"c-ai-{k}", 200 + k, seats) for k in range(3)], first_legal)
    finally:
        session.close()
    return f"{len(results)} games with its AI at {n - 1} seats ({', '.join(profiles)}): only seat 0 reached Distill"


def _check_records(command: Sequence[str], deadline: float) -> str:
    """With ``ai_records``: the engine AI's decisions come back as valid, labelled contract rows before the result,
    for its own seats only, their outcome the game's."""
    session = _Session(command, deadline)
    try:
        profiles = session.hello.capabilities.engine_ai
        if not session.hello.capabilities.ai_records or not profiles:
            return "no records offered (capabilities.ai_records is false): nothing to check"
        n = _pod(session.hello)
        seats = [{"player": "distill"}] + [
            {"player": "engine", "profile": profiles[k % len(profiles)]} for k in range(n - 1)
        ]
        starts = [{**start_message(f"c-rec-{k}", 700 + k, seats, 12), "records": True} for k in range(2)]
        rows: dict[str, list[dict[str, Any]]] = {}

        def keep(message: dict[str, Any], ended: set[str]) -> None:
            game = message.get("game")
            if game in ended:
                raise _Failed(f"sent the records of game {game} after its result: records go before the result")
            for row in message.get("rows") or []:
                try:
                    DecisionSnapshot.model_validate(row)
                except ValidationError as error:
                    problem = error.errors()[0]
                    where = ".".join(str(p) for p in problem["loc"])
                    raise _Failed(f"a record of game {game} breaks the contract: {where}: {problem['msg']}") from None
                if row["seat"] == 0:
                    raise _Failed(f"a record of game {game} is of seat 0, which Distill plays: records are its AI's")
                rows.setdefault(str(game), []).append(row)

        results = play_session(session, starts, first_legal, on_records=keep)
    finally:
        session.close()
    for game, result in results.items():
        if not rows.get(game):
            raise _Failed(f"game {game} ended without records of its AI's decisions (records were asked for)")
        for row in rows[game]:
            if row["seat_won"] != (result.winner_seat == row["seat"] and not result.truncated):
                raise _Failed(f"a record of game {game} says seat_won={row['seat_won']}, the result otherwise")
    return f"{sum(map(len, rows.values()))} records of its AI in {len(results)} games: valid, labelled, before results"


def _check_interleaved(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    try:
        n = _pod(session.hello)
        games = min(16, session.hello.games_per_process)
        starts = [start_message(f"c-mix-{k}", 300 + k, [{"player": "distill"}] * n, 15 + k) for k in range(games)]
        results = play_session(session, starts, random_legal(random.Random(2)), shuffle=random.Random(3))
    finally:
        session.close()
    return f"{len(results)} games at once, answers shuffled and split over two frames: all ended"


def _check_held(command: Sequence[str], deadline: float) -> str:
    """One game's requests held back while another is answered: the other must go on to its end (PPO's env
    answers its learner only once every game waits on it)."""
    session = _Session(command, deadline)
    try:
        if session.hello.games_per_process < 2:
            return "one game per process: no game waits on another"
        n = _pod(session.hello)
        starts = {
            s["game"]: s
            for s in (start_message(f"c-held-{k}", 500 + k, [{"player": "distill"}] * n, 12) for k in (0, 1))
        }
        for message in starts.values():
            session.send(message)
        held: list[dict[str, Any]] = []
        ended: set[str] = set()
        while "c-held-1" not in ended:
            try:
                message = session.read("game")
            except _Failed as failure:
                raise _Failed(
                    f"{failure}: game c-held-1 made no progress while a request of game c-held-0 was held back; "
                    "Distill's PPO env (train ppo --engine) answers its learner only once every game waits on it: "
                    "let each game go on alone"
                ) from None
            if message["type"] == "decisions":
                answers = []
                for request in message.get("requests") or []:
                    _check_request(request, starts)
                    if request["game"] == "c-held-0":
                        held.append(request)
                    else:
                        answers.append(
                            {"game": request["game"], "request": request["request"], "action": first_legal(request)}
                        )
                if answers:
                    session.send({"type": "actions", "answers": answers})
            elif message["type"] == "result":
                ended.add(_check_result(message, starts).game)
        session.send(
            {
                "type": "actions",
                "answers": [{"game": r["game"], "request": r["request"], "action": first_legal(r)} for r in held],
            }
        )
        while "c-held-0" not in ended:
            message = session.read("game")
            if message["type"] == "decisions":
                requests = message.get("requests") or []
                session.send(
                    {
                        "type": "actions",
                        "answers": [
                            {"game": r["game"], "request": r["request"], "action": first_legal(r)} for r in requests
                        ],
                    }
                )
            elif message["type"] == "result":
                ended.add(_check_result(message, starts).game)
    finally:
        session.close()
    return f"a game went on to its end while another's {len(held)} request(s) were held back, then both ended"


def _check_illegal(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    try:
        n = _pod(session.hello)
        session.send(start_message("c-illegal", 400, [{"player": "distill"}] * n))
        message = session.read("game")
        while message["type"] != "decisions":
            message = session.read("game")
        request = message["requests"][0]
        legal = request["row"]["legal_actions"]
        if all(legal):
            raise _Failed("its first request has every action legal: cannot test an illegal answer")
        bad = legal.index(False)
        session.send(
            {"type": "actions", "answers": [{"game": request["game"], "request": request["request"], "action": bad}]}
        )
        reply = session.read("game")
        if reply.get("type") != "error" or reply.get("code") != "illegal_action":
            raise _Failed(
                f"an illegal answer ({bad}) got {reply}, not an error with code illegal_action "
                "(an engine never substitutes another action silently)"
            )
        answers = [{"game": r["game"], "request": r["request"], "action": first_legal(r)} for r in message["requests"]]
        session.send({"type": "actions", "answers": answers})
        reply = session.read("game")
        if reply.get("type") == "error":
            raise _Failed(f"the legal answer after an illegal one got {reply}: the request must stay open")
    finally:
        session.close()
    return (
        f"an illegal answer got illegal_action for game {request['game']} request {request['request']}; "
        "the legal one went through"
    )


def _check_malformed(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    try:
        session.process.stdin.write(b"{this is not json\n")
        session.process.stdin.flush()
        reply = session.read("game")
        if reply.get("type") != "error" or reply.get("code") != "bad_frame":
            raise _Failed(f"a line that is not JSON got {reply}, not an error with code bad_frame")
        session.send({"type": "actions", "answers": [{"game": "no-such-game", "request": 0, "action": 0}]})
        reply = session.read("game")
        if reply.get("type") != "error" or reply.get("code") != "unknown_game":
            raise _Failed(f"an answer for a game that does not exist got {reply}, not an error with code unknown_game")
        n = _pod(session.hello)
        play_session(session, [start_message("c-after", 500, [{"player": "distill"}] * n, 10)], first_legal)
    finally:
        session.close()
    return "garbage got bad_frame, an unknown game unknown_game, and a game played after both"


def _check_determinism(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    level = session.hello.capabilities.determinism
    try:
        if level == "none":
            return "determinism none declared: nothing to check"
        n = _pod(session.hello)
        profiles = session.hello.capabilities.engine_ai
        seats = [{"player": "distill"}] + [
            {"player": "engine", "profile": profiles[0]} if profiles else {"player": "distill"} for _ in range(n - 1)
        ]
        runs = []
        for k in range(2):
            rows: list[Any] = []
            results = play_session(
                session,
                [start_message(f"c-det-{k}", 600, seats, 25)],
                first_legal,
                on_request=lambda r: rows.append({**r["row"], "game_id": None}),
            )
            result = next(iter(results.values())).model_dump(exclude={"game", "settings"})
            runs.append((rows, result))
        if level == "replay" and runs[0] != runs[1]:
            raise _Failed(
                "determinism replay declared, but one start message played twice gave other requests or another result"
            )
    finally:
        session.close()
    return f"{level}: the same start twice gave the same {len(runs[0][0])} requests and the same result"


def _gone(process: EngineProcess) -> bool:
    try:
        os.killpg(process.proc.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _check_shutdown(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    try:
        session.send({"type": "shutdown"})
        reply = session.read("shutdown")
        if reply.get("type") != "bye":
            raise _Failed(f"shutdown got {reply}, not bye")
        try:
            code = session.process.proc.wait(deadline)
        except Exception:
            raise _Failed(f"said bye but did not exit within {deadline:g} s") from None
        time.sleep(0.1)
        if not _gone(session.process):
            raise _Failed("exited, but left processes of its group running")
    finally:
        session.close()
    return f"bye, then exit code {code}, no process left"


def _check_eof(command: Sequence[str], deadline: float) -> str:
    session = _Session(command, deadline)
    try:
        session.process.stdin.close()
        try:
            code = session.process.proc.wait(deadline)
        except Exception:
            raise _Failed(
                f"did not exit within {deadline:g} s of the end of its input (orphans outlive a killed "
                "driver: exit on end of file)"
            ) from None
        time.sleep(0.1)
        if not _gone(session.process):
            raise _Failed("exited at the end of its input, but left processes of its group running")
    finally:
        session.close()
    return f"exit code {code} at the end of its input, no process left"


def _measure(command: Sequence[str], deadline: float) -> tuple[str, float, float]:
    session = _Session(command, deadline)
    try:
        n = _pod(session.hello)
        games = min(64, session.hello.games_per_process)
        asked = [0]
        began = time.perf_counter()
        play_session(
            session,
            [start_message(f"c-speed-{k}", 700 + k, [{"player": "distill"}] * n, 30) for k in range(games)],
            first_legal,
            on_request=lambda r: asked.__setitem__(0, asked[0] + 1),
        )
        rate = asked[0] / (time.perf_counter() - began)
        session.send(start_message("c-latency", 800, [{"player": "distill"}] * n, 30))
        trips = []
        while len(trips) < 200:
            sent = time.perf_counter()
            message = session.read("game")
            if message["type"] == "result":
                break
            if message["type"] != "decisions":
                continue
            session.send(
                {
                    "type": "actions",
                    "answers": [
                        {"game": r["game"], "request": r["request"], "action": first_legal(r)}
                        for r in message["requests"]
                    ],
                }
            )
            trips.append(time.perf_counter() - sent)
    finally:
        session.close()
    latency = statistics.median(trips) * 1000 if trips else float("nan")
    return (
        f"{rate:,.0f} decisions/s with {games} games batched; one request per frame: {latency:.2f} ms a round "
        "trip (median)",
        rate,
        latency,
    )


CHECKS: dict[str, Callable[[Sequence[str], float], str]] = {
    "hello": _check_hello,
    "games": _check_games,
    "engine-ai": _check_engine_ai,
    "records": _check_records,
    "interleaved": _check_interleaved,
    "held": _check_held,
    "illegal": _check_illegal,
    "malformed": _check_malformed,
    "determinism": _check_determinism,
    "shutdown": _check_shutdown,
    "eof": _check_eof,
}


def check_engine(command: Sequence[str], deadline: float = 10.0, only: Sequence[str] = ()) -> CheckReport:
    """Run every check (or those named in ``only``) against the engine ``command``.

    Raises:
        EngineError: the engine's program is not found.
    """
    results = []
    engine = None
    unknown = sorted(set(only) - set(CHECKS) - {"throughput"})
    if unknown:
        raise ConfigError(f"no check {', '.join(unknown)}", hint=f"the checks: {', '.join([*CHECKS, 'throughput'])}")
    for name, check in CHECKS.items():
        if only and name not in only:
            continue
        began = time.perf_counter()
        try:
            detail, passed = check(command, deadline), True
        except (_Failed, EngineError) as error:
            detail, passed = str(error).splitlines()[0], False
            if isinstance(error, EngineError) and error.phase == "start":
                raise
        except ValidationError as error:
            detail, passed = f"its hello does not parse: {error.errors()[0]['msg']}", False
        if name == "hello" and passed:
            engine = detail.split(":")[0]
        results.append(
            CheckResult(name=name, passed=passed, detail=detail, seconds=round(time.perf_counter() - began, 3))
        )
    rate = latency = None
    began = time.perf_counter()
    if only and "throughput" not in only:
        return CheckReport(command=list(command), engine=engine, checks=results)
    try:
        detail, rate, latency = _measure(command, deadline)
        results.append(
            CheckResult(name="throughput", passed=True, detail=detail, seconds=round(time.perf_counter() - began, 3))
        )
    except (_Failed, EngineError, ValidationError) as error:
        results.append(
            CheckResult(
                name="throughput",
                passed=False,
                detail=str(error).splitlines()[0],
                seconds=round(time.perf_counter() - began, 3),
            )
        )
    return CheckReport(
        command=list(command),
        engine=engine,
        checks=results,
        decisions_per_second=None if rate is None else round(rate, 1),
        round_trip_ms=None if latency is None else round(latency, 3),
    )
