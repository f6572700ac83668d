"""Behaviour cloning on a real built dataset: learns, measures the fixed holdout every epoch, is reproducible."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.train.conftest import SMALL
from toolkit.errors import BuildError
from toolkit.train import checkpoints
from toolkit.train.agents import load_agent
from toolkit.train.bc import train_bc
from toolkit.train.config import BCConfig, EvaluateConfig
from toolkit.train.evaluate import evaluate


def _config(**overrides) -> BCConfig:
    return BCConfig(**{"dataset": "tiny", "epochs": 4, "batch_size": 256, "policy": SMALL, "run_id": "t", **overrides})


def test_bc_learns_the_heuristic_and_writes_a_complete_card(tiny_dataset, tmp_path: Path) -> None:
    layout, dataset = tiny_dataset
    result = train_bc(layout, _config(epochs=6, learning_rate=3e-3), out=tmp_path)
    assert result.holdout_rows > 0 and len(result.epochs) >= 2
    first, best = result.epochs[0], result.epochs[result.best_epoch - 1]
    assert best.holdout_loss <= first.holdout_loss
    assert best.holdout_accuracy > 0.5  # majority of the scripted player's choices, from 116 features
    assert set(best.recall) >= {"pass", "attack_opponent"} and all(
        m.holdout_accuracy is not None for m in result.epochs
    )
    card = checkpoints.read_card(result.checkpoint)
    assert card.kind == "bc" and card.dataset.name == "tiny" and card.dataset.fingerprint == dataset.fingerprint
    assert card.metrics["holdout_accuracy"] == best.holdout_accuracy and len(card.metrics["epochs"]) == len(
        result.epochs
    )
    assert result.metrics.read_text().count("\n") == len(result.epochs)
    # The clone plays legally and beats random players.
    agent = load_agent(result.checkpoint)
    played = evaluate(agent.player, EvaluateConfig(opponents=("random",) * 3, games=40, seed=4))
    assert played.illegal_actions == 0 and played.win_rate > 0.25


def test_same_seed_same_weights_and_another_seed_differs(tiny_dataset, tmp_path: Path) -> None:
    """Same seed, same weights, whether the decoded split is kept in memory or read again every epoch."""
    layout, _ = tiny_dataset
    a = train_bc(layout, _config(epochs=2, class_weighting="balanced"), out=tmp_path / "a")
    b = train_bc(layout, _config(epochs=2, class_weighting="balanced", cache_mb=0), out=tmp_path / "b")
    c = train_bc(layout, _config(epochs=2, class_weighting="balanced", seed=1), out=tmp_path / "c")
    ta, tb, tc = (checkpoints.load_tensors(r.checkpoint)[1] for r in (a, b, c))
    assert all(torch.equal(ta[k], tb[k]) for k in ta)
    assert not all(torch.equal(ta[k], tc[k]) for k in ta)


def test_early_stopping_stops_when_the_holdout_stops_improving(tiny_dataset, tmp_path: Path) -> None:
    layout, _ = tiny_dataset
    result = train_bc(layout, _config(epochs=50, patience=1, min_delta=10.0), out=tmp_path)
    assert result.stopped_early and len(result.epochs) == 2 and result.best_epoch == 1


def test_last_epoch_selection_runs_every_epoch_and_keeps_the_last_weights(tiny_dataset, tmp_path: Path) -> None:
    layout, _ = tiny_dataset
    last = train_bc(layout, _config(epochs=3, patience=1, min_delta=10.0, select="last_epoch"), out=tmp_path / "last")
    assert not last.stopped_early and len(last.epochs) == 3 and last.best_epoch == 3
    early = train_bc(layout, _config(epochs=3, patience=1, min_delta=10.0), out=tmp_path / "early")
    assert early.best_epoch == 1  # same seed, same first epoch: the two runs differ by what they keep
    kept_last, kept_early = (checkpoints.load_tensors(r.checkpoint)[1] for r in (last, early))
    assert not all(torch.equal(kept_last[k], kept_early[k]) for k in kept_last)
    assert last.holdout_accuracy == last.epochs[-1].holdout_accuracy


def test_an_unknown_dataset_names_the_command_that_builds_it(tiny_dataset, tmp_path: Path) -> None:
    layout, _ = tiny_dataset
    with pytest.raises(BuildError, match="distill build"):
        train_bc(layout, _config(dataset="nope"), out=tmp_path)
