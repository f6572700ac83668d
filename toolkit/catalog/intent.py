"""A staged change's intent: what it moves into the data root, so that a crash before its commit is undone safely.

A writer stages a change's files under ``staging/<id>/`` (a small data root:
``lake/...``, ``quarantine/...``), writes this intent, moves the files into
place, then commits. A writer that finds a staging folder later (the first
one died) undoes a change whose commit never happened by deleting the files
it moved, and only those: the intent records each file's name relative to
the data root (inside ``lake/`` or ``quarantine/``, no ``..``, no absolute
path) with its size and the SHA-256 of its last bytes (a Parquet file's
footer: its schema, statistics and batch ids), and a file is deleted only
where its name resolves, symlinks followed, inside that folder of this data
root, it is a regular file, and its size and footer hash are the recorded
ones. An intent from elsewhere (a data root restored from a backup, shared
on a network disk, or written by hand) can name anything: nothing it names
is deleted unless it is a file this data root's writer put there.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import CatalogError
from toolkit.layout import INTENT_FORMAT_VERSION, Layout
from toolkit.storage import read_versioned, write_text_atomic

INTENT_FILE: Final = "intent.json"
TAIL_BYTES: Final = 65_536
# The data root's folders a staged change moves files into.
TARGET_FOLDERS: Final = ("lake", "quarantine")


class MovedFile(BaseModel):
    """One file a change moves into place: its name under the data root and what proves it is the same file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    size: int = Field(ge=0)
    tail_sha256: str


class Intent(BaseModel):
    """What a staged change moves, and how to tell whether its commit happened."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = INTENT_FORMAT_VERSION
    token: str = Field(description="Carried by the change's commit: found in the log, the change happened.")
    base_version: int = Field(description="The lake's version when the change began.")
    files: list[MovedFile]


def write(folder: Path, intent: Intent) -> None:
    write_text_atomic(folder / INTENT_FILE, intent.model_dump_json())


def _from_format_2(raw: dict[str, Any]) -> dict[str, Any]:
    """Format 2 kept its version under ``format`` (a file with neither is of format 2 too); the rest is the same.

    Raises:
        CatalogError: ``format`` is not 2 (a file of another Distill's: not acted on).
    """
    found = raw.get("format", 2)
    if type(found) is not int or found != 2:
        raise CatalogError(f"a staging intent of format {found!r}; this Distill reads formats 2 and 3")
    return {key: value for key, value in raw.items() if key != "format"}


def read(folder: Path) -> Intent | None:
    """The intent in a staging folder (None: none, or not one this Distill reads, a newer Distill's say: nothing
    of it is acted on, the files it names stay where they are until a vacuum finds them unlisted)."""
    try:
        return read_versioned(
            folder / INTENT_FILE,
            Intent,
            INTENT_FORMAT_VERSION,
            what="staging intent",
            error=CatalogError,
            hint="nothing of it is acted on",
            upgrades={2: _from_format_2},
            unversioned=2,
        )
    except (CatalogError, OSError):  # OSError: its folder cannot be searched, say
        return None


def moved_file(name: str, path: Path) -> MovedFile:
    """The record of a staged file about to be moved to ``name`` (relative to the data root)."""
    return MovedFile(name=name, size=path.stat().st_size, tail_sha256=tail_sha256(path))


def tail_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - TAIL_BYTES))
        return hashlib.sha256(handle.read()).hexdigest()


def owned(layout: Layout, moved: MovedFile) -> Path | None:
    """The file ``moved`` names, if it is one this change put there: a regular file inside ``lake/`` or
    ``quarantine/`` of this data root (symlinks resolved), of the recorded size and footer hash; else None."""
    name = moved.name
    if not name or name.startswith("/") or "\\" in name or "\x00" in name or posixpath.normpath(name) != name:
        return None
    parts = name.split("/")
    if len(parts) < 2 or parts[0] not in TARGET_FOLDERS or ".." in parts:
        return None
    path = layout.home.joinpath(*parts)
    home, folder = os.path.realpath(layout.home), os.path.realpath(layout.home / parts[0])
    try:
        real = os.path.realpath(path)
        if os.path.commonpath([home, folder]) != home or os.path.commonpath([folder, real]) != folder:
            return None  # lake/ or quarantine/ (or the file) leads outside the data root
        if path.is_symlink() or not path.is_file():
            return None
        if path.stat().st_size != moved.size or tail_sha256(path) != moved.tail_sha256:
            return None
    except (OSError, ValueError):
        return None
    return path
