"""Every view ``distill sql`` shows, and every column of it, is described (``distill sql --schema``); the views that
have an order come back in it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from tests.factories import make_generation_record, make_snapshot
from toolkit.catalog import Catalog, Lake
from toolkit.catalog.query import describe_views, run_query
from toolkit.catalog.view_docs import GENERATION_COLUMNS, VIEWS
from toolkit.errors import QueryError
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout
from toolkit.loop.record import GenerationRecord


def write_generations(layout: Layout, records: list[dict]) -> None:
    run = layout.runs / "demo"
    run.mkdir(parents=True, exist_ok=True)
    run.joinpath("generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    """A lake whose games are logged out of order, and a loop whose generations were recorded 1, 0, 2, then 1
    again (a later record of a generation replaces the earlier)."""
    root = tmp_path_factory.mktemp("views")
    records = [make_snapshot(game_id=f"g{game}", seat=0, decision_index=game) for game in (7, 3, 9, 1, 5)]
    log = root / "a.jsonl"
    log.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records) + b"{nope\n")
    layout = Layout.at(root / "home")
    ingest_paths([log], layout)
    again = make_generation_record(1, reason="recorded again", recorded_at="2026-01-02T00:00:00+00:00")
    write_generations(layout, [make_generation_record(g) for g in (1, 0, 2)] + [again])
    return layout


def test_every_column_of_every_view_is_described(home: Layout) -> None:
    with Catalog.open(home, sandbox=True) as catalog:
        described = describe_views(catalog)
    assert [view.name for view in described] == list(VIEWS)
    for view in described:
        assert view.description
        assert [c.name for c in view.columns] == list(VIEWS[view.name].columns), view.name
        undescribed = [c.name for c in view.columns if not c.description.strip()]
        assert undescribed == [], f"{view.name}: describe them in toolkit/catalog/view_docs.py"


def test_the_generations_view_documents_every_field_of_the_loop_record() -> None:
    assert list(GENERATION_COLUMNS) == list(GenerationRecord.model_fields)


def test_types_are_written_in_full(home: Layout) -> None:
    with Catalog.open(home, sandbox=True) as catalog:
        (generations,) = describe_views(catalog, "generations")
        with pytest.raises(QueryError, match="no view is named 'batch_log'"):
            describe_views(catalog, "batch_log")
    types = {c.name: c.type for c in generations.columns}
    assert types["student_gain"].startswith("STRUCT(heuristic STRUCT(")
    assert types["student_gain"].endswith("high DOUBLE))") and "…" not in types["student_gain"]
    assert (types["ppo"], types["previous_accuracy"]) == ("VARCHAR", "DOUBLE")  # null in every record


def test_generations_has_every_column_before_any_loop_ran(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    Lake.open(layout, write=True).close()
    with Catalog.open(layout, sandbox=True) as catalog:
        (generations,) = describe_views(catalog, "generations")
        assert run_query(catalog, "SELECT count(*) AS n FROM generations").to_pylist() == [{"n": 0}]
    assert [c.name for c in generations.columns] == list(GENERATION_COLUMNS)


def test_generations_is_empty_while_a_run_has_written_no_record_yet(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    Lake.open(layout, write=True).close()
    (layout.runs / "starting").mkdir(parents=True)
    (layout.runs / "starting" / "generations.jsonl").write_text("", encoding="utf-8")  # a run just started
    with Catalog.open(layout, sandbox=True) as catalog:
        (generations,) = describe_views(catalog, "generations")
        assert run_query(catalog, "SELECT count(*) AS n FROM generations").to_pylist() == [{"n": 0}]
    assert [c.name for c in generations.columns] == list(GENERATION_COLUMNS)


def test_views_that_have_an_order_come_back_in_it(home: Layout) -> None:
    def rows(sql: str) -> list[tuple]:
        with Catalog.open(home, sandbox=True) as catalog:
            return [tuple(row.values()) for row in run_query(catalog, sql).to_pylist()]

    assert rows("SELECT loop, generation, reason FROM generations") == [
        ("demo", 0, "student promoted"),
        ("demo", 1, "recorded again"),
        ("demo", 2, "student promoted"),
    ]
    assert rows("SELECT game_id FROM games") == [("g1",), ("g3",), ("g5",), ("g7",), ("g9",)]
    versions = rows("SELECT version FROM versions")
    assert versions == sorted(versions) and len(versions) >= 2
