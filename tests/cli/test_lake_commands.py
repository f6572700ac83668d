"""``distill lake ...``, ``sql --as-of`` and ``build --as-of`` from the command line: output, JSON and exit codes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.datasets.conftest import game_records
from toolkit.cli.main import app
from toolkit.layout import Layout

pytestmark = pytest.mark.usefixtures("either_lake")  # on the data root's own lake, and on one shared on S3

runner = CliRunner()


def _distill(layout: Layout, *args: str):
    return runner.invoke(app, ["--home", str(layout.home), *args])


def _json(layout: Layout, *args: str):
    result = _distill(layout, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def batches(layout: Layout, write_log) -> dict[str, str]:
    """Two Forge batches and one PPO generation-2 batch: their ids by log name."""
    logs = {
        "a": [row for i in range(20) for row in game_records(f"a-{i}")],
        "b": [row for i in range(20) for row in game_records(f"b-{i}")],
        "p": [row for i in range(5) for row in game_records(f"p-{i}", "ppo", generation=2)],
    }
    found = {}
    for name, rows in logs.items():
        result = _json(layout, "ingest", str(write_log(f"{name}.jsonl", rows)))
        found[name] = result["batches"][0]
    return found


def test_history_retire_restore_and_time_travel(layout: Layout, batches: dict[str, str], tmp_path) -> None:
    retired = _json(layout, "lake", "retire", "--file", str(tmp_path / "a.jsonl"), "--reason", "wrong seats")
    assert (retired["operation"], retired["batches"], retired["reason"]) == ("retire", [batches["a"]], "wrong seats")
    by_source = _json(layout, "lake", "retire", "--source", "ppo", "--generation", "2", "--reason", "bad teacher")
    assert by_source["batches"] == [batches["p"]]
    history = _json(layout, "lake", "history")
    assert [v["version"] for v in history] == list(range(6))
    assert [v["operation"] for v in history] == ["create", "ingest", "ingest", "ingest", "retire", "retire"]
    now = _json(layout, "sql", "SELECT count(*) AS n FROM decisions")
    then = _json(layout, "sql", "--as-of", "3", "SELECT count(*) AS n FROM decisions")
    assert (now, then) == ([{"n": 240}], [{"n": 540}])
    restored = _json(layout, "lake", "restore", batches["a"], "--reason", "seats were right")
    assert restored["operation"] == "restore" and restored["rows_added"] == 240
    shown = _distill(layout, "lake", "history")
    assert shown.exit_code == 0 and "retire" in shown.stdout and "restore" in shown.stdout


def test_refusals_exit_2_and_change_nothing(layout: Layout, batches: dict[str, str]) -> None:
    for args, message in (
        (("lake", "retire", "nope", "--reason", "x"), "no batch 'nope'"),
        (("lake", "retire", batches["a"]), "say why"),
        (("lake", "restore", batches["a"]), "not retired"),
        (("lake", "retire"), "name the batches"),
        (("lake", "vacuum", "--retain", "-1"), "0 days or more"),
        (("sql", "--as-of", "42", "SELECT 1"), "no version 42"),
        (("build", "--as-of", "42"), "no version 42"),
    ):
        result = _distill(layout, *args)
        assert result.exit_code == 2 and message in result.stderr, (args, result.stderr)
    assert len(_json(layout, "lake", "history")) == 4


def test_a_build_shows_which_of_its_batches_were_retired_since(layout: Layout, batches: dict[str, str]) -> None:
    built = _json(layout, "build", "--name", "d")
    assert _distill(layout, "lake", "retire", batches["b"], "--reason", "engine 4.2 build").exit_code == 0
    shown = _distill(layout, "datasets", "show", "d")
    assert shown.exit_code == 0
    assert batches["b"] in shown.stderr and "engine 4.2 build" in shown.stderr
    again = _json(layout, "build", "--name", "d", "--as-of", str(built["lake_version"]))
    assert again["fingerprint"] == built["fingerprint"] and again["reused"]


def test_compact_then_vacuum(layout: Layout, batches: dict[str, str]) -> None:
    compacted = _json(layout, "lake", "compact")
    assert (compacted["files_removed"], compacted["files_added"]) == (2, 1)
    assert _distill(layout, "lake", "compact").stdout.startswith("nothing to compact")
    vacuumed = _json(layout, "lake", "vacuum", "--retain", "0")
    assert vacuumed["files_deleted"] == 2 and vacuumed["horizon"] == 4
    result = _distill(layout, "sql", "--as-of", "3", "SELECT 1")
    assert result.exit_code == 2 and "oldest readable version is 4" in result.stderr


def test_migrate_on_a_current_lake_does_nothing(layout: Layout, batches: dict[str, str]) -> None:
    result = _json(layout, "lake", "migrate")
    assert result["version"] is None and "nothing to do" in result["message"]


MARKUP = "[bold]a[/bold] :x: root:x:0:0 [red]"


def test_free_text_is_printed_verbatim_in_tables_errors_and_progress(
    layout: Layout, batches: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reason, a name or a file name that looks like terminal markup or an emoji code prints as written."""
    monkeypatch.setenv("COLUMNS", "400")  # one line per table row
    retired = _distill(layout, "lake", "retire", batches["a"], "--reason", MARKUP)
    assert retired.exit_code == 0, retired.output
    shown = _distill(layout, "lake", "history")
    assert shown.exit_code == 0 and MARKUP in shown.stdout, shown.stdout
    assert "❌" not in shown.stdout
    refused = _distill(layout, "datasets", "show", MARKUP)
    assert refused.exit_code == 2 and repr(MARKUP) in refused.stderr, refused.stderr
    missing = _distill(layout, "lake", "retire", "nope-[bold]x[/bold]", "--reason", ":x:")
    assert missing.exit_code == 2 and "nope-[bold]x[/bold]" in missing.stderr, missing.stderr


def test_time_travel_never_moves_current_and_training_on_retired_data_is_refused(
    layout: Layout, batches: dict[str, str]
) -> None:
    built = _json(layout, "build", "--name", "d")
    assert _distill(layout, "lake", "retire", batches["b"], "--reason", "engine 4.2 build").exit_code == 0
    now = _json(layout, "build", "--name", "d")  # the lake as it is: a new latest
    assert now["fingerprint"] != built["fingerprint"] and now["latest"]
    past = _json(layout, "build", "--name", "d", "--as-of", str(built["lake_version"]))
    assert past["fingerprint"] == built["fingerprint"] and not past["latest"]
    assert (layout.builds / "d" / "LATEST").read_text().strip() == now["fingerprint"]  # still the current one
    trained = _distill(layout, "train", "bc", "--dataset", "d", "--fingerprint", built["fingerprint"], "--epochs", "1")
    assert trained.exit_code == 1, trained.output
    assert (
        batches["b"] in trained.stderr and "engine 4.2 build" in trained.stderr and "--allow-retired" in trained.stderr
    )
    allowed = _distill(
        layout,
        "train",
        "bc",
        "--dataset",
        "d",
        "--fingerprint",
        built["fingerprint"],
        "--epochs",
        "1",
        "--allow-retired",
    )
    assert allowed.exit_code == 0, allowed.output
    assert _distill(layout, "train", "bc", "--dataset", "d", "--epochs", "1").exit_code == 0  # the current build
