"""The lake's table format: a Delta Lake table (delta-rs) whose Parquet files Distill writes itself.

``lake/`` is a Delta table partitioned by ``source`` and ``generation``
(declared in its metadata, so polars, DuckDB, Spark and Trino prune on them;
the folders are the hive folders those readers expect:
``source=<s>/generation=<g>/``, a null generation under
``generation=__HIVE_DEFAULT_PARTITION__``). ``lake/_delta_log/`` is its
transaction log: every change of the lake (an ingested batch, a review, a
retirement, a restore, a compaction, a vacuum, a migration) is one commit,
that is one version, whose commit info carries what Distill did and the
facts of every file it adds (:mod:`toolkit.catalog.commit`). Any Delta
reader reads the lake as it is at any version.

Distill encodes the Parquet files itself (the ingest stage's tuned writer),
moves them into the table folder and commits them with ``add`` actions;
retiring a batch commits ``remove`` actions for its files (metadata only:
the files stay until a vacuum deletes them), restoring it commits ``add``
actions for the same files again. The log is the one source of truth; the
catalog is an index of it (:mod:`toolkit.catalog.index`) that any process
rebuilds from the log alone (:mod:`toolkit.catalog.log` reads it).

Commits go through delta-rs (its commit protocol: a version is written once
or not at all). Only the catalog's writer (one process at a time) commits,
so commits never race. Old log files are never cleaned up (history and time
travel read them); delta-rs writes a checkpoint every 100 commits, so other
readers load the table fast. One commit delta-rs cannot make, a migration's
change of the partition columns, is written by :func:`write_commit` with the
same put-if-absent rule.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.catalog import log, remote
from toolkit.catalog.commit import COMMIT_KEY, CommitInfo, FileFacts
from toolkit.catalog.remote import LakeLocation
from toolkit.errors import CatalogError
from toolkit.schema import columns as col
from toolkit.schema.arrow import lake_schema

PARTITION_COLUMNS: Final = (col.SOURCE, col.GENERATION)
TABLE_CONFIGURATION: Final = {
    # History and time travel read old log files: never delete them (the default deletes those past 30 days).
    "delta.enableExpiredLogCleanup": "false",
    "delta.checkpointInterval": "100",
}


@dataclass(frozen=True)
class DataFile:
    """One Parquet file of the table: its path relative to the table folder, size, and what Distill knows of it."""

    path: str
    size_bytes: int
    facts: FileFacts

    @property
    def rows(self) -> int:
        return self.facts.rows


def exists(lake: Path) -> bool:
    """Whether ``lake`` holds a Delta table (a log with at least one commit)."""
    return bool(log.versions(lake))


class DeltaLake:
    """The lake's Delta table, for the catalog's writer (reads go through the log and the catalog's index): the
    folder ``lake`` itself, or, with a ``location``, the table there, of which ``lake`` is the local copy
    (:mod:`toolkit.catalog.remote`: commits are made at the location, then pulled)."""

    def __init__(self, lake: Path, location: LakeLocation | None = None) -> None:
        from deltalake import DeltaTable

        self.root, self.location = lake, location
        where = location.uri if location else str(lake / log.LOG_FOLDER)
        try:
            self.table = DeltaTable(_uri(lake, location), storage_options=_options(location))
        except Exception as error:  # delta-rs raises its own TableNotFoundError / DeltaError kinds
            raise CatalogError(
                f"cannot read the lake's transaction log {where}: {_first_line(error)}",
                hint=log.RESTORE_HINT if location is None else remote.HINT,
            ) from error

    @classmethod
    def create(
        cls,
        lake: Path,
        schema: pa.Schema,
        info: CommitInfo,
        files: Sequence[DataFile] = (),
        location: LakeLocation | None = None,
    ) -> DeltaLake:
        """Create the table (version 0), partitioned, holding ``files`` already in its folder, in one commit; at a
        ``location`` (empty: another data root may create it at the same moment, which is as good), then pulled.

        Raises:
            CatalogError: the location cannot be written, or holds something that is not a Delta table.
        """
        from deltalake import CommitProperties
        from deltalake.transaction import create_table_with_add_actions

        lake.mkdir(parents=True, exist_ok=True)
        if location is not None:
            remote.require_lake_or_empty(location)
        try:
            create_table_with_add_actions(
                _uri(lake, location),
                _delta_schema(schema),
                [_add(lake, f) for f in files],
                mode="error" if location is None else "ignore",
                partition_by=list(PARTITION_COLUMNS),
                configuration=table_configuration(schema),
                storage_options=_options(location),
                commit_properties=CommitProperties(custom_metadata=_custom(info, files)),
            )
        except Exception as error:
            if location is None:
                raise
            if not remote.location_has_table(location):  # else another data root made it at the same moment: as good
                raise CatalogError(
                    f"cannot create the lake at {location.uri}: {_first_line(error)}", hint=remote.HINT
                ) from error
        if location is not None:
            remote.pull(lake, location)
        return cls(lake, location)

    @property
    def version(self) -> int:
        return int(self.table.version())

    def commit(
        self,
        info: CommitInfo,
        adds: Sequence[DataFile] = (),
        removes: Sequence[DataFile] = (),
        *,
        data_change: bool = True,
        read_version: int | None = None,
    ) -> log.Commit:
        """Commit ``adds`` (files already in the table folder) and ``removes`` as one new version
        (``data_change`` False: the same rows in other files, as a compaction does); returns it as the log holds it.

        At a location, the commit is made on the table as of ``read_version``
        (the version the writer's index holds, from which it decided the
        change), so that delta-rs finds every commit made since that conflicts
        with it; an ingest's commit carries its batch's transaction id
        (another data root committing the same batch at once makes it fail as
        a conflict), and the version it became is found by its token once
        pulled (other roots may have committed before and after it).

        Raises:
            CatalogError: the log cannot be written (a full disk, a read-only data root, a location that cannot be
                reached), or another data root's commit conflicts with it.
        """
        from deltalake import CommitProperties
        from deltalake.transaction import RemoveAction, Transaction

        now = _now_ms()
        actions = [_add(self.root, f, data_change) for f in adds] + [
            RemoveAction(f.path, data_change, now, f.size_bytes, _partition_values(f.facts)) for f in removes
        ]
        token = remote.new_token()
        batches = info.batches if info.operation == "ingest" and self.location is not None else []
        # At a location, only an ingest's commit is retried past another root's commit (appends commute); any
        # other change (a review, retirement, restore, compaction, vacuum) was decided on ``read_version`` and
        # fails if the lake moved since: delta-rs does not see every conflict among them (a compaction's
        # removes, a vacuum that has no action), so Distill asks for that version or none.
        serial = self.location is not None and info.operation != "ingest"
        properties = CommitProperties(
            custom_metadata={**_custom(info, adds), remote.TOKEN_KEY: token},
            app_transactions=[Transaction(remote.BATCH_APP_PREFIX + b, 1) for b in batches] or None,
            max_commit_retries=0 if serial else None,
        )
        if self.location is not None and read_version is not None:
            try:
                self.table.load_as_version(read_version)
            except Exception as error:  # the location stopped answering: nothing was committed
                raise self._commit_error(error, info) from None
        before = self.version
        for attempt in range(1, INGEST_ATTEMPTS + 1):
            try:
                self.table.create_write_transaction(
                    actions, "append", self.table.schema(), commit_properties=properties
                )
                break
            except Exception as error:
                problem = self._commit_error(error, info, moved=self._moved_past(before))
                if not batches or isinstance(problem, BatchCommittedElsewhere) or attempt == INGEST_ATTEMPTS:
                    raise problem from error
            # An ingest only appends: a conflict delta-rs did not retry is retried from the latest version, once
            # no version since names this batch's transaction (then another root committed it).
            try:
                self.table.update_incremental()
            except Exception as error:
                raise self._commit_error(error, info) from None
            if any(self.table.transaction_version(remote.BATCH_APP_PREFIX + b) is not None for b in batches):
                raise self._committed_elsewhere(info)
        try:
            return self._landed(token, before)
        except Exception as error:
            if isinstance(error, CatalogError) or self.location is None:
                raise
            raise CatalogError(  # committed, but not read back: the next command that opens the lake indexes it
                f"committed to the lake at {self.location.uri}, but its log could not be read back: "
                f"{_first_line(error)}",
                hint="run the command again once the location answers: the change is in the lake once",
            ) from None

    def _landed(self, token: str, before: int) -> log.Commit:
        """The commit this writer just made (carrying ``token``), as the log (or, at a location, its copy) holds
        it."""
        self.table.update_incremental()
        if self.location is None:
            return log.read_commit(self.root, self.version)
        remote.pull(self.root, self.location)
        version = remote.committed_version(self.root, token, before)
        if version is None:  # cannot happen: delta-rs said it committed
            raise CatalogError(f"the commit made to {self.location.uri} is not in its log", hint=remote.HINT)
        return log.read_commit(self.root, version)

    def _committed_elsewhere(self, info: CommitInfo) -> BatchCommittedElsewhere:
        where = self.location.uri if self.location is not None else str(self.root)
        return BatchCommittedElsewhere(
            f"batch {', '.join(info.batches)} was committed to the lake at {where} by another data root meanwhile",
            hint="run the command again: the batch is in the lake once, and is skipped",
        )

    def _moved_past(self, version: int) -> bool:
        """Whether, at a location, another commit landed after ``version`` (so a failed commit met it)."""
        if self.location is None:
            return False
        with contextlib.suppress(Exception):
            self.table.update_incremental()
        return self.version > version

    def _commit_error(self, error: Exception, info: CommitInfo, *, moved: bool = False) -> CatalogError:
        said = _first_line(error)
        if self.location is None:
            return CatalogError(
                f"cannot commit to the lake {self.root}: {said}",
                hint="the data root must be writable: check its permissions and free space",
            )
        if "concurrent transaction" in said.lower() and info.operation == "ingest":
            return self._committed_elsewhere(info)
        if moved or any(word in said.lower() for word in ("concurrent", "conflict", "already exists")):
            return CatalogError(
                f"another data root changed the lake at {self.location.uri} in a way that conflicts with this "
                f"{info.operation}: {said}",
                hint="run the command again: it reads the lake as it is now",
            )
        return CatalogError(f"cannot commit to the lake at {self.location.uri}: {said}", hint=remote.HINT)

    def add_columns(self, fields: list[pa.Field], info: CommitInfo) -> log.Commit:
        """Evolve the table's schema: add nullable top-level columns (files without them read them as null)."""
        from deltalake import CommitProperties, Schema

        delta_fields = Schema.from_arrow(pa.schema([f.with_nullable(True) for f in fields])).fields
        token, before = remote.new_token(), self.version
        properties = CommitProperties(custom_metadata={**_custom(info), remote.TOKEN_KEY: token})
        try:
            self.table.alter.add_columns(delta_fields, commit_properties=properties)
        except Exception as error:
            raise self._commit_error(error, info) from error
        return self._landed(token, before)

    def schema(self) -> pa.Schema:
        """The table's schema, as Arrow."""
        return pa.schema(self.table.schema().to_arrow())

    def partition_columns(self) -> list[str]:
        return list(self.table.metadata().partition_columns)


INGEST_ATTEMPTS: Final = 3  # an ingest's commit at a location, when another root's commit conflicts with it


class BatchCommittedElsewhere(CatalogError):
    """An ingest's batch was committed to a shared lake by another data root at the same moment."""


def _uri(lake: Path, location: LakeLocation | None) -> str:
    return location.table_uri if location is not None else str(lake)


def _options(location: LakeLocation | None) -> dict[str, str] | None:
    return location.storage_options() if location is not None else None


def table_configuration(schema: pa.Schema) -> dict[str, str]:
    return {**TABLE_CONFIGURATION, "delta.dataSkippingStatsColumns": ",".join(_stats_columns(schema))}


def write_commit(lake: Path, version: int, actions: list[dict[str, Any]], info: CommitInfo) -> log.Commit:
    """Write version ``version`` of the log by hand (what delta-rs's API cannot commit: a change of the partition
    columns), created only if no such version exists, as delta-rs does on a local disk.

    Raises:
        CatalogError: the version exists already (another writer), or the log cannot be written.
    """
    commit_info = {"timestamp": _now_ms(), "operation": "DISTILL " + info.operation.upper(), COMMIT_KEY: None}
    commit_info[COMMIT_KEY] = info.model_dump(mode="json")
    lines = [json.dumps({"commitInfo": commit_info}), *(json.dumps(a) for a in actions)]
    folder = lake / log.LOG_FOLDER
    temporary = folder / f".tmp-{uuid.uuid4().hex}.json"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temporary, lake / log.commit_name(version))  # fails when the version exists: put-if-absent
    except FileExistsError:
        raise CatalogError(
            f"version {version} of the lake exists already: another writer committed meanwhile",
            hint="run the command again",
        ) from None
    except OSError as error:
        raise CatalogError(f"cannot write the lake's log {folder}: {error.strerror}", hint="check free space") from None
    finally:
        temporary.unlink(missing_ok=True)
    return log.read_commit(lake, version)


def add_action(lake: Path, file: DataFile, data_change: bool = True) -> dict[str, Any]:
    """The JSON ``add`` action of a file (as :func:`write_commit` writes it)."""
    path = lake / file.path
    return {
        "add": {
            "path": file.path,
            "partitionValues": _partition_values(file.facts),
            "size": file.size_bytes,
            "modificationTime": int(path.stat().st_mtime * 1000),
            "dataChange": data_change,
            "stats": json.dumps(file_stats(path)),
        }
    }


def remove_action(path: str, size: int, data_change: bool = True) -> dict[str, Any]:
    return {
        "remove": {
            "path": path,
            "deletionTimestamp": _now_ms(),
            "dataChange": data_change,
            "extendedFileMetadata": False,
            "size": size,
        }
    }


def data_file(lake: Path, path: Path) -> DataFile:
    """A Parquet file Distill wrote into the table folder, described from its footer."""
    return DataFile(path.relative_to(lake).as_posix(), path.stat().st_size, file_facts(path))


def file_facts(path: Path) -> FileFacts:
    """The facts of a lake file: the batches, source and generation of its rows (from its footer when each column
    holds one value, else from the columns themselves), its rows, and the lake columns it lacks."""
    meta = pq.read_metadata(path)
    names = meta.schema.to_arrow_schema().names
    missing = [name for name in lake_schema().names if name not in names]
    names = meta.schema.names
    single: dict[str, object] = {name: None for name in (col.SOURCE, col.GENERATION) if name not in names}
    for name in (col.BATCH_ID, col.SOURCE, col.GENERATION):
        if name not in names:  # a partition column another Delta writer left out of the file: in the log only
            continue
        index = names.index(name)
        stats = [meta.row_group(g).column(index).statistics for g in range(meta.num_row_groups)]
        values = {(s.min, s.max) for s in stats if s is not None and s.has_min_max}
        nulls = sum(s.null_count for s in stats if s is not None and s.has_null_count)
        if len(values) == 1 and len(stats) == meta.num_row_groups and all(s is not None for s in stats):
            low, high = next(iter(values))
            if low == high and nulls == 0:
                single[name] = low
        elif not values and meta.num_row_groups and nulls == meta.num_rows:
            single[name] = None
    if len(single) < 3:
        wanted = [n for n in (col.BATCH_ID, col.SOURCE, col.GENERATION) if n not in single and n in names]
        table = pq.read_table(path, columns=wanted)
        for name in table.column_names:
            values = table[name].unique().to_pylist()
            single[name] = sorted(values) if name == col.BATCH_ID else (values[0] if len(values) == 1 else None)
    batches = single.get(col.BATCH_ID, [])
    return FileFacts(
        batches=sorted(batches) if isinstance(batches, list) else [str(batches)],
        source=single[col.SOURCE],  # type: ignore[arg-type]
        generation=single[col.GENERATION],  # type: ignore[arg-type]
        rows=meta.num_rows,
        missing=missing,
    )


def _add(lake: Path, file: DataFile, data_change: bool = True) -> Any:
    from deltalake.transaction import AddAction

    action = add_action(lake, file, data_change)["add"]
    return AddAction(
        action["path"],
        action["size"],
        action["partitionValues"],
        action["modificationTime"],
        data_change,
        action["stats"],
    )


def _partition_values(facts: FileFacts) -> dict[str, str | None]:
    return {
        col.SOURCE: facts.source,
        col.GENERATION: None if facts.generation is None else str(facts.generation),
    }


def file_stats(path: Path) -> dict[str, Any]:
    """Delta statistics of a Parquet file from its footer: rows, and per top-level scalar column with statistics
    in every row group its minimum, maximum and null count (what Delta readers skip files by)."""
    meta = pq.read_metadata(path)
    stats: dict[str, Any] = {"numRecords": meta.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
    schema = meta.schema.to_arrow_schema()
    for index in range(meta.num_columns):
        column = meta.row_group(0).column(index) if meta.num_row_groups else None
        name = column.path_in_schema if column is not None else ""
        if column is None or "." in name or pa.types.is_nested(schema.field(name).type):
            continue
        groups = [meta.row_group(g).column(index).statistics for g in range(meta.num_row_groups)]
        if any(s is None or not s.has_null_count for s in groups):
            continue
        stats["nullCount"][name] = sum(s.null_count for s in groups)
        bounded = [s for s in groups if s.has_min_max]
        if bounded and len(bounded) + sum(s.null_count == s.num_values for s in groups) >= len(groups):
            stats["minValues"][name] = _jsonable(min(s.min for s in bounded))
            stats["maxValues"][name] = _jsonable(max(s.max for s in bounded))
    return stats


def _stats_columns(schema: pa.Schema) -> list[str]:
    """The columns Distill writes statistics for (top-level scalars; Delta's default of the first 32 leaf columns
    would stop inside ``players`` and miss ``batch_id``)."""
    return [f.name for f in schema if not pa.types.is_nested(f.type)]


def _jsonable(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _delta_schema(schema: pa.Schema) -> Any:
    from deltalake import Schema

    return Schema.from_arrow(schema)


def _custom(info: CommitInfo, files: Sequence[DataFile] = ()) -> dict[str, Any]:
    """The commit's custom metadata: Distill's record, with the facts of the files it adds."""
    if files:
        info = info.model_copy(update={"files": {**info.files, **{f.path: f.facts for f in files}}})
    return {COMMIT_KEY: info.model_dump(mode="json")}


def _now_ms() -> int:
    return int(dt.datetime.now(dt.UTC).timestamp() * 1000)


def _first_line(error: Exception) -> str:
    """An error's first line (delta-rs appends a Rust backtrace to some)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
