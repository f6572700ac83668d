"""Invariant: whatever shape a raw record has, conversion returns rows or raises DialectError, never crashes."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.dialects.cases import ds_record, forge_record, ppo_record, sim_record
from toolkit.dialects import FileAdapter
from toolkit.errors import DialectError

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)
RECORDS = st.sampled_from([forge_record(), sim_record(), ds_record(), ppo_record()])
# A valid line of each dialect, fed after the broken one.
VALID = {None: forge_record, "forge": forge_record, "sim": sim_record, "ds": ds_record, "ppo_legacy": ppo_record}


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*prefix, i))
    return found


@st.composite
def broken_records(draw: st.DrawFn) -> dict[str, Any]:
    """A valid raw record of some dialect with one to three values replaced or removed."""
    record = copy.deepcopy(draw(RECORDS))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(record)
        if not paths:
            break
        *parents, last = draw(st.sampled_from(paths))
        container = record
        for step in parents:
            container = container[step]
        if isinstance(container, dict) and draw(st.booleans()):
            del container[last]
        else:
            container[last] = draw(JSON_VALUES)
    return record


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=broken_records(), forced=st.sampled_from([None, "forge", "sim", "ds", "ppo_legacy"]))
def test_a_broken_record_becomes_rows_or_a_dialect_error_never_a_crash(record: dict, forced: str | None) -> None:
    adapter = FileAdapter(dialect=forced)
    try:
        adapter.feed(1, record)
    except DialectError as error:
        assert isinstance(error.field, str)
    adapter.feed(2, VALID[forced](game_id="ds-after-the-bad-line"))
    assert any(row["game_id"] == "ds-after-the-bad-line" for _, row in adapter.finish())
