"""A tiny engine of its own game, for the tests: correct by default, broken on demand (one fault per mode).

``python toy_engine.py [MODE]``. Its game: every Distill seat decides in
turn for ``turn_limit`` rounds (pass or attack), seat 0 wins. Modes, one per
fault the driver and the checker must name:

silent, major2, vocabulary, log-on-stdout, flood, oversized, unknown-game, invalid-row, exit-mid-game,
sleep-forever, ignore-eof, substitute (an illegal answer silently replaced), no-echo (a result whose
settings are not the start), crash-once (exits mid-game on its first run only: a fault a restart mends),
ask-and-close (asks for its second game's decision a moment after that game starts, then closes its output:
the request and the end of its output reach Distill in one read).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ACTIONS = [
    "cast_creature",
    "cast_removal",
    "cast_draw",
    "cast_ramp",
    "cast_commander",
    "attack_opponent",
    "hold_mana",
    "pass",
]
MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read() -> dict | None:
    line = sys.stdin.readline()
    if not line:
        if MODE == "ignore-eof":
            time.sleep(3600)
        sys.exit(0)
    try:
        return json.loads(line)
    except ValueError:
        send({"type": "error", "code": "bad_frame", "message": "not JSON"})
        return {}


def row(game: str, index: int, seat: int, pod: int) -> dict:
    players = [
        {
            "seat": s,
            "life": 40,
            "commander_damage_taken": 0,
            "mana_available": 1,
            "commander_tax": 0,
            "hand_size": 1,
            "graveyard_size": 0,
            "hand": ["Forest"] if s == seat else None,
            "command_zone": [],
        }
        for s in range(pod)
    ]
    legal = [False] * 5 + [True, False, True]  # attack or pass
    state = {
        "schema_version": 2,
        "engine": "toy",
        "game_id": game,
        "decision_index": index,
        "turn": 1 + index,
        "phase": "main_1",
        "seat": seat,
        "pod_size": pod,
        "players": players,
        "legal_actions": legal,
    }
    if MODE == "invalid-row":
        state["players"] = players[:1]
    return state


def claim(marker: Path) -> bool:
    """True for the one process, of all the engine's processes, that creates the marker (crash-once crashes once)."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def main() -> None:
    if MODE == "silent":
        time.sleep(3600)
    if MODE == "log-on-stdout":
        print("INFO toy engine starting", flush=True)
    hello = {
        "type": "hello",
        "protocol": "distill-engine",
        "major": 2 if MODE == "major2" else 1,
        "minor": 0,
        "contract_version": 2,
        "actions": list(reversed(ACTIONS)) if MODE == "vocabulary" else ACTIONS,
        "max_pod_size": 4,
        "games_per_process": 8,
        "capabilities": {"engine_ai": [], "determinism": "replay"},
        "engine": {"name": "toy", "version": "1"},
    }
    send(hello)
    if MODE == "flood":
        sys.stdout.write("x" * (3 << 20))
        sys.stdout.flush()
        time.sleep(3600)
    welcome = read()
    if not welcome or welcome.get("type") != "welcome":
        sys.exit(2)
    games: dict[str, dict] = {}
    requests: dict[tuple[str, int], tuple[int, int]] = {}  # (game, request) -> (seat, index)
    marker = Path(os.environ.get("TOY_MARKER", "/nonexistent/marker"))
    later: list[str] = []  # lockstep: games to ask once every open request is answered
    while True:
        message = read()
        kind = message.get("type")
        if kind == "shutdown":
            send({"type": "bye", "games": 0})
            return
        if kind == "start":
            games[message["game"]] = {"start": message, "decisions": 0, "requests": 0}
            if MODE == "sleep-forever":
                time.sleep(3600)
            if MODE == "oversized":
                send({"type": "decisions", "requests": [{"pad": "y" * (2 << 20)}]})
            if MODE == "ask-and-close" and len(games) == 2:
                time.sleep(0.2)  # while Distill decides the first game's request
                ask(message["game"], games, requests)
                sys.stdout.flush()
                os.close(1)
                time.sleep(3600)
            ask(message["game"], games, requests)
        elif kind == "actions":
            for answer in message.get("answers", []):
                key = (answer.get("game"), answer.get("request"))
                if key not in requests:
                    send(
                        {
                            "type": "error",
                            "code": "unknown_game",
                            "message": "no such request",
                            **dict(zip(("game", "request"), key)),
                        }
                    )
                    continue
                if answer.get("action") not in (5, 7) and MODE != "substitute":
                    send(
                        {
                            "type": "error",
                            "code": "illegal_action",
                            "message": "attack or pass",
                            "game": key[0],
                            "request": key[1],
                        }
                    )
                    continue
                requests.pop(key)
                game = games[key[0]]
                game["decisions"] += 1
                if MODE == "exit-mid-game":
                    sys.exit(3)
                if MODE == "crash-once" and game["decisions"] == 3 and claim(marker):
                    sys.exit(3)
                if MODE == "log-on-stdout" and game["decisions"] == 2:
                    print("DEBUG step 2", flush=True)
                start = game["start"]
                if game["decisions"] >= start["turn_limit"] * start["pod_size"]:
                    settings = dict(start, seed=start["seed"] + 1) if MODE == "no-echo" else start
                    send(
                        {
                            "type": "result",
                            "game": key[0],
                            "winner_seat": 0,
                            "placements": [1] + [2] * (start["pod_size"] - 1),
                            "truncated": False,
                            "turns": start["turn_limit"],
                            "decisions": game["decisions"],
                            "settings": settings,
                        }
                    )
                    del games[key[0]]
                elif MODE == "lockstep":  # no game goes on until every open request is answered
                    later.append(key[0])
                else:
                    ask(key[0], games, requests)
                if MODE == "lockstep" and not requests:
                    for name in later:
                        ask(name, games, requests)
                    later.clear()


def ask(name: str, games: dict, requests: dict) -> None:
    game = games[name]
    start = game["start"]
    seat = game["decisions"] % start["pod_size"]
    number = game["requests"]
    game["requests"] += 1
    requests[(name, number)] = (seat, game["decisions"])
    target = "ghost-game" if MODE == "unknown-game" else name
    send(
        {
            "type": "decisions",
            "requests": [
                {"game": target, "request": number, "row": row(name, game["decisions"], seat, start["pod_size"])}
            ],
        }
    )


if __name__ == "__main__":
    main()
