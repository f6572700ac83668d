"""A policy checkpoint the game-job tests ship to workers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from toolkit.train.policy import ActorNet

from ..train.conftest import SMALL, save_actor


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real BC checkpoint with a sharp (far from uniform) policy."""
    torch.manual_seed(5)
    actor = ActorNet(SMALL)
    with torch.no_grad():
        actor.action_net.weight.mul_(50)
    return save_actor(tmp_path_factory.mktemp("bc"), actor)
