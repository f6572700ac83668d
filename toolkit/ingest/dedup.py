"""Find duplicate decisions: the same (game, seat, decision index) seen twice.

The first occurrence wins (earliest file in the order given, then earliest
line; an earlier batch in the lake beats any new line); every later one is a
duplicate, rejected with a pointer to the first. The check runs in DuckDB
over the decision keys only, so it stays cheap for millions of rows: from a
:class:`KeyLog` when nothing else holds them, or straight from staged lake
files, which carry the keys and lineage anyway.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.ingest.rowpath import Problem
from toolkit.schema import columns as col

_KEY = f"{col.GAME_ID}, {col.SEAT}, {col.DECISION_INDEX}"
_FILE, _LINE = col.SOURCE_FILE, col.SOURCE_LINE
_KEY_SCHEMA = pa.schema(
    [
        (col.GAME_ID, pa.string()),
        (col.SEAT, pa.int32()),
        (col.DECISION_INDEX, pa.int32()),
        (col.SOURCE_LINE, pa.int64()),
        (col.SOURCE_FILE, pa.string()),
        ("ordinal", pa.int32()),
    ]
)
# The duplicate query sorts every key: bounded so that memory stays flat as
# input grows (DuckDB spills to disk beyond it).
QUERY_MEMORY_LIMIT = "512MB"


class KeyLog:
    """The decision keys of accepted rows, spooled to a Parquet file as they come,
    so that finding duplicates needs no key in Python memory."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.rows = 0
        self._writer = pq.ParquetWriter(path, _KEY_SCHEMA, compression="lz4")

    def add(self, table: pa.Table, lines: np.ndarray, file: str, ordinal: int) -> None:
        """Log the keys of ``table``'s rows (accepted decisions) found at ``lines`` of ``file``."""
        n = table.num_rows
        if n == 0:
            return
        keys = pa.table(
            {
                col.GAME_ID: table[col.GAME_ID],
                col.SEAT: table[col.SEAT],
                col.DECISION_INDEX: table[col.DECISION_INDEX],
                col.SOURCE_LINE: pa.array(lines, pa.int64()),
                col.SOURCE_FILE: pa.repeat(pa.scalar(file, pa.string()), n),
                "ordinal": pa.repeat(pa.scalar(ordinal, pa.int32()), n),
            },
            schema=_KEY_SCHEMA,
        )
        self._writer.write_table(keys)
        self.rows += n

    def close(self) -> Path:
        self._writer.close()
        return self.path

    @property
    def files(self) -> list[Path]:
        """The key files to hand to :func:`find_duplicates` (none while no key was logged)."""
        return [self.path] if self.rows else []


@dataclass(frozen=True)
class Duplicate:
    """A line whose decision key was already taken, and where it was first seen."""

    file: str
    line: int
    first_file: str
    first_line: int
    first_batch: str | None
    same: bool = False  # a copy of that lake row, every field alike (only where asked for: see DuplicateSet)

    def message(self) -> str:
        where = f"{self.first_file}:{self.first_line}"
        if self.first_batch:
            where += f" (batch {self.first_batch})"
        return f"duplicate decision (game_id, seat, decision_index) first seen at {where}"

    def problem(self) -> Problem:
        return Problem(col.GAME_ID, "duplicate", self.message())


def find_duplicates(
    con: duckdb.DuckDBPyConnection, key_files: list[Path], *, existing: str | None = None
) -> list[Duplicate]:
    """Every duplicate of :class:`DuplicateSet` (same arguments) in a list, by file and line."""
    with DuplicateSet(con, key_files, existing=existing) as found:
        return list(found)


class DuplicateSet:
    """Duplicates among the keys in ``key_files`` and against the relation ``existing`` (e.g. ``decisions``),
    whose rows all come first; held in a DuckDB temporary table (spilled to disk beyond
    :data:`QUERY_MEMORY_LIMIT`) and read back by file and line a batch at a time, so that a file repeating
    millions of decisions (a log appended to and ingested again) costs no memory per duplicate.

    Args:
        con: a DuckDB connection (the catalog's, when ``existing`` is given); not to be used for anything
            else while the duplicates are iterated.
        key_files: closed Parquet files with the key columns, source_file and
            source_line: a :class:`KeyLog`'s, whose ``ordinal`` gives the order
            of the input files, or the staged lake files of one input file.
        existing: a relation with the key columns plus batch_id, source_file
            and source_line.
        compare: columns of the key files and ``existing`` that a duplicate of a lake row is compared on: equal
            in all of them, it is a copy of that row (:attr:`Duplicate.same`), counted in :attr:`same`.
    """

    _TABLE = "_duplicates"
    _FETCH_ROWS = 8192

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        key_files: list[Path],
        *,
        existing: str | None = None,
        compare: Sequence[str] = (),
    ) -> None:
        self.con = con
        self.count = 0
        self.same = 0
        if not key_files:
            return
        con.execute(f"SET memory_limit = '{QUERY_MEMORY_LIMIT}'")
        paths = ", ".join("'" + str(path).replace("'", "''") + "'" for path in key_files)
        ordinal = "ordinal" if "ordinal" in pq.read_schema(key_files[0]).names else "0 AS ordinal"
        con.execute(
            f"""CREATE OR REPLACE TEMP VIEW _new_keys AS
                SELECT {_KEY}, {_FILE}, {_LINE}, {ordinal} FROM read_parquet([{paths}])"""
        )
        try:
            query = self._query(existing)
            if query is None:
                return
            con.execute(f"CREATE OR REPLACE TEMP TABLE {self._TABLE} AS SELECT *, false AS same FROM ({query})")
            if existing is not None and compare:
                self._mark_copies(paths, existing, compare)
        finally:
            con.execute("DROP VIEW IF EXISTS _new_keys")
        found = con.execute(f"SELECT count(*), count(*) FILTER (same) FROM {self._TABLE}").fetchone()
        self.count, self.same = (int(found[0]), int(found[1])) if found else (0, 0)

    def _mark_copies(self, paths: str, existing: str, compare: Sequence[str]) -> None:
        """Mark the duplicates of lake rows whose ``compare`` columns all equal that row's: the same decision
        logged again (the same games played again from the same seed), not a clash. Run only when some line
        repeats a lake row, on those lines' keys only."""
        lake_lines = f"SELECT {_FILE}, {_LINE} FROM {self._TABLE} WHERE first_batch IS NOT NULL"
        if not self.con.execute(f"SELECT count(*) FROM ({lake_lines})").fetchone()[0]:  # type: ignore[index]
            return
        alike = " AND ".join(f'n."{c}" IS NOT DISTINCT FROM e."{c}"' for c in compare)
        self.con.execute(
            f"""UPDATE {self._TABLE} d SET same = true FROM (
                    SELECT n.{_FILE}, n.{_LINE}
                    FROM (SELECT * FROM read_parquet([{paths}]) SEMI JOIN ({lake_lines}) USING ({_FILE}, {_LINE})) n
                    JOIN (SELECT * FROM {existing}
                          SEMI JOIN (SELECT {_KEY} FROM read_parquet([{paths}])) USING ({_KEY})) e USING ({_KEY})
                    GROUP BY n.{_FILE}, n.{_LINE} HAVING bool_and({alike})
                ) c WHERE d.{_FILE} = c.{_FILE} AND d.{_LINE} = c.{_LINE}"""
        )

    def _query(self, existing: str | None) -> str | None:
        """The query of the duplicates; None when there can be none."""
        # A cheap hash aggregate first: the ranking sorts every key, and most batches repeat none.
        repeats = self.con.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM _new_keys GROUP BY {_KEY} HAVING count(*) > 1)"
        ).fetchone()
        within = (
            f"""SELECT {_FILE}, {_LINE}, first_file, first_line, NULL::VARCHAR AS first_batch FROM (
                    SELECT {_FILE}, {_LINE}, row_number() OVER w AS rank,
                           first_value({_FILE}) OVER w AS first_file, first_value({_LINE}) OVER w AS first_line
                    FROM _new_keys WINDOW w AS (PARTITION BY {_KEY} ORDER BY ordinal, {_LINE})
                ) WHERE rank > 1"""
            if repeats and repeats[0]
            else None
        )
        if existing is None:
            return within
        # A line that repeats a lake row is reported against the lake.
        lake = f"""SELECT n.{_FILE}, n.{_LINE}, any_value(e.{_FILE}) AS first_file, min(e.{_LINE}) AS first_line,
                          any_value(e.{col.BATCH_ID}) AS first_batch
                   FROM _new_keys n JOIN (SELECT {_KEY}, {col.BATCH_ID}, {_FILE}, {_LINE} FROM {existing}) e
                   USING ({_KEY}) GROUP BY n.{_FILE}, n.{_LINE}"""
        if within is None:
            return lake
        return f"""WITH lake AS ({lake}), within AS ({within})
                   SELECT * FROM lake UNION ALL (SELECT * FROM within ANTI JOIN lake USING ({_FILE}, {_LINE}))"""

    def lines(self) -> np.ndarray:
        """The line numbers of the duplicates (of every file, copies of lake rows included), ascending."""
        if not self.count:
            return np.empty(0, dtype=np.int64)
        found = self.con.execute(f"SELECT {_LINE} FROM {self._TABLE} ORDER BY 1").fetchnumpy()
        return np.asarray(found[_LINE], dtype=np.int64)

    def __iter__(self) -> Iterator[Duplicate]:
        """The duplicates by file and line, fetched a batch at a time."""
        if not self.count:
            return
        result = self.con.execute(
            f"SELECT {_FILE}, {_LINE}, first_file, first_line, first_batch, same FROM {self._TABLE} ORDER BY 1, 2"
        )
        while rows := result.fetchmany(self._FETCH_ROWS):
            for file, line, first_file, first_line, first_batch, same in rows:
                yield Duplicate(file, line, first_file, first_line, first_batch, same)

    def held_by(self) -> dict[str, int]:
        """The lake's batches holding copies of lines (see ``compare``), with how many each."""
        if not self.same:
            return {}
        rows = self.con.execute(
            f"SELECT first_batch, count(*) FROM {self._TABLE} WHERE same GROUP BY 1 ORDER BY 1"
        ).fetchall()
        return {batch: int(n) for batch, n in rows}

    def close(self) -> None:
        self.con.execute(f"DROP TABLE IF EXISTS {self._TABLE}")

    def __enter__(self) -> DuplicateSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
