"""Where everything lives under the data root: the on-disk contract.

The data root is ``./datasets`` under the current directory, or the folder
named by ``--home`` or the ``DISTILL_HOME`` environment variable::

    <home>/
      catalog.duckdb                 the index of the lake's versions, batches, files (the DuckDB catalog)
      catalog.read.duckdb            its read snapshot, refreshed by every writer (see toolkit.catalog.snapshot)
      catalog.read.json              the live catalog's stamp when the snapshot was taken
      lake/                          validated decisions: a Delta Lake table (see toolkit.catalog.delta), or the
                                     local copy of a shared lake's (--lake: see toolkit.catalog.remote)
      lake.json                      where a shared lake lives (absent: lake/ is the lake)
        _delta_log/<version>.json    its transaction log: one commit per lake version, the one truth
        source=<s>/generation=<g>/batch-<id>.parquet       an ingested batch's rows (hive folders: the table's
                                                           declared partitions; a null generation's folder is
                                                           generation=__HIVE_DEFAULT_PARTITION__)
        source=<s>/generation=<g>/compacted-<id>.parquet   several batches' rows (distill lake compact)
      quarantine/                    rejected lines, byte for byte, Parquet
        batch=<id>/rejects.parquet
      staging/                       work in progress; never read by queries
        <id>/...                     a batch or a lake change being written (published, or removed by recovery)
      spool/stdin-<pid>-<id>.jsonl   standard input being ingested (distill ingest -), deleted after
      builds/<name>/<fingerprint>/   built datasets: manifest.json, train/ and holdout/
        train/part-<n>.parquet       one row per decision (see toolkit.datasets.dataset)
        label-scores.parquet         every decision scored by `distill check labels` (toolkit.schema.scores)
        label-scores.json            what scored them: config, fingerprint of the table, summary
      builds/<name>/LATEST           the fingerprint of the name's latest build
      builds/.staging/<name>/<id>/   a build being written (published by one rename), or removed (deleted there)
      builds/.locks/<name>.lock      held while <name> is being built, or builds of it removed
      reports/                       gate reports (JSON + HTML)
      runs/<loop>/gen-NNN/           checkpoints, exports, per-step state
      ablations/<name>/              distill ablate: ablation.json and ablation.html, the table of its variants
        variants/<key>/              one variant's student (checkpoint), its evaluations and result.json

Rows keep ``source``, ``generation`` and ``batch_id`` as columns too; the
folders are the table's declared partitions, as Delta readers expect them. Which files are live at a version is
the Delta log's to say (a retired batch's files stay on disk until a vacuum):
read the lake through Distill or a Delta reader, never by listing files.
Paths that Distill records inside the data root are relative to it
(:meth:`Layout.stored`) and become paths only where they are opened
(:meth:`Layout.resolve`), so a root can be moved or copied. A path under the
root is read, written or deleted only once its real location (symlinks
followed) is checked to lie inside it (:meth:`Layout.inside`): what a data
root contains never leads Distill outside it. Every artefact
format carries a version; readers refuse versions they do not know.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolkit.errors import DataRootError, NameRefusedError, OutsideRootError

HOME_ENV: Final = "DISTILL_HOME"
GLOB_CHARACTERS: Final = ("*", "?", "[", "]", "{", "}")  # a data root's path holds none (DuckDB globs its paths)
LAKE_ENV: Final = "DISTILL_LAKE"  # a shared lake's location (toolkit.catalog.remote)
STAGED_FOLDER: Final = "_staged"  # at a shared lake's location: what a game job's worker staged for the driver
DEFAULT_HOME: Final = "datasets"
# Format versions of everything Distill writes; a reader refuses a version it does not know
# (toolkit.storage.read_versioned for the JSON files).
# The lake (3: a Delta table whose commits hold every fact of each version, partitions declared; 2: a Delta table
# indexed from its files; 1: plain Parquet files). The catalog is an index of the lake's log, rebuilt when stale.
LAKE_FORMAT_VERSION: Final = 3
MANIFEST_FORMAT_VERSION: Final = 1  # builds/<name>/<fingerprint>/manifest.json
CARD_FORMAT_VERSION: Final = 1  # a checkpoint's card.json
STATE_FORMAT_VERSION: Final = 3  # runs/<loop>/state.json (3: paths relative to the data root; 2 is read too)
# runs/<loop>/config.json (2: with its format_version; 1: the config alone, as written before 2026-12, read too)
RUN_CONFIG_FORMAT_VERSION: Final = 2
# a line of runs/<loop>/generations.jsonl (2: with its format_version; 1: the record alone, as written before
# 2026-12, read too)
GENERATION_RECORD_FORMAT_VERSION: Final = 2
# an evaluation's file (the loop's gen-NNN/evaluate/<model>-<table>.json, an ablation variant's eval-<table>.json;
# 2: with its format_version; 1: the result alone, as written before 2026-12, read too)
EVALUATION_FORMAT_VERSION: Final = 2
POOL_FORMAT_VERSION: Final = 2  # a rating pool (runs/<loop>/ratings.json)
REPORT_FORMAT_VERSION: Final = 1  # reports/<id>.json, a gate report
ABLATION_FORMAT_VERSION: Final = 1  # ablations/<name>/ablation.json and variants/<key>/result.json
SUITE_FORMAT_VERSION: Final = 1  # an expectation suite (checks/*.json)
LABEL_SCORES_FORMAT_VERSION: Final = 1  # builds/<name>/<fingerprint>/label-scores.json
# staging/<id>/intent.json, a staged change's intent (3: the version under format_version; 2, under format, is read)
INTENT_FORMAT_VERSION: Final = 3
STAMP_FORMAT_VERSION: Final = 1  # catalog.read.json, the catalog snapshot's stamp (one without a version is 1)
LABEL_SCORES_FILE: Final = "label-scores.parquet"
LABEL_SCORES_INFO_FILE: Final = "label-scores.json"
CATALOG_FILE: Final = "catalog.duckdb"
CATALOG_SNAPSHOT_FILE: Final = "catalog.read.duckdb"
NO_GENERATION: Final = "__HIVE_DEFAULT_PARTITION__"  # the hive folder of a null partition value
# The data root's top-level folders: where a path recorded in another (moved) root is re-anchored (Layout.resolve).
ROOT_FOLDERS: Final = ("ablations", "builds", "lake", "quarantine", "reports", "runs", "staging")
QUARANTINE_FILE: Final = "rejects.parquet"  # one file per batch
# Names that become folders under the data root (builds, loop runs): 1-64 characters, lowercase letters, digits,
# '_', '.', '-', starting with a letter or a digit (so never '..', never a path).
NAME_PATTERN: Final = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
# A build's fingerprint (a prefix of a SHA-256 in hex): a folder name under builds/<name>/.
FINGERPRINT_PATTERN: Final = r"^[0-9a-f]{1,64}$"
# A file's name inside a folder Distill recorded it in (a variant's checkpoint, an evaluation file): never a path.
FILE_NAME_PATTERN: Final = r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}$"
NAME_RULE: Final = "1-64 characters: lowercase letters, digits, '_', '.', '-', starting with a letter or a digit"


def checked_name(name: str, what: str) -> str:
    """``name`` when it is a name (:data:`NAME_PATTERN`): what the data root keeps under it, never a path.

    Every name that becomes a file or folder of the data root (a build, a loop run, an ablation, a report) passes
    here before it is joined to a path, whichever command it came from.

    Raises:
        NameRefusedError: naming ``what`` and the rule.
    """
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise NameRefusedError(f"{name!r} is not a {what}", hint=f"a {what} is {NAME_RULE}")
    return name


def checked_fingerprint(fingerprint: str) -> str:
    """``fingerprint`` when it is one (lowercase hex, as builds are named).

    Raises:
        NameRefusedError: it is anything else (a path, a climb).
    """
    if not isinstance(fingerprint, str) or not re.fullmatch(FINGERPRINT_PATTERN, fingerprint):
        raise NameRefusedError(
            f"{fingerprint!r} is not a build fingerprint",
            hint="a fingerprint is lowercase hex (`distill datasets list` shows each build's)",
        )
    return fingerprint


def lies_within(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether ``path``'s real location (every symlink on the way followed, whether it exists or not) lies inside
    ``folder``'s: the one test behind every containment check of the data root and its builds."""
    return Path(os.path.realpath(path)).is_relative_to(Path(os.path.realpath(folder)))


def sql_literal(text: str) -> str:
    """``text`` escaped for a single-quoted SQL string literal (DuckDB reads paths in statements this way)."""
    return text.replace("'", "''")


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The data root: ``home`` if given, else ``$DISTILL_HOME``, else ``./datasets``."""
    chosen = home or os.environ.get(HOME_ENV) or DEFAULT_HOME
    return Path(chosen).expanduser().resolve()


@dataclass(frozen=True)
class Layout:
    """Path templates under one data root, and where its lake lives: ``lake_uri`` (``--lake``, ``$DISTILL_LAKE``)
    names a shared lake's location, whose local copy is ``lake/`` (see :mod:`toolkit.catalog.remote`); None: the
    lake is ``lake/`` itself."""

    home: Path
    lake_uri: str | None = None

    @classmethod
    def at(cls, home: str | os.PathLike[str] | None = None, lake: str | None = None) -> Layout:
        """The data root ``home`` (see :func:`resolve_home`) and its lake: ``lake`` if given, else
        ``$DISTILL_LAKE`` (unset or empty: the data root's own)."""
        return cls(resolve_home(home), lake or os.environ.get(LAKE_ENV) or None)

    def check(self, *, write: bool) -> None:
        """Refuse a data root that is a file, or one this process cannot read (or, to write, create or write).

        Raises:
            DataRootError: naming the folder and why.
        """
        hint = f"point --home (or ${HOME_ENV}) at a folder you can {'write to' if write else 'read'}"
        if any(c in str(self.home) for c in GLOB_CHARACTERS):
            raise DataRootError(
                f"the data root {self.home} has one of {' '.join(GLOB_CHARACTERS)} in its path, which readers of "
                "its files (DuckDB) take as a pattern matching other folders",
                hint="use a folder whose path has none of them",
            )
        if self.home.exists() and not self.home.is_dir():
            raise DataRootError(f"the data root {self.home} is a file, not a folder", hint=hint)
        if write:
            try:
                self.home.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise DataRootError(f"cannot create the data root {self.home}: {error.strerror}", hint=hint) from None
            if not os.access(self.home, os.W_OK | os.X_OK):
                raise DataRootError(f"the data root {self.home} is not writable", hint=hint)
        elif self.home.exists() and not os.access(self.home, os.R_OK | os.X_OK):
            raise DataRootError(f"the data root {self.home} is not readable", hint=hint)

    @property
    def catalog(self) -> Path:
        """The catalog file, checked (with its write-ahead log) not to lead outside the data root."""
        self.inside(self.home / f"{CATALOG_FILE}.wal")
        return self.inside(self.home / CATALOG_FILE)

    @property
    def catalog_snapshot(self) -> Path:
        """The catalog's read snapshot (readers use it while a writer holds the catalog)."""
        self.inside(self.home / f"{CATALOG_SNAPSHOT_FILE}.wal")
        return self.inside(self.home / CATALOG_SNAPSHOT_FILE)

    @property
    def catalog_snapshot_stamp(self) -> Path:
        return self.inside(self.home / "catalog.read.json")

    @property
    def lake(self) -> Path:
        """The lake's table folder (or a shared lake's local copy), checked not to lead outside the data root."""
        return self.inside(self.home / "lake")

    @property
    def quarantine(self) -> Path:
        return self.inside(self.home / "quarantine")

    @property
    def staging(self) -> Path:
        return self.home / "staging"

    @property
    def spool(self) -> Path:
        """Where standard input is kept while it is ingested (outside ``staging/``, whose every entry is a
        change to recover)."""
        return self.inside(self.home / "spool")

    @property
    def builds(self) -> Path:
        return self.home / "builds"

    @property
    def reports(self) -> Path:
        return self.inside(self.home / "reports")

    @property
    def runs(self) -> Path:
        return self.home / "runs"

    @property
    def ablations(self) -> Path:
        return self.home / "ablations"

    def ablation_dir(self, name: str) -> Path:
        """Folder of one ablation (``distill ablate --name``): its table and its variants."""
        return self.inside(self.ablations / checked_name(name, "ablation name"))

    def stored(self, path: str | os.PathLike[str]) -> str:
        """How a path is recorded in the data root's files: relative to the root (POSIX) when it lies inside it,
        absolute otherwise (a user's file elsewhere, kept as lineage)."""
        absolute = Path(os.path.abspath(path))
        try:
            return absolute.relative_to(self.home).as_posix()
        except ValueError:
            return str(absolute)

    def inside(self, path: str | os.PathLike[str]) -> Path:
        """``path``, a file or folder of this data root, once its real location (every symlink on the way followed,
        whether it exists yet or not) is checked to lie inside the root: the one check before Distill reads, writes
        or deletes anything a template of this class, a name or a data root's file led to.

        Raises:
            OutsideRootError: it leads outside (a symlink in the root leading out, a climb, another absolute path),
                naming the path and where it leads.
        """
        path = Path(path)
        if not lies_within(path, self.home):
            real = os.path.realpath(path)
            shown = self.stored(path) if Path(os.path.abspath(path)).is_relative_to(self.home) else str(path)
            raise OutsideRootError(
                f"{shown} leads outside the data root {self.home} (to {real}): Distill does not read, write or "
                "delete through it",
                hint="a data root holds no symlink leading out of it and no file naming a path outside it: remove "
                "the link, or restore the data root from a backup",
            )
        return path

    def within(self, paths: Iterable[Path]) -> list[Path]:
        """Those of ``paths`` (found by listing folders of this data root) whose real location lies inside it: a
        listing never leads a reader out through a symlink."""
        return [path for path in paths if lies_within(path, self.home)]

    def resolve(self, stored: str | os.PathLike[str], *, outside: Iterable[Path] = ()) -> Path:
        """The file a recorded path names (see :meth:`stored`), the one place a recorded path becomes a path, checked
        to lie inside the data root (:meth:`inside`).

        A relative path lies under this data root. An absolute path under this
        root is itself; one that is not (written in another data root that has
        since moved here) names the same place under this root, from its first
        top-level folder (``runs/``, ``builds/``...) on, when that place's
        folder exists here (the file itself may be gone: a loop deletes its own
        logs once ingested). An absolute path outside the root is refused unless
        it lies under one of ``outside``: files and folders its user named (a
        loop's bootstrap logs, its data gate's suite), read, never written or
        deleted.

        Raises:
            OutsideRootError: the path leads anywhere else.
        """
        path = Path(stored)
        if not path.is_absolute():
            return self.inside(self.home / path)
        if path.is_relative_to(self.home):
            return self.inside(path)
        if any(lies_within(path, allowed) for allowed in outside):  # by real location: no climb, no link out
            return path
        for i, part in enumerate(path.parts):
            moved = self.home.joinpath(*path.parts[i:])
            if part in ROOT_FOLDERS and moved.parent.is_dir():
                return self.inside(moved)
        return self.inside(path)

    @staticmethod
    def partition(source: str, generation: int | None) -> Path:
        """Folder of one (source, generation) partition of the table, relative to it (hive style: what polars,
        Spark and Trino expect of the declared partitions)."""
        gen = NO_GENERATION if generation is None else str(generation)
        return Path(f"source={source}") / f"generation={gen}"

    def lake_file(self, source: str, generation: int | None, batch_id: str) -> Path:
        """The Parquet file of one batch's rows of one (source, generation) partition."""
        return self.lake / self.partition(source, generation) / f"batch-{batch_id}.parquet"

    def quarantine_file(self, batch_id: str) -> Path:
        """The Parquet file of one batch's rejected lines."""
        return self.quarantine / f"batch={batch_id}" / QUARANTINE_FILE

    def staging_for(self, batch_id: str) -> Path:
        """A batch being written: a data root of its own (``lake/``, ``quarantine/``), moved into this one."""
        return self.inside(self.staging / batch_id)

    def build_root(self, name: str) -> Path:
        """Folder of the builds of ``name``: one folder per fingerprint and the ``LATEST`` pointer.

        Raises:
            NameRefusedError: ``name`` is not a name (see :func:`checked_name`).
            OutsideRootError: its folder leads outside the data root (a symlink).
        """
        return self.inside(self.builds / checked_name(name, "dataset name"))

    def build_dir(self, name: str, fingerprint: str) -> Path:
        """Folder of one published build.

        Raises:
            NameRefusedError: ``name`` or ``fingerprint`` is not one.
            OutsideRootError: its folder leads outside the data root (a symlink).
        """
        return self.inside(self.build_root(name) / checked_fingerprint(fingerprint))

    @property
    def build_staging(self) -> Path:
        """Work folder of builds in progress, one folder per name (beside builds, so publishing is one rename)."""
        return self.inside(self.builds / ".staging")

    def build_staging_for(self, name: str) -> Path:
        """The work folder of the builds (and removals) of ``name`` in progress: ours while its lock is held."""
        return self.inside(self.build_staging / checked_name(name, "dataset name"))

    @property
    def build_locks(self) -> Path:
        """One lock file per build name, held while that name is being built."""
        return self.inside(self.builds / ".locks")

    def build_lock(self, name: str) -> Path:
        """The lock file of the builds of ``name``."""
        return self.inside(self.build_locks / f"{checked_name(name, 'dataset name')}.lock")

    def label_scores(self, name: str, fingerprint: str) -> Path:
        """The label-scores table of one build (``distill check labels``), beside its splits."""
        return self.inside(self.build_dir(name, fingerprint) / LABEL_SCORES_FILE)

    def label_scores_info(self, name: str, fingerprint: str) -> Path:
        """What made that table (a versioned JSON record)."""
        return self.inside(self.build_dir(name, fingerprint) / LABEL_SCORES_INFO_FILE)

    def latest_pointer(self, name: str) -> Path:
        """File holding the fingerprint of the latest build of ``name``."""
        return self.inside(self.build_root(name) / "LATEST")


def generation_label(generation: int) -> str:
    """``gen-NNN``: a loop generation's folder under its run, and the model version of what it trained."""
    return f"gen-{generation:03d}"
