"""What a build does: :class:`BuildConfig`, every field documented (from YAML and flags:
``toolkit.config.load_config``).

Two units matter. An *episode* is one seat's decisions in one game: the
filters (``min_reward``, ``wins_only``, ``min_episode_length``) keep or drop
whole episodes. A *game* is the unit of sampling and of the holdout: weights
draw whole games, so a game is never split, and duplicates of a decision stay
on one side of the holdout.

Weights, in two modes (``weight_mode``):

- ``ratio`` (the origin's semantics): per source, a weight below 1 keeps that
  fraction of its games, drawn without replacement; above 1 draws
  ``weight x games`` games with replacement (a game drawn k times is stored
  once with ``sample_weight`` k); 0 drops the source. Sources not listed
  have weight 1.
- ``share``: the target fraction of the final training set (in weighted
  rows) per source. Shares are normalised to sum to 1; sources not listed
  are dropped. The largest dataset that meets the targets without
  oversampling is drawn, and the achieved shares are reported.

The holdout is not shaped by filters or weights: it is every decision of the
reference sources' games that the salted hash puts in it, so every build over
the same data holds out the same decisions, and a model's holdout accuracy
compares across builds.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from toolkit.holdout import HoldoutRule
from toolkit.layout import NAME_PATTERN
from toolkit.limits import MAX_GENERATION, MAX_REWARD, MAX_ROWS, MAX_SEED, SourceWeight
from toolkit.schema.vocab import LABEL_SOURCES, MAX_POD_SIZE, MIN_POD_SIZE, SOURCE_PATTERN

DEFAULT_NAME = "default"
DEFAULT_SALT = "distill-holdout-v1"


class HoldoutConfig(BaseModel):
    """The fixed holdout: never change ``salt`` or ``fraction`` for a lineage of models you compare."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    salt: str = Field(DEFAULT_SALT, min_length=1, max_length=128, description="Salt of the game-id hash.")
    fraction: float = Field(0.12, ge=0.10, le=0.15, description="Share of reference games held out (0.10-0.15).")
    sources: list[str] = Field(
        default_factory=lambda: ["forge"],
        min_length=1,
        description="Reference sources whose games are split (by default the heuristic engine's role).",
    )

    def rule(self) -> HoldoutRule:
        return HoldoutRule(salt=self.salt, fraction=self.fraction)


class LabelIssueFilter(BaseModel):
    """Rows a build leaves out of its train split by a scored build's label scores (``distill check labels``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    drop_flagged: bool = Field(True, description="Drop the decisions flagged as label issues (--drop-label-issues).")
    min_quality: float | None = Field(
        None, ge=0, le=1, description="Also drop decisions whose label quality is below this (--min-label-quality)."
    )
    scores: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}(@[0-9a-f]{1,64})?$",
        description="NAME or NAME@FINGERPRINT of the scored build; default: the newest scored build of this "
        "build's name (--label-scores).",
    )

    @model_validator(mode="after")
    def _drops_something(self) -> LabelIssueFilter:
        if not self.drop_flagged and self.min_quality is None:
            raise ValueError("drops nothing: give --drop-label-issues or --min-label-quality Q")
        return self


class BuildConfig(BaseModel):
    """A dataset build; every field is also a ``distill build`` flag or a key of ``--config build.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        DEFAULT_NAME, pattern=NAME_PATTERN, description="Dataset name: its folder under builds/ (--name)."
    )
    sources: list[str] | None = Field(
        None, description="Sources to read; null: every source in the lake (--source, once per source)."
    )
    generations: list[Annotated[int, Field(ge=0, le=MAX_GENERATION)]] | None = Field(
        None, description="Generations to read; null: all, rows of no generation included (--generation, once each)."
    )
    batches: list[str] | None = Field(
        None, description="Batch ids to read; null: every non-rejected batch (--batch, once per batch)."
    )
    weight_mode: Literal["ratio", "share"] = Field(
        "ratio",
        description="How `weights` are read: relative weights (ratio) or target shares of the train split (share) "
        "(--mode).",
    )
    weights: dict[str, SourceWeight] = Field(
        default_factory=dict, description="Per-source weight or target share: SOURCE=W (--weight, once per source)."
    )
    min_reward: float | None = Field(
        None,
        ge=-MAX_REWARD,
        le=MAX_REWARD,
        description="Minimum episode return as the writer logged it (shaping included), for `reward_sources` "
        "only; the result is `wins_only`'s (the outcome) (--min-reward).",
    )
    reward_sources: list[str] = Field(
        default_factory=lambda: ["ppo"], description="Policy-written sources `min_reward` applies to."
    )
    wins_only: list[str] = Field(
        default_factory=list, description="Sources of which only won episodes are kept (--wins-only, once per source)."
    )
    min_episode_length: int = Field(
        1, ge=1, le=MAX_ROWS, description="Minimum decisions in a kept episode (--min-length)."
    )
    exclude_label_sources: list[str] = Field(
        default_factory=list,
        description="Drop rows whose label was obtained this way, e.g. card_role or default (--exclude-labels, "
        "once per way).",
    )
    pod_sizes: list[Annotated[int, Field(ge=MIN_POD_SIZE, le=MAX_POD_SIZE)]] | None = Field(
        None, description="Pod sizes to keep; null: all (--pod-size, once per size)."
    )
    holdout: HoldoutConfig = Field(default_factory=HoldoutConfig)
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seed of the game sampling (--seed).")
    rows_per_file: int = Field(262_144, ge=100, le=MAX_ROWS, description="Rows per Parquet part.")
    label_issues: LabelIssueFilter | None = Field(
        None, description="Leave label issues out of the train split, by a scored build's label scores."
    )
    generation_decay: float | None = Field(
        None,
        gt=0,
        le=1,
        description="A window of generations with decaying weight (KataGo's shuffle window): within each source, "
        "an episode of generation g weighs decay^(G - g), G the source's newest generation in the build, rescaled "
        "so the source keeps its weighted rows (its share holds); rows with no generation keep their weight. "
        "null: every generation weighs the same (--generation-decay).",
    )

    @model_serializer(mode="wrap")
    def _without_absent_filter(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A build that cleans nothing has the config (so the input key and fingerprint) it had before cleaning
        existed."""
        body = handler(self)
        for optional in ("label_issues", "generation_decay"):  # unset: the config builds made before it had
            if body.get(optional, 0) is None:
                body.pop(optional)
        return body

    @field_validator("sources", "wins_only", "reward_sources")
    @classmethod
    def _known_shape(cls, value: list[str] | None) -> list[str] | None:
        for source in value or []:
            if not re.match(SOURCE_PATTERN, source):
                raise ValueError(f"{source!r} is not a source name (lowercase letters, digits, _ or -)")
        return sorted(set(value)) if value is not None else None

    @field_validator("weights")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        for source, weight in value.items():
            if not weight >= 0 or weight != weight or weight == float("inf"):
                raise ValueError(f"weight of {source!r} must be a finite number >= 0, got {weight}")
        return dict(sorted(value.items()))

    @field_validator("exclude_label_sources")
    @classmethod
    def _label_sources(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(LABEL_SOURCES))
        if unknown:
            raise ValueError(f"unknown label sources {unknown}; known: {', '.join(LABEL_SOURCES)}")
        return sorted(set(value))

    @field_validator("pod_sizes")
    @classmethod
    def _pods(cls, value: list[int] | None) -> list[int] | None:
        return sorted(set(value)) if value is not None else None

    @model_validator(mode="after")
    def _weights_say_something(self) -> BuildConfig:
        if self.weights and not any(self.weights.values()) and (self.weight_mode == "share" or self.sources):
            raise ValueError("every weight is 0: nothing would be built; give at least one source a weight > 0")
        if self.weight_mode == "share" and not self.weights:
            raise ValueError("share mode needs `weights`: the target share of each source, e.g. forge=0.7 ppo=0.3")
        return self
