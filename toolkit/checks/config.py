"""How a quality gate runs (:class:`CheckConfig`) and on which part of the lake (:class:`LakeScope`), light to
import (the CLI builds ``distill check``'s options from them at start-up; :mod:`toolkit.checks.gate` runs it)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolkit.limits import MAX_ROWS


class CheckConfig(BaseModel):
    """How a gate runs; every field is a ``distill check`` flag."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: Path | None = Field(None, description="Suite file; default checks/<target>.json (--suite).")
    chunk_rows: int = Field(
        1_000_000, ge=1_000, le=MAX_ROWS, description="Rows per chunk fed to Great Expectations (--chunk-rows)."
    )
    sample_rows: int = Field(5, ge=0, le=100, description="Offending rows kept per expectation (--sample-rows).")
    entropy_floor: float | None = Field(
        None, ge=0, le=1, description="Overrides min_ratio of every action-entropy check (--entropy-floor)."
    )
    baseline: Path | None = Field(
        None, description="A previous report (JSON) to measure action drift against (--baseline)."
    )
    write: bool = Field(True, description="Write the JSON and HTML report under reports/ (--write/--no-write).")
    memory_limit: str = Field("1GB", description="DuckDB memory limit; larger work spills to disk.")


class LakeScope(BaseModel):
    """Which part of the lake to check; None means every value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str | None = None
    generation: int | None = None
    batch: str | None = None

    def slug(self) -> str:
        parts = [f"{k}-{v}" for k, v in self.model_dump().items() if v is not None]
        return "_".join(parts) or "all"
