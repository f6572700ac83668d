"""The lake suite: passes on a clean lake; each crafted break fails exactly the expectation it targets."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.checks.conftest import (
    Rows,
    failed_ids,
    first,
    ingest_rows,
    lake_file,
    not_terminal,
    policy_games,
    rewrite,
    set_field,
)
from toolkit.catalog.migrate import migrate
from toolkit.checks.gate import CheckConfig, LakeScope, check_lake
from toolkit.checks.report import GateReport
from toolkit.errors import CheckError, GateFailedError
from toolkit.layout import Layout
from toolkit.schema.vocab import MACRO_ACTIONS as MACROS


def test_a_clean_lake_passes_every_expectation(home: Layout) -> None:
    report = check_lake(home)
    assert report.passed and not failed_ids(report, None), [r for r in report.results if not r.success]
    assert report.rows == sum(pq.ParquetFile(p).metadata.num_rows for p in home.lake.rglob("*.parquet"))
    assert {r.engine for r in report.results} == {"gx", "duckdb", "arrow"}
    assert {m.source for m in report.metrics} == {"forge", "sim", "ppo", "*"}


def _dup_non_terminal(rows: Rows) -> Rows:
    return [*rows, next(r for r in rows if not_terminal(r))]


def _clear_terminal(row: dict[str, Any]) -> None:
    row["is_terminal"] = False


def _illegal(row: dict[str, Any]) -> None:
    row["legal_actions"][row["action"]["index"]] = False


def _other_macro(row: dict[str, Any]) -> None:
    row["action"]["macro"] = "pass" if row["action"]["macro"] != "pass" else "hold_mana"


def _drop_player(row: dict[str, Any]) -> None:
    row["players"] = row["players"][:-1]


def _low_life(row: dict[str, Any]) -> None:
    row["players"][1]["life"] = -5000


def _odd_kind(row: dict[str, Any]) -> None:
    row["lineup"][1]["kind"] = "wizard"


ANY: Callable[[dict[str, Any]], bool] = lambda row: True  # noqa: E731
CASES: list[tuple[str, Callable[[Rows], Rows]]] = [
    ("not-null.game_id", lambda rows: first(rows, not_terminal, set_field("game_id", None))),
    ("not-null.action.label_source", lambda rows: first(rows, ANY, set_field("action.label_source", None))),
    ("range.turn", lambda rows: first(rows, ANY, set_field("turn", -1))),
    ("range.reward", lambda rows: first(rows, ANY, set_field("reward", 5000.0))),
    ("range.action.index", lambda rows: first(rows, ANY, set_field("action.index", 9))),
    ("range.players[].life", lambda rows: first(rows, ANY, _low_life)),
    ("set.phase", lambda rows: first(rows, ANY, set_field("phase", "upkeep"))),
    ("set.action.macro", lambda rows: first(rows, ANY, set_field("action.macro", "mulligan"))),
    ("set.outcome", lambda rows: first(rows, ANY, set_field("outcome", 0))),
    ("set.lineup[].kind", lambda rows: first(rows, ANY, _odd_kind)),
    ("pattern.source", lambda rows: first(rows, ANY, set_field("source", "Forge Engine"))),
    ("pod.acting-seat", lambda rows: first(rows, not_terminal, set_field("seat", 6))),
    ("pod.winner-seat", lambda rows: first(rows, ANY, set_field("winner_seat", 5))),
    ("key.unique", _dup_non_terminal),
    ("action.legal", lambda rows: first(rows, ANY, _illegal)),
    ("action.index-matches-macro", lambda rows: first(rows, ANY, _other_macro)),
    ("players.match-pod", lambda rows: first(rows, ANY, _drop_player)),
    ("episode.one-end", lambda rows: first(rows, lambda r: r["is_terminal"], _clear_terminal)),
]


@pytest.mark.parametrize(("expected", "change"), CASES, ids=[c[0] for c in CASES])
def test_a_crafted_break_fails_exactly_its_expectation(
    home: Layout, expected: str, change: Callable[[Rows], Rows]
) -> None:
    rewrite(lake_file(home, "forge"), change)
    report = check_lake(home, config=CheckConfig(write=False))
    assert failed_ids(report) == {expected}
    (result,) = [r for r in report.results if r.id == expected]
    assert result.unexpected_count and result.sample, result
    assert not report.passed


def test_a_file_off_the_contract_fails_the_schema_expectation(home: Layout) -> None:
    path = lake_file(home, "sim")
    table = pq.read_table(path)
    index = table.schema.get_field_index("turn")
    rewrite(path, lambda rows: rows, table.schema.set(index, pa.field("turn", pa.int64())))
    report = check_lake(home, config=CheckConfig(write=False))
    assert failed_ids(report) == {"contract.parquet-schema"}
    (result,) = [r for r in report.results if r.id == "contract.parquet-schema"]
    assert "turn: expected int32, found int64" in result.sample[0]["problems"]


def test_a_lake_written_before_contract_version_2_passes_its_new_columns_reading_null(tmp_path) -> None:

    old = Layout.at(tmp_path / "old")  # the lake of the contract-v1 writer (tests/data/lake_v1)
    old.home.mkdir(parents=True)
    for folder in ("lake", "quarantine"):
        shutil.copytree(Path(__file__).parents[1] / "data" / "lake_v1" / folder, old.home / folder)
    migrate(old)  # lake format 2 (no file facts in its log) to 3
    report = check_lake(old, config=CheckConfig(write=False, entropy_floor=0.0))
    checked = {r.id: r.success for r in report.results}
    for expectation in ("contract.parquet-schema", "range.schema_version", "set.outcome", "set.lineup[].kind"):
        assert checked[expectation], expectation
    assert failed_ids(report, None) == {"episode.one-end"}  # the fixture's games are cut short: not this test's
    assert report.rows == 20  # the live rows (a retired batch's are not checked)


def test_offending_rows_are_sampled_with_their_keys_and_lineage(home: Layout) -> None:
    rewrite(lake_file(home, "forge"), lambda rows: first(rows, ANY, set_field("turn", -7)))
    report = check_lake(home, LakeScope(source="forge"), CheckConfig(write=False))
    (result,) = [r for r in report.results if r.id == "range.turn"]
    assert result.unexpected_count == 1 and result.observed["values_in_sample"] == {"-7": 1}
    assert set(result.sample[0]) == {"turn", "game_id", "seat", "decision_index", "batch_id", "source_line"}


def test_a_collapsed_policy_generation_blocks_and_drift_is_measured_against_the_previous_one(
    home: Layout, tmp_path
) -> None:
    ingest_rows(home, tmp_path, "ppo-2.jsonl", policy_games(15, lambda i: "pass", 2, "p2"))
    report = check_lake(home, LakeScope(source="ppo", generation=2), CheckConfig(write=False))
    assert failed_ids(report) == {"collapse.policy"} and failed_ids(report, "warning") == {"drift.actions"}
    (group,) = [m for m in report.metrics if m.source == "ppo"]
    assert group.entropy_bits == 0.0 and group.drift is not None and group.drift.reference == "ppo generation 1"
    # JS(uniform over 8, all on one action) = (KL(u||m) + KL(point||m)) / 2 with m = 1/16 (x7) and 9/16
    expected = (7 / 8 + math.log2(2 / 9) / 8 + math.log2(16 / 9)) / 2
    assert group.drift.js_bits == pytest.approx(expected)
    assert check_lake(home, LakeScope(source="ppo", generation=2), CheckConfig(write=False, entropy_floor=0.0)).passed


def _batch_ids(layout: Layout, generation: int) -> list[str]:
    return sorted(
        p.stem.removeprefix("batch-") for p in layout.lake.glob(f"source=ppo/generation={generation}/batch-*.parquet")
    )


def test_a_small_collapsed_batch_blocks_on_evidence_not_on_a_row_count(home: Layout, tmp_path) -> None:
    # 193 rows of one action (the hostile report's case): far too many to be chance, whatever a row count says
    rows = policy_games(10, lambda i: "pass", 3, "p3")[:193]
    ingest_rows(home, tmp_path, "ppo-3.jsonl", rows)
    report = check_lake(home, LakeScope(source="ppo", generation=3), CheckConfig(write=False))
    assert "collapse.policy" in failed_ids(report) and not report.passed
    (result,) = [r for r in report.results if r.id == "collapse.policy"]
    assert result.sample[0]["evidence"] == "its own rows" and result.observed["upper_95"]["ppo/gen=3"] < 0.5


def test_a_batch_too_small_to_tell_passes_with_a_warning_on_screen(home: Layout, tmp_path) -> None:
    from typer.testing import CliRunner

    from toolkit.cli.main import app

    ingest_rows(home, tmp_path, "ppo-4.jsonl", policy_games(1, lambda i: "pass", 4, "p4")[:6])
    report = check_lake(home, LakeScope(source="ppo", generation=4), CheckConfig(write=False))
    assert "collapse.policy" not in failed_ids(report)
    (result,) = [r for r in report.results if r.id == "collapse.policy"]
    assert result.success and "too few rows to tell" in result.caveat and "ppo/gen=4 (6 rows" in result.caveat
    shown = CliRunner().invoke(app, ["--home", str(home.home), "check", "lake", "--source", "ppo", "--generation", "4"])
    assert "warning: collapse.policy: too few rows to tell" in shown.output


def test_a_collapsed_run_split_into_small_batches_cannot_pass_one_by_one(home: Layout, tmp_path) -> None:
    rows = policy_games(4, lambda i: "pass", 5, "p5")
    for k in range(12):  # 12 batches of 6 rows, each alone too small to tell (see the test above)
        ingest_rows(home, tmp_path, f"ppo-5-{k}.jsonl", rows[6 * k : 6 * (k + 1)])
    batches = _batch_ids(home, 5)
    assert len(batches) == 12
    for batch in batches:
        report = check_lake(home, LakeScope(batch=batch), CheckConfig(write=False))
        (result,) = [r for r in report.results if r.id == "collapse.policy"]
        assert not result.success and result.sample[0]["evidence"].startswith("pooled with every committed batch")


def test_a_small_healthy_batch_passes_without_a_warning(home: Layout, tmp_path) -> None:
    ingest_rows(home, tmp_path, "ppo-6.jsonl", policy_games(2, lambda i: MACROS[i % 8], 6, "p6"))
    report = check_lake(home, LakeScope(source="ppo", generation=6), CheckConfig(write=False))
    (result,) = [r for r in report.results if r.id == "collapse.policy"]
    assert result.success and result.caveat is None


def test_engine_data_with_low_entropy_only_warns(home: Layout) -> None:
    rewrite(
        lake_file(home, "sim"),
        lambda rows: [
            r | {"action": {**r["action"], "macro": "pass", "index": 7}, "legal_actions": [True] * 8} for r in rows
        ],
    )
    report = check_lake(home, LakeScope(source="sim"), CheckConfig(write=False))
    assert report.passed and failed_ids(report, "warning") == {"collapse.other"}


def test_the_scope_picks_partitions_and_an_empty_scope_is_an_error(home: Layout) -> None:
    report = check_lake(home, LakeScope(source="ppo", generation=1), CheckConfig(write=False))
    assert report.rows == 320 and {m.key for m in report.metrics} == {"ppo/gen=1", "*/gen=-"}
    with pytest.raises(CheckError, match="no lake rows match"):
        check_lake(home, LakeScope(source="ppo", generation=9))


def test_the_report_is_written_as_json_and_html_and_read_back(home: Layout) -> None:
    report = check_lake(home, LakeScope(source="forge"))
    assert report.paths["json"].startswith("reports/")  # relative to the data root
    stored = GateReport.model_validate(json.loads(home.resolve(report.paths["json"]).read_text()))
    assert stored.model_dump() == report.model_dump()
    page = home.resolve(report.paths["html"]).read_text()
    assert page.startswith("<!doctype html>") and "lake gate PASSED" in page and "key.unique" in page


def test_a_suite_inside_the_data_root_is_recorded_relative_to_it(home: Layout) -> None:
    import shutil

    from toolkit.checks.suite import default_suite_path

    inside = home.home / "suites" / "lake.json"
    inside.parent.mkdir()
    shutil.copy(default_suite_path("lake"), inside)
    report = check_lake(home, LakeScope(source="forge"), CheckConfig(suite=inside, write=False))
    assert report.suite["path"] == "suites/lake.json"
    packaged = check_lake(home, LakeScope(source="forge"), CheckConfig(write=False))
    assert packaged.suite["path"] == str(default_suite_path("lake").resolve())  # outside the root: absolute


def test_raise_if_blocked_stops_the_caller(home: Layout) -> None:
    rewrite(lake_file(home, "forge"), _dup_non_terminal)
    report = check_lake(home)
    with pytest.raises(GateFailedError, match="key.unique") as caught:
        report.raise_if_blocked()
    assert caught.value.report is report and caught.value.exit_code == 1


def test_the_lake_suite_knows_every_source_distill_itself_writes() -> None:
    """The warning for an unknown source is for other people's typos: the
    sources the vocabulary names (the simulator's random player, PPO
    evaluation games among them) must not trip it."""
    from toolkit.checks.suite import DEFAULT_SUITES, SUITES_DIR, load_suite
    from toolkit.schema.vocab import KNOWN_SOURCES

    suite = load_suite(SUITES_DIR / DEFAULT_SUITES["lake"], "lake")
    [known] = [e for e in suite.expectations if e.id == "set.source"]
    assert known.kwargs["value_set"] == list(KNOWN_SOURCES)
    assert {"random", "ppo-eval"} <= set(KNOWN_SOURCES)
