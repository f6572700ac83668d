"""Training curves where practitioners look: CSV always, TensorBoard event files when installed, for BC and PPO."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from tests.train.conftest import SMALL, tiny_ppo
from toolkit.errors import TrainError
from toolkit.train import checkpoints, metrics
from toolkit.train.bc import train_bc
from toolkit.train.config import BCConfig
from toolkit.train.metrics import MetricsWriter
from toolkit.train.ppo import train_ppo


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series of the TensorBoard event files under ``folder``, by tag."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    [run] = [p for p in folder.iterdir() if p.is_dir()]
    events = EventAccumulator(str(run))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_bc_writes_one_csv_row_and_one_scalar_per_epoch(tiny_dataset, tmp_path: Path) -> None:
    layout, _ = tiny_dataset
    result = train_bc(
        layout, BCConfig(dataset="tiny", epochs=3, select="last_epoch", policy=SMALL, run_id="t"), out=tmp_path
    )
    table = rows(tmp_path / "bc-t-metrics-epoch.csv")
    assert [int(r["epoch"]) for r in table] == [1, 2, 3]
    assert [float(r["holdout_accuracy"]) for r in table] == [e.holdout_accuracy for e in result.epochs]
    assert {"train_loss", "holdout_loss", "holdout_accuracy"} <= set(table[0])
    if metrics.tensorboard_available():
        curves = scalars(tmp_path / "tensorboard")
        assert [step for step, _ in curves["bc/epoch/train_loss"]] == [1, 2, 3]
        assert [v for _, v in curves["bc/epoch/holdout_accuracy"]] == pytest.approx(
            [e.holdout_accuracy for e in result.epochs]
        )


def test_ppo_writes_its_updates_and_evaluations(tmp_path: Path) -> None:
    result = train_ppo(tiny_ppo(export={"enabled": False}), tmp_path)
    updates = rows(tmp_path / "ppo-test-metrics-update.csv")
    assert [int(r["steps"]) for r in updates] == [u.steps for u in result.updates]
    assert {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm"} <= set(updates[0])
    evaluations = rows(tmp_path / "ppo-test-metrics-evaluation.csv")
    assert [float(r["win_rate"]) for r in evaluations] == [e.result.win_rate for e in result.evaluations]
    if metrics.tensorboard_available():
        curves = scalars(tmp_path / "tensorboard")
        assert [step for step, _ in curves["ppo/update/entropy"]] == [u.steps for u in result.updates]
        assert [step for step, _ in curves["ppo/evaluation/win_rate"]] == [e.steps for e in result.evaluations]


def test_tensorboard_on_request_without_the_package_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(metrics, "tensorboard_available", lambda: False)
    with pytest.raises(TrainError, match="tensorboard") as error:
        MetricsWriter(tmp_path, "x", "bc", "r", tensorboard=True)
    assert "distill[tensorboard]" in error.value.hint
    with MetricsWriter(tmp_path, "y", "bc", "r") as writer:  # without it, CSV and JSON lines only
        writer.write("epoch", 1, {"loss": 0.5})
    assert rows(tmp_path / "y-epoch.csv") == [{"loss": "0.5"}] and not (tmp_path / "tensorboard").exists()


def test_event_files_do_not_change_what_is_trained(tmp_path: Path) -> None:
    config = tiny_ppo(total_steps=128, eval_every=0, export={"enabled": False})
    with_board = train_ppo(config.model_copy(update={"tensorboard": None}), tmp_path / "a")
    without = train_ppo(config.model_copy(update={"tensorboard": False}), tmp_path / "b")
    _, ta = checkpoints.load_tensors(with_board.final)
    _, tb = checkpoints.load_tensors(without.final)
    assert all(torch.equal(ta[k], tb[k]) for k in ta)
    assert not (tmp_path / "b" / "tensorboard").exists()
