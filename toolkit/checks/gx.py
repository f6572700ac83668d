"""Run a suite's Great Expectations (1.x) on pandas chunks and add the chunks' results up.

Great Expectations is imported here, lazily, once per process (the import
costs seconds). It runs in an ephemeral context with progress bars off, on
one pandas data source whose whole-dataframe batch definition is fed each
chunk. Only row-level (map) expectations are allowed, so the sum over chunks
of element, missing and unexpected counts equals one run over all rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from toolkit.checks.report import ExpectationResult
from toolkit.checks.suite import ExpectationSpec


@cache
def _gx() -> tuple[Any, Any]:
    """(the great_expectations module, a batch definition over a pandas dataframe)."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas("distill").add_dataframe_asset("chunk")
    return gx, asset.add_batch_definition_whole_dataframe("whole")


def gx_expectation_class(type_name: str) -> type | None:
    """The GX expectation class of a snake-case type, or None when GX has no such type."""
    _gx()
    from great_expectations.expectations.registry import get_expectation_impl

    try:
        return get_expectation_impl(type_name)
    except Exception:  # GX raises its own not-found error types, which vary by version
        return None


def is_map_expectation(cls: type) -> bool:
    """Whether ``cls`` judges rows one by one (column, column-pair or multicolumn map)."""
    from great_expectations.expectations.expectation import (
        ColumnMapExpectation,
        ColumnPairMapExpectation,
        MulticolumnMapExpectation,
    )

    return issubclass(cls, (ColumnMapExpectation, ColumnPairMapExpectation, MulticolumnMapExpectation))


@dataclass
class _Tally:
    """One expectation's results summed over chunks."""

    spec: ExpectationSpec
    elements: int = 0
    missing: int = 0
    unexpected: int = 0
    values: dict[str, int] = field(default_factory=dict)
    sample: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    success: bool = True

    def add(self, result: Any, sample_rows: int) -> None:
        info = result.exception_info or {}
        if info.get("raised_exception"):
            self.error = self.error or str(info.get("exception_message") or "the expectation raised")
            self.success = False
            return
        payload = result.result or {}
        self.success = self.success and bool(result.success)
        self.elements += int(payload.get("element_count") or 0)
        self.missing += int(payload.get("missing_count") or 0)
        self.unexpected += int(payload.get("unexpected_count") or 0)
        for item in payload.get("partial_unexpected_counts") or []:
            value = str(_plain(item["value"]))
            self.values[value] = self.values.get(value, 0) + int(item["count"])
        room = sample_rows - len(self.sample)
        if room > 0:
            self.sample.extend(
                {k: _plain(v) for k, v in row.items()}
                for row in (payload.get("partial_unexpected_index_list") or [])[:room]
            )

    def result(self, seconds: float) -> ExpectationResult:
        nonmissing = self.elements - self.missing
        top = dict(sorted(self.values.items(), key=lambda kv: -kv[1])[:5])
        return ExpectationResult(
            id=self.spec.id,
            type=self.spec.type,
            engine="gx",
            severity=self.spec.severity,
            success=self.success and self.error is None,
            kwargs=self.spec.kwargs,
            observed={"unexpected_count": self.unexpected, "values_in_sample": top},
            element_count=self.elements,
            unexpected_count=self.unexpected,
            unexpected_percent=100.0 * self.unexpected / nonmissing if nonmissing else 0.0,
            sample=self.sample,
            error=self.error,
            notes=self.spec.notes,
            seconds=seconds,
        )


def run_gx(
    specs: list[ExpectationSpec], chunks: Iterable[Any], key_columns: list[str], sample_rows: int = 5
) -> list[ExpectationResult]:
    """Validate every pandas chunk against ``specs``; one summed result per spec.

    Args:
        specs: GX expectations (all map expectations; see :func:`toolkit.checks.suite.load_suite`).
        chunks: pandas DataFrames holding the specs' columns and ``key_columns``.
        key_columns: columns that identify a row; offending rows are sampled with them.
        sample_rows: offending rows kept per expectation.
    """
    if not specs:
        return []
    gx, batch_definition = _gx()
    suite = gx.ExpectationSuite(name="distill-chunk")
    for spec in specs:
        cls = gx_expectation_class(spec.type)
        suite.add_expectation(cls(**spec.kwargs, meta={"id": spec.id}))  # type: ignore[misc]
    tallies = {spec.id: _Tally(spec) for spec in specs}
    result_format = {
        "result_format": "SUMMARY",
        "partial_unexpected_count": sample_rows,
        "unexpected_index_column_names": key_columns,
        "return_unexpected_index_query": False,
    }
    started = time.perf_counter()
    for frame in chunks:
        if frame.empty:
            continue
        batch = batch_definition.get_batch(batch_parameters={"dataframe": widen_numbers(frame)})
        validation = batch.validate(suite, result_format=result_format)
        for item in validation.results:
            tallies[item.expectation_config.meta["id"]].add(item, sample_rows)
    per_spec = (time.perf_counter() - started) / len(specs)
    return [tallies[spec.id].result(per_spec) for spec in specs]


def widen_numbers(frame: Any) -> Any:
    """int64 / float64 copies of narrower or nullable numeric columns.

    GX 1.x vectorises range checks only for plain int64 and float64 columns
    and falls back to one Python call per value otherwise (~20x slower).
    Nullable integers become float64 with NaN, which GX counts as missing,
    exactly as it counted the nulls.
    """
    import pandas as pd

    widened = {}
    for name, dtype in frame.dtypes.items():
        if (
            isinstance(dtype, pd.api.extensions.ExtensionDtype)
            and pd.api.types.is_numeric_dtype(dtype)
            and not pd.api.types.is_bool_dtype(dtype)
        ):
            widened[name] = frame[name].astype("float64")
        elif pd.api.types.is_integer_dtype(dtype) and dtype != "int64":
            widened[name] = frame[name].astype("int64")
        elif pd.api.types.is_float_dtype(dtype) and dtype != "float64":
            widened[name] = frame[name].astype("float64")
    return frame.assign(**widened) if widened else frame


def _plain(value: Any) -> Any:
    """numpy scalars and pandas NA as plain JSON values."""
    if hasattr(value, "item") and callable(value.item):
        try:
            return value.item()
        except (ValueError, TypeError):
            return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)
