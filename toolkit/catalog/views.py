"""The views users query, as the lake was at one version.

``decisions`` (the lake's live files at the version), ``rejects`` (the
quarantined lines of its batches that are not retired), ``batches`` (each
batch's record and its state at the version), ``files`` (the ingested files
of those batches), ``games`` (one row per game), ``generations`` (the loop
runs' records), ``label_scores`` (every scored build's decisions: ``distill check labels``;
its columns are described in :data:`toolkit.schema.scores.COLUMN_DOCS`). The index tables (``versions``, ``lake_files``,
``batch_log``, ``batch_states``, ``file_log``) can be queried too.

Files lacking columns that a later contract added (schema evolution) are
read with those columns null, so every version reads with today's columns.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import duckdb
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.layout import LABEL_SCORES_FILE, Layout, sql_literal
from toolkit.schema import columns as col
from toolkit.schema import scores
from toolkit.schema.arrow import lake_schema

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

VIEWS_HINT = "views: decisions, games, batches, files, rejects, generations, versions, label_scores"
# The columns of the views whose files Distill writes besides the lake, described (distill sql lists them).
VIEW_COLUMN_DOCS: Final[dict[str, dict[str, str]]] = {"label_scores": scores.COLUMN_DOCS}
DEFAULT_TIMEOUT_S: Final = 300.0
DEFAULT_MEMORY_LIMIT: Final = "25%"
NO_HOME: Final = "/nonexistent"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)\s*$", re.IGNORECASE)


class SandboxLimits(BaseModel):
    """What one statement on a sandboxed catalog (``distill sql``) may spend; set by :func:`seal`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(
        DEFAULT_TIMEOUT_S, ge=0, description="Seconds a statement may run, its output included; 0: no limit."
    )
    memory_limit: str = Field(
        DEFAULT_MEMORY_LIMIT,
        description="Memory DuckDB may use: a size (512MB, 4GB, 2GiB) or a share of this machine's (25%).",
    )

    @field_validator("memory_limit")
    @classmethod
    def _a_size_or_a_share(cls, value: str) -> str:
        found = _SIZE.match(value)
        if found is None or float(found[1]) <= 0 or (found[2] == "%" and float(found[1]) > 100):
            raise ValueError(f"give a size such as 4GB or 512MiB, or a share such as 25% (not {value!r})")
        return value.strip()

    @property
    def timeout_ms(self) -> int:
        """DuckDB's ``max_execution_time``: milliseconds, 0 for none."""
        return 0 if self.timeout == 0 else max(1, round(self.timeout * 1000))


def live_files_sql(version: int) -> str:
    """SQL of the index rows of the files live at ``version``."""
    return (
        f"SELECT * FROM lake_files WHERE added_version <= {int(version)} "
        f"AND (removed_version IS NULL OR removed_version > {int(version)})"
    )


def register(con: duckdb.DuckDBPyConnection, layout: Layout, version: int, *, sandbox: bool) -> None:
    """Create this connection's views of the lake at ``version``."""
    con.execute(
        f"""
        CREATE OR REPLACE TEMP VIEW batches AS
        SELECT b.batch_id, b.created_at, b.file_sha256, b.rows_valid, b.rows_rejected, b.rows_duplicate, b.sources,
               b.generations, b.source_override, b.dialect_override, s.status, s.status_reason, b.distill_version,
               b.lake_version, s.retired, s.retired_reason
        FROM batch_log b JOIN (
            SELECT * FROM batch_states WHERE version <= {int(version)}
            QUALIFY row_number() OVER (PARTITION BY batch_id ORDER BY version DESC) = 1
        ) s USING (batch_id)
        WHERE b.lake_version <= {int(version)}
        """
    )
    con.execute(
        "CREATE OR REPLACE TEMP VIEW files AS SELECT * FROM file_log WHERE batch_id IN (SELECT batch_id FROM batches)"
    )
    live = con.execute(f"SELECT path, missing FROM ({live_files_sql(version)}) ORDER BY path").fetchall()
    lake = relation(
        con,
        "decisions",
        [layout.lake / p for p, _ in live],
        lake_schema(),
        sandbox=sandbox,
        missing=[m for _, m in live],
    )
    con.execute(f"CREATE OR REPLACE TEMP VIEW decisions AS SELECT * FROM {lake}")
    quarantined = sorted(glob.glob(str(layout.quarantine / "batch=*" / "*.parquet")))
    rejects = relation(
        con,
        "rejects",
        [Path(p) for p in quarantined],
        QUARANTINE_SCHEMA,
        sandbox=sandbox,
        missing=[()] * len(quarantined),
    )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW rejects AS SELECT * FROM {rejects} "
        f"WHERE {col.BATCH_ID} IN (SELECT batch_id FROM batches WHERE NOT retired)"
    )
    con.execute(
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
        FROM decisions GROUP BY {col.GAME_ID}
        """
    )
    _register_generations(con, layout, sandbox=sandbox)
    _register_label_scores(con, layout, sandbox=sandbox)


def relation(
    con: duckdb.DuckDBPyConnection,
    name: str,
    files: Sequence[Path],
    schema: pa.Schema,
    *,
    sandbox: bool = False,
    missing: Sequence[Sequence[str]] | None = None,
) -> str:
    """SQL reading ``files`` with exactly the columns of ``schema``, in its order (a column a file lacks: null).

    ``missing``: the columns each file lacks, as the index knows them (None:
    ask the files). When no file lacks any, DuckDB binds the first file's
    columns alone; otherwise it reads every footer and unites the columns by
    name. On a sandboxed connection the files are opened now, as an Arrow
    dataset DuckDB scans later without a path it could misuse; elsewhere
    DuckDB reads them itself (faster, and in parallel).
    """
    if not files:  # an empty relation with the right columns (from_batches: no pandas import)
        con.register(f"_empty_{name}", pa.Table.from_batches([], schema=schema))
        return f"_empty_{name}"
    if sandbox:
        import pyarrow.dataset as ds

        con.register(f"_files_{name}", ds.dataset([str(f) for f in files], schema=schema, format="parquet"))
        return f"_files_{name}"
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


def _register_generations(con: duckdb.DuckDBPyConnection, layout: Layout, *, sandbox: bool) -> None:
    """``generations``: the records of every loop run (runs/*/generations.jsonl), the latest per generation."""
    pattern = str(layout.runs / "*" / "generations.jsonl")
    if glob.glob(pattern):
        source = f"read_json_auto('{sql_literal(pattern)}', format = 'newline_delimited', union_by_name = true)"
        body = (
            f"SELECT * FROM {source} QUALIFY row_number() OVER (PARTITION BY loop, generation ORDER BY "
            f"recorded_at DESC) = 1"
        )
    else:
        body = "SELECT NULL::VARCHAR AS loop, NULL::INTEGER AS generation, NULL::VARCHAR AS outcome WHERE false"
    kind = "TABLE" if sandbox else "VIEW"  # a sealed connection cannot read the files later
    con.execute(f"CREATE OR REPLACE TEMP {kind} generations AS {body}")


def _register_label_scores(con: duckdb.DuckDBPyConnection, layout: Layout, *, sandbox: bool) -> None:
    """``label_scores``: the label-scores tables beside every build (builds/<name>/<fingerprint>/), one row per
    scored decision, with the build's name and fingerprint."""
    found = sorted(glob.glob(str(layout.builds / "*" / "*" / LABEL_SCORES_FILE)))
    files = relation(
        con, "label_scores", [Path(p) for p in found], scores.SCHEMA, sandbox=sandbox, missing=[()] * len(found)
    )
    con.execute(f"CREATE OR REPLACE TEMP VIEW label_scores AS SELECT * FROM {files}")


def copy_to_memory(source: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A connection to a new in-memory database holding the tables of ``source``, which is closed.

    A sandboxed catalog works on this copy, so its connection holds no file
    of the data root: ``duckdb_databases()`` names no path, and the catalog
    file is not among the files DuckDB lets a sealed connection read (it
    lets one read the files of the databases it has attached). The tables
    go through Arrow, into tables made by their own ``CREATE`` statements
    (so a JSON column stays JSON); the catalog's tables are small.
    """
    memory = duckdb.connect(":memory:")
    try:
        tables = source.execute(
            "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary"
        ).fetchall()
        for name, create in tables:
            memory.execute(create)
            memory.register("_copied", source.sql(f'SELECT * FROM "{name}"').to_arrow_table())
            memory.execute(f'INSERT INTO "{name}" SELECT * FROM _copied')
            memory.unregister("_copied")
    except BaseException:
        memory.close()
        raise
    finally:
        source.close()
    return memory


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
