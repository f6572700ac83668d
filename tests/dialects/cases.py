"""Helpers for the dialect tests: committed case files and tiny raw records."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

from toolkit.dialects import FileAdapter
from toolkit.errors import DialectError
from toolkit.schema.models import DecisionSnapshot

CASES = Path(__file__).parents[1] / "data" / "dialects"


def read_case(name: str) -> list[Any]:
    """The parsed lines of a committed case file."""
    return [orjson.loads(line) for line in (CASES / name).read_bytes().splitlines() if line.strip()]


def convert_lines(
    records: list[Any], **adapter_options: Any
) -> tuple[list[tuple[int, dict[str, Any]]], dict[int, DialectError], FileAdapter]:
    """Feed ``records`` (line numbers from 1) through one adapter: (rows by line, errors by line, adapter)."""
    adapter = FileAdapter(**adapter_options)
    rows: list[tuple[int, dict[str, Any]]] = []
    errors: dict[int, DialectError] = {}
    for line_no, record in enumerate(records, start=1):
        try:
            rows.extend(adapter.feed(line_no, record))
        except DialectError as error:
            errors[line_no] = error
    rows.extend(adapter.finish())
    return sorted(rows, key=lambda numbered: numbered[0]), errors, adapter


def convert_case(name: str, **adapter_options: Any) -> list[dict[str, Any]]:
    """The canonical rows of a clean case file, in line order (fails on any DialectError)."""
    rows, errors, _ = convert_lines(read_case(name), **adapter_options)
    assert not errors, {line: str(error) for line, error in errors.items()}
    return [row for _, row in rows]


def validate(row: dict[str, Any]) -> DecisionSnapshot:
    """Validate a converted row with the canonical model (as ingest does)."""
    return DecisionSnapshot.model_validate(row)


def forge_player(seat: int, **overrides: Any) -> dict[str, Any]:
    """A raw snake_case player entry (Forge, sim, ds)."""
    player: dict[str, Any] = {
        "seat": seat,
        "life": 40,
        "cmdr_dmg": 0,
        "mana": 3,
        "cmdr_tax": 0,
        "creatures": 1,
        "lands": 3,
        "hand": ["Forest", "Cultivate"],
        "battlefield": ["Forest", "Forest", "Forest", "Llanowar Elves"],
        "graveyard": ["Path to Exile"],
        "command_zone": ["Omnath, Locus of Mana"],
    }
    player.update(overrides)
    return player


def forge_record(*, pod_size: int = 4, **overrides: Any) -> dict[str, Any]:
    """A raw Forge-dialect record; ``overrides`` replace top-level fields."""
    record: dict[str, Any] = {
        "game_id": "game-7-1849302231",
        "turn": 4,
        "phase": "main_1",
        "active_seat": 1,
        "game_outcome": "win_seat_2",
        "deck_name": "Omnath Lands",
        "commander": "Omnath, Locus of Mana",
        "archetype": "ramp",
        "players": [forge_player(s) for s in range(pod_size)],
        "action": {"type": "cast", "card": "Beast Within", "target": "", "raw": "Player 2 cast Beast Within (11)"},
    }
    record.update(copy.deepcopy(overrides))
    return record


def sim_record(*, pod_size: int = 2, **overrides: Any) -> dict[str, Any]:
    """A raw base-simulator record (action is only a type)."""
    record = forge_record(pod_size=pod_size, game_id="a3f9c2e1", active_seat=0, game_outcome="win")
    for player in record["players"]:
        player["command_zone"] = []
    record["action"] = {"type": "attack"}
    record.update(copy.deepcopy(overrides))
    return record


def ds_record(**overrides: Any) -> dict[str, Any]:
    """A raw ``ds``-batch record."""
    return sim_record(**{"game_id": "ds-sim-1a2b3c4d-g0", **overrides})


def ppo_player(seat: int, **overrides: Any) -> dict[str, Any]:
    """A raw legacy-PPO player entry: camelCase counts, no card lists."""
    player: dict[str, Any] = {
        "seat": seat,
        "life": 40 - seat,
        "handSize": 6,
        "permanentCount": 4,
        "graveyardSize": 1,
        "manaAvailable": 3,
        "commanderDamageTaken": 0,
        "totalPowerOnBoard": 5,
        "commanderTax": 0,
    }
    player.update(overrides)
    return player


def ppo_record(*, pod_size: int = 4, seat: int = 2, **overrides: Any) -> dict[str, Any]:
    """A raw legacy-PPO record whose agent sits at ``seat`` (``active_seat`` agrees)."""
    record: dict[str, Any] = {
        "game_id": "ppo-4f1c9a2e-17",
        "game_outcome": "win",
        "archetype": "aggro",
        "source": "ppo",
        "model_version": "gen-003",
        "turn": 3,
        "phase": "main_1",
        "active_seat": seat,
        "players": [ppo_player(s) for s in range(pod_size)],
        "action": {"type": "cast_spell", "macro_action": "cast_draw", "action_idx": 2, "seat": seat},
        "reward": 0.0,
        "episode_return": 1.0,
    }
    record.update(copy.deepcopy(overrides))
    return record
