"""One root error for Distill, with one subclass per stage.

Each error carries the next action a user can take (``hint``). Library code
raises these; only the CLI turns them into a message and an exit code.
"""

from __future__ import annotations


class DistillError(Exception):
    """Root of every error Distill raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(DistillError):
    """The user asked for something that cannot be done as asked (exit code 2)."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration field is invalid; the message names the field and the fix."""


class SchemaError(DistillError):
    """A record breaks the decision contract; ``field`` names the offending field."""

    def __init__(self, message: str, *, field: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.field = field


class DialectError(SchemaError):
    """A record matches no known dialect, or its dialect cannot be converted."""


class IngestError(DistillError):
    """Ingest could not complete (not raised for bad lines: those are quarantined)."""


class CatalogError(DistillError):
    """The catalog or the lake is missing, locked, or of an unknown format version."""


class LakeLogError(CatalogError):
    """The lake's Delta log cannot be trusted: a commit that is not JSON, a version missing, a file outside the
    table, a feature Distill cannot read. ``version`` and ``file`` name where."""

    def __init__(self, message: str, *, version: int | None, file: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.version, self.file = version, file


class FileReadError(DistillError):
    """A log file cannot be read at all: a compressed stream that is cut short or is not what its name says."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}", hint="re-copy or re-export the file; the other files are unaffected")
        self.path, self.reason = path, reason


class DataRootError(UsageError):
    """The data root cannot be used: it is a file, or cannot be read or written."""


class OutsideRootError(DistillError):
    """A path under the data root leads outside it: a symlink, or a path recorded in one of its files that climbs
    out (``..``) or is absolute. Distill neither reads, writes nor deletes through it."""


class NameRefusedError(UsageError):
    """A name that would become a file or folder under the data root is not a name (a path, a climb, a NUL...)."""


class QueryError(UsageError):
    """A SQL statement was refused or failed."""


class QueryInterrupted(QueryError):
    """A SQL statement was interrupted (Ctrl-C) before it finished (exit code 130, as a shell gives SIGINT)."""

    exit_code = 130


class BuildError(DistillError):
    """A dataset could not be built, or a built dataset is missing, unknown or inconsistent."""


class LeakageError(BuildError):
    """A built dataset's holdout and train splits share a game, or a game sits on the wrong side of the rule."""


class ExportError(DistillError):
    """A built dataset could not be written in another format (missing extra, lineage, or a clash at the target)."""


class GameError(DistillError):
    """The game was asked to do something its rules do not allow."""


class CheckError(DistillError):
    """A quality-gate suite or check request is invalid, so the gate could not run (exit code 2)."""

    exit_code = 2


class GateFailedError(CheckError):
    """A blocking expectation failed: what the gate guards must not go on (``report`` says why; exit code 1)."""

    exit_code = 1

    def __init__(self, message: str, *, report: object = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.report = report


class TrainError(DistillError):
    """Training or evaluation could not run: a missing or incompatible checkpoint, dataset or configuration."""


class JobError(DistillError):
    """A fan-out of game jobs could not complete: a shard failed past its retries, or a back end is unavailable."""


class EngineError(DistillError):
    """An engine process broke the protocol or its deadlines: ``phase`` names the step (start, hello, game,
    shutdown), ``stderr`` holds its last lines."""

    def __init__(self, message: str, *, phase: str, stderr: list[str] | None = None, hint: str | None = None) -> None:
        lines = [line for line in (stderr or []) if line.strip()]
        if lines:
            message += "\n  the engine's last stderr lines:\n" + "\n".join(f"    | {line}" for line in lines[-8:])
        super().__init__(message, hint=hint)
        self.phase, self.stderr = phase, lines


class LabelCheckError(UsageError):
    """``distill check labels`` cannot score a build as asked: too few rows or games for the folds, a single
    label, a teacher of other features (exit code 2, nothing written)."""
