"""How ``distill check labels`` scores a build: :class:`LabelCheckConfig`, light to import (the CLI builds its
options from it at start-up; :mod:`toolkit.quality.labels` runs the check)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from toolkit.limits import MAX_BATCH, MAX_SEED, MAX_UPDATES
from toolkit.train.config import LrSchedule, PolicySpec


class LabelCheckConfig(BaseModel):
    """How ``distill check labels`` scores a build; each field is a flag or a YAML key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fingerprint: str | None = Field(None, description="A specific build; default: the latest (--fingerprint).")
    folds: int = Field(5, ge=2, le=20, description="k of the k-fold models; folds hold out whole games (--folds).")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds the folds and the models (--seed).")
    epochs: int = Field(
        10,
        ge=1,
        le=1000,
        description="Passes over a fold's training rows, within min_steps and max_steps gradient steps (both 1,000 "
        "by default: then every fold model takes 1,000 steps) (--epochs).",
    )
    min_steps: int = Field(
        1000,
        ge=1,
        le=MAX_UPDATES,
        description="Gradient steps of a fold model at least (small builds need many passes); at most max_steps "
        "(--min-steps).",
    )
    max_steps: int = Field(
        1000,
        ge=1,
        le=MAX_UPDATES,
        validate_default=True,  # checked against min_steps even when left at its default
        description="Gradient steps of a fold model at most (bounds the time on large builds) (--max-steps).",
    )
    batch_size: int = Field(1024, ge=1, le=MAX_BATCH, description="Rows per gradient step.")
    learning_rate: float = Field(
        8e-3, gt=0, le=1, description="Adam learning rate of the fold models, at the start (--learning-rate)."
    )
    schedule: LrSchedule = Field(
        "linear",
        description="The learning rate over a fold model's steps: decayed linearly to zero, or constant (--schedule).",
    )
    policy: PolicySpec = Field(default_factory=PolicySpec, description="The network: the student's (policy.pi).")
    filter_by: Literal[
        "low_self_confidence",
        "low_normalized_margin",
        "both",
        "prune_by_noise_rate",
        "prune_by_class",
        "confident_learning",
        "predicted_neq_given",
    ] = Field("low_self_confidence", description="cleanlab's find_label_issues filter (--filter-by).")
    quality_method: Literal["self_confidence", "normalized_margin", "confidence_weighted_entropy"] = Field(
        "self_confidence", description="cleanlab's get_label_quality_scores method."
    )
    teacher: Path | None = Field(
        None, description="A bc or flat ppo checkpoint: its probability of each logged action, and KL (--teacher)."
    )
    write: bool = Field(
        True,
        description="Write the scores beside the build and the HTML report; off: score only (--write/--no-write).",
    )
    torch_threads: int = Field(
        1, ge=1, le=64, description="torch threads of each fold model (1 is fastest for small nets on 2 cores)."
    )
    workers: int = Field(
        2,
        ge=1,
        le=64,
        description="Fold models trained at once, each on its own thread; the scores are the same for any number "
        "(--workers).",
    )

    @field_validator("max_steps")
    @classmethod
    def _at_least_min_steps(cls, value: int, info: ValidationInfo) -> int:
        least = info.data.get("min_steps")  # absent when min_steps itself was refused
        if least is not None and value < least:
            raise PydanticCustomError(
                "steps_order", "{max_steps} is below min_steps ({min_steps})", {"max_steps": value, "min_steps": least}
            )
        return value
