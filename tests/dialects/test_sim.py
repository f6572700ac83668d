"""The simulator dialects, sim and ds -> canonical records."""

from __future__ import annotations

import pytest

from tests.dialects.cases import convert_case, convert_lines, ds_record, read_case, sim_record, validate
from toolkit.dialects.sim import convert_ds, convert_sim
from toolkit.errors import DialectError


def test_every_row_of_the_sim_case_file_validates_as_canonical() -> None:
    for row in convert_case("sim.jsonl"):
        snapshot = validate(row)
        assert (snapshot.source, snapshot.dialect, snapshot.engine) == ("sim", "sim", "origin-sim")
        assert snapshot.flags is not None and "ds_outcome_ambiguous" not in snapshot.flags


def test_every_row_of_the_ds_case_file_validates_flagged_and_without_a_result() -> None:
    for row in convert_case("ds.jsonl"):
        snapshot = validate(row)
        assert (snapshot.source, snapshot.dialect, snapshot.engine) == ("ds", "ds", "origin-ds")
        assert snapshot.winner_seat is None and snapshot.seat_won is None
        assert "ds_outcome_ambiguous" in (snapshot.flags or [])
        assert snapshot.raw_outcome in ("win", "loss")


def test_ds_never_guesses_the_result_even_when_both_seats_say_win() -> None:
    rows = [convert_ds(ds_record(active_seat=seat, game_outcome="win")) for seat in (0, 1)]
    assert [(r["winner_seat"], r["seat_won"], r["is_draw"]) for r in rows] == [(None, None, False)] * 2


def test_a_sim_win_makes_the_acting_seat_the_winner() -> None:
    row = convert_sim(sim_record(active_seat=1, game_outcome="win"))
    assert (row["winner_seat"], row["seat_won"], row["raw_outcome"]) == (1, True, "win")


def test_a_sim_loss_in_a_two_seat_pod_names_the_other_seat_as_winner() -> None:
    row = convert_sim(sim_record(active_seat=1, game_outcome="loss"))
    assert (row["winner_seat"], row["seat_won"]) == (0, False)
    validate(row)


def test_a_sim_loss_in_a_larger_pod_leaves_the_winner_unknown() -> None:
    row = convert_sim(sim_record(pod_size=3, active_seat=1, game_outcome="loss"))
    assert (row["winner_seat"], row["seat_won"], row["is_draw"]) == (None, False, False)
    validate(row)


@pytest.mark.parametrize(
    ("raw_type", "macro", "label_source"),
    [
        ("attack", "attack_opponent", "mapped"),
        ("hold", "hold_mana", "mapped"),
        ("pass", "pass", "mapped"),
        ("cast", "cast_creature", "default"),
    ],
)
def test_sim_action_types_are_labelled(raw_type: str, macro: str, label_source: str) -> None:
    action = convert_sim(sim_record(action={"type": raw_type}))["action"]
    assert (action["macro"], action["label_source"], action["raw_type"], action["card"]) == (
        macro,
        label_source,
        raw_type,
        None,
    )


@pytest.mark.parametrize(("raw_type", "macro"), [("land", "cast_ramp"), ("cast_commander", "cast_commander")])
def test_ds_also_writes_land_and_commander_casts(raw_type: str, macro: str) -> None:
    assert convert_ds(ds_record(action={"type": raw_type}))["action"]["macro"] == macro


def test_sim_refuses_types_only_ds_writes_when_forced() -> None:
    with pytest.raises(DialectError) as caught:
        convert_sim(sim_record(action={"type": "land"}))
    assert caught.value.field == "action.type"
    assert "attack, cast, hold, pass" in caught.value.message


def test_bad_sim_lines_are_refused_with_their_field_and_the_good_ones_kept() -> None:
    rows, errors, _ = convert_lines(read_case("sim_bad.jsonl"))
    assert {line: error.field for line, error in errors.items()} == {2: "action.type", 4: "game_outcome"}
    assert "'timeout'" in errors[4].message
    assert [line for line, _ in rows] == [1, 3, 5]
    assert [row["decision_index"] for _, row in rows] == [0, 1, 2]


def test_ds_refuses_an_outcome_other_than_win_or_loss() -> None:
    with pytest.raises(DialectError) as caught:
        convert_ds(ds_record(game_outcome="draw"))
    assert caught.value.field == "game_outcome"


def test_a_sim_player_without_a_graveyard_is_refused() -> None:
    record = sim_record()
    del record["players"][1]["graveyard"]
    with pytest.raises(DialectError) as caught:
        convert_sim(record)
    assert caught.value.field == "players.1.graveyard"
