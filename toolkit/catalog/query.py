"""Read-only SQL over the catalog views (``decisions``, ``games``, ``batches``, ``files``, ``rejects``,
``versions``, ``generations``: see :mod:`toolkit.catalog.view_docs`, and :func:`describe_views`), streamed.

The guarantee is structural, not a statement filter: :func:`start_query`
runs on a catalog opened with ``sandbox=True`` (see :meth:`Catalog.open`),
whose DuckDB connection, an in-memory database holding the views alone, has file
access and extension loading switched off, its time and memory bounded and
its configuration locked. However a statement is wrapped (``EXPLAIN
ANALYZE COPY ...``) or chained, it can neither write a file nor read one
other than the lake and the quarantine the views were opened on. The
statement check in front of it (:mod:`toolkit.catalog.statements`) only
gives the refusals a plain message.

Rows are streamed as Arrow record batches, never the whole result at once.
Each value is printed as DuckDB prints it (:meth:`QueryResult.text_rows`:
DuckDB's own cast to text, exact for every type: infinite and BC dates and
timestamps, ``UHUGEINT``, ``TIMETZ`` with its offset, ``INTERVAL``...), or
as the JSON DuckDB writes for it (:meth:`QueryResult.json_rows`), where
the floats JSON cannot hold are the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``. Neither goes through Python's own date, time or decimal
types, which cannot hold all of DuckDB's values.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

import duckdb
import pyarrow as pa
from pydantic import BaseModel

from toolkit.catalog.statements import check_statement, file_functions
from toolkit.catalog.store import Catalog
from toolkit.catalog.view_docs import VIEWS, VIEWS_HINT, ViewDoc
from toolkit.errors import QueryError, QueryInterrupted

BATCH_ROWS: Final = 2048  # rows per streamed batch: DuckDB's vector size
# DuckDB's wording for what the sandbox refuses -> why, in our words
_NO_FILES = "file system operations are disabled"
_SANDBOX_REFUSALS = {
    _NO_FILES: "distill sql reads only the catalog views: file access is switched off",
    "the configuration has been locked": "distill sql cannot change DuckDB settings: they are locked",
    "read-only mode": "distill sql is read-only: the catalog cannot be changed from it",
}
_TIMED_OUT = "Query exceeded maximum execution time"
_INTERRUPTED = "INTERRUPT Error"
_OUT_OF_MEMORY = "Out of Memory Error"
_AS_TEXT = "CAST(COLUMNS(*) AS VARCHAR)"
_AS_JSON = "to_json(COLUMNS(*))"
# a JSON string (kept as it is) or a number JSON has no word for (quoted)
_JSON_NON_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')
# DuckDB types Parquet (through Arrow) cannot hold as they are: written, they would read back as other values
_NOT_FOR_PARQUET = {"uhugeint", "time with time zone", "bit", "bignum", "interval", "union", "variant"}


class QueryResult:
    """The result of one statement, read once in the form an output needs (each form runs the statement).

    Every iterator raises :class:`~toolkit.errors.QueryError` when the
    statement fails while it runs (out of time or memory, a DuckDB error),
    and :class:`~toolkit.errors.QueryInterrupted` when it is interrupted.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, sql: str = "") -> None:
        self._con = con
        self._relation = relation
        self._sql = sql
        self.columns: list[str] = _guarded(con, lambda: relation.project(_AS_TEXT).columns, sql)
        """The column names; a name the statement gives twice gets DuckDB's suffix (``a``, ``a_1``)."""

    def arrow_batches(self, max_rows: int | None = None) -> Iterator[pa.RecordBatch]:
        """The rows as DuckDB hands them to Arrow (native types; see :meth:`check_parquet`)."""
        return _stream(self._con, self._relation.project("COLUMNS(*)"), max_rows, self._sql)

    def text_rows(self, max_rows: int | None = None) -> Iterator[list[str | None]]:
        """Each row as DuckDB prints its values (None for NULL), at most ``max_rows`` of them."""
        for batch in _stream(self._con, self._relation.project(_AS_TEXT), max_rows, self._sql):
            yield from (list(row) for row in zip(*(column.to_pylist() for column in batch.columns), strict=True))

    def json_rows(self) -> Iterator[str]:
        """Each row as one JSON object (its keys the :attr:`columns`): the JSON DuckDB writes for each value, with
        NaN and the infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
        keys = [json.dumps(name, ensure_ascii=False) + ": " for name in self.columns]
        for batch in _stream(self._con, self._relation.project(_AS_JSON), None, self._sql):
            for row in zip(*(column.to_pylist() for column in batch.columns), strict=True):
                yield "{" + ", ".join(key + json_value(value) for key, value in zip(keys, row, strict=True)) + "}"

    def check_parquet(self) -> None:
        """Refuse a result Parquet cannot hold exactly (see :data:`_NOT_FOR_PARQUET`), naming the column.

        Raises:
            QueryError: a column is (or holds) such a type.
        """
        for name, kind in zip(self.columns, self._relation.types, strict=True):
            found = _lossy_part(kind)
            if found is not None:
                raise QueryError(
                    f"column {name!r} is {kind}: Parquet cannot hold its {found.upper()} values exactly",
                    hint=f"cast it in the statement (e.g. {name}::VARCHAR), or use --csv or --json",
                )

    def to_arrow_table(self) -> pa.Table:
        """Every row in one Arrow table (for callers that want them all at once)."""
        batches = list(self.arrow_batches())
        if batches:
            return pa.Table.from_batches(batches)
        return _guarded(self._con, lambda: self._relation.project("COLUMNS(*)").limit(0).to_arrow_table(), self._sql)


def start_query(catalog: Catalog, sql: str) -> QueryResult:
    """Check one read-only statement on a sandboxed catalog and bind it; its rows stream from the result.

    Raises:
        QueryError: more than one statement, a statement that would write or
            reach outside the views, or a statement DuckDB rejects.
        QueryInterrupted: the statement was interrupted (an ``EXPLAIN ANALYZE`` runs here).
    """
    if not catalog.sandbox:
        raise QueryError(
            "SQL from users runs only on a sandboxed catalog", hint="open it with Catalog.open(layout, sandbox=True)"
        )
    statement = check_statement(catalog.con, sql)
    return QueryResult(catalog.con, _guarded(catalog.con, lambda: catalog.con.sql(statement.query), sql), sql)


class ColumnSchema(BaseModel):
    """One column of a view: its name, its DuckDB type written in full, what it holds."""

    name: str
    type: str
    description: str


class ViewSchema(BaseModel):
    """One view: what a row is, the order its rows come in (None: none; use ORDER BY), its columns."""

    name: str
    description: str
    order: str | None
    columns: list[ColumnSchema]


def describe_views(catalog: Catalog, view: str | None = None) -> list[ViewSchema]:
    """Every view (or the one named ``view``), its columns with the types this catalog gives them, each described.

    Raises:
        QueryError: no view is named ``view``.
    """
    if view is not None and view not in VIEWS:
        raise QueryError(f"no view is named {view!r}", hint=VIEWS_HINT)
    return [_described(catalog.con, VIEWS[name]) for name in ([view] if view else VIEWS)]


def _described(con: duckdb.DuckDBPyConnection, doc: ViewDoc) -> ViewSchema:
    found = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {doc.name})").fetchall()
    columns = [ColumnSchema(name=n, type=t, description=doc.columns.get(n, "")) for n, t in found]
    return ViewSchema(name=doc.name, description=doc.summary, order=doc.order, columns=columns)


def run_query(catalog: Catalog, sql: str) -> pa.Table:
    """Run one read-only statement on a sandboxed catalog and return its whole result as Arrow.

    Raises:
        QueryError: see :func:`start_query`.
    """
    return start_query(catalog, sql).to_arrow_table()


def json_value(text: str | None) -> str:
    """A value as DuckDB's ``to_json`` writes it, made valid JSON: NULL is null, and NaN and the infinities
    (which DuckDB writes as bare words) are strings."""
    if text is None:
        return "null"
    if "NaN" not in text and "Infinity" not in text:
        return text
    return _JSON_NON_FINITE.sub(lambda found: f'"{found[1]}"' if found[1] else found[0], text)


def _lossy_part(kind: duckdb.sqltypes.DuckDBPyType) -> str | None:
    """The first type in ``kind`` (itself or a type nested in it) that Parquet cannot hold, or None."""
    if kind.id in _NOT_FOR_PARQUET:
        return kind.id
    if kind.id not in ("list", "array", "struct", "map"):
        return None
    for _, child in kind.children:
        found = _lossy_part(child) if isinstance(child, duckdb.sqltypes.DuckDBPyType) else None
        if found is not None:
            return found
    return None


def _stream(
    con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, max_rows: int | None, sql: str
) -> Iterator[pa.RecordBatch]:
    """The relation's rows, batch by batch (the first ``max_rows`` only: DuckDB stops there)."""
    if max_rows is not None:
        relation = relation.limit(max(0, max_rows))
    reader = _guarded(con, lambda: relation.to_arrow_reader(BATCH_ROWS), sql)
    try:
        while True:
            try:
                batch = _guarded(con, reader.read_next_batch, sql)
            except StopIteration:
                return
            yield batch
    finally:
        reader.close()


def _guarded(con: duckdb.DuckDBPyConnection, step: Callable[[], Any], sql: str = "") -> Any:
    """``step()`` of the statement ``sql``, with DuckDB's errors (raised directly, or through Arrow's reader) as
    :class:`QueryError`."""
    try:
        return step()
    except (duckdb.Error, OSError, pa.ArrowException) as error:
        raise _query_error(con, error, sql) from error


def _query_error(con: duckdb.DuckDBPyConnection, error: Exception, sql: str = "") -> QueryError:
    first = (str(error).splitlines() or [type(error).__name__])[0]
    if _TIMED_OUT in first:
        return QueryError(
            f"the statement ran past its time limit of {_setting(con, 'max_execution_time') / 1000:g} s",
            hint="give it more with --timeout SECONDS (0: no limit), or narrow it (WHERE, LIMIT; a recursive CTE "
            "needs a condition that ends it)",
        )
    if _INTERRUPTED in first:
        return QueryInterrupted("the statement was interrupted (Ctrl-C); nothing more is printed")
    if _OUT_OF_MEMORY in first:
        return QueryError(
            f"the statement needs more memory than its limit of {_setting(con, 'memory_limit')} "
            "(distill sql spills nothing to disk)",
            hint="give it more with --memory-limit (e.g. 8GB or 50%), or narrow it (WHERE, LIMIT, fewer columns)",
        )
    for marker, why in _SANDBOX_REFUSALS.items():
        if marker in first:
            readers = file_functions(sql) if marker == _NO_FILES else []
            if readers:
                why = f"{' and '.join(readers)} would read files outside the lake: {why}"
            return QueryError(f"{why} ({first})", hint=VIEWS_HINT)
    return QueryError(first, hint=VIEWS_HINT)


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> Any:
    return con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]


@contextlib.contextmanager
def interrupt_on_sigint(catalog: Catalog) -> Iterator[None]:
    """Ctrl-C (SIGINT) interrupts the catalog's running statement for the block, whatever DuckDB is doing.

    A thread waits on the signal's wakeup descriptor (written by Python's C
    handler the moment the signal arrives, even while the main thread is
    inside DuckDB) and calls ``interrupt()``; the statement then raises
    :class:`~toolkit.errors.QueryInterrupted` from its iterator. No
    ``KeyboardInterrupt`` is raised in the block. Outside the main thread
    (where signals cannot be handled) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    receive, send = socket.socketpair()
    send.setblocking(False)
    watcher = threading.Thread(target=_interrupt_on_signal, args=(receive, catalog.con.interrupt), daemon=True)
    previous_handler = signal.signal(signal.SIGINT, lambda *_: None)
    previous_fd = signal.set_wakeup_fd(send.fileno(), warn_on_full_buffer=False)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous_handler)
        send.close()  # the watcher reads the end of the stream and returns
        watcher.join()
        receive.close()


def _interrupt_on_signal(receive: socket.socket, interrupt: Callable[[], None]) -> None:
    while signals := receive.recv(64):
        if signal.SIGINT in signals:
            interrupt()
