"""What an ablation measured: typed results, one serializer each (``ablation.json``, ``variants/<key>/result.json``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from toolkit.layout import ABLATION_FORMAT_VERSION, FILE_NAME_PATTERN, NAME_PATTERN


class VariantRun(BaseModel):
    """What one variant's job did: its student and where its evaluations are (``variants/<key>/result.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = ABLATION_FORMAT_VERSION
    key: str = Field(pattern=NAME_PATTERN)
    checkpoint: str = Field(pattern=FILE_NAME_PATTERN, description="The student's card, in the variant's folder.")
    holdout_accuracy: float = Field(description="Greedy legal action vs the label on the build's FIXED holdout.")
    train_rows: int
    epochs: int
    evaluations: dict[str, Annotated[str, Field(pattern=FILE_NAME_PATTERN)]] = Field(
        description="Table -> its EvaluationResult file in the variant's folder."
    )
    seconds: float


class VariantTable(BaseModel):
    """One student against one table, and its paired difference to the first variant's student."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    opponents: list[str]
    games: int
    wins: int
    win_rate: float
    win_low: float = Field(description="Wilson 95% interval of the win rate.")
    win_high: float
    truncations: int
    deals: int | None = Field(None, description="Deals paired with the first variant (each played in every seat).")
    diff: float | None = Field(None, description="Win rate minus the first variant's, on the same deals and seats.")
    diff_low: float | None = Field(None, description="95% interval of the paired difference, deals as the units.")
    diff_high: float | None = None


class VariantResult(BaseModel):
    """One variant: what it changed, the dataset it built, its student's accuracy and strength."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    label: str
    settings: dict[str, Any] = Field(description="Field path -> the value this variant gave it.")
    key: str = Field(description="Names the variant's folder: hash of its build, student, tables and seeds.")
    dataset: str
    fingerprint: str
    build_reused: bool = Field(description="An identical earlier build (same inputs and config) was reused.")
    train_rows: int
    train_games: int
    rows_by_source: dict[str, int]
    shares: dict[str, float] = Field(description="Achieved share of the weighted training rows per source.")
    holdout_rows: int
    holdout_content: str = Field(description="Hash of the holdout's files: equal across variants, one holdout.")
    holdout_accuracy: float
    checkpoint: str = Field(description="The student's card, relative to the data root.")
    resumed: bool = Field(description="Finished by an earlier run of the same ablation (not redone).")
    seconds: float
    tables: dict[str, VariantTable]


class AblationResult(BaseModel):
    """An ablation's table: every variant against every table, paired with the first variant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = ABLATION_FORMAT_VERSION
    name: str
    base: str = Field(description="What the variants vary: a build, a build config, a loop run or config.")
    fields: list[str] = Field(description="The varied field paths.")
    zip: bool
    seed: int
    games: int = Field(description="Games per student and table, seats rotated.")
    max_rounds: int
    tables: dict[str, list[str]]
    backend: str
    same_holdout: bool = Field(description="Every variant's holdout holds the same decisions.")
    variants: list[VariantResult]
    code_version: str
    created_at: str
    seconds: float
    paths: dict[str, str] = Field(default_factory=dict, description="json and html, relative to the data root.")
