"""Two builds of one name compared (``distill datasets diff NAME FP1 FP2``): from FP1 (before) to FP2 (after).

- Rows added and removed, per split, source, generation and batch. A row is
  one decision of one batch: (game, seat, decision index, batch id); a
  decision whose weight changed (sampled more or fewer times) is neither.
- The label distribution of each source's training rows, before and after.
- The config, field by field, and the versions that wrote each build.
- Whether the holdout is the same: the same decisions (row sets), and the
  same files (the manifests' content hashes).

The rows are read with DuckDB straight from the two builds' Parquet parts
(only the identity, lineage and label columns).
"""

from __future__ import annotations

from typing import Any

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from toolkit.datasets.dataset import HOLDOUT, LABEL, SPLITS, TRAIN, Dataset, Manifest, open_dataset
from toolkit.layout import Layout, sql_literal
from toolkit.schema import columns as col
from toolkit.schema.vocab import MACRO_ACTIONS

_IDENTITY = (col.GAME_ID, col.SEAT, col.DECISION_INDEX, col.BATCH_ID)
_COLUMNS = (*_IDENTITY, col.SOURCE, col.GENERATION, LABEL)
_SPLIT = "split"
_EMPTY = (
    f"SELECT NULL::VARCHAR AS {_SPLIT}, NULL::VARCHAR AS {col.GAME_ID}, NULL::INTEGER AS {col.SEAT}, "
    f"NULL::INTEGER AS {col.DECISION_INDEX}, NULL::VARCHAR AS {col.BATCH_ID}, NULL::VARCHAR AS {col.SOURCE}, "
    f"NULL::INTEGER AS {col.GENERATION}, NULL::INTEGER AS {LABEL} WHERE false"
)


class RowChange(BaseModel):
    """Rows of one split, source, generation and batch in one build and not in the other."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    split: str
    source: str
    generation: int | None
    batch_id: str
    added: int
    removed: int


class LabelShift(BaseModel):
    """One label of one source's training rows, before and after (shares of that source's rows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    label: int
    action: str
    before: int
    after: int
    share_before: float
    share_after: float
    share_change: float


class FieldChange(BaseModel):
    """A field that differs (dotted path), with its value in each build (None: absent)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    before: Any
    after: Any


class HoldoutDiff(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    identical: bool = Field(description="The same decisions of the same batches held out.")
    same_files: bool = Field(description="The manifests' holdout content hashes match (byte-identical parts).")
    rows_before: int
    rows_after: int
    added: int
    removed: int
    settings: list[FieldChange] = Field(description="Salt, fraction, reference sources or rule that differ.")


class BuildDiff(BaseModel):
    """What changed from one build of a name (``before``) to another (``after``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    before: str
    after: str
    rows_before: int
    rows_after: int
    added: int
    removed: int
    rows: list[RowChange] = Field(description="Per split, source, generation and batch with a change.")
    labels: list[LabelShift] = Field(description="Training rows per source and label, in both builds.")
    config: list[FieldChange]
    versions: list[FieldChange] = Field(description="Distill, contract, feature, format and lake versions.")
    holdout: HoldoutDiff

    @property
    def identical(self) -> bool:
        return not (self.added or self.removed or self.config or self.versions) and self.holdout.same_files


def diff_builds(layout: Layout, name: str, before: str, after: str) -> BuildDiff:
    """Compare build ``before`` of ``name`` with build ``after``.

    Raises:
        BuildError: either build is missing or its manifest unreadable (the hint names the builds that exist).
    """
    old, new = open_dataset(layout, name, before), open_dataset(layout, name, after)
    with duckdb.connect() as con:
        con.execute(f"CREATE TEMP TABLE old AS {_rows_sql(old)}")
        con.execute(f"CREATE TEMP TABLE new AS {_rows_sql(new)}")
        rows = _row_changes(con)
        labels = _label_shifts(con)
    held = [r for r in rows if r.split == HOLDOUT]
    return BuildDiff(
        name=name,
        before=before,
        after=after,
        rows_before=sum(old.manifest.splits[split].rows for split in SPLITS),
        rows_after=sum(new.manifest.splits[split].rows for split in SPLITS),
        added=sum(r.added for r in rows),
        removed=sum(r.removed for r in rows),
        rows=rows,
        labels=labels,
        config=_changes(old.manifest.config.model_dump(mode="json"), new.manifest.config.model_dump(mode="json")),
        versions=_changes(_versions(old.manifest), _versions(new.manifest)),
        holdout=HoldoutDiff(
            identical=not held,
            same_files=old.manifest.holdout.content == new.manifest.holdout.content,
            rows_before=old.manifest.splits[HOLDOUT].rows,
            rows_after=new.manifest.splits[HOLDOUT].rows,
            added=sum(r.added for r in held),
            removed=sum(r.removed for r in held),
            settings=_changes(_holdout_settings(old.manifest), _holdout_settings(new.manifest)),
        ),
    )


def _rows_sql(dataset: Dataset) -> str:
    """The identity, lineage and label of every row of both splits, with the split's name."""
    columns = ", ".join(_COLUMNS)
    parts = [f"SELECT * FROM ({_EMPTY})"]  # gives the columns their types when both splits are empty
    for split in SPLITS:
        files = ", ".join(f"'{sql_literal(str(path))}'" for path in dataset.files(split))
        if files:
            parts.append(f"SELECT '{split}' AS {_SPLIT}, {columns} FROM read_parquet([{files}])")
    return " UNION ALL ".join(parts)


def _row_changes(con: duckdb.DuckDBPyConnection) -> list[RowChange]:
    key = ", ".join((_SPLIT, *_IDENTITY))
    group = f"{_SPLIT}, {col.SOURCE}, {col.GENERATION}, {col.BATCH_ID}"
    found = con.execute(
        f"""
        SELECT {group}, count(*) FILTER (WHERE change = 'added'), count(*) FILTER (WHERE change = 'removed')
        FROM (
            SELECT {group}, 'added' AS change FROM new ANTI JOIN old USING ({key})
            UNION ALL
            SELECT {group}, 'removed' AS change FROM old ANTI JOIN new USING ({key})
        )
        GROUP BY ALL ORDER BY {_SPLIT} DESC, {col.SOURCE}, {col.GENERATION} NULLS FIRST, {col.BATCH_ID}
        """
    ).fetchall()
    return [
        RowChange(split=split, source=source, generation=generation, batch_id=batch, added=added, removed=removed)
        for split, source, generation, batch, added, removed in found
    ]


def _label_shifts(con: duckdb.DuckDBPyConnection) -> list[LabelShift]:
    counts: dict[tuple[str, int], dict[str, int]] = {}
    for side in ("old", "new"):
        query = f"SELECT {col.SOURCE}, {LABEL}, count(*) FROM {side} WHERE {_SPLIT} = '{TRAIN}' GROUP BY ALL"
        for source, label, n in con.execute(query).fetchall():
            counts.setdefault((source, label), {})[side] = n
    totals: dict[tuple[str, str], int] = {}
    for (source, _), by_side in counts.items():
        for side, n in by_side.items():
            totals[source, side] = totals.get((source, side), 0) + n
    shifts = []
    for (source, label), by_side in sorted(counts.items()):
        before, after = by_side.get("old", 0), by_side.get("new", 0)
        share_before = before / totals[source, "old"] if before else 0.0
        share_after = after / totals[source, "new"] if after else 0.0
        shifts.append(
            LabelShift(
                source=source,
                label=label,
                action=MACRO_ACTIONS[label] if 0 <= label < len(MACRO_ACTIONS) else str(label),
                before=before,
                after=after,
                share_before=round(share_before, 6),
                share_after=round(share_after, 6),
                share_change=round(share_after - share_before, 6),
            )
        )
    return shifts


def _versions(manifest: Manifest) -> dict[str, Any]:
    return {
        "distill_version": manifest.distill_version,
        "contract_version": manifest.contract_version,
        "features.version": manifest.features.version,
        "format_version": manifest.format_version,
        "lake_version": manifest.lake_version,
    }


def _holdout_settings(manifest: Manifest) -> dict[str, Any]:
    return manifest.holdout.model_dump(mode="json", include={"salt", "fraction", "sources", "rule"})


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[FieldChange]:
    """Fields (dotted paths into nested dicts) whose values differ; a field only one side has counts too."""
    old, new = _flatten(before), _flatten(after)
    return [
        FieldChange(field=field, before=old.get(field), after=new.get(field))
        for field in sorted(old.keys() | new.keys())
        if old.get(field) != new.get(field)
    ]


def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}{key}"
        if isinstance(item, dict) and item:
            flat |= _flatten(item, path + ".")
        else:
            flat[path] = item
    return flat
