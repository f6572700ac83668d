"""Run a suite's Great Expectations (1.x) on chunks of rows and add the chunks' results up.

Great Expectations is imported here, lazily, once per process (the import
costs seconds). It runs in an ephemeral context with progress bars off, on
one pandas data source whose whole-dataframe batch definition is fed each
frame. Only row-level (map) expectations are allowed, so the sum over chunks
of element, missing and unexpected counts equals one run over all rows.

Each chunk arrives as an Arrow table. Expectations are grouped by the columns
they read, and each group is validated on a pandas frame of just those
columns: GX copies its whole batch frame once or more per expectation (it
drops each column's nulls from the entire frame), so a frame of one column
costs a fraction of one holding every column and the keys. Offending rows
are sampled by GX as row positions, and their key columns are looked up in
the chunk only when there are some.

GX rebuilds an expectation's configuration (a pydantic ``dict()`` and an
``ExpectationConfiguration``) each time one of its own methods reads it:
~140 times an expectation a validation, about a quarter of validating a
small chunk. While :func:`run_gx` validates, each expectation's
configuration is built once on this thread and reused (see
:func:`_memoised_configurations`); the results are equal to GX's own.
Validations take turns (``_GX_LOCK``): GX's one context is not safe on two
threads at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pyarrow as pa

from toolkit.checks.report import ExpectationResult
from toolkit.checks.spec import ExpectationSpec

# GX's one context and batch definition are not safe on two threads at once (two validations running together
# read each other's batches: wrong counts); validations take turns (with the GIL they could not overlap anyway).
_GX_LOCK = threading.RLock()


def _gx() -> tuple[Any, Any]:
    """(the great_expectations module, a batch definition over a pandas dataframe), made once per process."""
    with _GX_LOCK:
        return _gx_context()


@cache
def _gx_context() -> tuple[Any, Any]:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.execution_engine import pandas_execution_engine

    # GX fingerprints every batch under 1 GB with an md5 over pandas' hash of each row (index included), for
    # batch metadata nothing here reads: about a third of validating a narrow frame. 0 turns it off, as a batch
    # over its threshold does.
    pandas_execution_engine.HASH_THRESHOLD = 0
    _memoise_configuration(gx.expectations.Expectation)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas("distill").add_dataframe_asset("chunk")
    return gx, asset.add_batch_definition_whole_dataframe("whole")


_memo = threading.local()  # .cache: id -> (expectation, configuration) while this thread's run_gx validates


def _memoise_configuration(expectation: type) -> None:
    """Make ``Expectation.configuration`` build once per expectation object inside
    :func:`_memoised_configurations` (on its thread); elsewhere, and in a GX whose ``configuration`` is not a
    property, it is GX's own."""
    built = expectation.__dict__.get("configuration")
    if not isinstance(built, property) or built.fget is None or getattr(built.fget, "_distill_memo", False):
        return
    build = built.fget

    def configuration(self: Any) -> Any:
        cache = getattr(_memo, "cache", None)
        if cache is None:
            return build(self)
        hit = cache.get(id(self))
        if hit is None or hit[0] is not self:  # the object itself is kept: its id cannot be reused meanwhile
            hit = cache[id(self)] = (self, build(self))
        return hit[1]

    configuration._distill_memo = True  # type: ignore[attr-defined]
    expectation.configuration = property(configuration, doc=built.__doc__)  # type: ignore[attr-defined]


@contextmanager
def _memoised_configurations() -> Iterator[None]:
    """Within: each expectation's configuration is built once on this thread (GX's validation reads it many times
    and changes none; the objects validated live only as long as the validation)."""
    _memo.cache = {}
    try:
        yield
    finally:
        _memo.cache = None


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

    def add(self, result: Any, sample_rows: int, rows: _ChunkRows) -> None:
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
        # The sample: the first offending rows of all, with their values (GX lists a chunk's first ones, in order).
        room = sample_rows - len(self.sample)
        positions = (payload.get("partial_unexpected_index_list") or [])[:room] if room > 0 else []
        for value in (payload.get("partial_unexpected_list") or [])[: len(positions)]:
            key = str(_plain(value))
            self.values[key] = self.values.get(key, 0) + 1
        self.sample.extend({k: _plain(v) for k, v in rows.keyed(p, self.spec.columns).items()} for p in positions)

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


class _ChunkRows:
    """One chunk's pandas frames, made as they are needed, and its offending rows with their keys."""

    def __init__(self, chunk: pa.Table, key_columns: list[str]) -> None:
        self.chunk, self.key_columns = chunk, key_columns
        self.frames: dict[tuple[str, ...], Any] = {}

    def frame(self, columns: tuple[str, ...]) -> Any:
        """The pandas frame of ``columns`` (numbers widened), made once per chunk."""
        if columns not in self.frames:
            unique = list(dict.fromkeys(columns))  # a column pair of one column: GX refuses repeated names
            self.frames[columns] = widen_numbers(self.chunk.select(unique).to_pandas())
        return self.frames[columns]

    def keyed(self, position: int, columns: list[str]) -> dict[str, Any]:
        """The row at ``position`` as GX lists it with key columns: each checked column, then the keys."""
        keys = self.frame(tuple(self.key_columns))
        row: dict[str, Any] = {}
        for name in columns:
            row[name] = self.frame(tuple(columns)).at[position, name]
            for key in self.key_columns:
                row[key] = keys.at[position, key]
        return row


def run_gx(
    specs: list[ExpectationSpec], chunks: Iterable[pa.Table], key_columns: list[str], sample_rows: int = 5
) -> list[ExpectationResult]:
    """Validate every chunk against ``specs``; one summed result per spec.

    Args:
        specs: GX expectations (all map expectations; see :func:`toolkit.checks.suite.load_suite`).
        chunks: Arrow tables holding the specs' columns and ``key_columns``.
        key_columns: columns that identify a row; offending rows are sampled with them.
        sample_rows: offending rows kept per expectation.
    """
    if not specs:
        return []
    gx, batch_definition = _gx()
    from great_expectations.validator.v1_validator import Validator

    groups: dict[tuple[str, ...], Any] = {}  # the columns read -> a suite of the specs reading them
    for spec in specs:
        if tuple(spec.columns) not in groups:
            groups[tuple(spec.columns)] = gx.ExpectationSuite(name="distill-" + "-".join(spec.columns))
        cls = gx_expectation_class(spec.type)
        groups[tuple(spec.columns)].add_expectation(cls(**spec.kwargs, meta={"id": spec.id}))  # type: ignore[misc]
    tallies = {spec.id: _Tally(spec) for spec in specs}
    seconds = dict.fromkeys(groups, 0.0)
    # Validator (what Batch.validate builds) reads its batch once; Batch.validate reads it a second time.
    result_format = {
        "result_format": "SUMMARY",
        "partial_unexpected_count": sample_rows,
        "return_unexpected_index_query": False,
    }
    for chunk in chunks:
        if not chunk.num_rows:
            continue
        rows = _ChunkRows(chunk, key_columns)
        for columns, suite in groups.items():
            started = time.perf_counter()
            frame = rows.frame(columns)
            with _GX_LOCK, _memoised_configurations():
                validator = Validator(
                    batch_definition=batch_definition,
                    batch_parameters={"dataframe": frame},
                    result_format=result_format,
                )
                validated = validator.validate_expectation_suite(suite)
            for item in validated.results:
                tallies[item.expectation_config.meta["id"]].add(item, sample_rows, rows)
            seconds[columns] += time.perf_counter() - started
            del rows.frames[columns]
    sizes = {columns: sum(tuple(s.columns) == columns for s in specs) for columns in groups}
    return [tallies[s.id].result(seconds[tuple(s.columns)] / sizes[tuple(s.columns)]) for s in specs]


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
