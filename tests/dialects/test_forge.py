"""The Forge dialect (and its synthetic generator) -> canonical records."""

from __future__ import annotations

import pytest

from tests.dialects.cases import convert_case, convert_lines, forge_player, forge_record, read_case, validate
from toolkit.dialects.forge import convert_forge
from toolkit.errors import DialectError


def test_every_row_of_the_four_seat_case_file_validates_as_canonical() -> None:
    rows = convert_case("forge_4seat.jsonl")
    assert len(rows) == len(read_case("forge_4seat.jsonl"))
    for row in rows:
        snapshot = validate(row)
        assert (snapshot.source, snapshot.dialect, snapshot.engine) == ("forge", "forge", "forge")
        assert snapshot.pod_size == 4 and len(snapshot.players) == 4


def test_every_row_of_the_synthetic_case_file_validates_and_names_its_real_engine() -> None:
    for row in convert_case("forge_synthetic_2seat.jsonl"):
        snapshot = validate(row)
        assert snapshot.source == "forge"
        assert snapshot.engine == "origin-synthetic"
        assert snapshot.pod_size == 2


def test_players_are_converted_with_sizes_from_their_card_lists() -> None:
    raw = forge_player(2, cmdr_dmg=7, mana=5, cmdr_tax=2, hand=["A", "B", "C"], graveyard=["D", "E"])
    row = convert_forge(forge_record(players=[forge_player(0), forge_player(1), raw]))
    player = row["players"][2]
    assert player["commander_damage_taken"] == 7
    assert player["mana_available"] == 5
    assert player["commander_tax"] == 2
    assert (player["hand_size"], player["graveyard_size"], player["permanents"]) == (3, 2, 4)
    assert player["total_power"] is None
    assert player["hand"] == ["A", "B", "C"]
    assert player["command_zone"] == ["Omnath, Locus of Mana"]
    assert row["pod_size"] == 3


def test_the_acting_seat_is_the_active_seat() -> None:
    row = convert_forge(forge_record(active_seat=3))
    assert row["seat"] == 3


def test_keeps_the_engine_action_and_turns_blank_strings_into_null() -> None:
    row = convert_forge(forge_record(action={"type": "attack", "card": "", "target": "", "raw": "P2 attacks P1"}))
    action = row["action"]
    assert (action["macro"], action["label_source"], action["raw_type"]) == ("attack_opponent", "mapped", "attack")
    assert action["card"] is None and action["target"] is None
    assert action["raw"] == "P2 attacks P1"


def test_a_cast_is_labelled_by_the_card_role_table() -> None:
    row = convert_forge(forge_record())
    assert (row["action"]["macro"], row["action"]["label_source"], row["action"]["card"]) == (
        "cast_removal",
        "card_role",
        "Beast Within",
    )


@pytest.mark.parametrize(("mana", "macro"), [(1, "pass"), (2, "hold_mana")])
def test_a_synthetic_pass_is_labelled_by_the_acting_seats_open_mana(mana: int, macro: str) -> None:
    players = [forge_player(0, mana=9), forge_player(1, mana=mana)]
    record = forge_record(players=players, active_seat=1, action={"type": "pass", "card": "", "target": "", "raw": ""})
    action = convert_forge(record)["action"]
    assert (action["macro"], action["label_source"], action["raw_type"]) == (macro, "mana_rule", "pass")


def test_the_winner_comes_from_win_seat_n_and_seat_won_compares_it_with_the_acting_seat() -> None:
    winner = convert_forge(forge_record(active_seat=2, game_outcome="win_seat_2"))
    loser = convert_forge(forge_record(active_seat=0, game_outcome="win_seat_2"))
    assert (winner["winner_seat"], winner["seat_won"], winner["is_draw"]) == (2, True, False)
    assert (loser["winner_seat"], loser["seat_won"]) == (2, False)
    assert loser["raw_outcome"] == "win_seat_2"
    validate(loser)


def test_a_draw_has_no_winner_and_nobody_won() -> None:
    row = convert_forge(forge_record(game_outcome="draw"))
    assert (row["winner_seat"], row["is_draw"], row["seat_won"], row["raw_outcome"]) == (None, True, False, "draw")
    validate(row)


def test_deck_commander_and_archetype_are_kept_and_never_invented() -> None:
    record = forge_record()
    del record["archetype"]
    row = convert_forge(record)
    assert (row["deck_name"], row["commander"], row["archetype"]) == ("Omnath Lands", "Omnath, Locus of Mana", None)


def test_unknown_phases_and_wrongly_typed_copies_are_left_for_the_canonical_model() -> None:
    row = convert_forge(forge_record(phase="upkeep", turn="4"))
    assert (row["phase"], row["turn"]) == ("upkeep", "4")
    with pytest.raises(ValueError, match="phase"):
        validate(row)


@pytest.mark.parametrize(
    ("break_it", "field"),
    [
        (lambda r: r.pop("players"), "players"),
        (lambda r: r["players"][3].pop("life"), "players.3.life"),
        (lambda r: r["players"][1].pop("hand"), "players.1.hand"),
        (lambda r: r["players"][0].pop("cmdr_dmg"), "players.0.cmdr_dmg"),
        (lambda r: r.pop("action"), "action"),
        (lambda r: r["action"].pop("type"), "action.type"),
        (lambda r: r.pop("game_outcome"), "game_outcome"),
        (lambda r: r.pop("active_seat"), "active_seat"),
        (lambda r: r.pop("game_id"), "game_id"),
        (lambda r: r.pop("turn"), "turn"),
    ],
)
def test_a_missing_required_field_is_refused_naming_its_raw_path(break_it, field: str) -> None:
    record = forge_record()
    break_it(record)
    with pytest.raises(DialectError) as caught:
        convert_forge(record)
    assert caught.value.field == field
    assert "missing" in caught.value.message


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"players": "four players"}, "players"),
        ({"players": [forge_player(0), ["not", "an", "object"]]}, "players.1"),
        ({"players": [forge_player(0), forge_player(1, hand="Sol Ring")]}, "players.1.hand"),
        ({"active_seat": "1"}, "active_seat"),
        ({"game_id": ["game-7"]}, "game_id"),
        ({"game_outcome": 2}, "game_outcome"),
        ({"action": ["cast", "Sol Ring"]}, "action"),
        ({"action": {"type": "cast", "card": 17, "target": "", "raw": ""}}, "action.card"),
        ({"action": {"type": ["cast"], "card": "", "target": "", "raw": ""}}, "action.type"),
    ],
)
def test_an_unexpected_shape_becomes_a_dialect_error_not_a_crash(overrides: dict, field: str) -> None:
    with pytest.raises(DialectError) as caught:
        convert_forge(forge_record(**overrides))
    assert caught.value.field == field


def test_a_pass_whose_acting_seat_has_no_player_entry_is_refused() -> None:
    record = forge_record(active_seat=5, action={"type": "pass", "card": "", "target": "", "raw": ""})
    with pytest.raises(DialectError) as caught:
        convert_forge(record)
    assert caught.value.field == "active_seat"


def test_refuses_the_activate_type_naming_it_and_the_accepted_ones() -> None:
    _, errors, _ = convert_lines(read_case("forge_unknown_action.jsonl"))
    assert list(errors) == [2]
    assert errors[2].field == "action.type"
    assert "'activate'" in errors[2].message
    assert "cast, cast_commander, land, attack, pass" in errors[2].message


def test_refuses_an_outcome_that_is_not_win_seat_n_or_draw() -> None:
    _, errors, _ = convert_lines(read_case("forge_bad_outcome.jsonl"))
    assert errors[1].field == "game_outcome"
    assert "win_player_2" in errors[1].message


def test_the_missing_fields_case_file_names_each_missing_field() -> None:
    _, errors, _ = convert_lines(read_case("forge_missing_fields.jsonl"))
    assert {line: error.field for line, error in errors.items()} == {1: "players.3.life", 2: "players"}
