"""What ``distill check labels`` takes and gives: its config, a flagged decision, its result (read by the
stage, :mod:`toolkit.quality.labels`, and by its HTML page, :mod:`toolkit.quality.report_html`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from toolkit.datasets.scores import GroupRate
from toolkit.limits import MAX_BATCH, MAX_SEED, MAX_UPDATES
from toolkit.quality.rates import read_rate
from toolkit.train.config import PolicySpec


class LabelCheckConfig(BaseModel):
    """How ``distill check labels`` scores a build; each field is a flag or a YAML key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fingerprint: str | None = Field(None, description="A specific build; default: the latest (--fingerprint).")
    folds: int = Field(5, ge=2, le=20, description="k of the k-fold models (--folds).")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds the folds and the models (--seed).")
    epochs: int = Field(10, ge=1, le=1000, description="Passes over a fold's training rows (--epochs) ...")
    min_steps: int = Field(
        2000, ge=1, le=MAX_UPDATES, description="... but at least this many gradient steps per fold model ..."
    )
    max_steps: int = Field(
        4000, ge=1, le=MAX_UPDATES, description="... and at most this many (bounds the time on large builds)."
    )
    batch_size: int = Field(1024, ge=1, le=MAX_BATCH, description="Rows per gradient step.")
    learning_rate: float = Field(1e-3, gt=0, le=1, description="Adam learning rate of the fold models.")
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
        None, description="A bc or flat ppo checkpoint to compare the labels with (--teacher)."
    )
    write: bool = Field(True, description="Write the scores beside the build and the HTML report (--no-write: not).")
    torch_threads: int = Field(1, ge=1, le=64, description="torch threads (1 is fastest for small nets on 2 cores).")


class LabelIssue(BaseModel):
    """A flagged decision."""

    game_id: str
    seat: int
    decision_index: int
    source: str
    split: str
    label: str
    predicted: str
    score: float = Field(description="Its label quality (0 worst, 1 best).")


class LabelCheckResult(BaseModel):
    """What ``distill check labels`` found and wrote."""

    dataset: str
    fingerprint: str
    rows: int
    scored: int
    flagged: int
    rate: float
    rate_interval: tuple[float, float]
    conflicts_within_source: int
    conflicts_across_sources: int
    out_of_sample_accuracy: float = Field(description="Of the k-fold models on the scored decisions.")
    teacher: str | None = None
    teacher_mean_p_label: float | None = None
    groups: list[GroupRate]
    issues: list[LabelIssue]
    paths: dict[str, str] = Field(default_factory=dict, description="scores, record, html (stored paths).")
    config: LabelCheckConfig
    seconds: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reading(self) -> str:
        """What the rate means, against what clean logs give."""
        return read_rate(self.rate, self.rate_interval)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def next_steps(self) -> list[str]:
        """What to do with the flagged decisions: look at them, leave them out, test whether that helps."""
        build = f"{self.dataset}@{self.fingerprint}"
        worst = (
            f"SELECT game_id, seat, decision_index, source, label_action, predicted_action, label_quality "
            f"FROM label_scores WHERE flagged AND dataset = '{self.dataset}' AND fingerprint = '{self.fingerprint}' "
            "ORDER BY label_quality LIMIT 20"
        )
        return [
            f'look at the worst: distill sql "{worst}"',
            f"leave them out of train: distill build --name {self.dataset} --drop-label-issues --label-scores {build}",
            "whether that makes the student stronger: distill ablate, a variant with data.label_issues set (README, "
            '"Does cleaning help?": on this game it did not)',
        ]
