"""Read-only SQL over the catalog views (``decisions``, ``games``, ``files``, ``batches``, ``rejects``,
``generations``).

The guarantee is structural, not a statement filter: :func:`run_query` runs
on a catalog opened with ``sandbox=True`` (see :meth:`Catalog.open`), whose
DuckDB connection is read-only, has file access and extension loading
switched off and its configuration locked. However a statement is wrapped
(``EXPLAIN ANALYZE COPY ...``) or chained, it can neither write anything nor
read a file other than the lake and the quarantine the views were opened
on. The statement check in front of it only gives the common refusals a
plain message.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from toolkit.catalog.store import Catalog
from toolkit.errors import QueryError

_ALLOWED = {"SELECT", "EXPLAIN"}
_VIEWS_HINT = "views: decisions, games, files, batches, rejects, generations"
# DuckDB's wording for what the sandbox refuses -> why, in our words
_SANDBOX_REFUSALS = {
    "file system operations are disabled": "distill sql reads only the catalog views: file access is switched off",
    "the configuration has been locked": "distill sql cannot change DuckDB settings: they are locked",
    "read-only mode": "distill sql is read-only: the catalog cannot be changed from it",
}


def run_query(catalog: Catalog, sql: str) -> pa.Table:
    """Run one read-only statement on a sandboxed catalog and return its result as Arrow.

    Raises:
        QueryError: more than one statement, a statement that would write or
            reach outside the views, or a statement DuckDB rejects.
    """
    if not catalog.sandbox:
        raise QueryError("run_query needs a sandboxed catalog", hint="open it with Catalog.open(layout, sandbox=True)")
    try:
        statements = catalog.con.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryError(f"cannot parse the statement: {error}") from error
    if len(statements) != 1:
        raise QueryError(f"give exactly one statement, got {len(statements)}", hint="run them one at a time")
    kind = statement_kind(statements[0])
    if kind not in _ALLOWED:
        raise QueryError(
            f"distill sql is read-only: {'an' if kind[0] in 'AEIOU' else 'a'} {kind} statement is refused",
            hint="use SELECT (or EXPLAIN); to export results use --csv, --json or --parquet FILE",
        )
    try:
        return catalog.con.sql(sql).to_arrow_table()
    except duckdb.Error as error:
        first = str(error).splitlines()[0]
        for marker, why in _SANDBOX_REFUSALS.items():
            if marker in first:
                raise QueryError(f"{why} ({first})", hint=_VIEWS_HINT) from error
        raise QueryError(first, hint=_VIEWS_HINT) from error


def statement_kind(statement: duckdb.Statement) -> str:
    """The statement's kind as a user wrote it (DuckDB files INSTALL under LOAD, for one)."""
    kind = statement.type.name
    words = statement.query.split()
    if kind == "LOAD" and words:
        return words[0].upper()
    return kind
