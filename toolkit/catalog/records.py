"""The catalog's rows as typed records: what the ingest stage records, what the other stages read back.

One field per column of the ``batches`` and ``files`` tables (see
``toolkit.catalog.store``); stages read them through :class:`Catalog`
methods, never with SQL of their own.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class BatchRecord(BaseModel):
    """One ingested batch (one file's rows): its counts, partitions, lineage, review status and retirement, as
    of the version the catalog was opened at."""

    model_config = ConfigDict(frozen=True)

    batch_id: str
    created_at: dt.datetime
    file_sha256: str
    rows_valid: int
    rows_rejected: int
    rows_duplicate: int
    sources: list[str]
    generations: list[int]
    source_override: str | None = None
    dialect_override: str | None = None
    status: str = "ingested"  # see toolkit.catalog.store.BATCH_STATES
    status_reason: str | None = None
    distill_version: str
    lake_version: int | None = Field(None, description="The lake version that brought the batch in.")
    retired: bool = Field(False, description="Retired: its rows are in no view, build or gate (`distill lake retire`).")
    retired_reason: str | None = None


class FileRecord(BaseModel):
    """One ingested file: where it was read (relative to the data root when it lies inside it), its size and line
    counts, the dialects its lines were in."""

    model_config = ConfigDict(frozen=True)

    file_sha256: str
    path: str
    size_bytes: int
    batch_id: str
    lines: int
    blank_lines: int
    rows_valid: int
    rows_rejected: int
    dialects: dict[str, int]
    ingested_at: dt.datetime

    def row(self) -> dict[str, Any]:
        """The table row (``dialects`` stored as JSON text)."""
        return {**self.model_dump(), "dialects": json.dumps(dict(sorted(self.dialects.items())))}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> FileRecord:
        return cls.model_validate({**row, "dialects": json.loads(row["dialects"])})


class VersionRecord(BaseModel):
    """One version of the lake: what changed it, when, and what it added and removed."""

    model_config = ConfigDict(frozen=True)

    version: int
    committed_at: dt.datetime
    operation: str = Field(description="create, ingest, review, retire, restore, compact, vacuum, migrate, evolve.")
    batches: list[str]
    reason: str | None = None
    distill_version: str | None = None
    files_added: int
    files_removed: int
    rows_added: int
    rows_removed: int
    detail: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> VersionRecord:
        """A ``versions`` row; the detail without what other views hold (the batch and file records)."""
        detail = json.loads(row["detail"]) if row.get("detail") else {}
        for key in ("batch", "file", "ingests", "token"):
            detail.pop(key, None)
        return cls.model_validate({**row, "detail": detail})
