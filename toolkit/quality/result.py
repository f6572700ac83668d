"""What ``distill check labels`` gives: a flagged decision, its result (read by the stage,
:mod:`toolkit.quality.labels`, and by its HTML page, :mod:`toolkit.quality.report_html`); its config is
:class:`toolkit.quality.config.LabelCheckConfig`."""

from __future__ import annotations

from pydantic import BaseModel, Field, computed_field

from toolkit.datasets.scores import GroupRate
from toolkit.quality.config import LabelCheckConfig
from toolkit.quality.rates import read_rate


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
