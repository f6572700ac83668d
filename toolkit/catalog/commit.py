"""What Distill writes into each commit of the lake's Delta log: the one record of what a version did.

Every commit Distill makes carries, under the key ``distill`` of its commit
info, a :class:`CommitInfo`: the operation, the batches, the reason, the
Distill version, the operation's facts (an ingest's batch and file records,
a review's status, a vacuum's horizon and the files it deletes) and, for
every file the commit adds, its :class:`FileFacts` (batches, source,
generation, rows, the lake columns it predates). The catalog's index is
built from these alone (:mod:`toolkit.catalog.index`): never from the data
files, which a vacuum deletes.

``format`` versions this record. Commits written before it existed (lake
format 2, no file facts) read as format 2; ``distill lake migrate`` amends
such a log with one commit holding the facts it lacks.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

# The key of Distill's part of a commit's info.
COMMIT_KEY: Final = "distill"
# The format of Distill's commit info and of the lake it describes (3: file facts in every commit, partitions
# declared, hive folders; 2: a Delta table whose commits name no file facts; 1: plain Parquet, no log).
COMMIT_FORMAT: Final = 3
FORMAT_BEFORE_FACTS: Final = 2


class FileFacts(BaseModel):
    """What Distill knows of one lake file, recorded in the commit that adds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batches: list[str] = Field(description="The batches its rows belong to, sorted.")
    source: str | None = Field(description="The source of all its rows (None: several).")
    generation: int | None = Field(description="The generation of all its rows (None: none, or several).")
    rows: int = Field(ge=0)
    missing: list[str] = Field(default_factory=list, description="Lake columns the file predates (read as null).")


class CommitInfo(BaseModel):
    """What one lake version did, as Distill records it in the commit."""

    model_config = ConfigDict(extra="allow", frozen=True)

    format: int = Field(COMMIT_FORMAT, description="The format of this record (read as 2 where absent).")
    operation: str = Field(description="create, ingest, review, retire, restore, compact, vacuum, migrate, evolve.")
    batches: list[str] = Field(default_factory=list, description="The batches it concerns.")
    reason: str | None = None
    distill_version: str
    detail: dict[str, Any] = Field(default_factory=dict, description="Operation-specific facts (records, counts).")
    files: dict[str, FileFacts] = Field(
        default_factory=dict,
        description="Facts of the files this commit adds (by path in the table), and, in a migration, of files "
        "earlier commits added without them.",
    )
