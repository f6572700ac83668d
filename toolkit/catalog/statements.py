"""Which statements ``distill sql`` runs, and why it refuses the others, in words.

A statement runs when it is one read-only query: a SELECT in any of its
forms (``FROM``, ``WITH``, ``VALUES``, ``TABLE``, ``PIVOT``, ``UNPIVOT``,
``DESCRIBE``, ``SHOW``, ``SUMMARIZE``), an ``EXPLAIN [ANALYZE]`` of one, or
a PRAGMA that only lists (``PRAGMA table_info('decisions')``). Everything
else is refused with what it would do: write into the catalog, write or
read files outside the lake, install or load code, change a setting.

This check gives refusals a plain message; it is not what keeps the lake
safe. The sandbox is (see :mod:`toolkit.catalog.query`): whatever passes
here still runs on a sealed connection that can neither write a file nor
read one other than the lake's.

DuckDB hands a statement holding a ``PIVOT`` whose columns it must look up
first as one ``MULTI`` statement (it creates a temporary ENUM type of the
values, then runs the statement); its kind is that of the statement it
runs last, read from its words.
"""

from __future__ import annotations

import re
from typing import Any, Final

import duckdb

from toolkit.errors import QueryError

# Words that open a read-only query: DuckDB parses each of these (alone, or as the statement after a WITH) as a SELECT
_QUERY_WORDS: Final = frozenset(
    {"SELECT", "FROM", "VALUES", "TABLE", "PIVOT", "PIVOT_WIDER", "UNPIVOT", "PIVOT_LONGER"}
    | {"DESCRIBE", "DESC", "SHOW", "SUMMARIZE"}
)
# Words that open a statement after a WITH clause (a CTE may precede a write)
_AFTER_WITH: Final = _QUERY_WORDS | {"INSERT", "UPDATE", "DELETE", "MERGE", "EXPLAIN"}
# PRAGMAs that only list things (DuckDB runs them as table functions)
_LISTING_PRAGMAS: Final = frozenset(
    {"table_info", "show", "show_tables", "show_tables_expanded", "show_databases", "database_list"}
    | {"database_size", "storage_info", "version", "platform", "functions", "collations", "user_agent"}
)
_WRITES = "it would change the catalog, and distill sql is read-only"
_FILES = "it would write or read files outside the lake"
_SETTINGS = "it would change a setting, and distill sql's settings are locked"
_WHY: Final = {
    **dict.fromkeys(("INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "COMMENT", "TRUNCATE"), _WRITES),
    **dict.fromkeys(("COPY", "EXPORT", "IMPORT", "ATTACH"), _FILES),
    **dict.fromkeys(("INSTALL", "LOAD"), "it would install or load an extension: code from outside the lake"),
    **dict.fromkeys(("SET", "RESET", "USE", "PRAGMA"), _SETTINGS),
    "CALL": "it calls a procedure (a table function reads as SELECT * FROM f())",
    "DETACH": "it would detach a database",
}
_NOT_A_QUERY = "it is not a query"
# Table functions that read files (named in the refusal when the sandbox stops one)
_FILE_FUNCTION = re.compile(r"^(read_\w+|\w+_scan|parquet_\w+|glob|sniff_csv|st_read|iceberg_\w+|delta_\w+)$", re.I)
RUNS: Final = "SELECT, FROM, WITH, VALUES, PIVOT, UNPIVOT, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN"


def check_statement(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.Statement:
    """The one read-only statement ``sql`` holds.

    Raises:
        QueryError: it does not parse, holds more or fewer than one statement, or is not a read-only query (the
            message names the kind of statement and why it is refused).
    """
    statements = _parse(con, sql)
    if len(statements) != 1:
        raise QueryError(f"give exactly one statement, got {len(statements)}", hint="run them one at a time")
    kind = statement_kind(con, statements[0])
    if kind != "SELECT":
        article = "an" if kind[0] in "AEIOU" else "a"
        raise QueryError(
            f"distill sql is read-only: {article} {kind} statement is refused ({_WHY.get(kind, _NOT_A_QUERY)})",
            hint=f"it runs one query ({RUNS}); to export results use --csv, --json or --parquet FILE",
        )
    return statements[0]


def statement_kind(con: duckdb.DuckDBPyConnection, statement: duckdb.Statement) -> str:
    """What the statement does, named as a user wrote it: "SELECT" for every read-only query (an EXPLAIN of one, a
    listing PRAGMA, a PIVOT DuckDB splits in several), else its first word (INSERT, COPY, INSTALL, ANALYZE...)."""
    kind = statement.type.name
    if kind == "MULTI":
        return _multi_kind(con, statement.query)
    if kind == "EXPLAIN":
        return _explained_kind(con, statement.query)
    if kind == "SELECT" or (kind == "PRAGMA" and _lists(statement.query)):
        return "SELECT"
    words = _words(statement.query)
    if words[:1] == ["FORCE"]:  # FORCE INSTALL
        words = words[1:]
    return words[0] if words and words[0].isalpha() else kind


def file_functions(sql: str) -> list[str]:
    """The table functions reading files that ``sql`` calls (read_csv, glob...), each once, in order."""
    tokens = _tokens(sql)
    called = [
        sql[start : tokens[i + 1][0]].strip().strip('"')
        for i, (start, _) in enumerate(tokens[:-1])
        if sql.startswith("(", tokens[i + 1][0])
    ]
    return list(dict.fromkeys(name.lower() for name in called if _FILE_FUNCTION.match(name)))


def _parse(con: duckdb.DuckDBPyConnection, sql: str) -> list[duckdb.Statement]:
    try:
        return list(con.extract_statements(sql))
    except duckdb.Error as error:
        raise QueryError(f"cannot parse the statement: {error}") from error


def _tokens(text: str) -> list[tuple[int, Any]]:
    return [(start, kind) for start, kind in duckdb.tokenize(text) if kind != duckdb.token_type.comment]


def _words(text: str) -> list[str]:
    return [_word_at(text, start) for start, _ in _tokens(text)]


def _lists(text: str) -> bool:
    """A ``PRAGMA name`` or ``PRAGMA name(arguments)`` among :data:`_LISTING_PRAGMAS` (not ``PRAGMA name = x``)."""
    tokens = _tokens(text)
    if tokens and text.startswith(";", tokens[-1][0]):
        tokens = tokens[:-1]
    if len(tokens) < 2 or _word_at(text, tokens[1][0]).lower() not in _LISTING_PRAGMAS:
        return False
    return len(tokens) == 2 or text.startswith("(", tokens[2][0])


def _multi_kind(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The kind of the statement DuckDB runs last for ``text`` (a PIVOT it splits): the first word of the statement,
    past a leading WITH clause; "SELECT" for a query (or a parenthesis), the explained kind for an EXPLAIN."""
    tokens = _tokens(text)
    if not tokens:
        return "MULTI"
    words = [_word_at(text, start) for start, _ in tokens]
    first = 0
    if words[:1] == ["WITH"]:  # the statement after the CTEs: the first word at depth 0 that can open one
        depth = 0
        for i, (start, _) in enumerate(tokens):
            depth += text.startswith("(", start) - text.startswith(")", start)
            if i and depth == 0 and words[i] in _AFTER_WITH:
                first = i
                break
        else:
            return "MULTI"
    if text.startswith("(", tokens[first][0]) or words[first] in _QUERY_WORDS:
        return "SELECT"
    if words[first] == "EXPLAIN":
        return _explained_kind(con, text[tokens[first][0] :])
    return words[first] or "MULTI"


def _explained_kind(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The kind of statement ``EXPLAIN [ANALYZE] [(options)] statement`` explains: "SELECT" when a reading of a
    parenthesis after the keywords (options, or a subquery) gives one SELECT, else the kind the other reading gives,
    else "EXPLAIN" (refused too)."""
    tokens = _tokens(text)
    rest = 2 if len(tokens) > 1 and _word_at(text, tokens[1][0]) in ("ANALYZE", "ANALYSE") else 1
    if rest >= len(tokens):
        return "EXPLAIN"
    start = tokens[rest][0]
    readings = [text[start:]]
    if text.startswith("(", start):
        readings.append(text[_after_parenthesis(text, tokens[rest:]) :])
    kinds = []
    for reading in readings:
        try:
            statements = con.extract_statements(reading)
        except duckdb.Error:
            continue
        kinds.append(statement_kind(con, statements[0]) if len(statements) == 1 else "MULTI")
    return "SELECT" if "SELECT" in kinds else (kinds[-1] if kinds else "EXPLAIN")


def _word_at(text: str, start: int) -> str:
    found = re.match(r"\w+", text[start:])
    return found[0].upper() if found else ""


def _after_parenthesis(text: str, tokens: list[tuple[int, Any]]) -> int:
    """Where the parenthesis opening at ``tokens[0]`` closes, plus one (the end of ``text`` if it never does)."""
    depth = 0
    for start, kind in tokens:
        if kind == duckdb.token_type.operator:
            depth += text[start : start + 1] == "("
            depth -= text[start : start + 1] == ")"
            if depth == 0:
                return start + 1
    return len(text)
