"""GX expectations on chunks of rows: the chunks' results add up to one run over all the rows."""

from __future__ import annotations

import math

import pyarrow as pa

from toolkit.checks.gx import run_gx
from toolkit.checks.spec import ExpectationSpec

KEYS = ["game_id", "seat"]


def _spec(id_: str, type_: str, **kwargs: object) -> ExpectationSpec:
    return ExpectationSpec(id=id_, type=type_, kwargs=kwargs, severity="blocking")


SPECS = [
    _spec("range.label", "expect_column_values_to_be_between", column="label", min_value=0, max_value=7),
    _spec("not-null.reward", "expect_column_values_to_not_be_null", column="reward"),
    _spec("range.seat", "expect_column_values_to_be_between", column="seat", min_value=0, max_value=3),
    _spec("set.source", "expect_column_values_to_be_in_set", column="source", value_set=["forge", "sim"]),
]


def _rows() -> pa.Table:
    """40 rows; labels 9 at rows 3, 11, 12, 30; no reward at row 20; seat 5 at row 33; source 'ppo' at row 7."""
    label = [i % 8 for i in range(40)]
    for i in (3, 11, 12, 30):
        label[i] = 9
    seat = [i % 4 for i in range(40)]
    seat[33] = 5
    source = ["ppo" if i == 7 else "forge" for i in range(40)]
    return pa.table(
        {
            "game_id": [f"g{i // 8}" for i in range(40)],
            "seat": pa.array(seat, pa.int32()),
            "label": pa.array(label, pa.int64()),
            "reward": [None if i == 20 else 0.5 for i in range(40)],
            "source": source,
        }
    )


def _without_seconds(results: list) -> list[str]:
    return [r.model_dump_json(exclude={"seconds"}) for r in results]


def test_offenders_are_the_first_rows_with_their_keys_however_the_rows_are_chunked() -> None:
    rows = _rows()
    whole = run_gx(SPECS, [rows], KEYS, sample_rows=3)
    chunked = run_gx(SPECS, [rows.slice(i, 6) for i in range(0, 40, 6)], KEYS, sample_rows=3)
    assert _without_seconds(chunked) == _without_seconds(whole)
    by_id = {r.id: r for r in whole}
    label = by_id["range.label"]
    assert (label.element_count, label.unexpected_count, label.success) == (40, 4, False)
    assert label.sample == [
        {"label": 9, "game_id": "g0", "seat": 3},
        {"label": 9, "game_id": "g1", "seat": 3},
        {"label": 9, "game_id": "g1", "seat": 0},
    ]
    assert label.observed == {"unexpected_count": 4, "values_in_sample": {"9": 3}}
    reward = by_id["not-null.reward"]
    (missing,) = reward.sample
    assert reward.unexpected_count == 1 and math.isnan(missing.pop("reward"))
    assert missing == {"game_id": "g2", "seat": 0}
    # A key checked itself keeps its place first, as GX lists it.
    assert by_id["range.seat"].sample == [{"seat": 5, "game_id": "g4"}]
    assert by_id["set.source"].sample == [{"source": "ppo", "game_id": "g0", "seat": 3}]


def test_a_clean_chunk_set_passes_with_every_row_counted() -> None:
    rows = _rows().filter(pa.array([i not in (3, 7, 11, 12, 20, 30, 33) for i in range(40)]))
    results = run_gx(SPECS, [rows.slice(0, 10), rows.slice(10)], KEYS)
    assert all(r.success and r.element_count == 33 and not r.sample for r in results)


def test_each_expectations_configuration_is_built_once_a_validation_with_the_same_results(monkeypatch) -> None:
    """GX rebuilds an expectation's configuration every time it reads it; run_gx has it built once an expectation
    object (and gives what GX gives without that), on two threads too."""
    import contextlib
    from concurrent.futures import ThreadPoolExecutor

    import great_expectations.expectations.expectation as gx_expectation

    from toolkit.checks import gx

    built: list[int] = []  # one entry a configuration built (list.append is atomic between threads)
    make = gx_expectation.ExpectationConfiguration

    def counted(*args: object, **kwargs: object) -> object:
        built.append(1)
        return make(*args, **kwargs)

    monkeypatch.setattr(gx_expectation, "ExpectationConfiguration", counted)
    rows = _rows()
    memoised = _without_seconds(run_gx(SPECS, [rows], KEYS, sample_rows=3))
    once = len(built)
    built.clear()
    with ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda _: _without_seconds(run_gx(SPECS, [rows], KEYS, sample_rows=3)), range(2)))
    assert both == [memoised, memoised] and len(built) == 2 * once
    monkeypatch.setattr(gx, "_memoised_configurations", contextlib.nullcontext)
    built.clear()
    assert _without_seconds(run_gx(SPECS, [rows], KEYS, sample_rows=3)) == memoised
    assert once * 5 < len(built), (once, len(built))  # GX's own: ~10 times as many


def test_validations_on_several_threads_at_once_each_give_what_one_alone_gives() -> None:
    """GX's context is not safe on two threads at once (validations running together read each other's batches:
    counts of 0); run_gx's validations take turns."""
    from concurrent.futures import ThreadPoolExecutor

    rows = _rows()
    alone = _without_seconds(run_gx(SPECS, [rows], KEYS, sample_rows=3))
    chunked = [rows.slice(i, 6) for i in range(0, 40, 6)]
    with ThreadPoolExecutor(3) as pool:
        for _ in range(8):
            together = list(
                pool.map(lambda k: _without_seconds(run_gx(SPECS, [rows] if k else chunked, KEYS, 3)), range(3))
            )
            assert together == [alone] * 3
