"""``distill sql`` runs in a sandbox: whatever the statement, no file is written or read outside the views, no path
of this machine is shown, a statement's time and memory are bounded, and Ctrl-C interrupts it."""

from __future__ import annotations

import hashlib
import os
import signal
import threading
from pathlib import Path

import duckdb
import orjson
import pytest

from tests.factories import make_snapshot
from toolkit.catalog import Catalog
from toolkit.catalog.query import interrupt_on_sigint, run_query, start_query
from toolkit.catalog.sandbox import SandboxLimits
from toolkit.catalog.view_docs import VIEWS
from toolkit.errors import QueryError, QueryInterrupted
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout


@pytest.fixture
def home(write_log, layout: Layout) -> Layout:
    records = [make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i) for i in range(12)]
    ingest_paths([write_log("a.jsonl", records), write_log("bad.jsonl", [b"{nope"])], layout)
    return layout


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    """A data root for tests that only read (one per module: ingesting is the slow part)."""
    root = tmp_path_factory.mktemp("sandbox")
    log = root / "a.jsonl"
    log.write_bytes(
        b"".join(orjson.dumps(make_snapshot(game_id="g0", seat=i, decision_index=i)) + b"\n" for i in range(4))
    )
    layout = Layout.at(root / "home")
    ingest_paths([log], layout)
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
    "explain analyze create": "EXPLAIN ANALYZE CREATE TABLE t AS SELECT * FROM decisions",
    "explain create": "EXPLAIN CREATE TABLE t AS SELECT 1",
    "explain with options, then insert": "/* c */ EXPLAIN /* c */ (FORMAT json, ANALYZE) INSERT INTO batch_log "
    "SELECT * FROM batch_log",
    "explain analyse with options, then copy": "explain analyse (format json) COPY batches TO '{outside}/b.csv'",
    # table functions reading any file
    "read_csv": "SELECT * FROM read_csv('{secret}')",
    "read_text": "SELECT * FROM read_text('{secret}')",
    "read_blob": "SELECT * FROM read_blob('{secret}')",
    "read_blob of the catalog": "SELECT * FROM read_blob('{catalog}')",
    "read_blob of the catalog's snapshot": "SELECT * FROM read_blob('{snapshot}')",
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
    "update a view": "UPDATE batches SET status = 'accepted'",
    "insert into versions": "INSERT INTO versions SELECT * FROM versions",
    "create table": "CREATE TABLE t (a INT)",
    "import database": "IMPORT DATABASE '{outside}'",
    "force install": "FORCE INSTALL httpfs",
    # a PIVOT DuckDB splits in several statements (MULTI), wrapping a write or a file read
    "copy a pivot": "COPY (PIVOT decisions ON seat USING count(*)) TO '{outside}/p.csv'",
    "explain analyze copy of a pivot": "EXPLAIN ANALYZE COPY (PIVOT decisions ON seat USING count(*)) "
    "TO '{outside}/p.csv'",
    "create table as a pivot": "CREATE TABLE t AS PIVOT decisions ON seat USING count(*)",
    "insert after a pivot": "WITH p AS (PIVOT decisions ON seat USING count(*)) "
    "INSERT INTO batches SELECT * FROM batches",
    "pivot of a file": "PIVOT read_csv('{secret}') ON column0 USING count(*)",
    "pivot in a CTE reading a file": "WITH p AS (PIVOT read_text('{secret}') ON size USING count(*)) SELECT * FROM p",
}
# The sandbox's own in-memory database takes these (as DuckDB's temp schema does on any connection): no file
# changes, and the statement check refuses them anyway.
IN_MEMORY = {"create table", "explain analyze create", "explain create", "create table as a pivot"}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_no_escape_writes_or_reads_a_file(home: Layout, tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("password,42\n")
    lake_file = next(home.lake.rglob("*.parquet"))
    before, visible = tree(tmp_path), query(home, "SELECT count(*) AS n FROM decisions")
    statement = ESCAPES[name].format(
        lake_file=lake_file, outside=outside, secret=secret, catalog=home.catalog, snapshot=home.catalog_snapshot
    )
    with pytest.raises(QueryError) as refused:
        query(home, statement)
    assert str(refused.value)  # the error says why
    with Catalog.open(home, sandbox=True) as catalog:  # the connection itself, without the statement check
        for one in catalog.con.extract_statements(statement):
            if one.query.strip() == "SELECT 1" or name in IN_MEMORY:  # the harmless half of a chain
                continue
            with pytest.raises(duckdb.Error):
                catalog.con.execute(one.query)
    assert tree(tmp_path) == before
    assert query(home, "SELECT count(*) AS n FROM decisions") == visible == [{"n": 12}]


def test_refusals_say_why(lake: Layout, tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="read_text would read files outside the lake: .*file access is switched off"):
        query(lake, f"SELECT * FROM read_text('{tmp_path}/x')")
    with pytest.raises(
        QueryError, match=r"a COPY statement is refused \(it would write or read files outside the lake"
    ):
        query(lake, f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{tmp_path}/x.csv'")
    with pytest.raises(QueryError, match=r"an INSERT statement is refused \(it would change the catalog"):
        query(lake, "WITH p AS (PIVOT decisions ON seat USING count(*)) INSERT INTO batches SELECT * FROM batches")
    with pytest.raises(QueryError, match=r"an INSTALL statement is refused \(it would install or load an extension"):
        query(lake, "INSTALL httpfs")
    with pytest.raises(QueryError, match=r"a SET statement is refused \(it would change a setting"):
        query(lake, "SET threads = 1")
    with pytest.raises(QueryError, match="exactly one statement"):
        query(lake, "SELECT 1; SELECT 2")


READ_ONLY = {
    "pivot": "PIVOT decisions ON seat USING count(*) GROUP BY game_id",
    "pivot in a CTE": "WITH p AS (PIVOT decisions ON seat USING count(*)) SELECT * FROM p",
    "pivot in a subquery": "SELECT * FROM (PIVOT decisions ON phase USING count(*))",
    "explain analyze a pivot": "EXPLAIN ANALYZE PIVOT decisions ON seat USING count(*)",
    "unpivot": "UNPIVOT (SELECT game_id, seat, turn FROM decisions) ON seat, turn INTO NAME k VALUE v",
    "summarize": "SUMMARIZE games",
    "describe": "DESCRIBE decisions",
    "show tables": "SHOW TABLES",
    "values": "VALUES (1, 'a')",
    "table": "TABLE versions",
    "a listing pragma": "PRAGMA table_info('games')",
    "a listing pragma, then a semicolon": "PRAGMA show_tables;",
}


def test_read_only_statements_run(lake: Layout) -> None:
    with Catalog.open(lake, sandbox=True) as catalog:
        ran = {name: run_query(catalog, sql).num_rows for name, sql in READ_ONLY.items()}
    assert all(ran.values()), ran
    assert query(lake, READ_ONLY["pivot"]) == [{"game_id": "g0", "0": 1, "1": 1, "2": 1, "3": 1}]


INTERNAL = ("catalog_meta", "lake_files", "batch_log", "batch_states", "file_log", "_files_decisions")


def test_only_the_views_are_shown(lake: Layout) -> None:
    assert [row["name"] for row in query(lake, "SHOW TABLES")] == sorted(VIEWS)
    assert sorted(row["name"] for row in query(lake, "SHOW ALL TABLES")) == sorted(VIEWS)
    assert {r["table_name"] for r in query(lake, "SELECT table_name FROM information_schema.tables")} == set(VIEWS)
    assert query(lake, "SELECT count(*) AS n FROM duckdb_tables()") == [{"n": 0}]
    for table in INTERNAL:
        with pytest.raises(QueryError, match="does not exist"):
            query(lake, f"FROM {table}")


def test_every_view_still_reads(home: Layout) -> None:
    for view in VIEWS:
        query(home, f"SELECT count(*) FROM {view}")
    assert query(home, "SELECT count(*) AS n FROM rejects") == [{"n": 1}]
    assert query(home, "SELECT count(*) AS n FROM games") == [{"n": 3}]


def test_run_query_refuses_an_unsealed_catalog(home: Layout) -> None:
    with Catalog.open(home) as catalog, pytest.raises(QueryError, match="sandbox"):
        run_query(catalog, "SELECT 1")


def test_explain_of_a_select_still_runs(lake: Layout) -> None:
    for statement in (
        "EXPLAIN SELECT * FROM decisions",
        "EXPLAIN ANALYZE SELECT 1",
        "EXPLAIN (SELECT 1)",
        "/* why */ explain (format json) FROM games",
    ):
        assert query(lake, statement)


LEAKS = {
    "attached databases": "SELECT * FROM duckdb_databases()",
    "database list": "SELECT * FROM pragma_database_list",
    "every setting": "SELECT * FROM duckdb_settings()",
    "secret directory": "SELECT current_setting('secret_directory')",
    "temp directory": "SELECT current_setting('temp_directory')",
    "extension directory": "SELECT current_setting('extension_directory')",
    "extensions": "SELECT * FROM duckdb_extensions()",
    "secrets": "SELECT * FROM duckdb_secrets()",
    "temporary files": "SELECT * FROM duckdb_temporary_files()",
    "views' SQL": "SELECT * FROM duckdb_views()",
    "tables' SQL": "SELECT * FROM duckdb_tables()",
    "memory": "SELECT * FROM duckdb_memory()",
}


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_no_statement_shows_a_path_of_this_machine(lake: Layout, name: str) -> None:
    try:
        shown = str(query(lake, LEAKS[name]))
    except QueryError as refused:
        shown = str(refused)
    assert str(lake.home) not in shown and os.getcwd() not in shown
    if len(str(Path.home())) > 1:
        assert str(Path.home()) not in shown


def test_settings_and_limits_cannot_be_changed_from_a_statement(lake: Layout) -> None:
    limits = SandboxLimits(timeout=30, memory_limit="256MB")
    with Catalog.open(lake, sandbox=True, limits=limits) as catalog:
        for setting in ("max_execution_time = 0", "memory_limit = '100GB'", "temp_directory = '/tmp'"):
            with pytest.raises(duckdb.Error, match="locked"):
                catalog.con.execute(f"SET {setting}")
        assert run_query(catalog, "SELECT current_setting('max_execution_time') AS t").to_pylist() == [{"t": 30000}]


ENDLESS = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"


def test_a_statement_past_its_time_limit_is_stopped(lake: Layout) -> None:
    with Catalog.open(lake, sandbox=True, limits=SandboxLimits(timeout=0.2)) as catalog:
        with pytest.raises(QueryError, match="time limit of 0.2 s") as stopped:
            run_query(catalog, ENDLESS)
    assert "--timeout" in (stopped.value.hint or "")


def test_a_statement_past_its_memory_limit_is_stopped(lake: Layout) -> None:
    with Catalog.open(lake, sandbox=True, limits=SandboxLimits(timeout=60, memory_limit="32MB")) as catalog:
        with pytest.raises(QueryError, match="more memory than its limit") as stopped:
            run_query(catalog, "SELECT list(range) FROM range(100000000)")
    assert "--memory-limit" in (stopped.value.hint or "")


@pytest.mark.parametrize(
    "given",
    [
        {"timeout": -1},
        {"memory_limit": "lots"},
        {"memory_limit": "0GB"},
        {"memory_limit": "150%"},
        {"memory_limit": "4 XB"},
    ],
)
def test_limits_are_checked_up_front(given: dict) -> None:
    with pytest.raises(ValueError):
        SandboxLimits(**given)


def test_ctrl_c_interrupts_a_running_statement(lake: Layout) -> None:
    """Real SIGINTs, sent until the statement ends; pytest never sees one (a handler of the test's own stands
    outside the block), and the time limit would end the statement should the interrupt fail."""
    safety = signal.signal(signal.SIGINT, lambda *_: None)
    done = threading.Event()

    def press_ctrl_c() -> None:
        while not done.wait(0.05):
            os.kill(os.getpid(), signal.SIGINT)

    try:
        with Catalog.open(lake, sandbox=True, limits=SandboxLimits(timeout=60)) as catalog:
            with interrupt_on_sigint(catalog):
                rows = start_query(catalog, ENDLESS).text_rows()
                threading.Thread(target=press_ctrl_c, daemon=True).start()
                with pytest.raises(QueryInterrupted, match="interrupted") as interrupted:
                    list(rows)
                done.set()
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler  # the test's own again
    finally:
        done.set()
        signal.signal(signal.SIGINT, safety)
    assert interrupted.value.exit_code == 130


def test_the_table_view_reads_only_the_rows_it_shows(lake: Layout) -> None:
    """A result with no end is cut at the rows asked for (DuckDB stops there: the time limit is never reached)."""
    with Catalog.open(lake, sandbox=True, limits=SandboxLimits(timeout=60)) as catalog:
        rows = list(start_query(catalog, "SELECT range AS n FROM range(9223372036854775807)").text_rows(3))
    assert rows == [["0"], ["1"], ["2"]]


def test_rows_stream_before_the_statement_ends(lake: Layout) -> None:
    """Rows come out while the statement still runs: its first batches are printed before its time runs out."""
    streamed = []
    with Catalog.open(lake, sandbox=True, limits=SandboxLimits(timeout=0.5)) as catalog:
        with pytest.raises(QueryError, match="time limit"):
            for row in start_query(catalog, "SELECT range AS n FROM range(9223372036854775807)").text_rows():
                streamed.append(row)
    assert streamed[:2] == [["0"], ["1"]]


def test_parquet_is_refused_a_type_it_cannot_hold_exactly(lake: Layout) -> None:
    with Catalog.open(lake, sandbox=True) as catalog:
        for statement in (
            "SELECT 1::UHUGEINT AS v",
            "SELECT [{'t': '12:00:00+01'::TIMETZ}] AS v",
            "SELECT INTERVAL 1 day AS v",
            "SELECT MAP {1: '1'::BIT} AS v",
        ):
            with pytest.raises(QueryError, match="column 'v' is .*Parquet cannot hold"):
                start_query(catalog, statement).check_parquet()
        start_query(catalog, "SELECT 1::HUGEINT AS h, 'infinity'::DATE AS d, [1.5] AS l").check_parquet()
