"""Contract version 2 evolves version 1: v1 records read as they are, v2 adds lineup and outcome with their rules."""

from __future__ import annotations

import copy
import random

import pytest
from pydantic import ValidationError

from tests.factories import make_lineup, make_snapshot, make_snapshot_v2
from tests.ingest.test_fast_path_agrees import _mutate
from toolkit.schema import DecisionSnapshot, v1
from toolkit.schema.columns import V2_COLUMNS
from toolkit.schema.vocab import PLAYER_KINDS


def _problems(record: dict) -> set[str]:
    with pytest.raises(ValidationError) as caught:
        DecisionSnapshot.model_validate(record)
    fields = set()
    for error in caught.value.errors():
        if error["loc"]:
            fields.add(".".join(map(str, error["loc"])))
        else:
            fields.update(line.split(": ")[0] for line in error["msg"].removeprefix("Value error, ").splitlines())
    return fields


def test_a_version_1_record_reads_as_it_is_with_the_version_2_fields_null() -> None:
    record = DecisionSnapshot.model_validate(make_snapshot())
    assert record.schema_version == 1
    assert all(getattr(record, name) is None for name in V2_COLUMNS)


def test_the_frozen_version_1_model_upcasts_to_exactly_what_the_current_model_reads() -> None:
    data = make_snapshot(model_version="gen-002", generation=2, source="ppo")
    assert v1.read(data) == DecisionSnapshot.model_validate(data)


def test_the_current_model_accepts_exactly_the_version_1_records_the_frozen_model_accepts() -> None:
    """Nothing a version-1 writer wrote is refused now, and nothing version 1 refused is let in."""
    rng = random.Random(20260301)
    checked, accepted = 0, 0
    for i in range(2000):
        n = rng.choice([2, 3, 4, 6])
        seat, winner = rng.randrange(n), rng.choice([None, rng.randrange(n)])
        record = make_snapshot(
            pod_size=n, seat=seat, winner_seat=winner, seat_won=None if winner is None else winner == seat
        )
        record = _mutate(record, rng) if i % 4 else record
        if record.get("schema_version") != 1:
            continue
        checked += 1
        try:
            old = v1.read(record)
        except ValidationError:
            old = None
        try:
            new = DecisionSnapshot.model_validate(record)
        except ValidationError:
            new = None
        assert old == new, copy.deepcopy(record)
        accepted += new is not None
    assert checked > 1500 and 300 < accepted < checked - 300, "the sample should mix valid and invalid records"


@pytest.mark.parametrize("field", V2_COLUMNS)
def test_a_version_1_record_cannot_carry_a_version_2_field(field: str) -> None:
    record = make_snapshot(**{field: make_snapshot_v2()[field]})
    assert field in _problems(record)


def test_a_version_1_record_may_write_the_version_2_fields_as_null() -> None:
    assert DecisionSnapshot.model_validate(make_snapshot(lineup=None, outcome=None)).schema_version == 1


def test_accepts_a_version_2_record_with_its_lineup_and_outcome() -> None:
    record = DecisionSnapshot.model_validate(make_snapshot_v2(model_version="gen-002", generation=2, source="ppo"))
    assert record.schema_version == 2 and record.outcome == 1
    assert [e.seat for e in record.lineup] == [0, 1, 2, 3] and record.lineup[1].model_version == "gen-002"


@pytest.mark.parametrize(
    ("seat_won", "outcome"), [(True, 1), (False, -1), (None, None)], ids=["win", "anything-else", "unknown"]
)
def test_the_outcome_is_seat_won_as_plus_or_minus_one(seat_won: bool | None, outcome: int | None) -> None:
    record = make_snapshot_v2(seat_won=seat_won, winner_seat=1 if seat_won else None)
    assert DecisionSnapshot.model_validate(record).outcome == outcome


def test_a_draw_and_a_timeout_are_an_outcome_of_minus_one() -> None:
    for result in ({"is_draw": True}, {"timed_out": True}):
        record = make_snapshot_v2(winner_seat=None, seat_won=False, **result)
        assert DecisionSnapshot.model_validate(record).outcome == -1


@pytest.mark.parametrize(
    "override",
    [
        {"outcome": -1},
        {"outcome": None},
        {"seat_won": None, "winner_seat": None, "outcome": 1},
        {"outcome": 0},
    ],
)
def test_rejects_an_outcome_that_contradicts_seat_won(override: dict) -> None:
    assert "outcome" in _problems(make_snapshot_v2(**override))


@pytest.mark.parametrize(
    "lineup",
    [
        make_lineup(3),
        make_lineup(5),
        [make_lineup(4)[i] for i in (0, 2, 1, 3)],
    ],
    ids=["short", "long", "out-of-order"],
)
def test_rejects_a_lineup_that_is_not_the_pod_in_seat_order(lineup: list) -> None:
    assert "lineup" in _problems(make_snapshot_v2(lineup=lineup))


def test_rejects_a_lineup_whose_acting_seat_is_another_model() -> None:
    lineup = make_lineup(4)
    lineup[1].update(kind="ppo", model_version="gen-003")
    assert "lineup" in _problems(make_snapshot_v2(model_version="gen-002", generation=2, source="ppo", lineup=lineup))
    lineup[1]["model_version"] = None
    assert "lineup" in _problems(make_snapshot_v2(model_version="gen-002", generation=2, source="ppo", lineup=lineup))


def test_other_seats_may_be_any_kind_or_unknown() -> None:
    lineup = make_lineup(4)
    for seat, kind in ((0, "unknown"), (2, "forge"), (3, "human")):
        lineup[seat].update(kind=kind, model_version=None, name=None)
    assert DecisionSnapshot.model_validate(make_snapshot_v2(lineup=lineup)).lineup[0].kind == "unknown"
    assert {"unknown", "forge", "human", "heuristic", "tuned", "random", "bc", "ppo"} <= set(PLAYER_KINDS)


@pytest.mark.parametrize(
    ("path", "value"),
    [(("kind",), "wizard"), (("model_version",), "v3"), (("seat",), 9), (("name",), ""), (("colour",), "blue")],
)
def test_rejects_a_lineup_entry_of_the_wrong_shape(path: tuple, value: object) -> None:
    record = make_snapshot_v2()
    record["lineup"][2][path[0]] = value
    assert any(problem.startswith("lineup.2") for problem in _problems(record))


def test_an_unknown_contract_version_is_refused() -> None:
    assert "schema_version" in _problems(make_snapshot_v2(schema_version=3))
