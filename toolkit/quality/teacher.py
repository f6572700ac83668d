"""A teacher's view of the logged labels: its probability of each, and the divergence from the logged choice.

The teacher is a bc or flat ppo checkpoint of the build's features (a
recurrent one has no per-decision probabilities here). ``-log p_teacher(logged)``
is the KL divergence between the logged one-hot choice and the teacher's
distribution; it is capped at ``-log(MIN_P)`` (~27.6 nats) for a probability of 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np

from toolkit.datasets.dataset import Dataset
from toolkit.errors import LabelCheckError
from toolkit.train.policy import ActorNet

MIN_P: Final = 1e-12


def load_teacher(path: Path, dataset: Dataset) -> ActorNet:
    """The teacher's actor, after checking it encodes the build's features.

    Raises:
        LabelCheckError: the checkpoint is unreadable, of other features than the build, or recurrent.
    """
    from toolkit.errors import TrainError
    from toolkit.train.agents import load_agent
    from toolkit.train.checkpoints import read_card_as_written

    hint = "pass --teacher a bc or flat ppo checkpoint trained on a build of these features (or drop --teacher)"
    try:
        card = read_card_as_written(path, hint)
    except TrainError as error:
        raise LabelCheckError(f"--teacher {path}: {error.message}", hint=hint) from None
    spec = dataset.manifest.features
    if (card.feature_version, card.feature_size) != (spec.version, spec.size):
        raise LabelCheckError(
            f"--teacher {path} was trained on features v{card.feature_version} ({card.feature_size} floats); "
            f"dataset {dataset.name} has v{spec.version} ({spec.size})",
            hint=f"pass a teacher trained on features v{spec.version} (retrain it on a build of this Distill), "
            "or drop --teacher",
        )
    try:
        agent = load_agent(path)
    except TrainError as error:
        raise LabelCheckError(f"--teacher {path}: {error.message}", hint=hint) from None
    if agent.actor is None:
        raise LabelCheckError(
            f"--teacher {path} is a recurrent policy: it has no per-decision probabilities here", hint=hint
        )
    return agent.actor


def teacher_probability(actor: ActorNet, features: np.ndarray, masks: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The teacher's probability of each logged action (masked to the legal actions and renormalised)."""
    from toolkit.train.bc import masked_probabilities

    probs = masked_probabilities(actor, features, masks)
    return probs[np.arange(len(labels)), labels]


def teacher_kl(p_label: np.ndarray) -> np.ndarray:
    """``-log p`` of the logged actions, in nats (capped at ``-log(MIN_P)``)."""
    return -np.log(np.maximum(p_label, MIN_P))
