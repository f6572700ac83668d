"""distill check labels: planted flips found, conflicting duplicates found exactly, bad input refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from typer.testing import CliRunner

from tests.datasets.conftest import game_records
from tests.quality.conftest import FAST, Noisy
from toolkit.cli.main import app
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.scores import read_scores, read_scores_info
from toolkit.errors import LabelCheckError
from toolkit.features import FEATURE_VERSION
from toolkit.layout import Layout
from toolkit.quality.labels import check_labels
from toolkit.schema import columns as col
from toolkit.schema import scores as sc
from toolkit.train import checkpoints
from toolkit.train.config import PolicySpec
from toolkit.train.policy import ActorNet

TINY_NET = FAST.model_copy(update={"policy": PolicySpec(pi=(16,), vf=(16,)), "min_steps": 20, "max_steps": 20})


def _key(row: dict) -> tuple[str, int, int]:
    return row[col.GAME_ID], row[col.SEAT], row[col.DECISION_INDEX]


def test_planted_flips_are_found(noisy: Noisy) -> None:
    """5% of the decisions with a choice relabelled: most flagged are flips, most flips are flagged, and few
    clean decisions are flagged. Precision's floor is scaled to the suite's small, fast models (120 games, a
    64x64 net, 600 steps a fold): bench/bench_labels.py holds the default settings to 75% / 75% / 3%."""
    rows = read_scores(noisy.layout, noisy.dataset).to_pylist()
    flagged = {_key(r) for r in rows if r[sc.FLAGGED]}
    found = flagged & noisy.flipped
    assert len(noisy.flipped) > 400
    assert len(found) / len(flagged) >= 0.65
    assert len(found) / len(noisy.flipped) >= 0.75
    assert len(flagged - noisy.flipped) / len(rows) <= 0.03
    assert noisy.result.flagged == len(flagged) == len(noisy.result.issues)


def test_a_forced_move_is_never_an_issue(noisy: Noisy) -> None:
    rows = read_scores(noisy.layout, noisy.dataset).to_pylist()
    forced = [r for r in rows if r[sc.LEGAL_COUNT] == 1]
    assert forced and not any(r[sc.FLAGGED] or r[sc.SCORED] for r in forced)
    assert all(r[sc.LABEL_QUALITY] is None and r[sc.P_LABEL] == 1.0 for r in forced)


def test_scores_are_keyed_to_the_build_and_summarised(noisy: Noisy) -> None:
    table = read_scores(noisy.layout, noisy.dataset)
    manifest = noisy.dataset.manifest
    assert table.num_rows == manifest.splits["train"].rows + manifest.splits["holdout"].rows
    assert set(table.column(sc.LAKE_VERSION).to_pylist()) == {manifest.lake_version}
    info = read_scores_info(noisy.layout, noisy.dataset)
    assert info is not None and info.flagged == noisy.result.flagged
    (group,) = noisy.result.groups
    assert (group.source, group.generation, group.flagged) == ("forge", None, noisy.result.flagged)
    assert group.low < group.rate < group.high
    issue = noisy.result.issues[0]
    assert issue.score == min(i.score for i in noisy.result.issues)
    assert Path(noisy.layout.resolve(noisy.result.paths["html"])).read_text().count("label issues") >= 1


def test_the_same_build_and_seed_give_the_same_scores(noisy: Noisy) -> None:
    config = TINY_NET.model_copy(update={"write": False})
    first, again = (check_labels(noisy.layout, "noisy", config) for _ in range(2))
    assert first.issues and [i.model_dump() for i in again.issues] == [i.model_dump() for i in first.issues]


def test_fold_models_trained_at_once_give_the_scores_they_give_one_at_a_time(noisy: Noisy) -> None:
    """The networks are made in fold order before any trains: how many train at once changes no probability."""
    from toolkit.quality.folds import out_of_sample_probabilities

    rng = np.random.default_rng(5)
    features = rng.normal(size=(3_000, 117)).astype(np.float32)
    masks = rng.random((3_000, 8)) < 0.6
    masks[:, 0] = True
    labels = np.where(masks[:, 1], 1, 0).astype(np.int64)
    weights = np.ones(3_000, np.float32)
    fold = np.arange(3_000) % 3
    done: list[int] = []
    common = {"folds": 3, "policy": TINY_NET.policy, "steps": lambda n: 40, "batch_size": 256, "learning_rate": 1e-2}
    one, three = (
        out_of_sample_probabilities(
            features, labels, masks, weights, fold, seed=4, workers=workers, on_fold=done.append, **common
        )
        for workers in (1, 3)
    )
    assert np.array_equal(one, three) and done == [1, 2, 3, 1, 2, 3]
    assert np.allclose(one.sum(1), 1) and not one[~masks].any()
    config = TINY_NET.model_copy(update={"write": False})
    solo, pooled = (check_labels(noisy.layout, "noisy", config.model_copy(update={"workers": w})) for w in (1, 2))
    assert [i.model_dump() for i in solo.issues] == [i.model_dump() for i in pooled.issues]


def test_a_failing_fold_stops_the_folds_still_training() -> None:
    """One fold model fails at once; the others (minutes of steps) stop at their next step and the error is raised."""
    import time

    from toolkit.quality.folds import out_of_sample_probabilities

    rng = np.random.default_rng(6)
    features = rng.normal(size=(3_001, 117)).astype(np.float32)
    masks = np.ones((3_001, 8), bool)
    labels = rng.integers(0, 8, 3_001)
    fold = np.arange(3_001) % 3  # fold 0 holds 1,001 rows: its model trains on 2,000, the others on 2,001

    def steps(rows: int) -> int:
        if rows == 2_000:
            raise RuntimeError("fold 0 fails")
        return 1_000_000  # minutes: a fold that did not stop fails the time bound below rather than hanging

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="fold 0 fails"):
        out_of_sample_probabilities(
            features,
            labels,
            masks,
            np.ones(3_001, np.float32),
            fold,
            folds=3,
            policy=TINY_NET.policy,
            steps=steps,
            batch_size=64,
            learning_rate=1e-3,
            seed=0,
            workers=3,
        )
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("schedule", ["linear", "constant"])
def test_a_fold_models_learning_rate_follows_its_schedule(monkeypatch: pytest.MonkeyPatch, schedule: str) -> None:
    from toolkit.train import bc

    rates: list[float] = []
    step = bc._tensor_step

    def recording(actor, optimizer, *tensors):  # type: ignore[no-untyped-def]
        rates.append(optimizer.param_groups[0]["lr"])
        return step(actor, optimizer, *tensors)

    monkeypatch.setattr(bc, "_tensor_step", recording)
    rng = np.random.default_rng(7)
    features = rng.normal(size=(300, 117)).astype(np.float32)
    masks, labels, weights = np.ones((300, 8), bool), rng.integers(0, 8, 300), np.ones(300, np.float32)
    bc.fit_rows(
        features, labels, masks, weights, np.arange(300), policy=TINY_NET.policy, steps=10, batch_size=64,
        learning_rate=0.008, schedule=schedule,  # type: ignore[arg-type]
    )  # fmt: skip
    expected = [0.008 * (10 - i) / 10 for i in range(10)] if schedule == "linear" else [0.008] * 10
    assert rates == pytest.approx(expected, rel=1e-12, abs=0)


def test_a_fold_models_steps_at_least_above_at_most_are_refused() -> None:
    from pydantic import ValidationError

    from toolkit.quality.config import LabelCheckConfig

    with pytest.raises(ValidationError, match=r"max_steps\n  1000 is below min_steps \(2000\)"):
        LabelCheckConfig(min_steps=2000, max_steps=1000)
    with pytest.raises(ValidationError, match=r"max_steps\n  1000 is below min_steps \(2000\)"):
        LabelCheckConfig(min_steps=2000)  # max_steps at its default
    out = CliRunner().invoke(app, ["check", "labels", "any", "--min-steps", "2000"])
    assert out.exit_code == 2 and "--max-steps: 1000 is below min_steps (2000)" in out.output, out.output
    assert LabelCheckConfig(min_steps=2000, max_steps=4000).min_steps == 2000


def _lake(layout: Layout, write_log: Callable[..., Path], records: list[dict]) -> None:
    from toolkit.ingest.ingest import ingest_paths

    ingest_paths([write_log("lake.jsonl", records)], layout)


def test_conflicting_duplicates_are_found_exactly(layout: Layout, write_log: Callable[..., Path]) -> None:
    """Games of two sources whose decisions repeat one state: decision 0 of every game is the same vector. The
    forge games label it cast_creature or attack_opponent (a conflict within forge), the ppo game pass (across)."""
    records = []
    for g in range(12):
        game = game_records(f"f-{g}", per_seat=3)
        for r in game:
            r["turn"] = 1 + r["decision_index"]  # every other decision a vector of its own
        game[0]["action"] = {
            **game[0]["action"],
            "macro": "attack_opponent" if g % 2 else "cast_creature",
            "index": 5 if g % 2 else 0,
        }
        records += game
    ppo = game_records("p-0", "ppo", per_seat=3)
    for r in ppo:
        r["turn"] = 1 + r["decision_index"]
    ppo[0]["action"] = {**ppo[0]["action"], "macro": "pass", "index": 7}
    _lake(layout, write_log, records + ppo)
    build_dataset(layout, BuildConfig(name="dupes", holdout={"fraction": 0.1}))
    check_labels(layout, "dupes", TINY_NET)
    from toolkit.datasets.dataset import open_dataset

    rows = read_scores(layout, open_dataset(layout, "dupes")).to_pylist()
    within = {r[col.GAME_ID] for r in rows if r[sc.CONFLICT_WITHIN_SOURCE]}
    across = {r[col.GAME_ID] for r in rows if r[sc.CONFLICT_ACROSS_SOURCES]}
    assert within == {f"f-{g}" for g in range(12)}
    assert across == {"p-0", *(f"f-{g}" for g in range(12))}
    conflicted = [r for r in rows if r[sc.CONFLICT_WITHIN_SOURCE] or r[sc.CONFLICT_ACROSS_SOURCES]]
    assert {r[col.DECISION_INDEX] for r in conflicted} == {0}


def test_too_few_games_for_the_folds_is_refused_and_writes_nothing(
    layout: Layout, write_log: Callable[..., Path]
) -> None:
    _lake(layout, write_log, [r for g in range(3) for r in game_records(f"g-{g}")])
    dataset = build_dataset(layout, BuildConfig(name="small")).dataset
    with pytest.raises(LabelCheckError, match="3 games for 5 folds") as error:
        check_labels(layout, "small", TINY_NET)
    assert error.value.exit_code == 2 and "--folds" in (error.value.hint or "")
    assert read_scores_info(layout, dataset) is None and not layout.reports.exists()


def test_a_single_label_is_refused(layout: Layout, write_log: Callable[..., Path]) -> None:
    _lake(layout, write_log, [r for g in range(12) for r in game_records(f"g-{g}")])
    build_dataset(layout, BuildConfig(name="one"))
    with pytest.raises(LabelCheckError, match="single label"):
        check_labels(layout, "one", TINY_NET)


def test_a_teacher_of_other_features_is_refused(noisy: Noisy, tmp_path: Path) -> None:
    actor = ActorNet(PolicySpec(pi=(8,), vf=(8,)))
    card = checkpoints.save_checkpoint(
        tmp_path, actor.state_dict(), kind="bc", run_id="t", tag="best", arch=actor.spec.model_dump(mode="json")
    )
    body = json.loads(card.read_text())
    card.write_text(json.dumps({**body, "feature_version": FEATURE_VERSION + 1}))
    with pytest.raises(LabelCheckError, match=f"features v{FEATURE_VERSION + 1}"):
        check_labels(noisy.layout, "noisy", FAST.model_copy(update={"teacher": card, "write": False}))


def test_a_teacher_scores_the_logged_actions(noisy: Noisy, tmp_path: Path) -> None:
    torch.manual_seed(0)
    actor = ActorNet(PolicySpec(pi=(8,), vf=(8,)))
    card = checkpoints.save_checkpoint(
        tmp_path, actor.state_dict(), kind="bc", run_id="t", tag="best", arch=actor.spec.model_dump(mode="json")
    )
    result = check_labels(noisy.layout, "noisy", TINY_NET.model_copy(update={"teacher": card, "write": False}))
    assert result.teacher is not None and 0 < (result.teacher_mean_p_label or 0) < 1


def test_the_cli_exits_2_on_bad_input(layout: Layout, write_log: Callable[..., Path]) -> None:
    _lake(layout, write_log, [r for g in range(3) for r in game_records(f"g-{g}")])
    build_dataset(layout, BuildConfig(name="small"))
    out = CliRunner().invoke(app, ["--home", str(layout.home), "check", "labels", "small", "--folds", "3"])
    assert out.exit_code == 2, out.output
    assert "lower --folds" in out.output


def test_the_sql_view_reads_the_scores(noisy: Noisy) -> None:
    out = CliRunner().invoke(
        app,
        [
            "--home",
            str(noisy.layout.home),
            "sql",
            "SELECT count(*) AS n, sum(flagged::INT) AS f FROM label_scores",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output)
    assert (row["n"], row["f"]) == (
        pq.read_metadata(noisy.layout.label_scores(noisy.dataset.name, noisy.dataset.fingerprint)).num_rows,
        noisy.result.flagged,
    )


def test_the_result_says_what_its_rate_means_and_what_to_do_and_names_the_actions(noisy: Noisy) -> None:
    from toolkit.quality.rates import CLEAN_RATE, read_rate
    from toolkit.schema.vocab import MACRO_ACTIONS

    assert read_rate(0.005, (0.004, 0.006)).startswith("about what clean logs")
    assert read_rate(0.03, (0.025, 0.035)).startswith("above what clean logs")
    assert read_rate(0.2, (0.18, 0.22)).startswith("far above") and "5% alarm" in read_rate(0.2, (0.18, 0.22))
    result = noisy.result  # planted flips: far above what clean logs give
    assert result.rate_interval[0] > 2 * CLEAN_RATE and "labels are likely wrong" in result.reading
    look, drop, _ = result.next_steps
    assert f"--drop-label-issues --label-scores {result.dataset}@{result.fingerprint}" in drop
    query = look.split('distill sql "', 1)[1].rstrip('"')
    out = CliRunner().invoke(app, ["--home", str(noisy.layout.home), "sql", query, "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert len(rows) == min(20, result.flagged)
    assert all(r["label_action"] in MACRO_ACTIONS and r["predicted_action"] in MACRO_ACTIONS for r in rows)
    assert [r["label_quality"] for r in rows] == sorted(r["label_quality"] for r in rows)
