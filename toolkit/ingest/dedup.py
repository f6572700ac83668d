"""Find duplicate decisions: the same (game, seat, decision index) seen twice.

The first occurrence wins (earliest file in the order given, then earliest
line; an earlier batch in the lake beats any new line); every later one is a
duplicate, rejected with a pointer to the first. The check runs in DuckDB
over the decision keys only, so it stays cheap for millions of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from toolkit.schema import columns as col

_KEY = f"{col.GAME_ID}, {col.SEAT}, {col.DECISION_INDEX}"


@dataclass(frozen=True)
class Duplicate:
    """A line whose decision key was already taken, and where it was first seen."""

    file: str
    line: int
    first_file: str
    first_line: int
    first_batch: str | None

    def message(self) -> str:
        where = f"{self.first_file}:{self.first_line}"
        if self.first_batch:
            where += f" (batch {self.first_batch})"
        return f"duplicate decision (game_id, seat, decision_index) first seen at {where}"


def find_duplicates(
    con: duckdb.DuckDBPyConnection, keys: pa.Table, *, existing: str | None = None
) -> list[Duplicate]:
    """Duplicates among ``keys`` and against the relation ``existing`` (e.g. ``decisions``).

    Args:
        con: a DuckDB connection (the catalog's, when ``existing`` is given).
        keys: game_id, seat, decision_index, source_file, source_line, and an
            ``ordinal`` giving the order of the files.
        existing: a relation with the key columns plus batch_id, source_file
            and source_line, whose rows all come first.
    """
    if keys.num_rows == 0:
        return []
    con.register("_new_keys", keys)
    try:
        rows = con.execute(
            f"""
            WITH ranked AS (
                SELECT *, row_number() OVER w AS rank,
                       first_value({col.SOURCE_FILE}) OVER w AS first_file,
                       first_value({col.SOURCE_LINE}) OVER w AS first_line
                FROM _new_keys
                WINDOW w AS (PARTITION BY {_KEY} ORDER BY ordinal, {col.SOURCE_LINE})
            )
            SELECT {col.SOURCE_FILE}, {col.SOURCE_LINE}, first_file, first_line, NULL AS first_batch
            FROM ranked WHERE rank > 1
            """
        ).fetchall()
        if existing is not None:
            rows += con.execute(
                f"""
                SELECT n.{col.SOURCE_FILE}, n.{col.SOURCE_LINE},
                       any_value(e.{col.SOURCE_FILE}), min(e.{col.SOURCE_LINE}), any_value(e.{col.BATCH_ID})
                FROM _new_keys n JOIN (SELECT {_KEY}, {col.BATCH_ID}, {col.SOURCE_FILE}, {col.SOURCE_LINE}
                                       FROM {existing}) e USING ({_KEY})
                GROUP BY n.{col.SOURCE_FILE}, n.{col.SOURCE_LINE}
                """
            ).fetchall()
    finally:
        con.unregister("_new_keys")
    found: dict[tuple[str, int], Duplicate] = {}
    for file, line, first_file, first_line, first_batch in rows:
        # A line that repeats a lake row is reported against the lake.
        if (file, line) not in found or first_batch is not None:
            found[(file, line)] = Duplicate(file, line, first_file, first_line, first_batch)
    return sorted(found.values(), key=lambda d: (d.file, d.line))
