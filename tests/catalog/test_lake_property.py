"""A property of the lake: after any sequence of ingest, review, retire, restore, compact and vacuum, the index
rebuilt from the log alone equals the one kept up incrementally, and Delta readers outside Distill (delta-rs,
polars, DuckDB over Arrow) read exactly the rows ``distill sql`` reads, at the latest version and the earliest
still readable."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import duckdb
import orjson
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.datasets.conftest import game_records
from toolkit.catalog import Lake, index
from toolkit.errors import UsageError
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

KEY = ["batch_id", "game_id", "seat", "decision_index", "source", "generation"]
LOGS = {  # name: (source, generation, games)
    "forge-a": ("forge", None, 3),
    "forge-b": ("forge", None, 2),
    "ppo-1": ("ppo", 1, 2),
    "ppo-2": ("ppo", 2, 2),
}
OPERATIONS = ("ingest", "review", "retire", "restore", "compact", "vacuum")
TABLES = {
    "versions": "version",
    "lake_files": "path, added_version",
    "batch_log": "batch_id",
    "batch_states": "version, batch_id",
    "file_log": "file_sha256",
    "catalog_meta": "key",
}


def write_logs(folder: Path) -> dict[str, Path]:
    paths = {}
    for name, (source, generation, games) in LOGS.items():
        rows = [r for g in range(games) for r in game_records(f"{name}-{g}", source, generation=generation)]
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    return paths


def apply(layout: Layout, logs: dict[str, Path], operation: str, pick: int) -> None:
    if operation == "ingest":
        ingest_paths([logs[sorted(logs)[pick % len(logs)]]], layout)
        return
    with Lake.open(layout, write=True) as lake:
        batches = lake.batches()
        live = [b.batch_id for b in batches if not b.retired]
        retired = [b.batch_id for b in batches if b.retired]
        if operation == "review" and live:
            lake.review(live[pick % len(live)], ("accepted", "rejected")[pick % 2], "a gate")
        elif operation == "retire" and live:
            lake.retire([live[pick % len(live)]], "a bad engine build")
        elif operation == "restore" and retired:
            try:
                lake.restore([retired[pick % len(retired)]])
            except UsageError as error:  # its files were vacuumed: it comes back by ingesting again
                assert "vacuum deleted" in str(error)
        elif operation == "compact":
            lake.compact(target_mb=1)
        elif operation == "vacuum":
            lake.vacuum(retain_days=0)


def index_tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {name: con.execute(f"SELECT * FROM {name} ORDER BY {order}").fetchall() for name, order in TABLES.items()}


def distill_rows(layout: Layout, version: int) -> list[tuple]:
    with Lake.open(layout).at(version, sandbox=True) as view:
        return view.con.execute(f"SELECT {', '.join(KEY)} FROM decisions ORDER BY ALL").fetchall()


def outside_rows(layout: Layout, version: int) -> dict[str, list[tuple]]:
    from deltalake import DeltaTable

    table = DeltaTable(str(layout.lake), version=version)
    arrow = table.to_pyarrow_table(columns=KEY)
    dataset = table.to_pyarrow_dataset()  # noqa: F841 - DuckDB reads it by name
    polars = pl.scan_delta(str(layout.lake), version=version).select(KEY).collect()
    return {
        "delta-rs": sorted(tuple(r.values()) for r in arrow.to_pylist()),
        "polars": sorted(polars.rows()),
        "duckdb": duckdb.sql(f"SELECT {', '.join(KEY)} FROM dataset ORDER BY ALL").fetchall(),
    }


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 7)), min_size=3, max_size=8))
def test_after_every_step_the_rebuilt_index_equals_the_incremental_one_and_outside_readers_agree(
    steps: list[tuple[str, int]],
) -> None:
    folder = Path(tempfile.mkdtemp(prefix="distill-property-"))
    try:
        layout = Layout.at(folder / "home")
        logs = write_logs(folder)
        for operation, pick in [("ingest", 0), ("ingest", 2), *steps]:
            apply(layout, logs, operation, pick)
            with Lake.open(layout, write=True) as lake:
                incremental = index_tables(lake.writer.con)
                latest, horizon = lake.version(), lake.horizon
            rebuilt = duckdb.connect(":memory:")
            index.rebuild(rebuilt, layout.lake)
            assert index_tables(rebuilt) == incremental, operation
            for version in sorted({latest, horizon}):
                expected = distill_rows(layout, version)
                found = outside_rows(layout, version)
                assert found == dict.fromkeys(found, expected), (operation, version)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_outside_readers_helper_sees_rows(tmp_path: Path) -> None:
    """The property's comparison is not vacuous: a lake with rows gives the same non-empty rows everywhere."""
    layout = Layout.at(tmp_path / "home")
    ingest_paths([write_logs(tmp_path)["ppo-1"]], layout)
    expected = distill_rows(layout, 1)
    assert len(expected) == 24 and outside_rows(layout, 1) == dict.fromkeys(("delta-rs", "polars", "duckdb"), expected)
