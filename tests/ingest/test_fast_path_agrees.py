"""The vectorised fast path never passes a record Pydantic rejects, and passes what it accepts."""

from __future__ import annotations

import copy
import random

import numpy as np
import orjson
from pydantic import ValidationError

from tests.factories import make_lineup, make_snapshot, make_snapshot_v2
from toolkit.ingest.fastpath import validate_lines
from toolkit.schema import DecisionSnapshot

# Values that break (or sometimes keep) a field: wrong types, edges, nulls.
POOL = [
    None,
    -1,
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    9,
    100,
    10**6,
    -1001,
    1.5,
    True,
    False,
    "",
    "x",
    "main_1",
    "gen-002",
    "gen-003",
    "ppo",
    "unknown",
    "cast_creature",
    "pass",
    [],
    [True] * 8,
    [False] * 8,
    [1, 2],
    {},
    {"seat": 0},
]


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, (*path, key))
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for i, child in enumerate(value):
            yield from _leaves(child, (*path, i))
    yield path


def _mutate(record: dict, rng: random.Random) -> dict:
    record = copy.deepcopy(record)
    for _ in range(rng.choice([1, 1, 2])):
        path = rng.choice([p for p in _leaves(record) if p])
        parent = record
        for key in path[:-1]:
            parent = parent[key]
        roll = rng.random()
        if roll < 0.1 and isinstance(parent, dict):
            del parent[path[-1]]
        elif roll < 0.15 and isinstance(parent, dict):
            parent["unexpected"] = 1
        else:
            parent[path[-1]] = rng.choice(POOL)
    return record


def _base(rng: random.Random) -> dict:
    """A valid record: version 1, or version 2 (with or without a lineup), by a policy or not."""
    n = rng.choice([2, 3, 4, 6])
    seat = rng.randrange(n)
    winner = rng.choice([None, rng.randrange(n)])
    fields = {
        "pod_size": n,
        "seat": seat,
        "winner_seat": winner,
        "seat_won": None if winner is None else winner == seat,
    }
    if rng.random() < 0.3:
        fields.update(model_version="gen-002", generation=2, source="ppo")
    roll = rng.random()
    if roll < 0.4:
        return make_snapshot(**fields)
    record = make_snapshot_v2(**fields)
    if roll < 0.5:
        record["lineup"] = None
    elif roll < 0.6:  # a partly known lineup: only the acting seat
        record["lineup"] = [{"seat": s, "kind": "unknown", "model_version": None, "name": None} for s in range(n)]
        record["lineup"][seat] = make_lineup(n)[seat] | {"model_version": fields.get("model_version")}
    return record


def test_fast_path_and_pydantic_agree_on_mutated_records() -> None:
    rng = random.Random(20261202)
    records = [_mutate(_base(rng), rng) if i % 5 else _base(rng) for i in range(3000)]
    lines = [orjson.dumps(r) for r in records]
    result = validate_lines(lines, np.arange(len(lines)))
    passed = set(result.ids.tolist())
    valid = set()
    for i, line in enumerate(lines):
        try:
            DecisionSnapshot.model_validate_json(line)
            valid.add(i)
        except ValidationError:
            pass
    assert len(valid) > 500 and len(valid) < len(lines) - 500, "the sample should mix valid and invalid records"
    wrongly_passed = sorted(passed - valid)
    assert not wrongly_passed, f"fast path passed invalid records: {[records[i] for i in wrongly_passed[:1]]}"
    wrongly_failed = sorted(valid - passed)
    assert not wrongly_failed, f"fast path flagged valid records: {[records[i] for i in wrongly_failed[:1]]}"


def test_a_block_with_scattered_bad_lines_sets_aside_exactly_them_reading_each_line_a_few_times(monkeypatch) -> None:
    """1% bad lines of the kinds Arrow names by row (a type change), does not name
    (an unknown field) and accepts but the checks refuse (a range): exactly those
    lines go to the per-row path, and the block is not re-read once per bad line."""
    import toolkit.ingest.fastpath as fastpath

    lines, bad = [], set()
    for i in range(3000):
        record = make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i)
        if i % 100 == 37:
            kind = (i // 100) % 3
            if kind == 0:
                record["turn"] = str(record["turn"])
            elif kind == 1:
                record["players"][1]["unexpected"] = 1
            else:
                record["players"][0]["life"] = 250_000
            bad.add(i)
        lines.append(orjson.dumps(record))
    parsed_lines = []
    real_parse = fastpath._parse_block

    def counting_parse(data, n_lines, **kwargs):
        parsed_lines.append(n_lines)
        return real_parse(data, n_lines, **kwargs)

    monkeypatch.setattr(fastpath, "_parse_block", counting_parse)
    result = validate_lines(lines, np.arange(len(lines)))
    assert set(result.fallback.tolist()) == bad
    assert sorted(result.ids.tolist()) == sorted(set(range(len(lines))) - bad)
    assert sum(parsed_lines) <= 5 * len(lines)  # peeling bad lines one by one read ~11x
