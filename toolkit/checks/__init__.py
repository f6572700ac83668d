"""Quality gates: expectation suites (top-level ``checks/``), data-quality metrics, :class:`GateReport`.

The names below are imported when first asked for (``from toolkit.checks import CheckConfig``): the configs are
light, the gate (DuckDB, Great Expectations) is not.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolkit.checks.config import CheckConfig, LakeScope
    from toolkit.checks.gate import check_dataset, check_lake
    from toolkit.checks.report import ExpectationResult, GateReport, GroupMetrics

_WHERE = {
    "CheckConfig": "toolkit.checks.config",
    "LakeScope": "toolkit.checks.config",
    "check_dataset": "toolkit.checks.gate",
    "check_lake": "toolkit.checks.gate",
    "ExpectationResult": "toolkit.checks.report",
    "GateReport": "toolkit.checks.report",
    "GroupMetrics": "toolkit.checks.report",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'toolkit.checks' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


__all__ = ["CheckConfig", "ExpectationResult", "GateReport", "GroupMetrics", "LakeScope", "check_dataset", "check_lake"]
