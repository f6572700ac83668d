"""One expectation of a suite, as the suite file states it (:mod:`toolkit.checks.suite` reads and validates the
file; the engines that run an expectation, :mod:`toolkit.checks.gx` and :mod:`toolkit.checks.native`, and the
report read this alone)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["blocking", "warning"]
# kwargs of GX expectations that name columns (validated against the schema).
COLUMN_KWARGS: Final = ("column", "column_A", "column_B")
LIST_MARK: Final = "[]."  # players[].life: a field of each entry of a list column


class ExpectationSpec(BaseModel):
    """One expectation of a suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.\[\]-]*$", description="Unique within the suite; names the result.")
    type: str = Field(description="A GX expectation type (expect_...) or a native check name.")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Arguments of the expectation.")
    severity: Severity = Field(description="blocking: the gate fails; warning: reported only.")
    notes: str = Field("", description="Why this expectation exists, for the report.")

    @property
    def is_gx(self) -> bool:
        return self.type.startswith("expect_")

    @property
    def columns(self) -> list[str]:
        """Columns this expectation reads (GX kwargs that name columns)."""
        return [self.kwargs[k] for k in COLUMN_KWARGS if isinstance(self.kwargs.get(k), str)]
