"""What ``distill export`` writes where: :class:`MinariExportConfig`, light (no DuckDB, gymnasium or pyarrow), so
the CLI builds its options from it without importing the exporter."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolkit.datasets.ref import split_build_field
from toolkit.limits import MAX_VERSION


class MinariExportConfig(BaseModel):
    """What to export and where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The dataset (its latest build unless `fingerprint` is given).")
    fingerprint: str | None = Field(None, description="A specific build of `name`.")
    split: Literal["train", "holdout"] = Field(
        "train", description="The build's split to export: its training rows or its fixed holdout."
    )
    out: Path | None = Field(
        None, description="Minari's datasets root: $MINARI_DATASETS_PATH when not given, else ~/.minari/datasets."
    )
    version: int = Field(0, ge=0, le=MAX_VERSION, description="The -vN of the exported dataset id.")

    @model_validator(mode="before")
    @classmethod
    def _one_build_reference(cls, data: Any) -> Any:
        return split_build_field(data, "name")
