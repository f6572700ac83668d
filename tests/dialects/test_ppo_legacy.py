"""The legacy PPO exporter dialect -> canonical records."""

from __future__ import annotations

import pytest

from tests.dialects.cases import convert_case, convert_lines, ppo_player, ppo_record, read_case, validate
from toolkit.dialects.ppo_legacy import convert_ppo_legacy
from toolkit.errors import DialectError


def test_every_row_of_the_ppo_case_file_validates_as_canonical() -> None:
    for row in convert_case("ppo_legacy.jsonl"):
        snapshot = validate(row)
        assert (snapshot.source, snapshot.dialect, snapshot.engine) == ("ppo", "ppo_legacy", "origin-ppo-exporter")
        assert snapshot.action.label_source == "logged"
        assert (snapshot.model_version, snapshot.generation) == ("gen-003", 3)


def test_the_logged_macro_action_is_the_label_and_the_raw_type_is_kept() -> None:
    action = convert_ppo_legacy(ppo_record())["action"]
    assert (action["macro"], action["index"], action["label_source"], action["raw_type"]) == (
        "cast_draw",
        2,
        "logged",
        "cast_spell",
    )


def test_either_the_macro_action_or_its_index_is_enough() -> None:
    only_index = ppo_record(action={"type": "pass_priority", "action_idx": 6, "seat": 2})
    only_name = ppo_record(action={"type": "pass_priority", "macro_action": "hold_mana", "seat": 2})
    assert convert_ppo_legacy(only_index)["action"]["macro"] == "hold_mana"
    assert convert_ppo_legacy(only_name)["action"]["index"] == 6


def test_a_macro_action_that_disagrees_with_its_index_is_refused() -> None:
    with pytest.raises(DialectError) as caught:
        convert_ppo_legacy(ppo_record(action={"macro_action": "cast_draw", "action_idx": 3, "seat": 2}))
    assert caught.value.field == "action.action_idx"
    assert "cast_ramp" in caught.value.message and "cast_draw" in caught.value.message


@pytest.mark.parametrize(
    ("action", "field"),
    [
        ({"seat": 2}, "action.macro_action"),
        ({"macro_action": "scry", "seat": 2}, "action.macro_action"),
        ({"action_idx": 8, "seat": 2}, "action.action_idx"),
        ({"action_idx": "2", "seat": 2}, "action.action_idx"),
        ({"type": "activate", "action_idx": 2, "seat": 2}, "action.type"),
        ({"action_idx": 2}, "action.seat"),
        ({"action_idx": 2, "seat": "2"}, "action.seat"),
    ],
)
def test_an_unusable_action_is_refused_naming_its_field(action: dict, field: str) -> None:
    with pytest.raises(DialectError) as caught:
        convert_ppo_legacy(ppo_record(action=action))
    assert caught.value.field == field


def test_the_acting_seat_is_the_agents_seat_and_a_wrong_active_seat_is_flagged() -> None:
    record = ppo_record(seat=2, active_seat=0)
    row = convert_ppo_legacy(record)
    assert row["seat"] == 2
    assert "ppo_active_seat_mismatch" in row["flags"]
    validate(row)


def test_an_agreeing_active_seat_is_not_flagged() -> None:
    row = convert_ppo_legacy(ppo_record(seat=2, active_seat=2))
    assert not row["flags"]


def test_the_documented_defaults_apply_only_where_the_exporter_omitted_them() -> None:
    record = ppo_record(seat=1)
    for key in ("turn", "phase", "active_seat"):
        del record[key]
    row = convert_ppo_legacy(record)
    assert (row["turn"], row["phase"]) == (1, "main_1")
    assert "ppo_active_seat_mismatch" in row["flags"]  # the default active_seat 0 is not seat 1
    written = convert_ppo_legacy(ppo_record(turn=9, phase="combat"))
    assert (written["turn"], written["phase"]) == (9, "combat")


def test_camel_case_counts_become_canonical_player_fields_without_card_lists() -> None:
    player = convert_ppo_legacy(ppo_record())["players"][1]
    assert player == {
        "seat": 1,
        "life": 39,
        "commander_damage_taken": 0,
        "mana_available": 3,
        "commander_tax": 0,
        "hand_size": 6,
        "graveyard_size": 1,
        "permanents": 4,
        "total_power": 5,
        "creatures": None,
        "lands": None,
        "eliminated": None,
        "hand": None,
        "battlefield": None,
        "graveyard": None,
        "command_zone": None,
    }


@pytest.mark.parametrize("key", ["life", "handSize", "manaAvailable", "commanderDamageTaken", "seat"])
def test_a_player_missing_a_required_count_is_refused(key: str) -> None:
    player = ppo_player(3)
    del player[key]
    record = ppo_record(players=[ppo_player(0), ppo_player(1), ppo_player(2), player])
    with pytest.raises(DialectError) as caught:
        convert_ppo_legacy(record)
    assert caught.value.field == f"players.3.{key}"


def test_reward_and_episode_return_are_copied() -> None:
    row = convert_ppo_legacy(ppo_record(reward=0.25, episode_return=0.95))
    assert (row["reward"], row["episode_return"]) == (0.25, 0.95)


@pytest.mark.parametrize(("outcome", "winner", "won"), [("win", 2, True), ("loss", None, False)])
def test_the_outcome_is_read_from_the_agents_view(outcome: str, winner: int | None, won: bool) -> None:
    row = convert_ppo_legacy(ppo_record(seat=2, game_outcome=outcome))
    assert (row["winner_seat"], row["seat_won"], row["raw_outcome"]) == (winner, won, outcome)


def test_a_two_seat_loss_names_the_other_seat() -> None:
    row = convert_ppo_legacy(ppo_record(pod_size=2, seat=0, game_outcome="loss"))
    assert (row["winner_seat"], row["seat_won"]) == (1, False)


def test_a_malformed_model_version_is_left_for_the_canonical_model_to_refuse() -> None:
    row = convert_ppo_legacy(ppo_record(model_version="v3"))
    assert (row["model_version"], row["generation"]) == ("v3", None)
    with pytest.raises(ValueError, match="model_version"):
        validate(row)


def test_the_bad_ppo_case_file_names_each_problem() -> None:
    _, errors, _ = convert_lines(read_case("ppo_legacy_bad.jsonl"))
    assert {line: error.field for line, error in errors.items()} == {1: "action.action_idx", 2: "action.seat"}
