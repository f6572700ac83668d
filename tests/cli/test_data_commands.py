"""The data commands through the CLI: exit codes, output formats, read-only SQL."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.factories import make_snapshot
from toolkit.cli.main import app

runner = CliRunner()


def good(i: int) -> dict:
    record = make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i)
    record.update(winner_seat=0, seat_won=i % 4 == 0)
    return record


@pytest.fixture
def logs(write_log) -> tuple[Path, Path]:
    clean = write_log("clean.jsonl", [good(i) for i in range(8)])
    dirty = write_log(
        "dirty.jsonl",
        [good(100), b"{nope", good(101) | {"seat": 7}] + [good(102 + i) | {"turn": -1} for i in range(40)],
    )
    return clean, dirty


def run(*args: str, home: Path | None = None):
    prefix = ["--home", str(home)] if home else []
    return runner.invoke(app, [*prefix, *args])


def test_validate_exits_0_when_all_valid_and_1_otherwise(logs) -> None:
    clean, dirty = logs
    assert run("validate", str(clean)).exit_code == 0
    result = run("validate", str(clean), str(dirty))
    assert result.exit_code == 1
    assert f"{dirty}:2:-: invalid JSON" in result.stdout


def test_validate_exits_2_on_usage_errors(tmp_path: Path) -> None:
    assert run("validate", str(tmp_path / "missing.jsonl")).exit_code == 2
    assert run("validate", "--dialect", "klingon", str(tmp_path)).exit_code == 2


def test_validate_caps_the_terminal_but_json_and_errors_out_are_complete(logs, tmp_path: Path) -> None:
    _, dirty = logs
    shown = run("validate", "--max-errors", "5", str(dirty))
    assert "more problems" in shown.stdout
    payload = json.loads(run("validate", "--json", str(dirty)).stdout)
    assert len(payload["problems"]) == 42 and payload["files"][0]["reasons"]["greater_than_equal"] == 40
    out = tmp_path / "errors.txt"
    run("validate", "--errors-out", str(out), str(dirty))
    assert len(out.read_text().splitlines()) == 42


def test_ingest_then_sql_in_every_output_format(logs, tmp_path: Path) -> None:
    clean, dirty = logs
    home = tmp_path / "home"
    ingested = json.loads(run("ingest", "--json", str(clean), str(dirty), home=home).stdout)
    assert ingested["rows_valid"] == 9 and ingested["rows_rejected"] == 42
    table = run("sql", "SELECT count(*) AS n FROM decisions", home=home)
    assert table.exit_code == 0 and "9" in table.stdout
    as_csv = run("sql", "--csv", "SELECT game_id, decisions FROM games ORDER BY game_id", home=home)
    assert as_csv.stdout.splitlines()[:2] == ["game_id,decisions", "g0,4"]
    as_json = json.loads(run("sql", "--json", "SELECT source_line FROM rejects ORDER BY 1 LIMIT 2", home=home).stdout)
    assert as_json == [{"source_line": 2}, {"source_line": 3}]
    out = tmp_path / "out.parquet"
    assert run("sql", "--parquet", str(out), "SELECT * FROM files", home=home).exit_code == 0
    assert pq.read_table(out).num_rows == 2
    assert run("sql", "SELECT count(*) FROM batches", home=home).exit_code == 0


@pytest.mark.parametrize(
    "statement",
    ["DELETE FROM batches", "COPY batches TO 'x.csv'", "ATTACH 'x.db'", "CREATE TABLE t (a INT)", "SELECT 1; SELECT 2"],
)
def test_sql_refuses_anything_but_one_read(logs, tmp_path: Path, statement: str) -> None:
    clean, _ = logs
    home = tmp_path / "home"
    run("ingest", str(clean), home=home)
    result = run("sql", statement, home=home)
    assert result.exit_code == 2 and "error" in result.stderr


def test_sql_stops_a_statement_past_its_limits_with_a_message_and_checks_the_flags(logs, tmp_path: Path) -> None:
    clean, _ = logs
    home = tmp_path / "home"
    run("ingest", str(clean), home=home)
    endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
    for form in ([], ["--csv"], ["--json"], ["--parquet", str(tmp_path / "out.parquet")]):
        stopped = run("sql", *form, "--timeout", "0.2", endless, home=home)
        assert stopped.exit_code == 2 and "time limit of 0.2 s" in stopped.stderr and "--timeout" in stopped.stderr
        assert stopped.exception is None or isinstance(stopped.exception, SystemExit)
    assert not (tmp_path / "out.parquet").exists() and not list(tmp_path.glob(".out.parquet*"))
    greedy = run("sql", "--memory-limit", "32MB", "SELECT list(range) FROM range(100000000)", home=home)
    assert greedy.exit_code == 2 and "more memory than its limit" in greedy.stderr
    for flag, value in (("--timeout", "-1"), ("--memory-limit", "lots"), ("--memory-limit", "200%")):
        refused = run("sql", flag, value, "SELECT 1", home=home)
        assert refused.exit_code == 2 and flag in refused.stderr


def test_sql_shows_at_most_max_rows_and_says_there_are_more(logs, tmp_path: Path) -> None:
    clean, _ = logs
    home = tmp_path / "home"
    run("ingest", str(clean), home=home)
    shown = run("sql", "--max-rows", "2", "SELECT range AS n FROM range(9223372036854775807)", home=home)
    assert shown.exit_code == 0 and "more than 2 rows" in shown.stdout
    assert [line.strip("│ ") for line in shown.stdout.splitlines() if line.startswith("│")] == ["0", "1"]


def test_sql_without_a_catalog_says_what_to_do(tmp_path: Path) -> None:
    result = run("sql", "SELECT 1", home=tmp_path / "nothing")
    assert result.exit_code == 1 and "distill ingest" in result.stderr


def test_home_defaults_to_the_environment_variable(logs, tmp_path: Path, monkeypatch) -> None:
    clean, _ = logs
    monkeypatch.setenv("DISTILL_HOME", str(tmp_path / "envhome"))
    assert run("ingest", str(clean)).exit_code == 0
    assert (tmp_path / "envhome" / "catalog.duckdb").exists()


def test_schemas_export_writes_the_committed_files_of_every_contract_version(tmp_path: Path) -> None:
    assert run("schemas", "export", "--out", str(tmp_path)).exit_code == 0
    for version in (1, 2):
        committed = Path(__file__).resolve().parents[2] / "schemas" / f"decision_snapshot.v{version}.schema.json"
        assert (tmp_path / committed.name).read_text() == committed.read_text()
