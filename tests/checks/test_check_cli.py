"""``distill check`` through the CLI: verdict on screen, reports on disk, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.checks.conftest import first, lake_file, not_terminal, rewrite
from toolkit.cli.main import app
from toolkit.layout import Layout

runner = CliRunner()


def run(home: Layout, *args: str):
    return runner.invoke(app, ["--home", str(home.home), "check", *args])


def test_a_clean_lake_exits_0_and_writes_json_and_html(home: Layout) -> None:
    result = run(home, "lake", "--source", "forge")
    assert result.exit_code == 0, result.output
    assert "lake gate PASSED" in result.stdout
    (page,) = home.reports.glob("check-lake-source-forge-*.html")
    assert '<h1 class="pass">lake gate PASSED</h1>' in page.read_text()
    assert page.with_suffix(".json").is_file()


def test_a_blocking_failure_exits_1_and_shows_the_expectation_observed_value_and_rows(home: Layout) -> None:
    rewrite(lake_file(home, "forge"), lambda rows: first(rows, not_terminal, lambda r: r.update(turn=-3)))
    result = run(home, "lake")
    assert result.exit_code == 1
    assert "lake gate FAILED" in result.stdout and "range.turn" in result.stdout and '"turn": -3' in result.stdout


def test_json_output_is_the_whole_report(home: Layout) -> None:
    result = run(home, "dataset", "ratio", "--json", "--no-write")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["passed"] and payload["target"] == "dataset" and payload["paths"] == {}
    assert {"gx", "duckdb", "arrow", "total"} <= set(payload["timings"]) and payload["metrics"]
    assert not home.reports.exists()


def test_the_gate_exits_2_when_it_cannot_run(home: Layout, tmp_path: Path) -> None:
    assert run(home, "lake", "--generation", "42").exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "format_version": 1,
                "name": "x",
                "target": "lake",
                "expectations": [
                    {
                        "id": "a",
                        "type": "expect_column_mean_to_be_between",
                        "kwargs": {"column": "turn"},
                        "severity": "blocking",
                    },
                    {"id": "b", "type": "no_such_check", "severity": "warning"},
                    {
                        "id": "c",
                        "type": "expect_column_values_to_not_be_null",
                        "kwargs": {"column": "nope"},
                        "severity": "blocking",
                    },
                ],
            }
        )
    )
    result = run(home, "lake", "--suite", str(bad))
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    for problem in (
        "a: expect_column_mean_to_be_between is not a row-level",
        "b: unknown type 'no_such_check'",
        "c: no column 'nope'",
    ):
        assert problem in message
    assert run(home, "lake", "--entropy-floor", "3").exit_code == 2
    assert run(home, "dataset", "missing").exit_code == 1
