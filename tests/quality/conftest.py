"""One noisy lake per session: the heuristic's own simulated games with 5% of the decisions with a choice
relabelled at random (the planted flips), really ingested, built and scored."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import Dataset
from toolkit.game.config import SimulateConfig
from toolkit.game.simulate import simulate
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout
from toolkit.quality.labels import LabelCheckConfig, LabelCheckResult, check_labels
from toolkit.quality.noise import Key, flip_files
from toolkit.train.config import PolicySpec

# The student's network at the loop's small size and fewer steps: the suite's time. The default (128x128, 2,000+
# steps a fold) on more games is what bench/bench_labels.py measures against the figures.
FAST = LabelCheckConfig(policy=PolicySpec(pi=(64, 64), vf=(64, 64)), min_steps=600, max_steps=600, batch_size=512)


@dataclass(frozen=True)
class Noisy:
    layout: Layout
    dataset: Dataset
    flipped: set[Key]
    result: LabelCheckResult


@pytest.fixture(scope="session")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Noisy:
    root = tmp_path_factory.mktemp("labels")
    logs = simulate(SimulateConfig(games=120, seed=7, out=root / "logs"))
    files, flipped = flip_files(logs.files, root / "noisy", rate=0.05, seed=3)
    layout = Layout.at(root / "home")
    ingest_paths(files, layout)
    dataset = build_dataset(layout, BuildConfig(name="noisy")).dataset
    return Noisy(layout, dataset, flipped, check_labels(layout, "noisy", FAST))
