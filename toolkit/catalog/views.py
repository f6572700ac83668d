"""The views users query, as the lake was at one version.

``decisions`` (the lake's live files at the version), ``rejects`` (the
quarantined lines of its batches that are not retired), ``batches`` (each
batch's record and its state at the version), ``files`` (the ingested files
of those batches), ``games`` (one row per game), ``generations`` (the loop
runs' records), ``versions`` (the index table of the lake's versions),
``label_scores`` (every scored build's decisions: ``distill check labels``).
What each view and column is: :mod:`toolkit.catalog.view_docs`. The other
index tables (``lake_files``, ``batch_log``, ``batch_states``,
``file_log``) are internal: a sandboxed connection (``distill sql``) never
holds them.

Files lacking columns that a later contract added (schema evolution) are
read with those columns null, so every version reads with today's columns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import duckdb
import pyarrow as pa

from toolkit.catalog import log
from toolkit.catalog.sandbox import SandboxLimits
from toolkit.catalog.view_docs import GENERATION_COLUMNS
from toolkit.layout import FINGERPRINT_PATTERN, LABEL_SCORES_FILE, NAME_PATTERN, Layout, sql_literal
from toolkit.schema import columns as col
from toolkit.schema import scores
from toolkit.schema.arrow import lake_schema
from toolkit.schema.vocab import MACRO_ACTIONS

QUARANTINE_SCHEMA = pa.schema(
    [
        pa.field(col.BATCH_ID, pa.string(), nullable=False),
        pa.field(col.SOURCE_FILE, pa.string(), nullable=False),
        pa.field(col.SOURCE_LINE, pa.int64(), nullable=False),
        pa.field(col.FILE_SHA256, pa.string(), nullable=False),
        pa.field("raw", pa.binary(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field(
            "problems",
            pa.list_(pa.struct([("field", pa.string()), ("code", pa.string()), ("message", pa.string())])),
            nullable=False,
        ),
    ]
)

# The quarantine as users read it: a stable reason code (the first problem's) beside the full reason, the line as
# text (a line that is not UTF-8 shown with its bytes escaped; no line end) and, last, its exact bytes. Views over
# the quarantine's files (a registered dataset on a sandboxed connection): nothing is read until a query asks.
REJECTS_SQL: Final = f"""
    SELECT {col.BATCH_ID}, {col.SOURCE_FILE}, {col.SOURCE_LINE}, problems[1].code AS code, problems[1].field AS field,
           reason, rtrim(coalesce(try(decode(raw)), CAST(raw AS VARCHAR)), chr(13) || chr(10)) AS line, raw, problems,
           {col.FILE_SHA256}
    FROM quarantine"""
REJECT_REASONS_SQL: Final = f"""
    SELECT code, field, count(*) AS lines, count(DISTINCT {col.BATCH_ID}) AS batches,
           arg_min({col.SOURCE_FILE} || ':' || {col.SOURCE_LINE}, ({col.SOURCE_FILE}, {col.SOURCE_LINE})) AS first_at,
           arg_min(problems[1].message, ({col.SOURCE_FILE}, {col.SOURCE_LINE})) AS example
    FROM rejects GROUP BY code, field ORDER BY lines DESC, code, field"""

NO_HOME: Final = "/nonexistent"


def live_files_sql(version: int) -> str:
    """SQL of the index rows of the files live at ``version``."""
    return (
        f"SELECT * FROM lake_files WHERE added_version <= {int(version)} "
        f"AND (removed_version IS NULL OR removed_version > {int(version)})"
    )


def register(
    con: duckdb.DuckDBPyConnection,
    layout: Layout,
    version: int,
    *,
    check: bool = True,
    into: duckdb.DuckDBPyConnection | None = None,
) -> None:
    """Create this connection's views of the lake at ``version`` (see :data:`~toolkit.catalog.view_docs.VIEWS`),
    every live file first ``check``-ed to be on disk inside the table (:func:`~toolkit.catalog.log.readable`). A
    writer's views do not check (a writer must be able to retire the batch of a lost file): its ``decisions``
    leave a lost file out, and the writer checks before it reads rows
    (:meth:`~toolkit.catalog.store.Catalog.require_readable`).

    Views that have an order keep it (their ``ORDER BY``). With ``into`` (a
    sandbox: a new in-memory database, about to be sealed) the views are made
    there, not on ``con``, whose index they are read from: every view but
    ``games`` and the two of the quarantine's reasons is Arrow registered under
    the view's name: the rows of the small ones, read now, and datasets of the
    lake's and quarantine's files. That connection holds the views and nothing
    else (no table of the index, no file), no statement can change them, and
    none needs a file DuckDB would open itself. ``con`` is left with temporary
    views of the small ones (the sandbox's caller closes it).
    """
    target = con if into is None else into
    _make(
        con,
        "batches",
        f"""
        SELECT b.batch_id, b.created_at, b.file_sha256, b.rows_valid, b.rows_rejected, b.rows_duplicate, b.sources,
               b.generations, b.source_override, b.dialect_override, s.status, s.status_reason, b.distill_version,
               b.lake_version, s.retired, s.retired_reason
        FROM batch_log b JOIN (
            SELECT * FROM batch_states WHERE version <= {int(version)}
            QUALIFY row_number() OVER (PARTITION BY batch_id ORDER BY version DESC) = 1
        ) s USING (batch_id)
        WHERE b.lake_version <= {int(version)}
        ORDER BY b.lake_version, b.batch_id
        """,
        into=into,
    )
    _make(
        con,
        "files",
        "SELECT * FROM file_log WHERE batch_id IN (SELECT batch_id FROM batches) ORDER BY ingested_at, path",
        into=into,
    )
    live = con.execute(
        f"SELECT path, missing, batch_ids, source, generation FROM ({live_files_sql(version)}) ORDER BY path"
    ).fetchall()
    if check:
        lake_files = log.readable(layout.lake, [row[0] for row in live], [row[2] for row in live], version)
    else:  # a writer's views: a file lost on disk is left out here, and refused where rows are read
        live = [row for row in live if log.inside(layout.lake, row[0]) is not None and (layout.lake / row[0]).is_file()]
        lake_files = [layout.lake / row[0] for row in live]
    _show(
        target,
        "decisions",
        lake_files,
        lake_schema(),
        sandbox=into is not None,
        missing=[row[1] for row in live],
        partitions=[partition_values(row[3], row[4]) for row in live],
    )
    kept = con.execute("SELECT batch_id FROM batches WHERE NOT retired ORDER BY lake_version, batch_id").fetchall()
    quarantined = layout.within(path for (batch,) in kept if (path := layout.quarantine_file(batch)).is_file())
    _show(
        target, "quarantine", quarantined, QUARANTINE_SCHEMA, sandbox=into is not None, missing=[()] * len(quarantined)
    )
    target.execute(f"CREATE OR REPLACE TEMP VIEW rejects AS {REJECTS_SQL}")
    target.execute(f"CREATE OR REPLACE TEMP VIEW reject_reasons AS {REJECT_REASONS_SQL}")
    target.execute(
        f"""
        CREATE OR REPLACE TEMP VIEW games AS
        SELECT {col.GAME_ID},
               CASE WHEN count(DISTINCT {col.SOURCE}) = 1 THEN any_value({col.SOURCE}) ELSE 'mixed' END AS source,
               list(DISTINCT {col.SOURCE} ORDER BY {col.SOURCE}) AS sources,
               max({col.POD_SIZE}) AS pod_size,
               any_value({col.WINNER_SEAT}) AS winner_seat,
               bool_or({col.IS_DRAW}) AS is_draw,
               bool_or({col.TIMED_OUT}) AS timed_out,
               max({col.TURN}) AS turns,
               count(*) AS decisions,
               count(DISTINCT {col.SEAT}) AS seats_logged,
               min({col.GENERATION}) AS generation,
               list(DISTINCT {col.BATCH_ID}) AS batches
        FROM decisions GROUP BY {col.GAME_ID} ORDER BY {col.GAME_ID}
        """
    )
    _register_generations(con, layout, into=into)
    _register_label_scores(target, layout, sandbox=into is not None)
    if into is not None:
        _make(con, "versions", "SELECT * FROM versions ORDER BY version", into=into)


def _make(con: duckdb.DuckDBPyConnection, name: str, query: str, *, into: duckdb.DuckDBPyConnection | None) -> None:
    """The view ``name`` of ``query`` on ``con``; with ``into`` (a sandbox), its rows now, as an Arrow table
    registered under ``name`` there (a view no statement can change, that needs none of the tables it was made
    of) and on ``con`` (where the queries of the views after it read it)."""
    if into is None:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {query}")
        return
    rows = con.sql(query).to_arrow_table()
    con.register(name, rows)
    into.register(name, rows)


def _show(
    con: duckdb.DuckDBPyConnection,
    name: str,
    files: Sequence[Path],
    schema: pa.Schema,
    *,
    sandbox: bool,
    missing: Sequence[Sequence[str]],
    partitions: Sequence[Mapping[str, object]] | None = None,
    extra: str = "",
) -> None:
    """The view ``name`` of ``files`` (see :func:`relation`), with the columns ``extra`` computes after the files'
    (SQL select items); on a sandboxed connection, the files opened now as an Arrow dataset registered as ``name``
    (with ``extra``, a view of a relation over it, so no second name shows), which DuckDB scans later without a
    path it could misuse (a partition column a file lacks takes its value from the file's partition expression, as
    Delta readers give it)."""
    if not sandbox:
        source = relation(con, name, files, schema, missing=missing, partitions=partitions)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT *{', ' + extra if extra else ''} FROM {source}")
        return
    arrow = _arrow_source(files, schema, missing=missing, partitions=partitions)
    if extra:
        con.from_arrow(arrow).project(f"*, {extra}").create_view(name, replace=True)
    else:
        con.register(name, arrow)


def _arrow_source(
    files: Sequence[Path],
    schema: pa.Schema,
    *,
    missing: Sequence[Sequence[str]],
    partitions: Sequence[Mapping[str, object]] | None,
) -> object:
    """``files`` as one Arrow dataset of ``schema`` (an empty table when there are none: no pandas import)."""
    if not files:
        return pa.Table.from_batches([], schema=schema)
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    fills = [_fill(m, p) for m, p in zip(missing, partitions or [{}] * len(files), strict=True)]
    if not any(fills):
        return ds.dataset([str(f) for f in files], schema=schema, format="parquet")
    return ds.FileSystemDataset.from_paths(
        [str(f) for f in files],
        schema=schema,
        format=ds.ParquetFileFormat(),
        filesystem=pafs.LocalFileSystem(),
        partitions=[_expression(fill) for fill in fills],
    )


def partition_values(source: str | None, generation: int | None) -> dict[str, object]:
    """The values of the table's partition columns for a file (its facts in the log)."""
    return {col.SOURCE: source, col.GENERATION: generation}


def _fill(missing: Sequence[str], partitions: Mapping[str, object]) -> dict[str, object]:
    """The partition columns a file lacks (a file another Delta writer wrote), with the values the log gives."""
    return {name: value for name, value in partitions.items() if name in missing}


def _expression(fill: Mapping[str, object]) -> object:
    import pyarrow.compute as pc

    expression = pc.scalar(True)
    for name, value in fill.items():
        expression = expression & (pc.field(name).is_null() if value is None else pc.field(name) == value)
    return expression


def relation(
    con: duckdb.DuckDBPyConnection,
    name: str,
    files: Sequence[Path],
    schema: pa.Schema,
    *,
    missing: Sequence[Sequence[str]] | None = None,
    partitions: Sequence[Mapping[str, object]] | None = None,
) -> str:
    """SQL reading ``files`` with exactly the columns of ``schema``, in its order (a column a file lacks: null, or,
    for a partition column, the file's value in ``partitions``: a file another Delta writer wrote carries its
    partition values in the log only). See :func:`_relation`."""
    if missing is None or partitions is None:
        return _relation(con, name, files, schema, missing=missing)
    groups: dict[tuple[tuple[str, object], ...], list[int]] = {}
    for i, (lacks, values) in enumerate(zip(missing, partitions, strict=True)):
        groups.setdefault(tuple(_fill(lacks, values).items()), []).append(i)
    if list(groups) in ([], [()]):
        return _relation(con, name, files, schema, missing=missing)
    parts = []
    for n, (fill, members) in enumerate(groups.items()):
        source = _relation(
            con, f"{name}_{n}", [files[i] for i in members], schema, missing=[missing[i] for i in members]
        )
        if fill:
            values = ", ".join(f"{_value(v, schema.field(c).type)} AS {_quoted(c)}" for c, v in fill)
            source = f"(SELECT * REPLACE ({values}) FROM {source})"
        parts.append(f"SELECT * FROM {source}")
    return "(" + " UNION ALL ".join(parts) + ")"


def _value(value: object, arrow: pa.DataType) -> str:
    if value is None:
        return f"NULL::{duck_type(arrow)}"
    text = sql_literal(str(value))
    return f"'{text}'::{duck_type(arrow)}"


def _relation(
    con: duckdb.DuckDBPyConnection,
    name: str,
    files: Sequence[Path],
    schema: pa.Schema,
    *,
    missing: Sequence[Sequence[str]] | None = None,
) -> str:
    """SQL reading ``files`` with exactly the columns of ``schema``, in its order (a column a file lacks: null).

    ``missing``: the columns each file lacks, as the index knows them (None:
    ask the files). When no file lacks any, DuckDB binds the first file's
    columns alone; otherwise it reads every footer and unites the columns by
    name. DuckDB reads the files itself, in parallel (a sandboxed connection
    scans Arrow datasets instead: see :func:`register`).
    """
    if not files:  # an empty relation with the right columns (from_batches: no pandas import)
        con.register(f"_empty_{name}", pa.Table.from_batches([], schema=schema))
        return f"_empty_{name}"
    listed = ", ".join(f"'{sql_literal(str(f))}'" for f in files)
    if missing is not None and not any(missing):
        return f"read_parquet([{listed}], hive_partitioning = false)"
    source = f"read_parquet([{listed}], hive_partitioning = false, union_by_name = true)"
    if missing is not None:
        present = set(schema.names) - set.intersection(*(set(m) for m in missing))
    else:
        present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    if list(schema.names) == [n for n in schema.names if n in present] and len(present) == len(schema):
        return source
    columns = [
        f'"{field.name}"' if field.name in present else f'NULL::{duck_type(field.type)} AS "{field.name}"'
        for field in schema
    ]
    return f"(SELECT {', '.join(columns)} FROM {source})"


def duck_type(arrow: pa.DataType) -> str:
    """The DuckDB type of an Arrow type (the lake's kinds: integers, floats, booleans, text, bytes, lists,
    structs)."""
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow) or pa.types.is_fixed_size_list(arrow):
        return f"{duck_type(arrow.value_type)}[]"
    if pa.types.is_struct(arrow):
        return "STRUCT(" + ", ".join(f'"{f.name}" {duck_type(f.type)}' for f in arrow) + ")"
    simple = {
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INTEGER",
        pa.int64(): "BIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.bool_(): "BOOLEAN",
        pa.string(): "VARCHAR",
        pa.large_string(): "VARCHAR",
        pa.binary(): "BLOB",
    }
    return simple[arrow]


def _register_generations(
    con: duckdb.DuckDBPyConnection, layout: Layout, *, into: duckdb.DuckDBPyConnection | None
) -> None:
    """``generations``: the records of every loop run (runs/*/generations.jsonl), the latest per generation, the
    documented columns first (in :data:`GENERATION_COLUMNS` order), in order of loop and generation (read now on a
    sandboxed connection: sealed, it cannot read the files later)."""
    files = layout.within(
        path
        for path in sorted(layout.runs.glob("*/generations.jsonl"))
        if re.fullmatch(NAME_PATTERN, path.parent.name)  # a run's folder, never a name DuckDB takes as a pattern
    )
    listed = ", ".join(f"'{sql_literal(str(f))}'" for f in files)
    source = f"read_json_auto([{listed}], format = 'newline_delimited', union_by_name = true)"
    found: dict[str, str] = {}
    if files:
        found = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})").fetchall())
    if {"loop", "generation"} <= found.keys():
        ordered = [n for n in GENERATION_COLUMNS if n in found] + [n for n in found if n not in GENERATION_COLUMNS]
        columns = [  # a column null in every record has no type of its own: the one it has when it is not null
            f"{_quoted(n)}::{_GENERATION_TYPES[n]} AS {_quoted(n)}"
            if found[n] == '"NULL"' and n in _GENERATION_TYPES
            else _quoted(n)
            for n in ordered
        ]
        # a record written before records carried their format is of format 1
        version = "coalesce(format_version, 1)" if "format_version" in found else "1"
        columns = [f"{version}::BIGINT AS format_version"] + [
            c for c, n in zip(columns, ordered, strict=True) if n != "format_version"
        ]
        body = (
            f"SELECT {', '.join(columns)} FROM {source} "
            "QUALIFY row_number() OVER (PARTITION BY loop, generation ORDER BY recorded_at DESC) = 1"
        )
    else:  # no loop ran, or its first record is not written yet: every documented column, none of its rows
        columns = [f"NULL::{_GENERATION_TYPES.get(n, 'JSON')} AS {_quoted(n)}" for n in GENERATION_COLUMNS]
        body = f"SELECT {', '.join(columns)} WHERE false"
    _make(con, "generations", f"{body} ORDER BY loop, generation", into=into)


# The types of the generations columns read from JSON as numbers, text or booleans, for the view when no loop ran
# (the others are nested; DuckDB reads them as structs and lists, typed by the records found).
_GENERATION_TYPES: Final = {
    **dict.fromkeys(("loop", "outcome", "reason", "student", "ppo"), "VARCHAR"),
    **dict.fromkeys(("format_version", "generation", "retries"), "BIGINT"),
    **dict.fromkeys(("teacher_promoted", "student_promoted"), "BOOLEAN"),
    **dict.fromkeys(("holdout_accuracy", "previous_accuracy", "ppo_win_rate", "seconds"), "DOUBLE"),
    **dict.fromkeys(("student_win_rate", "student_win_low", "student_win_high"), "DOUBLE"),
    "recorded_at": "TIMESTAMPTZ",
}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _register_label_scores(con: duckdb.DuckDBPyConnection, layout: Layout, *, sandbox: bool) -> None:
    """``label_scores``: the label-scores tables beside every build (builds/<name>/<fingerprint>/), one row per
    scored decision, with the build's name and fingerprint."""
    found = layout.within(
        path
        for path in sorted(layout.builds.glob(f"*/*/{LABEL_SCORES_FILE}"))
        if re.fullmatch(NAME_PATTERN, path.parent.parent.name) and re.fullmatch(FINGERPRINT_PATTERN, path.parent.name)
    )
    names = "[" + ", ".join(f"'{sql_literal(a)}'" for a in MACRO_ACTIONS) + "]"
    _show(
        con,
        "label_scores",
        [Path(p) for p in found],
        scores.SCHEMA,
        sandbox=sandbox,
        missing=[()] * len(found),
        extra=f"{names}[{scores.LABEL} + 1] AS {scores.LABEL_ACTION}, "
        f"{names}[{scores.PREDICTED} + 1] AS {scores.PREDICTED_ACTION}",
    )


def seal(con: duckdb.DuckDBPyConnection, limits: SandboxLimits | None = None) -> None:
    """No file access, no extension loading, no secrets, no path of this machine to show, the ``limits`` on time
    and memory, times in UTC, and no way to change any of it (see ``Catalog.open``).

    Nothing is spilled to disk: a statement holds what it sorts or joins in
    memory, up to the limit. ``max_execution_time`` is DuckDB's own clock on
    a statement (its output included); interrupted, the statement raises
    DuckDB's ``INTERRUPT`` error.
    """
    limits = limits or SandboxLimits()
    settings = {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "allow_community_extensions": "false",
        "allow_persistent_secrets": "false",
        "python_enable_replacements": "false",  # no reading the caller's Python variables by name
        "enable_progress_bar": "false",  # DuckDB's own bar would print into the output
        "temp_directory": "''",
        "secret_directory": "''",
        "home_directory": f"'{NO_HOME}'",  # what the extension and secret folders are named after
        "memory_limit": f"'{sql_literal(limits.memory_limit)}'",
        "max_execution_time": str(limits.timeout_ms),
        "TimeZone": "'UTC'",  # times print the same on every machine (Distill's times are UTC)
        "enable_external_access": "false",
    }
    for setting, value in settings.items():
        con.execute(f"SET {setting} = {value}")
    con.execute("SET lock_configuration = true")
