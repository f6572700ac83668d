"""What the lake holds: rows and games by source and generation, dialects, label sources, quarantine, lineage."""

from __future__ import annotations

from collections import Counter

import polars as pl

from toolkit.analysis.errors import NothingToShowError
from toolkit.catalog.lake import Lake
from toolkit.catalog.store import Catalog
from toolkit.layout import Layout


def _open(layout: Layout) -> Catalog:
    if not layout.catalog.exists():
        raise NothingToShowError(
            f"no catalog in {layout.home}: the lake is empty",
            hint=f"ingest logs first: distill --home {layout.home} ingest PATH",
        )
    return Lake.open(layout).at()


def _frame(catalog: Catalog, sql: str, params: list | None = None) -> pl.DataFrame:
    return pl.from_arrow(catalog.read(sql, params))  # type: ignore[return-value]


def rows_by_source(layout: Layout) -> pl.DataFrame:
    """Rows, games and batches per (source, generation)."""
    with _open(layout) as catalog:
        return _frame(
            catalog,
            """
            SELECT source, generation, count(*) AS rows, count(DISTINCT game_id) AS games,
                   count(DISTINCT batch_id) AS batches
            FROM decisions GROUP BY 1, 2 ORDER BY source, generation NULLS FIRST""",
        )


def label_sources(layout: Layout) -> pl.DataFrame:
    """How each source's labels were obtained: logged, mapped, or inferred (by which rule)."""
    with _open(layout) as catalog:
        return _frame(
            catalog,
            """
            SELECT source, action.label_source AS label_source, count(*) AS rows,
                   round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY source), 2) AS percent
            FROM decisions GROUP BY 1, 2 ORDER BY source, rows DESC""",
        )


def dialects(layout: Layout) -> pl.DataFrame:
    """Rows read per dialect, over every ingested file (as each file's report counted them)."""
    with _open(layout) as catalog:
        counts: Counter[str] = Counter()
        for file in catalog.files():
            counts.update(file.dialects)
    return pl.DataFrame(
        {"dialect": list(counts), "rows": list(counts.values())}, schema={"dialect": pl.String, "rows": pl.Int64}
    ).sort("rows", descending=True)


def rejects_by_reason(layout: Layout, examples: int = 2) -> pl.DataFrame:
    """Quarantined lines by reason (whole numbers in a reason folded, so "nested 10001 levels" and "nested 65
    levels" count as one; ids such as a batch's, digits among letters, kept), with an example reason, where the
    first few lines are and how they start."""
    with _open(layout) as catalog:
        return _frame(
            catalog,
            f"""
            SELECT regexp_replace(reason, '\\b[0-9]+\\b', 'N', 'g') AS reason, count(*) AS lines,
                   min(reason) AS example,
                   list(source_file || ':' || source_line ORDER BY source_file, source_line)[:{int(examples)}]
                   AS lines_at,
                   list(left(CAST(raw AS VARCHAR), 120) ORDER BY source_file, source_line)[:{int(examples)}] AS starts
            FROM rejects GROUP BY 1 ORDER BY lines DESC, reason""",
        )


def lineage(layout: Layout) -> pl.DataFrame:
    """Every ingested file with its batch: path, content hash, rows, review status and why."""
    with _open(layout) as catalog:
        return _frame(
            catalog,
            """
            SELECT f.path, f.batch_id, b.status, b.status_reason, f.rows_valid, f.rows_rejected,
                   b.rows_duplicate, b.sources, b.generations, f.ingested_at, left(f.file_sha256, 16) AS sha256
            FROM files f JOIN batches b USING (batch_id) ORDER BY f.ingested_at, f.path""",
        )
