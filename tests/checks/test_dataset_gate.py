"""The dataset suite on real builds: passes clean; each crafted break fails exactly the expectation it targets."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.checks.conftest import Rows, failed_ids, first, rewrite, set_field
from toolkit.checks.gate import CheckConfig, check_dataset
from toolkit.checks.report_files import read_report
from toolkit.datasets.dataset import HOLDOUT, MANIFEST_FILE, TRAIN, open_dataset
from toolkit.errors import BuildError
from toolkit.layout import Layout

ANY: Callable[[dict[str, Any]], bool] = lambda row: True  # noqa: E731
NO_WRITE = CheckConfig(write=False)


def _train(home: Layout, name: str = "ratio") -> list[Path]:
    return open_dataset(home, name).files(TRAIN)


def _every_train_row(
    home: Layout, name: str, change: Callable[[dict[str, Any]], None], source: str | None = None
) -> None:
    def apply(rows: Rows) -> Rows:
        for row in rows:
            if source is None or row["source"] == source:
                change(row)
        return rows

    for path in _train(home, name):
        rewrite(path, apply)


@pytest.mark.parametrize("name", ["ratio", "shares"])
def test_clean_builds_pass_every_expectation(home: Layout, name: str) -> None:
    report = check_dataset(home, name, NO_WRITE)
    assert report.passed and not failed_ids(report, None), [r for r in report.results if not r.success]
    dataset = open_dataset(home, name)
    assert report.rows == dataset.manifest.splits[TRAIN].rows + dataset.manifest.splits[HOLDOUT].rows
    assert report.scope == {"name": name, "fingerprint": dataset.fingerprint}


def _nan_feature(row: dict[str, Any]) -> None:
    row["features"][3] = math.nan


def _illegal_label(row: dict[str, Any]) -> None:
    row["legal_mask"][row["label"]] = False


def _same_key_as_previous(rows: Rows) -> Rows:
    a, b = rows[0], rows[1]
    b.update(game_id=a["game_id"], seat=a["seat"], decision_index=a["decision_index"])
    return rows


ROW_CASES: list[tuple[str, Callable[[Rows], Rows]]] = [
    ("not-null.label", lambda rows: first(rows, ANY, set_field("label", None))),
    ("range.label", lambda rows: first(rows, ANY, set_field("label", 9))),
    ("range.sample_weight", lambda rows: first(rows, ANY, set_field("sample_weight", 0.0))),
    ("set.label_source", lambda rows: first(rows, ANY, set_field("label_source", "guessed"))),
    ("pattern.source", lambda rows: first(rows, ANY, set_field("source", "Forge Engine"))),
    ("key.unique", _same_key_as_previous),
    ("features.sized-finite", lambda rows: first(rows, ANY, _nan_feature)),
    ("label.legal", lambda rows: first(rows, ANY, _illegal_label)),
]


@pytest.mark.parametrize(("expected", "change"), ROW_CASES, ids=[c[0] for c in ROW_CASES])
def test_a_crafted_row_break_fails_exactly_its_expectation(
    home: Layout, expected: str, change: Callable[[Rows], Rows]
) -> None:
    rewrite(_train(home)[0], change)
    report = check_dataset(home, "ratio", NO_WRITE)
    assert failed_ids(report) == {expected}
    (result,) = [r for r in report.results if r.id == expected]
    assert result.unexpected_count and result.sample


def test_a_non_finite_feature_is_shown_by_its_row_key(home: Layout) -> None:
    path = _train(home)[0]
    rewrite(path, lambda rows: [_nan_feature(row) for row in rows[5:7]] and rows)
    report = check_dataset(home, "ratio", NO_WRITE)
    (result,) = [r for r in report.results if r.id == "features.sized-finite"]
    keys = pq.read_table(path, columns=["game_id", "seat", "decision_index"]).slice(5, 2).to_pylist()
    assert (result.unexpected_count, result.sample) == (2, keys)


def test_a_game_in_both_splits_fails_disjointness(home: Layout) -> None:
    dataset = open_dataset(home, "ratio")
    train_game = pq.read_table(dataset.files(TRAIN)[0], columns=["game_id"]).column(0)[0].as_py()
    path = dataset.files(HOLDOUT)[0]
    moved = pq.read_table(path, columns=["game_id"]).column(0)[0].as_py()

    def rename(rows: Rows) -> Rows:  # a whole holdout game takes a train game's id (counts unchanged)
        for row in rows:
            if row["game_id"] == moved:
                row.update(game_id=train_game, decision_index=row["decision_index"] + 100_000)
        return rows

    rewrite(path, rename)
    report = check_dataset(home, "ratio", NO_WRITE)
    assert failed_ids(report) == {"splits.disjoint"}
    (result,) = [r for r in report.results if r.id == "splits.disjoint"]
    assert result.sample == [{"game_id": train_game}]


def test_shares_off_target_fail_the_share_expectation(home: Layout) -> None:
    _every_train_row(home, "shares", lambda row: row.update(sample_weight=row["sample_weight"] * 3), source="forge")
    report = check_dataset(home, "shares", NO_WRITE)
    assert failed_ids(report) == {"shares.within-tolerance"}
    (result,) = [r for r in report.results if r.id == "shares.within-tolerance"]
    assert result.observed["forge"]["measured"] > result.observed["forge"]["target"] + 0.02


def test_a_weighted_source_without_train_rows_fails(home: Layout) -> None:
    _every_train_row(home, "ratio", lambda row: row.update(source="forge"), source="sim")
    report = check_dataset(home, "ratio", NO_WRITE)
    assert failed_ids(report) == {"shares.sources-nonempty"}


def test_a_build_without_a_reference_source_has_an_empty_holdout_and_fails_saying_why(home: Layout) -> None:
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig

    build_dataset(home, BuildConfig(name="ppo-only", weights={"ppo": 1.0}, sources=["ppo"]))
    report = check_dataset(home, "ppo-only", NO_WRITE)
    assert "splits.holdout-nonempty" in failed_ids(report)
    (result,) = [r for r in report.results if r.id == "splits.holdout-nonempty"]
    assert result.observed["holdout_rows"] == 0 and result.observed["reference_sources"] == ["forge"]
    assert result.sample == [{"holdout_rows": 0, "reference_sources": "forge", "sources_in_build": "ppo"}]


def test_too_many_inferred_labels_fail(home: Layout) -> None:
    _every_train_row(home, "ratio", lambda row: row.update(label_source="card_role"))
    report = check_dataset(home, "ratio", NO_WRITE)
    assert failed_ids(report) == {"labels.inferred-share"}


def test_row_counts_must_equal_the_manifest(home: Layout) -> None:
    dataset = open_dataset(home, "ratio")
    raw = json.loads((dataset.root / MANIFEST_FILE).read_text())
    raw["splits"][TRAIN]["rows"] += 1
    (dataset.root / MANIFEST_FILE).write_text(json.dumps(raw))
    report = check_dataset(home, "ratio", NO_WRITE)
    assert failed_ids(report) == {"manifest.row-counts"}


def test_a_part_off_the_dataset_schema_fails(home: Layout) -> None:
    path = _train(home)[0]
    schema = pq.read_schema(path)
    index = schema.get_field_index("sample_weight")
    rewrite(path, lambda rows: rows, schema.set(index, pa.field("sample_weight", pa.float64())))
    assert failed_ids(check_dataset(home, "ratio", NO_WRITE)) == {"contract.parquet-schema"}


def test_a_collapsed_policy_source_blocks_the_dataset(home: Layout) -> None:
    _every_train_row(home, "ratio", lambda row: row.update(label=7, legal_mask=[True] * 8), source="ppo")
    report = check_dataset(home, "ratio", NO_WRITE)
    assert failed_ids(report) == {"collapse.policy"}


def test_drift_against_a_baseline_report_warns(home: Layout) -> None:
    clean = check_dataset(home, "ratio")
    written = home.resolve(clean.paths["json"])
    raw = json.loads(written.read_text())
    for group in raw["metrics"]:
        group["actions"] = {name: (100 if name == "pass" else 0) for name in group["actions"]}
    baseline = written.with_name("crafted-baseline.json")
    baseline.write_text(json.dumps(raw))
    report = check_dataset(home, "ratio", CheckConfig(write=False, baseline=baseline))
    assert report.passed and failed_ids(report, "warning") == {"drift.actions"}
    assert all(m.drift is not None and m.drift.reference == f"report {clean.report_id}" for m in report.metrics)
    assert read_report(written).passed


def test_an_unknown_dataset_is_a_build_error(home: Layout) -> None:
    with pytest.raises(BuildError, match="no dataset named"):
        check_dataset(home, "nope")


def test_drift_is_measured_against_the_previous_build_of_the_same_name(home: Layout, tmp_path: Path) -> None:
    from tests.checks.conftest import ingest_rows, policy_games
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig

    previous = open_dataset(home, "ratio")
    ingest_rows(home, tmp_path, "ppo-2.jsonl", policy_games(16, lambda i: "pass", 2, "p2"))
    build_dataset(home, BuildConfig(name="ratio", weights={"forge": 1.0, "sim": 1.0, "ppo": 1.0}))
    report = check_dataset(home, "ratio", NO_WRITE)
    assert report.scope["fingerprint"] != previous.fingerprint
    by_key = {m.key: m for m in report.metrics}
    assert by_key["forge/gen=-"].drift.js_bits == pytest.approx(0.0)  # the same forge games in both builds
    assert by_key["forge/gen=-"].drift.reference == f"build {previous.fingerprint[:12]}"
    assert by_key["ppo/gen=2"].drift is None  # generation 2 did not exist before
    assert by_key["ppo/gen=1"].drift.js_bits == pytest.approx(0.0)
    assert failed_ids(report) == {"collapse.policy"}  # generation 2 is all "pass"
