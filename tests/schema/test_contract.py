"""The canonical record: field rules, cross-field rules, and the committed JSON Schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.factories import make_player, make_snapshot
from toolkit.schema import DecisionSnapshot
from toolkit.schema.export import MODELS, engine_schemas, render_json_schema, schema_file

REPO = Path(__file__).resolve().parents[2]


def _fields(record: dict) -> set[str]:
    with pytest.raises(ValidationError) as caught:
        DecisionSnapshot.model_validate(record)
    fields = set()
    for error in caught.value.errors():
        if error["loc"]:
            fields.add(".".join(map(str, error["loc"])))
        else:
            fields.update(line.split(": ")[0] for line in error["msg"].removeprefix("Value error, ").splitlines())
    return fields


def test_accepts_the_factory_record() -> None:
    assert DecisionSnapshot.model_validate(make_snapshot()).seat == 1


def test_accepts_two_to_eight_seat_pods() -> None:
    for n in (2, 3, 6, 8):
        DecisionSnapshot.model_validate(make_snapshot(pod_size=n, seat=0, winner_seat=0))


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"seat": 4}, "seat"),
        ({"players": [make_player(s) for s in range(3)]}, "players"),
        ({"players": [make_player(s) for s in (0, 2, 1, 3)]}, "players"),
        ({"winner_seat": 5, "seat_won": False}, "winner_seat"),
        ({"is_draw": True}, "is_draw"),
        ({"timed_out": True, "winner_seat": None, "seat_won": False, "is_terminal": True}, "is_terminal"),
        ({"is_terminal": True, "truncated": True}, "truncated"),
        ({"seat_won": False}, "seat_won"),
        ({"placement": 5}, "placement"),
        ({"model_version": "gen-003", "generation": 2}, "generation"),
        ({"legal_actions": [False] + [True] * 7}, "action.index"),
    ],
)
def test_rejects_each_broken_cross_field_rule(override: dict, field: str) -> None:
    assert field in _fields(make_snapshot(**override))


def test_rejects_an_action_whose_index_does_not_match_its_name() -> None:
    record = make_snapshot()
    record["action"]["index"] = 5
    assert "action.index" in _fields(record)


def test_rejects_an_attack_on_oneself() -> None:
    record = make_snapshot(macro="attack_opponent")
    record["action"]["target_seat"] = record["seat"]
    assert "action.target_seat" in _fields(record)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("turn",), "3"),
        (("turn",), 3.5),
        (("turn",), True),
        (("players", 0, "life"), -5000),
        (("players", 0, "hand_size"), -1),
        (("phase",), "upkeep"),
        (("source",), "Forge!"),
        (("reward",), float("nan")),
        (("legal_actions",), [True] * 7),
    ],
)
def test_rejects_wrong_types_ranges_and_enums(path: tuple, value: object) -> None:
    record = make_snapshot()
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert ".".join(map(str, path)) in _fields(record)


def test_rejects_unknown_and_missing_fields() -> None:
    record = make_snapshot(colour="blue")
    del record["game_id"]
    assert {"colour", "game_id"} <= _fields(record)


@pytest.mark.parametrize("version", sorted(MODELS))
def test_committed_json_schema_of_every_version_is_current(version: int) -> None:
    committed = (REPO / "schemas" / schema_file(version)).read_text(encoding="utf-8")
    assert committed == render_json_schema(version), "schemas/ is stale: run `distill schemas export`"


def test_schemas_holds_one_file_per_contract_version_and_the_engine_protocol_and_nothing_else() -> None:
    expected = [schema_file(v) for v in MODELS] + list(engine_schemas())
    assert sorted(p.name for p in (REPO / "schemas").glob("*.json")) == sorted(expected)


@pytest.mark.parametrize("name", sorted(engine_schemas()))
def test_committed_engine_protocol_schemas_are_current(name: str) -> None:
    committed = (REPO / "schemas" / name).read_text(encoding="utf-8")
    assert committed == engine_schemas()[name], "schemas/ is stale: run `distill schemas export`"
