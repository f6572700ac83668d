"""Read-only SQL over the catalog views (``decisions``, ``games``, ``files``, ``batches``, ``rejects``, ``generations``)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from toolkit.catalog.store import Catalog
from toolkit.errors import QueryError

_ALLOWED = {"SELECT", "EXPLAIN"}


def run_query(catalog: Catalog, sql: str) -> pa.Table:
    """Run one read-only statement and return its result as Arrow.

    Raises:
        QueryError: more than one statement, a statement that would write,
            or a statement DuckDB rejects.
    """
    try:
        statements = catalog.con.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryError(f"cannot parse the statement: {error}") from error
    if len(statements) != 1:
        raise QueryError(f"give exactly one statement, got {len(statements)}", hint="run them one at a time")
    kind = statements[0].type.name
    if kind not in _ALLOWED:
        raise QueryError(
            f"distill sql is read-only: a {kind} statement is refused",
            hint="use SELECT (or EXPLAIN); to export results use --csv, --json or --parquet FILE",
        )
    try:
        return catalog.con.sql(sql).to_arrow_table()
    except duckdb.Error as error:
        raise QueryError(str(error).splitlines()[0], hint="views: decisions, games, files, batches, rejects, generations") from error
