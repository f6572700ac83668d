"""The lake's Delta log as Distill reads it: each commit's actions, checked before anything acts on them.

Distill reads the commit files of ``lake/_delta_log/`` itself (delta-rs
writes them): its index needs what each version changed, not only the
state a version ends in, and every path a commit names is checked here,
once, before anything opens, rewrites or deletes it. A commit that cannot
be trusted stops every command with a :class:`~toolkit.errors.LakeLogError`
naming the version and the file:

- a commit that is not JSON (garbage, or cut short), or a version missing
  between two others, or a log that no longer starts at version 0;
- a file path that leaves the table's folder (``..``, absolute, a URI,
  inside ``_delta_log``);
- a feature that changes what a Parquet file means (deletion vectors,
  column mapping: Distill reads the files as they are);
- ``_last_checkpoint`` naming a checkpoint that is not there (other Delta
  readers start from it);
- Distill's record of a commit (:mod:`toolkit.catalog.commit`) that does
  not parse, or comes from a newer Distill.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote

from pydantic import ValidationError

from toolkit.catalog.commit import COMMIT_FORMAT, COMMIT_KEY, FORMAT_BEFORE_FACTS, CommitInfo
from toolkit.errors import CatalogError, LakeLogError

LOG_FOLDER: Final = "_delta_log"
CHECKPOINT_POINTER: Final = "_last_checkpoint"
_COMMIT_NAME: Final = re.compile(r"^(\d{20})\.json$")
# Reader features that do not change what a data file's rows are.
HARMLESS_READER_FEATURES: Final = frozenset({"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})
_URI: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
RESTORE_HINT: Final = (
    "restore the lake's _delta_log from a backup: Distill does not repair a log; until then, nothing reads or "
    "changes this lake"
)


@dataclass(frozen=True)
class AddedFile:
    """A file a commit makes live: its path inside the table folder and what the log says of it."""

    path: str
    size: int
    rows: int | None
    partition: dict[str, str | None]
    stats: dict[str, Any]


@dataclass(frozen=True)
class Commit:
    """One version of the log: its number, time, actions and Distill's record (None: another tool's commit)."""

    version: int
    at: dt.datetime  # UTC, naive
    operation: str  # the engine's name of the operation, lower case (Distill's own is info.operation)
    info: CommitInfo | None
    adds: tuple[AddedFile, ...]
    removes: tuple[str, ...]
    metadata: dict[str, Any] | None  # a metaData action: the table's schema, partition columns, configuration
    digest: str  # SHA-256 of the commit file: an index is of this log only if its last digest matches

    @property
    def name(self) -> str:
        return commit_name(self.version)


def commit_version(name: str) -> int | None:
    """The version a commit file's name (``00000000000000000012.json``) holds; None for any other name."""
    match = _COMMIT_NAME.match(name)
    return int(match[1]) if match else None


def commit_name(version: int) -> str:
    return f"{LOG_FOLDER}/{version:020d}.json"


def versions(lake: Path) -> list[int]:
    """The versions whose commit files the log holds, oldest first (empty: no table).

    Raises:
        LakeLogError: the log's folder, or a commit file, is a symlink (Distill reads and writes the log only in
            the table's own folder).
    """
    folder = lake / LOG_FOLDER
    linked = folder.is_symlink()  # even one leading nowhere: delta-rs would create the log through it
    found: list[int] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if match := _COMMIT_NAME.match(entry.name):
                    found.append(int(match[1]))
                    linked = linked or entry.is_symlink()
    except (FileNotFoundError, NotADirectoryError):
        pass
    if linked:
        raise LakeLogError(
            f"the lake's log {folder} is, or holds, a symlink: Distill reads and writes the log only in the "
            "table's own folder",
            version=None,
            file=LOG_FOLDER,
            hint="replace the links with the files themselves, or restore the lake folder from a backup",
        )
    return sorted(found)


def latest_version(lake: Path) -> int | None:
    """The newest version of the log, its commits checked to run unbroken from version 0 (None: no table).

    Raises:
        LakeLogError: a version missing, the first commits gone, or a checkpoint pointer naming no checkpoint.
    """
    found = versions(lake)
    if not found:
        return None
    if found[0] != 0:
        raise LakeLogError(
            f"the lake's log {lake / LOG_FOLDER} starts at version {found[0]}: the commits before it are gone "
            "(Distill keeps every commit: its history, batch records and time travel are read from them)",
            version=0,
            file=commit_name(0),
            hint=RESTORE_HINT,
        )
    if found[-1] != len(found) - 1:
        gap = next(v for i, v in enumerate(found) if v != i) - 1
        raise LakeLogError(
            f"the lake's log has no version {gap}: {commit_name(gap)} is missing between versions "
            f"{gap - 1} and {gap + 1}",
            version=gap,
            file=commit_name(gap),
            hint=RESTORE_HINT,
        )
    _check_checkpoint(lake)
    return found[-1]


def _check_checkpoint(lake: Path) -> None:
    pointer = lake / LOG_FOLDER / CHECKPOINT_POINTER
    try:
        raw = pointer.read_bytes()
    except FileNotFoundError:
        return
    try:
        named = json.loads(raw)
        version, parts = int(named["version"]), named.get("parts")
    except (ValueError, KeyError, TypeError):
        raise LakeLogError(
            f"{pointer} is not a checkpoint pointer",
            version=None,
            file=f"{LOG_FOLDER}/{CHECKPOINT_POINTER}",
            hint=RESTORE_HINT,
        ) from None
    stem = f"{version:020d}.checkpoint"
    if parts:
        wanted = [f"{stem}.{i:010d}.{int(parts):010d}.parquet" for i in range(1, int(parts) + 1)]
    else:
        wanted = [f"{stem}.parquet"]
    missing = [w for w in wanted if not (lake / LOG_FOLDER / w).is_file()]
    if missing and not any((lake / LOG_FOLDER).glob(f"{stem}.*.parquet")):
        raise LakeLogError(
            f"the lake's checkpoint of version {version} is missing: {LOG_FOLDER}/{missing[0]} "
            f"(named by {LOG_FOLDER}/{CHECKPOINT_POINTER}); Delta readers start from it",
            version=version,
            file=f"{LOG_FOLDER}/{missing[0]}",
            hint=RESTORE_HINT,
        )


def inside(lake: Path, name: str, *, follow: bool = True) -> Path | None:
    """The file a checked log path names under ``lake``, if it lies inside the table folder once symlinks are
    resolved: its folders, and the file itself with ``follow`` (to read it; deleting a link deletes the link
    only). None: a symlink leads outside."""
    path = lake / name
    root = os.path.realpath(lake)
    real = os.path.realpath(path if follow else path.parent)
    return path if os.path.commonpath([root, real]) == root else None


def readable(lake: Path, names: list[str], batches: list[list[str]], version: int) -> list[Path]:
    """The files a version lists, each checked to be on disk inside the table folder (symlinks resolved).

    Raises:
        CatalogError: naming the first file that is missing (and the batches whose retirement recovers) or that a
            symlink leads outside the table.
    """
    root = os.path.realpath(lake)
    folders: dict[str, bool] = {}
    found = []
    for name, owners in zip(names, batches, strict=True):
        path = lake / name
        folder = posixpath.dirname(name)
        if folder not in folders:
            real = os.path.realpath(lake / folder)
            folders[folder] = os.path.commonpath([root, real]) == root
        inside = folders[folder]
        if inside and path.is_symlink():
            inside = os.path.commonpath([root, os.path.realpath(path)]) == root
        if not inside:
            raise CatalogError(
                f"the lake's version {version} lists {name}, which a symlink leads outside the table's folder "
                f"{lake}: Distill reads only files inside the table",
                hint="replace the symlink with the file itself, or restore the lake folder from a backup",
            )
        if not os.path.isfile(path):
            which = ", ".join(owners) or "its batch"
            raise CatalogError(
                f"the lake's version {version} lists {name}, which is not on disk (deleted outside Distill?)",
                hint=f"restore the file from a backup, or take its rows out of the lake: distill lake retire {which} "
                '--reason "file lost"',
            )
        found.append(path)
    return found


def digest(lake: Path, version: int) -> str | None:
    """The SHA-256 of a commit file (None: no such commit)."""
    try:
        return hashlib.sha256((lake / commit_name(version)).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def read_commits(lake: Path, first: int, last: int) -> Iterator[Commit]:
    """The commits ``first``..``last`` (inclusive), oldest first, each checked (see the module's docstring).

    Raises:
        LakeLogError: naming the first commit that cannot be trusted.
    """
    for version in range(first, last + 1):
        yield read_commit(lake, version)


def read_commit(lake: Path, version: int) -> Commit:
    """One commit, checked.

    Raises:
        LakeLogError: naming the version, the file and what is wrong.
    """
    name = commit_name(version)
    try:
        raw = (lake / name).read_bytes()
    except FileNotFoundError:
        raise LakeLogError(
            f"the lake's log has no version {version}: {name} is missing",
            version=version,
            file=name,
            hint=RESTORE_HINT,
        ) from None
    actions = _actions(raw, version, name)
    commit_info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    if not isinstance(commit_info, dict):
        raise _bad(version, name, "its commitInfo is not an object")
    adds: list[AddedFile] = []
    removes: list[str] = []
    metadata: dict[str, Any] | None = None
    for action in actions:
        if "add" in action:
            added = _added(action["add"], version, name)
            if any(a.path == added.path for a in adds):
                raise _bad(version, name, f"it adds {added.path} twice")
            adds.append(added)
        elif "remove" in action:
            removes.append(_file_path(_field(action["remove"], "path", version, name), version, name))
        elif "metaData" in action:
            metadata = action["metaData"] if isinstance(action["metaData"], dict) else None
        elif "protocol" in action:
            _check_protocol(action["protocol"], version, name)
    return Commit(
        version=version,
        at=_time(commit_info, lake / name),
        operation=str(commit_info.get("operation", "unknown")).lower(),
        info=_info(commit_info.get(COMMIT_KEY), version, name),
        adds=tuple(adds),
        removes=tuple(removes),
        metadata=metadata,
        digest=hashlib.sha256(raw).hexdigest(),
    )


def added_paths(raw: bytes, version: int, name: str) -> list[str]:
    """The paths of the files a commit's bytes add, each checked as :func:`read_commit` checks them.

    Raises:
        LakeLogError: the commit is not JSON, or names a file outside the table.
    """
    return [_added(a["add"], version, name).path for a in _actions(raw, version, name) if "add" in a]


def _actions(raw: bytes, version: int, name: str) -> list[dict[str, Any]]:
    actions = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except ValueError as error:
            raise _bad(version, name, f"line {number} is not JSON ({error}): the commit is damaged or cut short")
        if not isinstance(action, dict):
            raise _bad(version, name, f"line {number} is not a JSON object")
        actions.append(action)
    if not actions:
        raise _bad(version, name, "it is empty")
    return actions


def _bad(version: int, name: str, what: str) -> LakeLogError:
    return LakeLogError(
        f"the lake's version {version} cannot be read: {name}: {what}", version=version, file=name, hint=RESTORE_HINT
    )


def _field(action: Any, key: str, version: int, name: str) -> Any:
    if not isinstance(action, dict) or key not in action:
        raise _bad(version, name, f"a file action has no {key!r}")
    return action[key]


def _added(action: dict[str, Any], version: int, name: str) -> AddedFile:
    path = _file_path(_field(action, "path", version, name), version, name)
    if action.get("deletionVector"):
        raise _bad(version, name, f"{path} carries a deletion vector, which Distill does not read")
    stats = action.get("stats")
    try:
        parsed = json.loads(stats) if isinstance(stats, str) else (stats or {})
    except ValueError:
        parsed = {}
    rows = parsed.get("numRecords") if isinstance(parsed, dict) else None
    partition = action.get("partitionValues") or {}
    return AddedFile(
        path=path,
        size=int(action.get("size") or 0),
        rows=int(rows) if isinstance(rows, int) else None,
        partition=dict(partition) if isinstance(partition, dict) else {},
        stats=parsed if isinstance(parsed, dict) else {},
    )


def is_table_path(path: Any) -> bool:
    """Whether ``path`` (a name from a commit's record, such as a vacuum's files) names a data file inside the
    table folder, by the rules :func:`read_commit` applies to file actions."""
    try:
        _file_path(path, -1, "")
    except LakeLogError:
        return False
    return True


def _file_path(raw: Any, version: int, name: str) -> str:
    """A file action's path, decoded, if it names a file inside the table folder.

    Raises:
        LakeLogError: naming the version and the path, for anything that could reach outside the table.
    """
    if not isinstance(raw, str) or not raw:
        raise _bad(version, name, f"a file action's path is {raw!r}")
    path = unquote(raw)
    normal = posixpath.normpath(path)
    outside = (
        _URI.match(path) is not None
        or path.startswith(("/", "\\"))
        or "\\" in path
        or "\x00" in path
        or normal in (".", "..")
        or normal.startswith("../")
        or normal.split("/")[0] == LOG_FOLDER
        or normal != path
    )
    if outside:
        raise LakeLogError(
            f"the lake's version {version} names a file outside the table's folder: {raw!r} ({name}); Distill "
            "reads, rewrites and deletes only files inside the table",
            version=version,
            file=name,
            hint=RESTORE_HINT,
        )
    return path


def _check_protocol(protocol: Any, version: int, name: str) -> None:
    if not isinstance(protocol, dict):
        raise _bad(version, name, "its protocol is not an object")
    reader = int(protocol.get("minReaderVersion") or 1)
    features = [str(f) for f in protocol.get("readerFeatures") or []]
    unread = ["columnMapping"] if reader == 2 else [f for f in features if f not in HARMLESS_READER_FEATURES]
    if reader > 3 or unread:
        raise LakeLogError(
            f"the lake's version {version} needs Delta reader features Distill does not read "
            f"({', '.join(unread) or f'reader version {reader}'}; {name}): Distill reads the table's Parquet files "
            "as they are",
            version=version,
            file=name,
            hint="write this table only through Distill, or read it with a Delta reader (polars.scan_delta)",
        )


def _info(raw: Any, version: int, name: str) -> CommitInfo | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _bad(version, name, f"its {COMMIT_KEY!r} record is not an object")
    try:
        info = CommitInfo.model_validate({"format": FORMAT_BEFORE_FACTS, **raw})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _bad(version, name, f"its {COMMIT_KEY!r} record is not Distill's: {where}: {first['msg']}") from None
    if info.format > COMMIT_FORMAT:
        raise LakeLogError(
            f"the lake's version {version} was written by a newer Distill (commit format {info.format}; this "
            f"Distill reads up to {COMMIT_FORMAT})",
            version=version,
            file=name,
            hint=f"upgrade Distill (that commit was written by Distill {info.distill_version})",
        )
    return info


def _time(commit_info: dict[str, Any], path: Path) -> dt.datetime:
    stamp = commit_info.get("timestamp")
    seconds = int(stamp) / 1000 if isinstance(stamp, int) else path.stat().st_mtime
    return dt.datetime.fromtimestamp(seconds, dt.UTC).replace(tzinfo=None)
