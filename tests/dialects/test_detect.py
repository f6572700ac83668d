"""Dialect detection from a record's shape."""

from __future__ import annotations

import pytest

from tests.dialects.cases import ds_record, forge_record, ppo_record, read_case, sim_record
from tests.factories import make_snapshot
from toolkit.dialects import detect_dialect
from toolkit.errors import DialectError


@pytest.mark.parametrize(
    ("case", "dialect"),
    [
        ("forge_4seat.jsonl", "forge"),
        ("forge_synthetic_2seat.jsonl", "forge"),
        ("sim.jsonl", "sim"),
        ("ds.jsonl", "ds"),
        ("ppo_legacy.jsonl", "ppo_legacy"),
    ],
)
def test_detects_every_line_of_each_dialect_case_file(case: str, dialect: str) -> None:
    assert {detect_dialect(record) for record in read_case(case)} == {dialect}


def test_detects_a_canonical_record_by_its_schema_version() -> None:
    assert detect_dialect(make_snapshot()) == "canonical"


def test_detects_legacy_ppo_by_its_action_index_alone() -> None:
    record = ppo_record()
    del record["action"]["macro_action"]
    assert detect_dialect(record) == "ppo_legacy"


def test_detects_legacy_ppo_by_camel_case_players_even_without_a_macro_action() -> None:
    record = ppo_record(action={"type": "attack", "seat": 2})
    assert detect_dialect(record) == "ppo_legacy"


def test_a_type_only_action_is_ds_when_the_game_id_says_so() -> None:
    assert detect_dialect(ds_record()) == "ds"
    assert detect_dialect(sim_record()) == "sim"


@pytest.mark.parametrize("action_type", ["land", "cast_commander"])
def test_a_type_only_action_that_only_the_ds_engine_writes_is_ds(action_type: str) -> None:
    assert detect_dialect(sim_record(action={"type": action_type})) == "ds"


def test_an_action_with_card_target_and_raw_is_forge_even_for_a_pass() -> None:
    record = forge_record(action={"type": "pass", "card": "", "target": "", "raw": ""})
    assert detect_dialect(record) == "forge"


def test_ignores_the_source_field_and_the_file_name_and_reads_the_shape() -> None:
    record = sim_record(source="forge")
    assert detect_dialect(record) == "sim"


@pytest.mark.parametrize(
    ("record", "seen"),
    [
        ([1, 2, 3], "got array"),
        ("just a string", "got string"),
        (None, "got null"),
        ({"event": "game_start", "game_id": "game-7-1"}, "top-level keys: event, game_id; no action object"),
        ({"game_id": "x", "action": {"type": "cast", "mana_paid": 3}}, "action keys: mana_paid, type"),
        ({"game_id": "x", "action": "cast"}, "action is a string"),
        ({"game_id": "x", "action": {"card": "Sol Ring"}}, "action keys: card"),
    ],
)
def test_refuses_a_record_of_no_known_dialect_naming_what_it_saw(record: object, seen: str) -> None:
    with pytest.raises(DialectError) as caught:
        detect_dialect(record)
    assert caught.value.field == ""
    assert seen in caught.value.message


def test_refuses_every_line_of_the_garbage_case_file() -> None:
    for record in read_case("garbage.jsonl"):
        with pytest.raises(DialectError):
            detect_dialect(record)
