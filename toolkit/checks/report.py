"""The gate's typed result, :class:`GateReport`, and its JSON and HTML renderings.

A report holds every expectation's result (observed value, severity, a
sample of offending rows), the data-quality metrics per source and
generation, and where the time went. It is written under the data root's
``reports/`` as ``<report_id>.json`` and ``<report_id>.html`` (staged, then
renamed: never half a file). The JSON is the record; the HTML
(:mod:`toolkit.checks.report_html`) is a rendering of it for people.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.checks.spec import Severity
from toolkit.errors import GateFailedError
from toolkit.layout import REPORT_FORMAT_VERSION


class Distribution(BaseModel):
    """Summary of a numeric column (None where there are no values)."""

    count: int
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    p05: float | None = None
    p25: float | None = None
    p50: float | None = None
    p75: float | None = None
    p95: float | None = None
    max: float | None = None


class Drift(BaseModel):
    """Jensen-Shannon divergence of the action distribution against a reference."""

    reference: str = Field(description="What was compared against (previous build, generation or report).")
    js_bits: float


class GroupMetrics(BaseModel):
    """Data-quality metrics of one (source, generation) group, or of everything (source ``*``)."""

    source: str
    generation: int | None
    rows: int
    actions: dict[str, int] = Field(description="Decisions per macro action (all 8, zeros included).")
    entropy_bits: float
    entropy_ratio: float = Field(description="entropy_bits / log2(number of actions): 1 is uniform, 0 a single action.")
    reward: Distribution
    episode_return: Distribution = Field(description="Return at the last decision of each (game, seat) episode.")
    episode_decisions: Distribution = Field(description="Decisions per (game, seat) episode.")
    games: int
    episodes: int
    wins: int
    episodes_with_result: int = Field(description="Episodes whose last decision says whether the seat won.")
    win_rate: float | None
    win_rate_interval: tuple[float, float]
    drift: Drift | None = None

    @property
    def key(self) -> str:
        gen = "-" if self.generation is None else str(self.generation)
        return f"{self.source}/gen={gen}"


class ExpectationResult(BaseModel):
    """The outcome of one expectation."""

    model_config = ConfigDict(frozen=True)

    id: str
    type: str
    engine: Literal["gx", "duckdb", "arrow"]
    severity: Severity
    success: bool
    kwargs: dict[str, Any] = Field(default_factory=dict)
    observed: Any = Field(None, description="What was measured (a value, a count, a mapping).")
    element_count: int | None = None
    unexpected_count: int | None = None
    unexpected_percent: float | None = None
    sample: list[dict[str, Any]] = Field(default_factory=list, description="A few offending rows, with their keys.")
    error: str | None = Field(None, description="Set when the check could not run (counts as a failure).")
    caveat: str | None = Field(None, description="What a passing check could not decide (shown by the gate).")
    notes: str = ""
    seconds: float = 0.0

    @property
    def blocking_failure(self) -> bool:
        return not self.success and self.severity == "blocking"


class GateReport(BaseModel):
    """Everything one gate run found; ``passed`` is False when a blocking expectation failed."""

    format_version: int = REPORT_FORMAT_VERSION
    report_id: str
    target: Literal["lake", "dataset"]
    scope: dict[str, Any] = Field(description="What was checked: filters, or dataset name and fingerprint.")
    suite: dict[str, str] = Field(
        description="name, path (relative to the data root when inside it) and sha256 of the suite file."
    )
    created_at: str
    rows: int
    passed: bool
    results: list[ExpectationResult]
    metrics: list[GroupMetrics]
    timings: dict[str, float] = Field(description="Seconds: gx, duckdb, arrow, total.")
    paths: dict[str, str] = Field(
        default_factory=dict, description="json and html reports, once written, relative to the data root."
    )

    @property
    def blocking_failures(self) -> list[ExpectationResult]:
        return [r for r in self.results if r.blocking_failure]

    @property
    def warnings(self) -> list[ExpectationResult]:
        return [r for r in self.results if not r.success and r.severity == "warning"]

    @property
    def caveats(self) -> list[ExpectationResult]:
        """Expectations that passed without being able to decide everything (e.g. too few rows to tell)."""
        return [r for r in self.results if r.caveat]

    def raise_if_blocked(self) -> None:
        """Raise :class:`GateFailedError` when a blocking expectation failed.

        Raises:
            GateFailedError: carrying this report, naming the failed expectations.
        """
        failed = self.blocking_failures
        if failed:
            names = ", ".join(r.id for r in failed)
            where = self.paths.get("html") or self.paths.get("json")
            hint = f"see {where} in the data root" if where else "see the report"
            raise GateFailedError(f"{self.target} gate failed: {names}", report=self, hint=hint)


def short(value: Any, limit: int = 160) -> str:
    """A value as one short line of text."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
