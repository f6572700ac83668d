"""Factories for tiny, valid test data: build a record, then break exactly one thing."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Final

from toolkit.loop.config import LoopConfig
from toolkit.schema.vocab import ACTION_INDEX, N_ACTIONS


def make_player(seat: int, **overrides: Any) -> dict[str, Any]:
    """A valid canonical player entry for ``seat``."""
    player: dict[str, Any] = {
        "seat": seat,
        "life": 40 - 3 * seat,
        "commander_damage_taken": 0,
        "mana_available": 3,
        "commander_tax": 0,
        "hand_size": 5,
        "graveyard_size": 1,
        "creatures": 2,
        "lands": 3,
        "permanents": 5,
        "total_power": 4,
        "eliminated": False,
        "hand": ["Sol Ring", "Llanowar Elves"],
        "battlefield": ["Forest", "Forest", "Island"],
        "graveyard": ["Counterspell"],
        "command_zone": ["Atraxa, Praetors' Voice"],
    }
    player.update(overrides)
    return player


def make_snapshot(
    *,
    game_id: str = "g-0001",
    seat: int = 1,
    decision_index: int = 0,
    pod_size: int = 4,
    macro: str = "cast_creature",
    **overrides: Any,
) -> dict[str, Any]:
    """A valid canonical record (as a JSON-ready dict); ``overrides`` replace top-level fields."""
    record: dict[str, Any] = {
        "schema_version": 1,
        "source": "forge",
        "dialect": "canonical",
        "engine": "distill-game",
        "game_id": game_id,
        "decision_index": decision_index,
        "turn": 3,
        "phase": "main_1",
        "seat": seat,
        "pod_size": pod_size,
        "players": [make_player(s) for s in range(pod_size)],
        "action": {
            "macro": macro,
            "index": ACTION_INDEX[macro],
            "label_source": "logged",
            "raw_type": None,
            "card": None,
            "target": None,
            "target_seat": None,
            "raw": None,
            "requested_index": None,
        },
        "legal_actions": [True] * N_ACTIONS,
        "reward": 0.0,
        "episode_return": 1.0,
        "winner_seat": seat,
        "is_draw": False,
        "timed_out": False,
        "seat_won": True,
        "placement": 1,
        "is_terminal": False,
        "truncated": False,
        "model_version": None,
        "generation": None,
        "deck_name": "Elves",
        "commander": "Ezuri, Renegade Leader",
        "archetype": "aggro",
        "raw_outcome": None,
        "flags": None,
    }
    record.update(copy.deepcopy(overrides))
    return record


def make_lineup(pod_size: int = 4, kinds: tuple[str, ...] = ("heuristic", "tuned", "random", "ppo")) -> list[dict]:
    """A valid version-2 lineup: seat i played by ``kinds[i % len(kinds)]``, policies at generation 2."""
    lineup = []
    for seat in range(pod_size):
        kind = kinds[seat % len(kinds)]
        policy = kind in ("bc", "ppo", "ppo-recurrent", "policy")
        lineup.append({"seat": seat, "kind": kind, "model_version": "gen-002" if policy else None, "name": kind})
    return lineup


def make_snapshot_v2(**overrides: Any) -> dict[str, Any]:
    """A valid version-2 record: :func:`make_snapshot` with its ``outcome`` (from ``seat_won``) and a lineup
    whose acting seat is the record's player, unless ``overrides`` give them."""
    record = make_snapshot(**overrides)
    record["schema_version"] = overrides.get("schema_version", 2)
    if "lineup" not in overrides:
        lineup = make_lineup(record["pod_size"])
        if record["seat"] < len(lineup):
            lineup[record["seat"]].update(kind="ppo" if record["model_version"] else "heuristic")
            lineup[record["seat"]]["model_version"] = record["model_version"]
        record["lineup"] = lineup
    if "outcome" not in overrides:
        won = record["seat_won"]
        record["outcome"] = None if won is None else (1 if won else -1)
    return record


# Small enough for the test suite: PPO trains against random players, the export floor is off and the strength
# gates pass anything not far worse, so that the whole generation (gates, merge, build, student) runs.
TINY: dict[str, Any] = {
    "name": "tiny",
    "max_generations": 1,
    "max_rounds": 20,
    "bootstrap": {"games": 30},
    "student": {"epochs": 2, "hidden": [16, 16]},
    "ppo": {
        "total_steps": 512,
        "n_envs": 4,
        "n_steps": 64,
        "batch_size": 64,
        "n_epochs": 1,
        "export_games": 16,
        "league": {"heuristic": 0, "tuned": 0, "random": 1, "self": 1, "past": 1},
    },
    "floor": {"win_rate": None, "games": 16, "opponents": ["random"] * 3},
    "strength_gate": {
        "delta0": -1.0,
        "delta1": -0.5,
        "min_deals": 4,
        "max_deals": 8,
        "deals_per_round": 8,
        "opponents": ["random"] * 3,
    },
    "head_to_head": {
        "delta0": -1.0,
        "delta1": -0.5,
        "min_deals": 4,
        "max_deals": 8,
        "deals_per_round": 4,
        "past_tables": 0,
    },
    "exploiter": {"total_steps": 0},  # off: the probe's own test turns it on
    "accuracy_guard": {"floor": 0.05, "margin": 1.0},
    "evaluation": {"games": 16},
    "retry": {"max_retries": 0},
    "data": {"weights": {"forge": 0.5, "ppo": 0.5}},
    "tournament": {"deals_per_lineup": 1},
    # shards of 32 games: the tournament runs as two, most steps as one (each shard of so few games costs the
    # game's per-step overhead again: 16-game shards made a tiny loop ~25% slower); the tests of sharding itself
    # set SMALL_SHARDS, under which the bootstrap, the gates' evaluations and the tournament run as several each
    "backend": {"kind": "inprocess", "shard_games": 32},
}


SMALL_SHARDS: Final = 16  # games per shard where a test needs several shards in every step of a tiny loop
SMALL_SHARDS_BACKEND: Final = {"kind": "inprocess", "shard_games": SMALL_SHARDS}


def tiny(**changes: Any) -> LoopConfig:
    """A closed loop small enough for the suite (one generation in about 15 s), with ``changes`` over it."""
    return LoopConfig.model_validate({**TINY, **changes})


# Fields of a loop's records that differ between two runs of the same config (timings, report ids).
VOLATILE = {
    "timings",
    "seconds",
    "recorded_at",
    "finished_at",
    "steps_per_second",
    "samples_per_second",
    "reports",
    "updated_at",
}


def normalised(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without timings (to compare two runs; paths are relative to each run's data root)."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(records)


def make_generation_record(generation: int, *, loop: str = "demo", **overrides: Any) -> dict[str, Any]:
    """A finished generation's record, as the loop writes it (a line of ``runs/<loop>/generations.jsonl``)."""
    from toolkit.loop.record import GenerationRecord

    score = {"games": 1000, "wins": 354, "win_rate": 0.354, "win_low": 0.325, "win_high": 0.3841}
    gain = {"deals": 250, "diff": 0.404, "low": 0.3697, "high": 0.4383}
    record = {
        "loop": loop,
        "generation": generation,
        "outcome": "passed",
        "reason": "student promoted",
        "retries": 0,
        "teacher_promoted": generation > 0,
        "student_promoted": True,
        "student": f"runs/{loop}/gen-{generation:03d}/student/card.json",
        "ppo": None,
        "holdout_accuracy": 0.91,
        "previous_accuracy": None,
        "student_win_rate": 0.354,
        "student_win_low": 0.325,
        "student_win_high": 0.3841,
        "ppo_win_rate": None,
        "evaluation": {
            "student": {t: {**score, "placement_score": 0.5, "truncations": 0} for t in ("heuristic", "tuned")}
        },
        "student_gain": {t: gain for t in ("heuristic", "tuned")} if generation else None,
        "rows_by_source": {"forge": 32187},
        "shares": {"forge": {"target": None, "achieved": 1.0}},
        "ratings": [
            {
                "name": "student",
                "elo": 1500.0,
                "elo_se": 20.0,
                "mu": 25.0,
                "sigma": 2.0,
                "ordinal": 19.0,
                "games": 100,
                "wins": 30,
            }
        ],
        "attempts": [],
        "seconds": 12.5,
        "recorded_at": f"2026-01-01T00:00:{generation:02d}+00:00",
    }
    return GenerationRecord.model_validate({**record, **overrides}).model_dump(mode="json")


def cli_params() -> Iterator[tuple[str, Any]]:
    """Every parameter of every command of the CLI, with the command's words ("train ppo")."""
    import typer

    from toolkit.cli.main import app

    def walk(command: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])
            return
        for param in command.params:
            yield " ".join(path), param

    yield from walk(typer.main.get_command(app), [])
