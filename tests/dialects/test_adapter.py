"""FileAdapter: streaming conversion of one file, decision order and terminal rows."""

from __future__ import annotations

import pytest

from tests.dialects.cases import convert_lines, ds_record, forge_record, ppo_record, read_case, sim_record, validate
from tests.factories import make_snapshot
from toolkit.dialects import FileAdapter
from toolkit.errors import ConfigError, DialectError


def _by_line(rows: list[tuple[int, dict]]) -> dict[int, dict]:
    return dict(rows)


def test_decision_index_counts_each_game_in_file_order_across_seats_of_interleaved_games() -> None:
    records = [
        sim_record(game_id="g1", active_seat=0),
        sim_record(game_id="g1", active_seat=1),
        sim_record(game_id="g2", active_seat=0),
        sim_record(game_id="g1", active_seat=0),
        sim_record(game_id="g2", active_seat=1),
    ]
    rows = _by_line(convert_lines(records)[0])
    assert [rows[line]["decision_index"] for line in range(1, 6)] == [0, 1, 0, 2, 1]


def test_only_the_last_row_of_each_game_and_seat_is_terminal() -> None:
    records = [
        sim_record(game_id="g1", active_seat=0),
        sim_record(game_id="g2", active_seat=0),
        sim_record(game_id="g1", active_seat=1),
        sim_record(game_id="g1", active_seat=0),
        sim_record(game_id="g2", active_seat=0),
    ]
    rows = _by_line(convert_lines(records)[0])
    assert [rows[line]["is_terminal"] for line in range(1, 6)] == [False, False, True, True, True]
    for row in rows.values():
        assert row["truncated"] is False
        assert {"decision_index_from_file_order", "terminal_from_file_order"} <= set(row["flags"])
        validate(row)


def test_streams_holding_back_only_the_latest_row_of_each_open_game_and_seat() -> None:
    adapter = FileAdapter()
    assert adapter.feed(1, sim_record(game_id="g1", active_seat=0)) == []
    assert adapter.feed(2, sim_record(game_id="g1", active_seat=1)) == []
    released = adapter.feed(3, sim_record(game_id="g1", active_seat=0))
    assert [(line, row["is_terminal"]) for line, row in released] == [(1, False)]
    assert [(line, row["is_terminal"]) for line, row in adapter.finish()] == [(2, True), (3, True)]
    assert adapter.finish() == []


def test_ds_rows_are_terminal_by_file_order_even_though_their_result_is_unknown() -> None:
    rows = _by_line(convert_lines(read_case("ds.jsonl"))[0])
    assert [line for line, row in rows.items() if row["is_terminal"]] == [3, 4, 6, 7]


def test_a_bad_line_is_skipped_without_disturbing_the_numbering() -> None:
    bad = sim_record(game_id="g1", active_seat=1, action={"type": "activate"})
    records = [sim_record(game_id="g1", active_seat=0), bad, sim_record(game_id="g1", active_seat=1)]
    rows, errors, adapter = convert_lines(records)
    assert list(errors) == [2]
    assert [(line, row["decision_index"], row["is_terminal"]) for line, row in rows] == [(1, 0, True), (3, 1, True)]
    assert adapter.dialects_seen == {"sim": 3}


def test_counts_the_dialects_it_has_seen() -> None:
    records = [forge_record(), sim_record(), ppo_record(), make_snapshot()]
    _, _, adapter = convert_lines(records)
    assert adapter.dialects_seen == {"forge": 1, "sim": 1, "ppo_legacy": 1, "canonical": 1}


def test_a_canonical_record_is_handed_back_unchanged_and_at_once() -> None:
    record = make_snapshot(decision_index=41)
    adapter = FileAdapter()
    assert adapter.feed(7, record) == [(7, record)]
    assert adapter.finish() == []


def test_a_forced_source_replaces_the_role_on_converted_and_canonical_rows() -> None:
    canonical = make_snapshot()
    rows, _, _ = convert_lines([forge_record(), canonical], source="forge-lab2")
    assert [row["source"] for _, row in rows] == ["forge-lab2", "forge-lab2"]
    assert canonical["source"] == "forge"
    validate(rows[0][1])


def test_a_forced_dialect_overrides_detection_for_the_whole_file() -> None:
    records = [sim_record(game_id="a3f9c2e1", active_seat=0), sim_record(game_id="a3f9c2e1", active_seat=1)]
    rows, errors, adapter = convert_lines(records, dialect="ds")
    assert not errors
    assert adapter.dialects_seen == {"ds": 2}
    assert all(row["dialect"] == "ds" and row["seat_won"] is None for _, row in rows)


def test_a_forced_dialect_refuses_a_line_that_is_not_an_object() -> None:
    with pytest.raises(DialectError) as caught:
        FileAdapter(dialect="forge").feed(1, ["not", "a", "record"])  # type: ignore[arg-type]
    assert caught.value.field == ""


def test_a_game_seen_as_ds_stays_ds_when_a_later_row_looks_like_sim() -> None:
    records = [
        ds_record(game_id="b07-g3", action={"type": "land"}),
        ds_record(game_id="b07-g3", action={"type": "attack"}, active_seat=1),
    ]
    rows, _, adapter = convert_lines(records)
    assert [row["dialect"] for _, row in rows] == ["ds", "ds"]
    assert adapter.dialects_seen == {"ds": 2}


def test_unknown_records_are_refused_and_leave_no_state() -> None:
    rows, errors, adapter = convert_lines(read_case("garbage.jsonl"))
    assert rows == [] and sorted(errors) == [1, 2, 3, 4]
    assert all(error.field == "" for error in errors.values())
    assert adapter.dialects_seen == {}


@pytest.mark.parametrize(
    ("options", "named"),
    [({"dialect": "forge-v2"}, "forge-v2"), ({"source": "Forge Lab"}, "Forge Lab")],
)
def test_refuses_an_unknown_forced_dialect_or_a_source_that_is_not_a_slug(options: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        FileAdapter(**options)


@pytest.mark.parametrize(
    "case", ["forge_4seat.jsonl", "forge_synthetic_2seat.jsonl", "sim.jsonl", "ds.jsonl", "ppo_legacy.jsonl"]
)
def test_each_decision_key_is_unique_and_each_seat_has_one_terminal_row(case: str) -> None:
    rows = [row for _, row in convert_lines(read_case(case))[0]]
    keys = [(row["game_id"], row["seat"], row["decision_index"]) for row in rows]
    assert len(keys) == len(set(keys))
    seats = {(row["game_id"], row["seat"]) for row in rows}
    terminal = [(row["game_id"], row["seat"]) for row in rows if row["is_terminal"]]
    assert sorted(terminal) == sorted(seats)
