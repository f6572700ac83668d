"""What every dialect adapter makes of the fields contract version 2 added: the outcome, and the lineup
as far as the dialect knows it."""

from __future__ import annotations

import pytest

from tests.dialects.cases import convert_case, convert_lines, ppo_record, validate
from tests.factories import make_snapshot
from toolkit.dialects.ppo_legacy import convert_ppo_legacy
from toolkit.schema.vocab import SCHEMA_VERSION

CASES = ["forge_4seat.jsonl", "forge_synthetic_2seat.jsonl", "sim.jsonl", "ds.jsonl", "ppo_legacy.jsonl"]


@pytest.mark.parametrize("case", CASES)
def test_converted_rows_are_current_records_whose_outcome_is_their_result(case: str) -> None:
    for row in convert_case(case):
        snapshot = validate(row)
        assert snapshot.schema_version == SCHEMA_VERSION == 2
        expected = None if snapshot.seat_won is None else (1 if snapshot.seat_won else -1)
        assert snapshot.outcome == expected


@pytest.mark.parametrize("case", ["forge_4seat.jsonl", "forge_synthetic_2seat.jsonl", "sim.jsonl", "ds.jsonl"])
def test_engine_dialects_do_not_know_who_played_the_seats(case: str) -> None:
    assert all(row["lineup"] is None for row in convert_case(case))


def test_the_ambiguous_ds_result_has_no_outcome() -> None:
    assert {row["outcome"] for row in convert_case("ds.jsonl")} == {None}


def test_a_forge_draw_is_an_outcome_of_minus_one() -> None:
    rows = [row for row in convert_case("forge_4seat.jsonl") if row["is_draw"]]
    assert all(row["outcome"] == -1 for row in rows)


def test_legacy_ppo_rows_know_the_agents_seat_and_nothing_of_the_others() -> None:
    row = convert_ppo_legacy(ppo_record(seat=2, model_version="gen-003"))
    lineup = validate(row).lineup
    assert [(e.seat, e.kind, e.model_version) for e in lineup] == [
        (0, "unknown", None),
        (1, "unknown", None),
        (2, "ppo", "gen-003"),
        (3, "unknown", None),
    ]


@pytest.mark.parametrize("model_version", [None, "gen-007"])
def test_the_agents_lineup_entry_carries_the_logged_model_version(model_version: str | None) -> None:
    row = convert_ppo_legacy(ppo_record(seat=1, model_version=model_version))
    assert row["lineup"][1]["model_version"] == model_version
    validate(row)


def test_a_malformed_model_version_leaves_the_lineup_unknown_rather_than_report_it_twice() -> None:
    row = convert_ppo_legacy(ppo_record(model_version="v3"))
    assert row["lineup"] is None


def test_a_canonical_version_1_record_keeps_its_version_through_the_adapter() -> None:
    rows, errors, _ = convert_lines([make_snapshot()])
    assert not errors and rows[0][1]["schema_version"] == 1 and "lineup" not in rows[0][1]
