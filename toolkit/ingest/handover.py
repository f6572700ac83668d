"""What a game job's worker hands the driver for a shared lake: where it stages its logs, and what it staged.

Light on purpose (no catalog, no DuckDB): the loop's steps and the jobs'
results name these types; :mod:`toolkit.ingest.shards` does the staging and
the commit. :class:`ShardStaging` is the :class:`~toolkit.jobs.handoff.Handoff`
a loop on a shared lake hands its game jobs.
"""

from __future__ import annotations

import posixpath
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.ingest.parts import FileReport
from toolkit.layout import STAGED_FOLDER


class ShardStaging(BaseModel):
    """Where a game job's workers stage their logs: the lake's location, and the folder of the driver's data root
    the logs are recorded under (their lineage, as a local run records them)."""

    model_config = ConfigDict(frozen=True)

    location: str = Field(description="The lake's location (s3://bucket/prefix or file:///folder).")
    recorded: str = Field(description="The logs' folder, relative to the driver's data root.")

    def output(self, out: Path) -> AbstractContextManager[Path]:
        """A folder of the worker's own disk for the logs meant for ``out`` (removed once they are staged)."""
        from toolkit.ingest.shards import shard_output

        return shard_output()

    def hand_over(self, written: list[Path], out: Path) -> tuple[list[Path], list[Any]]:
        """The logs as the driver records them (in ``out``), each staged at the lake's location."""
        from toolkit.ingest.shards import stage_shard

        return [out / f.name for f in written], [stage_shard(f, self) for f in written]


class StagedShard(BaseModel):
    """What a worker staged at the lake's location for one log file."""

    model_config = ConfigDict(frozen=True)

    recorded: str = Field(description="The log as the driver's data root records it (relative to the root).")
    sha256: str
    size_bytes: int
    batch_id: str
    token: str = Field(description="The worker's token, in the names of the files it uploaded.")
    report: FileReport
    lake_files: list[str] = Field(description="The batch's data files at the location (paths in the table).")
    rejects: str | None = Field(description="Its rejected lines' file at the location (None: none).")
    log: str = Field(description="The log at the location.")
    duplicates: int = Field(0, description="Lines quarantined as repeats of a decision of the same log.")
    sources: list[str] = Field(default_factory=list)
    generations: list[int] = Field(default_factory=list)

    @field_validator("lake_files")
    @classmethod
    def _data_files(cls, names: list[str]) -> list[str]:
        for name in names:  # a record from a worker or a run's state: never a path that climbs out or is hidden
            if not _plain(name) or name.startswith(("_", ".")) or not name.endswith(".parquet"):
                raise ValueError(f"{name!r} is not a data file of the table")
        return names

    @field_validator("log", "rejects")
    @classmethod
    def _staged_file(cls, name: str | None) -> str | None:
        if name is not None and not (name.startswith(STAGED_FOLDER + "/") and _plain(name)):
            raise ValueError(f"{name!r} is not a file under {STAGED_FOLDER}/")
        return name

    @property
    def empty(self) -> bool:
        return self.report.lines == self.report.blank and self.rejects is None


def _plain(name: str) -> bool:
    """A relative POSIX path that names itself: no climb, no absolute or drive part, no backslash or NUL."""
    return (
        bool(name)
        and not name.startswith("/")
        and "\\" not in name
        and "\x00" not in name
        and ":" not in name
        and posixpath.normpath(name) == name
        and not name.startswith("../")
        and name != ".."
    )
