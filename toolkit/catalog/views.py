"""The views users query, as the lake was at one version.

``decisions`` (the lake's live files at the version), ``rejects`` (the
quarantined lines of its batches that are not retired), ``batches`` (each
batch's record and its state at the version), ``files`` (the ingested files
of those batches), ``games`` (one row per game), ``generations`` (the loop
runs' records). The index tables (``versions``, ``lake_files``,
``batch_log``, ``batch_states``, ``file_log``) can be queried too.

Files lacking columns that a later contract added (schema evolution) are
read with those columns null, so every version reads with today's columns.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from toolkit.layout import Layout, sql_literal
from toolkit.schema import columns as col
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

VIEWS_HINT = "views: decisions, games, batches, files, rejects, generations, versions"


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


def seal(con: duckdb.DuckDBPyConnection) -> None:
    """No file access, no extension loading, and no way to turn either back on (see ``Catalog.open``)."""
    for setting in (
        "autoinstall_known_extensions",
        "autoload_known_extensions",
        "allow_community_extensions",
        "enable_external_access",
    ):
        con.execute(f"SET {setting} = false")
    con.execute("SET lock_configuration = true")
