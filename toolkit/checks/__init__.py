"""Quality gates: expectation suites (top-level ``checks/``), data-quality metrics, :class:`GateReport`."""

from toolkit.checks.gate import CheckConfig, LakeScope, check_dataset, check_lake
from toolkit.checks.report import ExpectationResult, GateReport, GroupMetrics

__all__ = ["CheckConfig", "ExpectationResult", "GateReport", "GroupMetrics", "LakeScope", "check_dataset", "check_lake"]
