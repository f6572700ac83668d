"""The lake at a location: a Delta table in object storage (``s3://bucket/prefix``) or in a folder elsewhere, that
several data roots share, each keeping its own index, builds and runs.

Where ``--lake`` (or ``DISTILL_LAKE``) names a location, the Delta table
lives there, and the data root's ``lake/`` folder is its local copy: the
table's commits and the data files they add, pulled from the location
whenever a reader or a writer opens the lake (:func:`pull`). Everything
that reads the lake (the log's checks, the index, the SQL views, builds,
gates) reads that copy, so a build from a shared lake is byte for byte the
build of a local lake holding the same commits (same fingerprints).

A writer writes a change's files as on a local lake (staged, then moved
into ``lake/``), uploads them to the location under names no other writer
uses (``batch-<id>~<token>.parquet``), and commits them there through
delta-rs, whose commit protocol lets many writers commit at once (on S3,
with ``conditional_put=etag``: a version is written once or not at all;
commits that do not conflict are retried at the next version). An ingest's
commit carries a Delta transaction id of its batch (``distill-batch-<id>``):
two data roots ingesting the same log at once commit it once, the other
commit failing as a conflict. Then the writer pulls what the location holds
(its own commit and any other root's) and indexes it.

Credentials and the endpoint come from the standard ``AWS_*`` variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``,
``AWS_ENDPOINT_URL`` for a server other than AWS, ``AWS_ALLOW_HTTP=true``
for one without TLS), never from a file of the data root. The data root
records its lake's location (``lake.json``) so that it is never opened
with another lake, nor as a local lake, by mistake.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import posixpath
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict

from toolkit.catalog import log
from toolkit.errors import CatalogError, LakeLogError, UsageError
from toolkit.layout import LAKE_ENV, NAME_PATTERN, STAGED_FOLDER, Layout
from toolkit.storage import read_versioned

LOCATION_FILE: Final = "lake.json"  # in the data root: the location of its lake (absent: a local lake)
LOCATION_FORMAT_VERSION: Final = 1
SCHEMES: Final = ("s3", "file")
TOKEN_KEY: Final = "distillToken"  # commitInfo key: which writer's commit a version is (found after a pull)
BATCH_APP_PREFIX: Final = "distill-batch-"  # the Delta transaction id of an ingested batch
QUARANTINE_FOLDER: Final = "_quarantine"  # at the location: each batch's rejected lines (Delta readers skip it)
# A data file at the location that no version lists is deleted by a vacuum only past this age: younger, it may be
# another data root's upload whose commit is on its way.
STRAY_MIN_AGE: Final = dt.timedelta(hours=1)
_CONNECT_TIMEOUT_S: Final = 5.0
_REQUEST_TIMEOUT_S: Final = 60.0
# A request that fails (a timeout, a 5xx) is retried this often, within this long in all: a location that stops
# answering gives a clear error in minutes, not the store client's default of ten retries over three minutes.
_RETRIES: Final = 2
_RETRY_TIMEOUT_S: Final = 120.0
HINT: Final = (
    "check the location and the AWS_* variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
    "AWS_REGION), that the bucket exists and that the server is reachable"
)


@dataclass(frozen=True)
class LakeLocation:
    """Where a shared lake's Delta table lives: ``s3://bucket/prefix`` or ``file:///folder``."""

    uri: str

    @classmethod
    def parse(cls, text: str) -> LakeLocation:
        """A location as a user gives it: an ``s3://`` or ``file://`` URI, or a local path (made absolute).

        Raises:
            UsageError: another scheme, an S3 URI without a bucket, a path with a NUL, a place inside a lake's own
                folders.
        """
        text = text.strip()
        if "\x00" in text or not text:
            raise UsageError(
                f"{text!r} is not a lake location", hint="e.g. --lake s3://bucket/lake or --lake /shared/lake"
            )
        parsed = urlparse(text)
        local = len(parsed.scheme) <= 1  # no scheme (or a Windows drive letter): a local path
        if {log.LOG_FOLDER, QUARANTINE_FOLDER} & set((text if local else parsed.path).split("/")):
            raise UsageError(
                f"the lake location {text!r} lies inside a lake's own folders ({log.LOG_FOLDER}/, "
                f"{QUARANTINE_FOLDER}/)",
                hint="name the lake's own prefix or folder",
            )
        if local:
            return cls("file://" + os.path.abspath(os.path.expanduser(text)))
        if parsed.scheme not in SCHEMES:
            raise UsageError(
                f"the lake location {text!r} has the scheme {parsed.scheme!r}, which Distill does not read",
                hint="a lake location is s3://bucket/prefix, file:///path, or a local path",
            )
        if parsed.scheme == "s3":
            prefix = parsed.path.strip("/")
            if not parsed.netloc or parsed.query or parsed.fragment:
                raise UsageError(f"{text!r} is not an S3 location", hint="write it s3://bucket/prefix")
            return cls(f"s3://{parsed.netloc}/{prefix}".rstrip("/"))
        return cls("file://" + os.path.abspath(parsed.path))

    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0]

    @property
    def table_uri(self) -> str:
        """The location as delta-rs opens it."""
        return self.uri if self.scheme == "s3" else self.uri.removeprefix("file://")

    def storage_options(self) -> dict[str, str]:
        """delta-rs's options: on S3, commits made safe for many writers by conditional puts (the rest comes from
        the ``AWS_*`` variables, which delta-rs reads itself)."""
        if self.scheme != "s3":
            return {}
        return {
            "conditional_put": "etag",
            "timeout": f"{int(_REQUEST_TIMEOUT_S)}s",
            "connect_timeout": f"{int(_CONNECT_TIMEOUT_S)}s",
            "max_retries": str(_RETRIES),
            "retry_timeout": f"{int(_RETRY_TIMEOUT_S)}s",
        }

    def filesystem(self) -> tuple[Any, str]:
        """The location as a pyarrow filesystem and the table's folder in it."""
        import pyarrow.fs as pafs

        if self.scheme == "file":
            return pafs.LocalFileSystem(), self.table_uri
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        options: dict[str, Any] = {
            "connect_timeout": _CONNECT_TIMEOUT_S,
            "request_timeout": _REQUEST_TIMEOUT_S,
            "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=3),
        }
        if endpoint:
            parsed = urlparse(endpoint)
            options["endpoint_override"] = parsed.netloc or endpoint
            options["scheme"] = parsed.scheme or "https"
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            options["region"] = region
        return pafs.S3FileSystem(**options), self.uri.removeprefix("s3://")


def location_of(layout: Layout) -> LakeLocation | None:
    """The location of ``layout``'s lake (None: the lake is the data root's own ``lake/`` folder), recorded in the
    data root the first time it is given.

    Raises:
        UsageError: the location given is not one, or the data root's lake is elsewhere than the one given (or it
            is local and a location is given, or the other way round).
    """
    recorded = _recorded(layout)
    given = LakeLocation.parse(layout.lake_uri) if layout.lake_uri else None
    if given is None and recorded is not None:
        raise UsageError(
            f"the data root {layout.home} keeps a copy of the lake at {recorded.uri}, not a lake of its own",
            hint=f"open it with --lake {recorded.uri} (or {LAKE_ENV}={recorded.uri})",
        )
    if given is not None and recorded is not None and given != recorded:
        raise UsageError(
            f"the data root {layout.home} indexes the lake at {recorded.uri}, not {given.uri}",
            hint=f"use --lake {recorded.uri}, or another --home for the lake at {given.uri}",
        )
    if given is not None and recorded is None:
        if log.versions(layout.lake):
            raise UsageError(
                f"the data root {layout.home} holds a lake of its own ({layout.lake}); it cannot index the lake at "
                f"{given.uri} too",
                hint="use another --home for the shared lake",
            )
        _record(layout, given)
    return given


def refresh(layout: Layout) -> LakeLocation | None:
    """``layout``'s lake location (see :func:`location_of`), its local copy first brought up to the location's log
    with each ingested batch's rejected lines; None (nothing done) for a data root's own lake."""
    location = location_of(layout)
    if location is not None:  # files first, then commits
        pull(layout.lake, location, layout.quarantine_file)
    return location


def pull(lake: Path, location: LakeLocation, quarantine: Callable[[str], Path] | None = None) -> list[int]:
    """Copy into the local copy ``lake`` the commits of the location's log that it lacks, each after the data files
    it adds (a file gone from the location, vacuumed since, is left out); returns the versions copied. With
    ``quarantine`` (a batch id -> where this data root keeps its rejected lines), each ingested batch's quarantine
    file is copied too, where the location holds one.

    A commit the copy holds already must be the location's: the copy's newest one is compared byte for byte.

    Raises:
        CatalogError: the location cannot be read (the message says what the store said).
        LakeLogError: a commit that cannot be trusted (a path outside the table), or a copy that differs from the
            location's log.
    """
    fs, root = location.filesystem()
    with _remote_errors(location, "read"):
        remote = _remote_versions(fs, root)
    local = log.versions(lake)
    if local:
        last = local[-1]
        if (
            last not in remote
            or _read(fs, location, root, log.commit_name(last)) != (lake / log.commit_name(last)).read_bytes()
        ):
            raise LakeLogError(
                f"the data root's copy of the lake at {location.uri} holds version {last}, which the location's log "
                "does not hold as it is",
                version=last,
                file=log.commit_name(last),
                hint=f"delete {lake} and the data root's catalog files (a copy and its index) to copy the lake anew",
            )
    pulled = []
    (lake / log.LOG_FOLDER).mkdir(parents=True, exist_ok=True)
    for version in (v for v in remote if not local or v > local[-1]):
        name = log.commit_name(version)
        raw = _read(fs, location, root, name)
        for path in log.added_paths(raw, version, name):
            target = log.inside(lake, path)
            if target is None:
                raise LakeLogError(
                    f"the data root's copy of the lake holds a symlink leading outside it, where version {version} "
                    f"adds {path}: Distill writes the copy only inside its folder",
                    version=version,
                    file=name,
                    hint=f"remove the link, or delete {lake} and the catalog files to copy the lake anew",
                )
            if not target.exists():
                _download(fs, location, posixpath.join(root, path), target)
        _place(lake / name, raw)
        pulled.append(version)
        if quarantine is not None:
            _pull_quarantine(fs, location, root, log.read_commit(lake, version), quarantine)
    return pulled


def upload_quarantine(location: LakeLocation, files: dict[str, Path]) -> None:
    """Copy ingested batches' quarantine files (batch id -> file) to the location's ``_quarantine/`` folder (a
    folder Delta readers skip), so that every data root reads every batch's rejected lines.

    Raises:
        CatalogError: the location cannot be written.
    """
    fs, root = location.filesystem()
    with _remote_errors(location, "write"):
        for batch, path in files.items():
            _put(fs, path, _quarantine_key(root, batch, path.name))


def fetch_quarantine(location: LakeLocation, batch: str, target: Path) -> None:
    """Copy one batch's quarantine file from the location to ``target`` (where the location holds one).

    Raises:
        CatalogError: the location cannot be read.
    """
    fs, root = location.filesystem()
    if re.fullmatch(NAME_PATTERN, batch):
        _download(fs, location, _quarantine_key(root, batch, target.name), target)


def _pull_quarantine(
    fs: Any, location: LakeLocation, root: str, commit: log.Commit, quarantine: Callable[[str], Path]
) -> None:
    if commit.info is None or commit.info.operation != "ingest":
        return
    for batch in commit.info.batches:
        if not re.fullmatch(NAME_PATTERN, batch):
            continue  # not a batch id Distill makes: never a path
        target = quarantine(batch)
        if not target.exists():
            fetch_quarantine(location, batch, target)


def location_has_table(location: LakeLocation) -> bool:
    """Whether the location's log holds a first commit.

    Raises:
        CatalogError: the location cannot be read.
    """
    fs, root = location.filesystem()
    with _remote_errors(location, "read"):
        return 0 in _remote_versions(fs, root)


def require_lake_or_empty(location: LakeLocation) -> None:
    """Check the location is empty or a Delta table before a lake is made there.

    Raises:
        CatalogError: it holds other objects (not a lake: Distill writes no table over them), or cannot be read.
    """
    import pyarrow.fs as pafs

    fs, root = location.filesystem()
    with _remote_errors(location, "read"):
        if fs.get_file_info(root).type == pafs.FileType.File:
            raise CatalogError(f"the lake location {location.uri} is a file", hint="name a prefix or a folder")
        found = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
    names = sorted(posixpath.basename(info.path) for info in found)
    if names and log.LOG_FOLDER not in names:
        raise CatalogError(
            f"the lake location {location.uri} holds {', '.join(names[:3])}{'...' if len(names) > 3 else ''} but "
            f"no Delta log ({log.LOG_FOLDER}/): it is not a lake, and Distill makes none over other files",
            hint="name an empty prefix or an existing Distill lake",
        )


def stray_files(location: LakeLocation, listed: set[str], before: dt.datetime) -> dict[str, int]:
    """The Parquet files at the location (paths in the table, with their sizes) that are not in ``listed`` and were
    last modified before ``before``, and what workers left under ``_staged/`` as old (a driver that never
    committed their shards); the log's folder and other hidden folders (``_...``, ``.…``) are not looked in.

    Raises:
        CatalogError: the location cannot be listed.
    """
    import pyarrow.fs as pafs

    fs, root = location.filesystem()
    with _remote_errors(location, "list"):
        found = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    strays = {}
    for info in found:
        name = posixpath.relpath(info.path, root)
        staged = name.startswith(STAGED_FOLDER + "/") and log.is_table_path(name)
        hidden = any(part.startswith(("_", ".")) for part in name.split("/"))
        data = not hidden and name.endswith(".parquet") and name not in listed
        if info.type != pafs.FileType.File or not (staged or data):
            continue
        if info.mtime is not None and info.mtime.replace(tzinfo=info.mtime.tzinfo or dt.UTC) < before:
            strays[name] = int(info.size or 0)
    return strays


def upload(lake: Path, location: LakeLocation, names: list[str]) -> None:
    """Copy files of the local copy ``lake`` (paths in the table) to the location, each whole or not at all.

    Raises:
        CatalogError: the location cannot be written.
    """
    fs, root = location.filesystem()
    with _remote_errors(location, "write"):
        for name in names:
            _put(fs, lake / name, posixpath.join(root, name))


def delete(location: LakeLocation, names: list[str]) -> None:
    """Delete files of the table at the location (a vacuum's), those already gone left alone.

    Raises:
        CatalogError: the location cannot be written.
    """
    import pyarrow.fs as pafs

    fs, root = location.filesystem()
    with _remote_errors(location, "delete from"):
        for name in filter(log.is_table_path, names):  # inside the table's prefix, never a climb out of it
            path = posixpath.join(root, name)
            if fs.get_file_info(path).type != pafs.FileType.NotFound:
                fs.delete_file(path)


def put(location: LakeLocation, files: dict[str, Path]) -> None:
    """Copy local files to the location (its path under the table's prefix -> the file), each whole or not at all.

    Raises:
        CatalogError: the location cannot be written.
    """
    fs, root = location.filesystem()
    with _remote_errors(location, "write"):
        for name, path in files.items():
            _put(fs, path, posixpath.join(root, name))


def get(location: LakeLocation, name: str, target: Path) -> bool:
    """Copy the location's file ``name`` (a path under the table's prefix) to ``target``, whole or not at all;
    whether the location held it.

    Raises:
        CatalogError: the location cannot be read.
    """
    fs, root = location.filesystem()
    _download(fs, location, posixpath.join(root, name), target)
    return target.exists()


def discard(location: LakeLocation, names: list[str]) -> None:
    """Delete files a worker staged at the location that no commit lists (under ``_staged/``, or data files of the
    table under a worker's unique name), those already gone left alone.

    Raises:
        CatalogError: the location cannot be written.
    """
    import pyarrow.fs as pafs

    fs, root = location.filesystem()
    staged = [n for n in names if n.startswith(STAGED_FOLDER + "/") and log.is_table_path(n.partition("/")[2])]
    unique = [n for n in names if "~" in posixpath.basename(n) and log.is_table_path(n)]
    with _remote_errors(location, "delete from"):
        for name in staged + unique:
            path = posixpath.join(root, name)
            if fs.get_file_info(path).type != pafs.FileType.NotFound:
                fs.delete_file(path)
        for folder in sorted({posixpath.dirname(n) for n in staged} - {STAGED_FOLDER}):  # a worker's own folder
            path = posixpath.join(root, folder)
            if fs.get_file_info(path).type == pafs.FileType.Directory:
                fs.delete_dir(path)


def unique_name(name: str, token: str) -> str:
    """A staged file's name at a shared location: its own name with the writer's token (``stem~token.parquet``),
    so that two writers staging the same batch never write the same object."""
    stem, _, suffix = posixpath.basename(name).partition(".")
    return posixpath.join(posixpath.dirname(name), f"{stem.split('~')[0]}~{token[:12]}.{suffix}")


def committed_version(lake: Path, token: str, after: int) -> int | None:
    """The version after ``after`` whose commit carries ``token`` (a writer's commit, found once pulled)."""
    for version in log.versions(lake):
        if version > after and _token(lake / log.commit_name(version)) == token:
            return version
    return None


def new_token() -> str:
    return uuid.uuid4().hex


# -- helpers ----------------------------------------------------------------------------------------------------


class LocationRecord(BaseModel):
    """``lake.json`` in a data root: where its lake is (the data root keeps a copy of its index)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int
    uri: str


def _recorded(layout: Layout) -> LakeLocation | None:
    path = layout.home / LOCATION_FILE
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise CatalogError(f"{path} is not a regular file", hint=f"delete {path} and open the data root with --lake")
    if not path.exists():
        return None
    record = read_versioned(
        path,
        LocationRecord,
        LOCATION_FORMAT_VERSION,
        what="lake location",
        error=CatalogError,
        hint=f"delete {path} and open the data root with --lake",
    )
    return LakeLocation.parse(record.uri)


def _record(layout: Layout, location: LakeLocation) -> None:
    from toolkit.storage import write_text_atomic

    if _recorded(layout) is None:
        record = LocationRecord(format_version=LOCATION_FORMAT_VERSION, uri=location.uri)
        write_text_atomic(layout.inside(layout.home / LOCATION_FILE), json.dumps(record.model_dump()) + "\n")


def _remote_versions(fs: Any, root: str) -> list[int]:
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(posixpath.join(root, log.LOG_FOLDER), allow_not_found=True)
    found = (log.commit_version(posixpath.basename(info.path)) for info in fs.get_file_info(selector))
    return sorted(version for version in found if version is not None)


def _read(fs: Any, location: LakeLocation, root: str, name: str) -> bytes:
    with _remote_errors(location, "read"), fs.open_input_stream(posixpath.join(root, name)) as stream:
        return bytes(stream.read())


def _download(fs: Any, location: LakeLocation, source: str, target: Path) -> None:
    """Copy one file to ``target`` through a temporary sibling (whole or not at all); a file gone is left out."""
    import pyarrow.fs as pafs

    with _remote_errors(location, "read"):
        if fs.get_file_info(source).type == pafs.FileType.NotFound:
            return  # vacuumed since: no version from the horizon on lists it
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            with fs.open_input_stream(source) as stream, open(temporary, "wb") as sink:
                while block := stream.read(1 << 22):
                    sink.write(block)
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)


def _quarantine_key(root: str, batch: str, name: str) -> str:
    """Where a batch's quarantine file lies at the location (``_quarantine/batch=<id>/<name>``)."""
    return posixpath.join(root, QUARANTINE_FOLDER, f"batch={batch}", name)


def _put(fs: Any, path: Path, target: str) -> None:
    """Copy one local file to ``target`` at the location (an object store writes it whole or not at all)."""
    fs.create_dir(posixpath.dirname(target), recursive=True)
    with open(path, "rb") as source, fs.open_output_stream(target) as sink:
        while block := source.read(1 << 22):
            sink.write(block)


def _place(path: Path, raw: bytes) -> None:
    """Write a commit into the copy's log once: another process that placed it first placed the same bytes."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        temporary.write_bytes(raw)
        try:
            os.link(temporary, path)
        except FileExistsError:
            if path.read_bytes() != raw:
                raise LakeLogError(
                    f"{path} differs from the location's commit of the same version",
                    version=int(path.stem),
                    file=log.LOG_FOLDER + "/" + path.name,
                    hint="delete the data root's lake/ and catalog (a copy and its index) to copy the lake anew",
                ) from None
    finally:
        temporary.unlink(missing_ok=True)


def _token(path: Path) -> str | None:
    with contextlib.suppress(OSError, ValueError), open(path, "rb") as handle:
        for line in handle:
            action = json.loads(line)
            if isinstance(action, dict) and isinstance(action.get("commitInfo"), dict):
                token = action["commitInfo"].get(TOKEN_KEY)
                return token if isinstance(token, str) else None
    return None


@contextlib.contextmanager
def _remote_errors(location: LakeLocation, doing: str) -> Iterator[None]:
    """The store's errors as one CatalogError naming the location and what the store said."""
    try:
        yield
    except (OSError, ValueError) as error:
        said = " ".join(str(error).split())[:300]
        raise CatalogError(f"cannot {doing} the lake at {location.uri}: {said}", hint=HINT) from None
