"""Files on disk: written so that a crash never leaves half of one, and named by their content.

Every stage that publishes a small file (a manifest pointer, a report, a
checkpoint card, loop state, the rating pool) writes it with
:func:`write_text_atomic`, and reads a versioned one back with
:func:`read_versioned` (through :func:`toolkit.jsontext.loads_strict`: no
nesting deeper than a limit, no key twice); every content hash (an ingested file, a dataset
part, checkpoint weights) is :func:`file_sha256`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel, ValidationError

from toolkit.errors import DistillError, OutsideRootError
from toolkit.jsontext import JSONShapeError, loads_strict

M = TypeVar("M", bound=BaseModel)


class LockHeldError(Exception):
    """Another process holds the lock; ``pid`` is the holder's process id when it wrote one."""

    def __init__(self, path: Path, pid: int | None) -> None:
        super().__init__(f"{path} is held by {'process ' + str(pid) if pid else 'another process'}")
        self.path, self.pid = path, pid


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary sibling and one rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_sibling(path)
    try:
        with open(temporary, "x", encoding="utf-8") as handle:  # created here: never a file a link leads to
            handle.write(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def temporary_sibling(path: Path) -> Path:
    """A name beside ``path`` for a file written whole then renamed onto it: unpredictable, so nothing can be
    planted there first."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")


def read_versioned(
    path: Path,
    model: type[M],
    version: int,
    *,
    what: str,
    error: type[DistillError],
    hint: str,
    upgrades: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
    unversioned: int | None = None,
) -> M:
    """A versioned JSON file (one with a ``format_version`` field) as ``model``, the one way Distill reads them.

    Every problem raises ``error`` naming the file: missing or unreadable;
    not a valid ``what`` (not JSON, nested deeper than
    :data:`~toolkit.jsontext.MAX_NESTING`, a key twice in one object, not an
    object, no integer ``format_version``, or a field the model refuses: each
    named); or of another format version than ``version`` and ``upgrades``
    (hint: the Distill version that wrote it). ``hint`` says how to get a
    good file back. ``upgrades`` maps an older version to the function that
    turns its content into ``version``'s. ``unversioned``: the version of a
    file written before the format carried one (None: such a file is
    refused). A version outside what this Distill reads (a newer Distill's)
    is refused naming the file, its version and the versions read.
    """
    if path.exists() and not path.is_file():  # a FIFO or a device would hang or stream forever
        raise error(f"{path} is not a regular file, so not a {what}", hint=hint)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"no {what} at {path}", hint=hint) from None
    except (OSError, UnicodeDecodeError) as problem:
        raise error(f"{path} is unreadable: {problem}", hint=hint) from None

    def invalid(reason: str) -> DistillError:
        return error(f"{path} is not a valid {what}: {reason}", hint=hint)

    try:
        raw = loads_strict(text)
    except JSONShapeError as problem:
        raise invalid(str(problem)) from None
    except ValueError as problem:
        raise invalid(f"not JSON ({problem})") from None
    return versioned(
        raw,
        model,
        version,
        where=str(path),
        what=what,
        error=error,
        hint=hint,
        upgrades=upgrades,
        unversioned=unversioned,
    )


def versioned(
    raw: Any,
    model: type[M],
    version: int,
    *,
    where: str,
    what: str,
    error: type[DistillError],
    hint: str,
    upgrades: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
    unversioned: int | None = None,
    article: str = "a valid",
) -> M:
    """``raw`` (parsed JSON, read from ``where``: a file, or a file's line) as ``model`` once migrated to format
    ``version``: the checks and migrations of :func:`read_versioned`, for a record that is not a file of its own
    (a line of a JSON-lines file). A record refused "is not {article} {what}"."""
    raw = migrated(
        raw,
        version,
        where=where,
        what=what,
        error=error,
        hint=hint,
        upgrades=upgrades,
        unversioned=unversioned,
        article=article,
    )
    try:
        return model.model_validate(raw)
    except ValidationError as problem:
        from toolkit.config import validation_message

        raise error(f"{where} is not {article} {what}: {validation_message(problem)}", hint=hint) from None


def migrated(
    raw: Any,
    version: int,
    *,
    where: str,
    what: str,
    error: type[DistillError],
    hint: str,
    upgrades: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
    unversioned: int | None = None,
    article: str = "a valid",
) -> dict[str, Any]:
    """``raw``'s fields as format ``version`` writes them, its ``format_version`` included: the version checks and
    migrations of :func:`versioned`, without validating the fields (for a caller that validates them its own
    way, as ``toolkit.config.load_config`` does)."""

    def invalid(reason: str) -> DistillError:
        return error(f"{where} is not {article} {what}: {reason}", hint=hint)

    if not isinstance(raw, dict):
        raise invalid(f"a JSON object is expected, not {type(raw).__name__}")
    if "format_version" not in raw and unversioned is not None:
        raw = {**raw, "format_version": unversioned}
    found = raw.get("format_version")
    if type(found) is not int:
        raise invalid(f"format_version: {'missing' if found is None else 'an integer is expected, not ' + repr(found)}")
    upgrade = (upgrades or {}).get(found)
    if upgrade is not None:
        raw, found = {**upgrade(raw), "format_version": version}, version
    if found != version:
        oldest = min([version, *(upgrades or {})])
        reads = f"version {version}" if oldest == version else f"versions {oldest} to {version}"
        raise error(
            f"{where} is a {what} of format version {found!r}; this Distill reads {reads}",
            hint=f"use the Distill version that wrote it, or: {hint}",
        )
    return raw


def file_sha256(path: Path) -> str:
    """SHA-256 of the file's bytes as stored (compressed files: of the compressed bytes)."""
    digest = hashlib.sha256()
    block = bytearray(1 << 20)  # reused: no allocation per block
    with open(path, "rb", buffering=0) as handle, memoryview(block) as view:
        while size := handle.readinto(view):
            digest.update(view[:size])
    return digest.hexdigest()


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an OS file lock (``flock``) on ``path`` for the block, with this process's id written in it.

    A process that crashes or is killed releases it. Never waits.

    Raises:
        LockHeldError: another process holds it.
        OutsideRootError: ``path`` is a symlink (whose target the process id would overwrite).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", opener=no_follow) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeldError(path, lock_holder(path)) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def no_follow(path: str, flags: int) -> int:
    """``open``'s opener for a file Distill writes in place: never through a symlink.

    Raises:
        OutsideRootError: ``path`` is a symlink.
    """
    try:
        return os.open(path, flags | os.O_NOFOLLOW, 0o666)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise OutsideRootError(
            f"{path} is a symlink: Distill does not write through it",
            hint="a data root holds no symlink where Distill writes: remove the link",
        ) from None


def open_append(path: Path) -> TextIO:
    """``path`` opened to append text lines (created if missing), never through a symlink.

    Raises:
        OutsideRootError: it is a symlink.
    """
    return open(path, "a", encoding="utf-8", opener=no_follow)


def lock_holder(path: Path) -> int | None:
    """The process id written in a lock file that some process holds now, or None when nobody holds it."""
    try:
        with open(path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = handle.read().strip()
                return int(text) if text.isdigit() else -1
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None
    except FileNotFoundError:
        return None
