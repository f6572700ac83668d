"""The quality gate: run a suite and the metrics on the lake or on a built dataset.

``check_lake(layout, LakeScope(...), CheckConfig())`` and
``check_dataset(layout, name, CheckConfig())`` return a :class:`GateReport`
(and write it as JSON and HTML under ``reports/``). Set-level invariants and
metrics run in DuckDB over the Parquet files in scope; row-level GX
expectations run on pandas chunks of just the columns they name. The two run
at once, the metrics and native checks on a second thread (DuckDB and Arrow
release the GIL; GX holds it), each on its own connection. A failing
blocking expectation makes ``report.passed`` False; ``report.raise_if_blocked()``
turns that into a :class:`~toolkit.errors.GateFailedError` for callers that
must stop (the loop).
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from toolkit.catalog.lake import Lake
from toolkit.catalog.views import relation
from toolkit.checks import metrics as qm
from toolkit.checks.config import CheckConfig, LakeScope
from toolkit.checks.gx import run_gx
from toolkit.checks.native import NATIVE_CHECKS, ROWS, SPLIT, CheckContext
from toolkit.checks.report import ExpectationResult, GateReport
from toolkit.checks.report_files import read_report, write_gate_report
from toolkit.checks.spec import LIST_MARK, ExpectationSpec
from toolkit.checks.suite import Suite, default_suite_path, load_suite
from toolkit.datasets.dataset import HOLDOUT, LABEL, SPLITS, TRAIN, list_builds, open_dataset
from toolkit.errors import CheckError
from toolkit.layout import LABEL_SCORES_FILE, Layout, sql_literal
from toolkit.schema import columns as col
from toolkit.schema.arrow import lake_schema

_QUALITY = "quality_rows"
_REFERENCE = "reference_rows"
References = dict[qm.GroupKey, tuple[str, list[int]]]  # group -> (what it is, action counts)


def check_lake(layout: Layout, scope: LakeScope | None = None, config: CheckConfig | None = None) -> GateReport:
    """Run the lake suite and metrics on the committed lake rows in ``scope``.

    Raises:
        CheckError: an invalid suite, or no lake rows in scope.
        CatalogError: no catalog under ``layout``.
    """
    scope, config = scope or LakeScope(), config or CheckConfig()
    suite = load_suite(config.suite or default_suite_path("lake"), "lake")
    with Lake.open(layout).at() as catalog:
        batches = None if scope.batch is None else [scope.batch]
        lake_files = catalog.lake_files(batches=batches, source=scope.source, generation=scope.generation)
        files = [f.path for f in lake_files]
        if not files:
            raise CheckError(
                f"no lake rows match {scope.model_dump(exclude_none=True) or 'the whole lake'}",
                hint=(
                    'list what is there: distill sql "SELECT source, generation, batch_id, count(*) FROM '
                    'decisions GROUP BY ALL"'
                ),
            )
        con = catalog.con
        con.execute(f"SET memory_limit = '{config.memory_limit}'")
        rows = relation(
            con,
            ROWS,
            files,
            lake_schema(),
            missing=[f.missing for f in lake_files],
            partitions=[f.partitions for f in lake_files],
        )
        keep = "" if scope.batch is None else f" WHERE {col.BATCH_ID} = '{sql_literal(scope.batch)}'"
        rows_sql = f"SELECT * FROM {rows}{keep}"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {ROWS} AS {rows_sql}")
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {_QUALITY} AS SELECT {col.SOURCE}, {col.GENERATION}, "
            f"{col.ACTION}.{col.ACTION_INDEX} AS {qm.ACTION}, {col.REWARD}, {col.EPISODE_RETURN}, {col.SEAT_WON}, "
            f"{col.GAME_ID}, {col.SEAT}, {col.DECISION_INDEX} FROM {ROWS}"
        )
        keys = [*col.DECISION_KEY, col.BATCH_ID, col.SOURCE_LINE]
        ctx = CheckContext(
            "lake", con, files, keys, config.sample_rows, label_scores=_all_label_scores(layout), rows_sql=rows_sql
        )
        return _run(layout, suite, config, ctx, scope.model_dump(), f"check-lake-{scope.slug()}", _lake_reference)


def check_dataset(
    layout: Layout, name: str, config: CheckConfig | None = None, fingerprint: str | None = None
) -> GateReport:
    """Run the dataset suite and metrics on the built dataset ``name`` (its latest build, or ``fingerprint``).

    Raises:
        CheckError: an invalid suite, or a dataset with no rows.
        BuildError: no such dataset.
    """
    config = config or CheckConfig()
    suite = load_suite(config.suite or default_suite_path("dataset"), "dataset")
    dataset = open_dataset(layout, name, fingerprint)
    parts = [
        f"SELECT *, '{split}' AS {SPLIT} FROM read_parquet({_file_list(dataset.files(split))}, hive_partitioning "
        f"= false)"
        for split in SPLITS
        if dataset.files(split)
    ]
    if not parts:
        raise CheckError(
            f"dataset {name!r} ({dataset.fingerprint[:12]}) has no rows",
            hint=f"rebuild it: distill build --name {name}",
        )
    spill = Path(tempfile.mkdtemp(prefix="distill-check-"))
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = '{config.memory_limit}'; SET temp_directory = '{sql_literal(str(spill))}'")
        rows_sql = " UNION ALL ".join(parts)
        con.execute(f"CREATE TEMP VIEW {ROWS} AS {rows_sql}")
        con.execute(
            f"CREATE TEMP VIEW {_QUALITY} AS SELECT {col.SOURCE}, {col.GENERATION}, {LABEL} AS {qm.ACTION}, "
            f"{col.REWARD}, {col.EPISODE_RETURN}, {col.SEAT_WON}, {col.GAME_ID}, {col.SEAT}, {col.DECISION_INDEX} "
            f"FROM {ROWS}"
        )
        files = [*dataset.files(TRAIN), *dataset.files(HOLDOUT)]
        keys = [*col.DECISION_KEY, SPLIT, col.BATCH_ID, col.SOURCE_LINE]
        scores = layout.label_scores(dataset.name, dataset.fingerprint)
        ctx = CheckContext(
            "dataset",
            con,
            files,
            keys,
            config.sample_rows,
            dataset=dataset,
            label_scores=[scores] if scores.exists() else [],
            rows_sql=rows_sql,
        )
        scope = {"name": name, "fingerprint": dataset.fingerprint}
        return _run(
            layout,
            suite,
            config,
            ctx,
            scope,
            f"check-dataset-{name}-{dataset.fingerprint[:12]}",
            lambda c: _dataset_reference(c, layout),
        )
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def _run(
    layout: Layout,
    suite: Suite,
    config: CheckConfig,
    ctx: CheckContext,
    scope: dict[str, Any],
    stem: str,
    reference: Callable[[CheckContext], References],
) -> GateReport:
    """GX expectations here while two threads run the rest: the metrics, then the DuckDB checks (some read the
    metrics); the Arrow checks (they read files, not the connection). Assemble (and write) the report, its
    results in the same order whichever finishes first."""
    started = time.perf_counter()
    native = suite.native_specs()
    on_arrow = [s for s in native if NATIVE_CHECKS[s.type].engine == "arrow"]
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="check") as pool:
        on_duckdb = pool.submit(_run_metrics_then, ctx, [s for s in native if s not in on_arrow], config, reference)
        arrow = pool.submit(_run_natives, ctx, on_arrow, config)
        t = time.perf_counter()
        gx_results = _run_gx_frames(ctx, suite.gx_specs(), config.chunk_rows)
        timings = {"gx": time.perf_counter() - t, "duckdb": 0.0, "arrow": 0.0}
        metric_errors, metric_seconds, duckdb_results = on_duckdb.result()
        by_id = {r.id: r for r in [*duckdb_results, *arrow.result()]}
    timings["duckdb"] += metric_seconds
    for result in by_id.values():
        timings[result.engine] += result.seconds
    results = [*metric_errors, *gx_results, *(by_id[s.id] for s in native)]
    rows = sum(m.rows for m in ctx.metrics if m.source == qm.ALL)
    timings["total"] = time.perf_counter() - started
    now = dt.datetime.now(dt.UTC)
    report = GateReport(
        report_id=f"{stem}-{now:%Y%m%dT%H%M%S%f}",
        target=ctx.target,  # type: ignore[arg-type]
        scope=scope,
        suite={"name": suite.name, "path": layout.stored(suite.path) if suite.path else "", "sha256": suite.sha256},
        created_at=now.isoformat(timespec="seconds"),
        rows=rows,
        passed=not any(r.blocking_failure for r in results),
        results=results,
        metrics=ctx.metrics,
        timings=timings,
    )
    return write_gate_report(report, layout) if config.write else report


def _run_metrics_then(
    ctx: CheckContext,
    specs: list[ExpectationSpec],
    config: CheckConfig,
    reference: Callable[[CheckContext], References],
) -> tuple[list[ExpectationResult], float, list[ExpectationResult]]:
    """The metrics, then the native checks ``specs``, on ``ctx.con``: (metric errors, their seconds, results)."""
    errors = []
    t = time.perf_counter()
    try:
        ctx.metrics = qm.attach_drift(qm.compute_metrics(ctx.con, _QUALITY), _references(ctx, config, reference))
    except duckdb.Error as exc:
        errors.append(_error_result("quality-metrics", "metrics", "duckdb", str(exc)))
    return errors, time.perf_counter() - t, _run_natives(ctx, specs, config)


def _run_natives(ctx: CheckContext, specs: list[ExpectationSpec], config: CheckConfig) -> list[ExpectationResult]:
    return [_run_native(ctx, _with_overrides(spec, config)) for spec in specs]


def _with_overrides(spec: ExpectationSpec, config: CheckConfig) -> ExpectationSpec:
    if spec.type == "action_entropy_at_least" and config.entropy_floor is not None:
        return spec.model_copy(update={"kwargs": {**spec.kwargs, "min_ratio": config.entropy_floor}})
    return spec


def _run_native(ctx: CheckContext, spec: ExpectationSpec) -> ExpectationResult:
    check = NATIVE_CHECKS[spec.type]
    t = time.perf_counter()
    try:
        out = check.run(ctx, spec.kwargs)
    except (duckdb.Error, OSError, KeyError, ValueError) as exc:  # a check that cannot run fails, never passes
        return _error_result(
            spec.id, spec.type, check.engine, f"{type(exc).__name__}: {exc}", spec, time.perf_counter() - t
        )
    unexpected_percent = None
    if out.element_count and out.unexpected_count is not None:
        unexpected_percent = 100.0 * out.unexpected_count / out.element_count
    return ExpectationResult(
        id=spec.id,
        type=spec.type,
        engine=check.engine,
        severity=spec.severity,
        success=out.success,  # type: ignore[arg-type]
        kwargs=spec.kwargs,
        observed=out.observed,
        element_count=out.element_count,
        unexpected_count=out.unexpected_count,
        unexpected_percent=unexpected_percent,
        sample=[_jsonable(s) for s in out.sample],
        notes=spec.notes,
        caveat=out.caveat,
        seconds=time.perf_counter() - t,
    )


def _error_result(
    id_: str, type_: str, engine: str, message: str, spec: ExpectationSpec | None = None, seconds: float = 0.0
) -> ExpectationResult:
    return ExpectationResult(
        id=id_,
        type=type_,
        engine=engine,
        severity=spec.severity if spec else "blocking",  # type: ignore[arg-type]
        success=False,
        kwargs=spec.kwargs if spec else {},
        error=message,
        seconds=seconds,
    )


def _run_gx_frames(ctx: CheckContext, specs: list[ExpectationSpec], chunk_rows: int) -> list[ExpectationResult]:
    """Row expectations on decisions, then those on the entries of each list column (``players[]``,
    ``lineup[]``: one row per entry)."""
    by_id: dict[str, ExpectationResult] = {}
    lists = sorted({_list_of(s) for s in specs}, key=lambda name: (name is not None, name or ""))
    if not lists:
        return []
    con = ctx.reader()  # ctx.con is the metrics' and native checks' meanwhile
    try:
        for name in lists:
            group = [s for s in specs if _list_of(s) == name]
            columns = sorted({c for s in group for c in s.columns})
            chunks = _chunks(con, _frame_sql(ctx, columns, name is not None), chunk_rows)
            for result in run_gx(group, chunks, ctx.key_columns, ctx.sample_rows):
                by_id[result.id] = result
    finally:
        con.close()
    return [by_id[s.id] for s in specs]


def _list_of(spec: ExpectationSpec) -> str | None:
    """The list column whose entries ``spec`` checks (``players`` for ``players[].life``), None for a row check
    (a spec naming several lists gets them all, which :func:`_frame_sql` refuses)."""
    lists = sorted({c.split(LIST_MARK, 1)[0] for c in spec.columns if LIST_MARK in c})
    return ",".join(lists) or None


def _frame_sql(ctx: CheckContext, columns: list[str], per_seat: bool) -> str:
    keys = ", ".join(ctx.key_columns)
    if not per_seat:  # key columns are in the frame already: never twice (GX fails on duplicate names)
        extra = [f'{c} AS "{c}"' for c in columns if c not in ctx.key_columns]
        return f"SELECT {', '.join([keys, *extra])} FROM {ROWS}"
    fields = ", ".join(f'p.{c.split(LIST_MARK, 1)[1]} AS "{c}"' for c in columns)
    lists = {c.split(LIST_MARK, 1)[0] for c in columns}
    if len(lists) != 1:
        raise CheckError(f"per-seat expectations must read one list column, got {sorted(lists)}")
    return f"SELECT {keys}, {fields} FROM (SELECT {keys}, unnest({lists.pop()}) AS p FROM {ROWS})"


def _chunks(con: duckdb.DuckDBPyConnection, sql: str, chunk_rows: int) -> Iterator[pa.Table]:
    """The rows of ``sql`` in Arrow tables of exactly ``chunk_rows`` rows (the last: the rest), whatever sizes
    DuckDB's batches come in, so the chunks (and the per-chunk samples of offending values) depend only on
    ``chunk_rows``. Nothing else runs on ``con`` until the chunks are consumed."""
    held: list[pa.RecordBatch] = []
    for batch in con.sql(sql).to_arrow_reader(chunk_rows):
        held.append(batch)
        while sum(b.num_rows for b in held) >= chunk_rows:
            table = pa.Table.from_batches(held)
            yield table.slice(0, chunk_rows)
            held = table.slice(chunk_rows).to_batches()
    if held:
        yield pa.Table.from_batches(held)


# -- drift references --------------------------------------------------------------------------------


def _references(ctx: CheckContext, config: CheckConfig, fallback: Callable[[CheckContext], References]) -> References:
    if config.baseline is not None:
        baseline = read_report(config.baseline)
        return {
            (m.source, m.generation): (f"report {baseline.report_id}", list(m.actions.values()))
            for m in baseline.metrics
        }
    return fallback(ctx)


def _lake_reference(ctx: CheckContext) -> References:
    """Each (source, generation g) group against the same source's generation g-1 in the whole lake."""
    groups = ctx.con.execute(
        f"SELECT DISTINCT {col.SOURCE}, {col.GENERATION} FROM {_QUALITY} WHERE {col.GENERATION} > 0"
    ).fetchall()
    if not groups:
        return {}
    wanted = ", ".join(f"('{sql_literal(s)}', {g - 1})" for s, g in groups)
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP VIEW {_REFERENCE} AS SELECT {col.SOURCE}, {col.GENERATION}, "
        f"{col.ACTION}.{col.ACTION_INDEX} AS {qm.ACTION} FROM decisions WHERE ({col.SOURCE}, {col.GENERATION}) "
        f"IN ({wanted})"
    )
    previous = qm.action_counts(ctx.con, _REFERENCE)
    return {(s, g): (f"{s} generation {g - 1}", previous[(s, g - 1)]) for s, g in groups if (s, g - 1) in previous}


def _dataset_reference(ctx: CheckContext, layout: Layout) -> References:
    """Every group against the same group of the previous build of the same name."""
    assert ctx.dataset is not None  # check_dataset always sets it
    builds = list_builds(layout, ctx.dataset.name)
    fingerprints = [b.fingerprint for b in builds]
    here = fingerprints.index(ctx.dataset.fingerprint) if ctx.dataset.fingerprint in fingerprints else len(builds)
    if here == 0:
        return {}
    previous = builds[here - 1]
    files = [*previous.files(TRAIN), *previous.files(HOLDOUT)]  # both splits, as the metrics are
    if not files:
        return {}
    ctx.con.execute(
        f"CREATE OR REPLACE TEMP VIEW {_REFERENCE} AS SELECT {col.SOURCE}, {col.GENERATION}, {LABEL} AS {qm.ACTION} "
        f"FROM read_parquet({_file_list(files)}, hive_partitioning = false)"
    )
    label = f"build {previous.fingerprint[:12]}"
    return {key: (label, counts) for key, counts in qm.action_counts(ctx.con, _REFERENCE).items()}


# -- helpers ------------------------------------------------------------------------------------------


def _all_label_scores(layout: Layout) -> list[Path]:
    """Every build's label-scores table, oldest first (by modification time, then path)."""
    found = layout.within(layout.builds.glob(f"*/*/{LABEL_SCORES_FILE}")) if layout.builds.is_dir() else []
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, str(p)))


def _file_list(files: list[Path]) -> str:
    return "[" + ", ".join(f"'{sql_literal(str(f))}'" for f in files) + "]"


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, (str, int, float, bool, type(None), list, dict)) else str(v) for k, v in row.items()}
