"""What ingest and validate read: regular files, named or found in folders, and standard input, read once.

A file is read more than once (hashed, since its SHA-256 names its batch;
validated; read again for its duplicates), so only regular files are read. A
path that is not one (a named pipe, a process substitution such as
``<(cat f.jsonl)``, a device such as ``/dev/zero``, a socket; links are
followed) is refused with an error naming it, before anything is read or
locked: a pipe would block, or be read only once, and a device never ends. In a
folder, a log-named entry that is not a regular file (or a broken link) is
skipped and reported as skipped.

Standard input is read when a path is ``-`` (or ``/dev/stdin``): once, as it
comes, into a file (a *spool*: gzip and zstd streams are recognised by their
first bytes and kept compressed), which is then read like any other file and
recorded as ``<stdin>``. The spool is bounded (``ReadOptions.max_stdin_bytes``)
and deleted afterwards.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

from pydantic import BaseModel, ConfigDict

from toolkit.errors import IngestError, UsageError
from toolkit.ingest.reader import SUFFIXES, is_log_file

STDIN_ARGS: Final = ("-", "/dev/stdin")
STDIN_NAME: Final = "<stdin>"
_GZIP_MAGIC: Final = b"\x1f\x8b"
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
_SPOOL_PREFIX: Final = "stdin-"
_COPY_BYTES: Final = 1 << 20
_NOT_REGULAR_HINT: Final = (
    "ingest reads regular files only: save the stream to a file first, or pipe it to standard input "
    "(cat FILE | distill ingest -)"
)


class SkippedFile(BaseModel):
    """A log-named entry of a folder that was not read, and why."""

    model_config = ConfigDict(frozen=True)

    path: str
    reason: str


@dataclass(frozen=True)
class Input:
    """One file to read: ``path`` on disk, and ``name``, how it is recorded (its path, or ``<stdin>``)."""

    path: Path
    name: str

    @property
    def is_stdin(self) -> bool:
        return self.name == STDIN_NAME


@dataclass
class FoundInputs:
    """The regular files named or found (in order, each once; ``None`` stands for standard input) and the
    folder entries skipped."""

    paths: list[Path | None] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)

    @property
    def reads_stdin(self) -> bool:
        return None in self.paths


def find_inputs(paths: list[Path]) -> FoundInputs:
    """The regular files named, plus the log files found (recursively, sorted) under the folders named.

    Raises:
        UsageError: a path does not exist, is not a regular file or a folder, or is a folder that holds no
            log file.
    """
    found = FoundInputs()
    for path in paths:
        if str(path) in STDIN_ARGS:
            found.paths.append(None)
            continue
        mode = _mode(path)
        if mode is None:
            raise UsageError(f"{path}: no such file or folder", hint="check the path, or quote a glob")
        if stat.S_ISDIR(mode):
            found.paths.extend(_folder_files(path, found.skipped))
        elif stat.S_ISREG(mode):
            found.paths.append(path)
        else:
            raise UsageError(f"{path}: {_kind(mode)}, not a regular file", hint=_NOT_REGULAR_HINT)
    found.paths = list(dict.fromkeys(p if p is None else p.resolve() for p in found.paths))
    return found


def _folder_files(folder: Path, skipped: list[SkippedFile]) -> list[Path]:
    files: list[Path] = []
    skipped_before = len(skipped)
    for path in sorted(folder.rglob("*")):
        if not is_log_file(path):
            continue
        try:
            mode = path.stat().st_mode
        except OSError as error:  # a broken link, most likely
            skipped.append(SkippedFile(path=str(path), reason=f"cannot be read ({error.strerror}): skipped"))
            continue
        if stat.S_ISREG(mode):
            files.append(path)
        elif not stat.S_ISDIR(mode):
            skipped.append(SkippedFile(path=str(path), reason=f"{_kind(mode)}, not a regular file: skipped"))
    if not files and len(skipped) == skipped_before:
        raise UsageError(f"{folder}: folder holds no {', '.join(SUFFIXES[:3])} file")
    return files


def _mode(path: Path) -> int | None:
    """The file type and mode of ``path`` (links followed), or None if there is nothing there."""
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a pipe (a FIFO, or a process substitution such as <(...))"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file or a folder"


@contextlib.contextmanager
def opened_inputs(found: FoundInputs, spool: Path, max_stdin_bytes: int) -> Iterator[list[Input]]:
    """The inputs to read, standard input (if named) spooled into a file under ``spool`` first and deleted after.

    Raises:
        UsageError: standard input is a terminal, or holds more than ``max_stdin_bytes``.
        IngestError: the spool cannot be written (the disk is full, say).
    """
    with contextlib.ExitStack() as stack:
        inputs = []
        for path in found.paths:  # standard input is there once at most
            if path is None:
                inputs.append(Input(stack.enter_context(spooled_stdin(spool, max_stdin_bytes)), STDIN_NAME))
            else:
                inputs.append(Input(path, str(path)))
        yield inputs


@contextlib.contextmanager
def spooled_stdin(folder: Path, max_bytes: int, stream: BinaryIO | None = None) -> Iterator[Path]:
    """Standard input (or ``stream``) copied once into a file under ``folder``, deleted on exit.

    The file's suffix follows its first bytes (``.jsonl.gz``, ``.jsonl.zst`` or ``.jsonl``). Spools left
    by processes that died are deleted first.

    Raises:
        UsageError: the stream is a terminal, or longer than ``max_bytes``.
        IngestError: the spool cannot be written.
    """
    stream = sys.stdin.buffer if stream is None else stream
    if stream.isatty():
        raise UsageError(
            "standard input is a terminal, not a stream of logs", hint="pipe a log in: cat FILE | distill ingest -"
        )
    folder.mkdir(parents=True, exist_ok=True)
    _remove_dead_spools(folder)
    first = stream.read(len(_ZSTD_MAGIC))
    suffix = ".jsonl.gz" if first.startswith(_GZIP_MAGIC) else ".jsonl.zst" if first == _ZSTD_MAGIC else ".jsonl"
    path = folder / f"{_SPOOL_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"
    try:
        _copy(stream, first, path, max_bytes)
        yield path
    finally:
        path.unlink(missing_ok=True)


def _copy(stream: BinaryIO, first: bytes, path: Path, max_bytes: int) -> None:
    written = 0
    block = bytearray(_COPY_BYTES)
    try:
        with open(path, "wb") as out, memoryview(block) as view:
            out.write(first)
            written = len(first)
            while size := stream.readinto(view):  # type: ignore[attr-defined]
                written += size
                if written > max_bytes:
                    raise UsageError(
                        f"standard input holds more than {max_bytes:,} bytes (ReadOptions.max_stdin_bytes)",
                        hint="save it to a file and ingest the file",
                    )
                out.write(view[:size])
    except OSError as error:
        raise IngestError(
            f"cannot keep standard input in {path.parent}: {error.strerror or error}",
            hint="free some space there, or save the stream to a file and ingest the file",
        ) from error


def _remove_dead_spools(folder: Path) -> None:
    """Delete the spools of processes that are gone (killed while reading their standard input)."""
    for path in folder.glob(f"{_SPOOL_PREFIX}*"):
        pid = path.name.removeprefix(_SPOOL_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
