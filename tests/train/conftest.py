"""Shared pieces of the training tests: a small BC-shaped checkpoint and tiny PPO configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from toolkit.train import checkpoints
from toolkit.train.config import ExportConfig, PolicySpec, PPOConfig
from toolkit.train.policy import ActorNet

SMALL = PolicySpec(pi=(32, 32), vf=(32, 32))


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def save_actor(folder: Path, actor: ActorNet, *, run_id: str = "t", tag: str = "final") -> Path:
    """A real BC checkpoint of ``actor`` (as ``train bc`` writes it)."""
    return checkpoints.save_checkpoint(
        folder,
        actor.state_dict(),
        kind="bc",
        run_id=run_id,
        tag=tag,
        arch=actor.spec.model_dump(mode="json"),
        dataset=checkpoints.DatasetRef(name="tiny", fingerprint="f" * 64),
    )


@pytest.fixture
def bc_checkpoint(tmp_path: Path) -> Path:
    torch.manual_seed(3)
    actor = ActorNet(SMALL)
    with torch.no_grad():  # a sharp policy, far from the uniform one a fresh PPO head gives
        actor.action_net.weight.mul_(50)
    return save_actor(tmp_path / "bc", actor)


def tiny_ppo(**overrides) -> PPOConfig:
    base = dict(
        total_steps=256,
        n_envs=2,
        n_steps=64,
        batch_size=64,
        n_epochs=2,
        eval_every=128,
        eval_games=8,
        policy=SMALL,
        run_id="test",
        export=ExportConfig(games=8),
    )
    base.update(overrides)
    return PPOConfig(**base)


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory):
    """A real built dataset: 60 simulated heuristic/random games, ingested, built (train + fixed holdout)."""
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    root = tmp_path_factory.mktemp("bcdata")
    layout = Layout.at(root / "home")
    logs = simulate(
        SimulateConfig(games=60, seed=21, players=("heuristic", "heuristic", "tuned", "random"), out=root / "logs")
    )
    ingest_paths(logs.files, layout)
    info = build_dataset(layout, BuildConfig(name="tiny", sources=["forge"]))
    return layout, info.dataset
