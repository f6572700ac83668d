"""``distill sql`` runs in a sandbox: whatever the statement, no file is written or read outside the views."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest

from tests.factories import make_snapshot
from toolkit.catalog import Catalog
from toolkit.catalog.query import run_query
from toolkit.errors import QueryError
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout


@pytest.fixture
def home(write_log, layout: Layout) -> Layout:
    records = [make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i) for i in range(12)]
    ingest_paths([write_log("a.jsonl", records), write_log("bad.jsonl", [b"{nope"])], layout)
    return layout


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the sha256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def query(layout: Layout, sql: str) -> list[dict]:
    with Catalog.open(layout, sandbox=True) as catalog:
        return run_query(catalog, sql).to_pylist()


ESCAPES = {
    # wrapped: EXPLAIN ANALYZE runs what it wraps
    "explain analyze copy over a lake file": "EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{lake_file}' (FORMAT parquet)",
    "explain analyze copy out": "EXPLAIN ANALYZE COPY (SELECT * FROM decisions) TO '{outside}/leak.csv'",
    "explain analyze insert": "EXPLAIN ANALYZE INSERT INTO batches SELECT * FROM batches",
    "explain analyze delete": "EXPLAIN ANALYZE DELETE FROM batches",
    # table functions reading any file
    "read_csv": "SELECT * FROM read_csv('{secret}')",
    "read_text": "SELECT * FROM read_text('{secret}')",
    "read_blob": "SELECT * FROM read_blob('{secret}')",
    "read_json": "SELECT * FROM read_json_auto('{secret}')",
    "read_parquet of the lake by path": "SELECT * FROM read_parquet('{lake_file}')",
    "glob": "SELECT * FROM glob('{outside}/*')",
    "sniff_csv": "SELECT * FROM sniff_csv('{secret}')",
    "scalar in a subquery": "SELECT (SELECT content FROM read_text('{secret}')) AS c",
    "in a CTE": "WITH x AS (SELECT * FROM read_text('{secret}')) SELECT * FROM x",
    # chained
    "chained copy": "COPY (SELECT 1) TO '{outside}/chained.csv'; SELECT 1",
    "chained set": "SET enable_external_access = true; SELECT 1",
    # settings and extensions
    "set external access": "SET enable_external_access = true",
    "reset the lock": "RESET lock_configuration",
    "pragma": "PRAGMA enable_profiling",
    "install": "INSTALL httpfs",
    "load a file": "LOAD '{outside}/evil.duckdb_extension'",
    "attach": "ATTACH '{outside}/x.db' AS x",
    "export database": "EXPORT DATABASE '{outside}/dump'",
    "copy to": "COPY batches TO '{outside}/b.csv'",
    "copy from": "COPY batches FROM '{secret}'",
    "delete": "DELETE FROM batches",
    "create table": "CREATE TABLE t (a INT)",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_no_escape_writes_or_reads_a_file(home: Layout, tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("password,42\n")
    lake_file = next(home.lake.rglob("*.parquet"))
    before, visible = tree(tmp_path), query(home, "SELECT count(*) AS n FROM decisions")
    statement = ESCAPES[name].format(lake_file=lake_file, outside=outside, secret=secret)
    with pytest.raises(QueryError) as refused:
        query(home, statement)
    assert str(refused.value)  # the error says why
    with Catalog.open(home, sandbox=True) as catalog:  # the connection itself, without the statement check
        for one in catalog.con.extract_statements(statement):
            if one.query.strip() == "SELECT 1":  # the harmless half of a chain
                continue
            with pytest.raises(duckdb.Error):
                catalog.con.execute(one.query)
    assert tree(tmp_path) == before
    assert query(home, "SELECT count(*) AS n FROM decisions") == visible == [{"n": 12}]


def test_refusals_say_why(home: Layout, tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="file access is switched off"):
        query(home, f"SELECT * FROM read_text('{tmp_path}/x')")
    with pytest.raises(QueryError, match="file access is switched off"):
        query(home, f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{tmp_path}/x.csv'")
    with pytest.raises(QueryError, match="an INSTALL statement is refused"):
        query(home, "INSTALL httpfs")
    with pytest.raises(QueryError, match="exactly one statement"):
        query(home, "SELECT 1; SELECT 2")


def test_every_view_still_reads(home: Layout) -> None:
    for view in ("decisions", "games", "files", "batches", "rejects", "generations"):
        query(home, f"SELECT count(*) FROM {view}")
    assert query(home, "SELECT count(*) AS n FROM rejects") == [{"n": 1}]
    assert query(home, "SELECT count(*) AS n FROM games") == [{"n": 3}]


def test_run_query_refuses_an_unsealed_catalog(home: Layout) -> None:
    with Catalog.open(home, read_only=True) as catalog, pytest.raises(QueryError, match="sandbox"):
        run_query(catalog, "SELECT 1")
