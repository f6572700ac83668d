"""Label scores beside a build: their record, the one reader and writer, and what a build drops by them.

``distill check labels NAME`` scores every decision of a build and writes
``label-scores.parquet`` (columns: :mod:`toolkit.schema.scores`) and
``label-scores.json`` (:class:`LabelScoresInfo`: what made the table, its
sha256 and the summary per source and generation) into the build's folder;
a later check replaces both (the table first, each by an atomic rename).

``distill build --drop-label-issues`` (or ``--min-label-quality Q``) reads a
scored build's table through :func:`dropped_rows`: the lake rows (batch,
line) to leave out of the new build's train split. The holdout is never
cleaned: it stays the fixed yardstick every build shares.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from toolkit.datasets.config import LabelIssueFilter
from toolkit.datasets.dataset import Dataset, list_builds, open_dataset
from toolkit.datasets.ref import BuildRef
from toolkit.errors import BuildError
from toolkit.layout import LABEL_SCORES_FORMAT_VERSION, Layout
from toolkit.schema import columns as col
from toolkit.schema import scores as sc
from toolkit.storage import file_sha256, read_versioned, temporary_sibling, write_text_atomic

SCORES_INFO_HINT: Final = "score the build again: distill check labels NAME"


class GroupRate(BaseModel):
    """The label-issue rate of one source and generation, with its 95% Wilson interval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    generation: int | None
    decisions: int
    scored: int = Field(description="Decisions with more than one legal action.")
    flagged: int
    rate: float = Field(description="flagged / scored (0 when nothing was scored).")
    low: float
    high: float
    conflicts: int = Field(description="Decisions in a conflicting duplicate (within or across sources).")


class LabelScoresInfo(BaseModel):
    """What made a build's label-scores table, and what it found."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = LABEL_SCORES_FORMAT_VERSION
    dataset: str
    fingerprint: str = Field(description="The scored build's fingerprint.")
    scores_sha256: str = Field(description="sha256 of label-scores.parquet: what a cleaned build records.")
    created_at: dt.datetime
    code_version: str
    lake_version: int | None
    config: dict[str, Any] = Field(description="The check's config as run (toolkit.quality.labels.LabelCheckConfig).")
    rows: int
    scored: int
    flagged: int
    conflicts_within_source: int
    conflicts_across_sources: int
    teacher: str | None = Field(None, description="The teacher checkpoint (stored path), when one was given.")
    groups: list[GroupRate]


def scores_path(layout: Layout, dataset: Dataset) -> Path:
    return layout.label_scores(dataset.name, dataset.fingerprint)


def read_scores_info(layout: Layout, dataset: Dataset) -> LabelScoresInfo | None:
    """The record of ``dataset``'s label scores; None when it was never scored.

    Raises:
        BuildError: the record is unreadable or of an unknown format version.
    """
    path = layout.label_scores_info(dataset.name, dataset.fingerprint)
    if not path.exists():
        return None
    return read_versioned(
        path,
        LabelScoresInfo,
        LABEL_SCORES_FORMAT_VERSION,
        what="label-scores record",
        error=BuildError,
        hint=SCORES_INFO_HINT.replace("NAME", dataset.name),
    )


def read_scores(layout: Layout, dataset: Dataset, columns: list[str] | None = None) -> pa.Table | None:
    """``dataset``'s label-scores table (None when it was never scored)."""
    path = scores_path(layout, dataset)
    return pq.read_table(path, columns=columns) if path.exists() else None


def write_scores(layout: Layout, dataset: Dataset, table: pa.Table, info: LabelScoresInfo) -> LabelScoresInfo:
    """Publish the table, then its record (each by one rename); returns the record with the table's sha256."""
    path = scores_path(layout, dataset)
    temporary = temporary_sibling(path)
    pq.write_table(table.cast(sc.SCHEMA), temporary, compression="zstd", compression_level=3)
    os.replace(temporary, path)
    info = info.model_copy(update={"scores_sha256": file_sha256(path)})
    write_text_atomic(
        layout.label_scores_info(dataset.name, dataset.fingerprint), info.model_dump_json(indent=1) + "\n"
    )
    return info


def scored_build(layout: Layout, name: str, wanted: str | None) -> tuple[Dataset, LabelScoresInfo]:
    """The scored build a cleaned build of ``name`` reads: ``wanted`` (NAME or NAME@FINGERPRINT), else the newest
    scored build of ``name``.

    Raises:
        BuildError: no such build, or it has no label scores (the hint names the command).
    """
    ref = BuildRef.parse(wanted or name)
    target, fingerprint = ref.name, ref.fingerprint
    if fingerprint:
        dataset = open_dataset(layout, target, fingerprint)
        info = read_scores_info(layout, dataset)
    else:
        scored = [(d, read_scores_info(layout, d)) for d in reversed(list_builds(layout, target))]
        dataset, info = next(((d, i) for d, i in scored if i is not None), (None, None))  # type: ignore[assignment]
    if dataset is None or info is None:
        raise BuildError(
            f"no label scores for dataset {target!r}{' build ' + fingerprint if fingerprint else ''}",
            hint=f"score it first: distill check labels {ref}",
        )
    if file_sha256(scores_path(layout, dataset)) != info.scores_sha256:
        raise BuildError(
            f"the label scores of {target} ({dataset.fingerprint}) do not match their record",
            hint=f"score it again: distill check labels {target} --fingerprint {dataset.fingerprint}",
        )
    return dataset, info


def dropped_rows(layout: Layout, dataset: Dataset, rule: LabelIssueFilter) -> pa.Table:
    """The lake rows (batch_id, source_line) ``rule`` picks from ``dataset``'s scores, whichever split they were
    in there: a cleaned build leaves them out of its train split wherever its own holdout rule puts them."""
    table = read_scores(layout, dataset, [col.BATCH_ID, col.SOURCE_LINE, sc.FLAGGED, sc.LABEL_QUALITY])
    assert table is not None  # scored_build checked it exists
    drop = pc.equal(table.column(sc.FLAGGED), True) if rule.drop_flagged else pa.array([False] * table.num_rows)
    if rule.min_quality is not None:
        low = pc.fill_null(pc.less(table.column(sc.LABEL_QUALITY), rule.min_quality), False)
        drop = pc.or_(drop, low)
    return table.filter(drop).select([col.BATCH_ID, col.SOURCE_LINE])


def rule_text(rule: LabelIssueFilter) -> str:
    parts = (["flagged"] if rule.drop_flagged else []) + (
        [f"label_quality < {rule.min_quality}"] if rule.min_quality is not None else []
    )
    return " or ".join(parts)
