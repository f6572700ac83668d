"""``validate_paths``: check files against the contract without writing anything."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from toolkit.errors import FileReadError
from toolkit.ingest.dedup import KeyLog, find_duplicates
from toolkit.ingest.reader import expand_paths
from toolkit.ingest.validate import FileReport, ReadOptions, validate_file


@dataclass(frozen=True)
class LineProblem:
    """One problem, located: ``file:line:field: reason``."""

    file: str
    line: int
    field: str
    code: str
    message: str

    def render(self) -> str:
        return f"{self.file}:{self.line}:{self.field or '-'}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "field": self.field, "code": self.code, "reason": self.message}


@dataclass
class ValidateResult:
    """Per-file counts and every problem found, in file and line order."""

    reports: list[FileReport] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": [r.as_dict() for r in self.reports],
            "problems": [p.as_dict() for p in self.problems],
        }


def validate_paths(
    paths: list[Path], options: ReadOptions | None = None, progress: Callable[[str, int], None] | None = None
) -> ValidateResult:
    """Validate every log file under ``paths``: contract, dialects, duplicates.

    An empty file (no record at all) is a problem at line 0. Duplicates are
    judged across all the files given, first occurrence winning.

    Raises:
        UsageError: a path is missing or a folder holds no log file.
    """
    options = options or ReadOptions()
    result = ValidateResult()
    files = expand_paths(paths)
    with tempfile.TemporaryDirectory(prefix="distill-validate-") as scratch:
        keys = KeyLog(Path(scratch) / "keys.parquet")
        for ordinal, path in enumerate(files):
            report = FileReport(str(path))
            try:
                _validate_file(path, ordinal, options, report, keys, result, progress)
            except FileReadError as error:
                report.reasons["unreadable_file"] += 1
                result.problems.append(LineProblem(str(path), 0, "", "unreadable_file", error.reason))
                result.reports.append(report)
                continue
            if report.lines == report.blank:
                report.reasons["empty_file"] += 1
                result.problems.append(LineProblem(str(path), 0, "", "empty_file", "file holds no record"))
            result.reports.append(report)
        keys.close()
        _add_duplicates(keys, Path(scratch), result)
    result.problems.sort(key=lambda p: (p.file, p.line))
    return result


def _validate_file(path: Path, ordinal: int, options: ReadOptions, report: FileReport, keys: KeyLog,
                   result: ValidateResult, progress: Callable[[str, int], None] | None) -> None:
    for part in validate_file(path, options, report):
        for reject in part.rejects:
            result.problems.extend(LineProblem(reject.file, reject.line, p.field, p.code, p.message) for p in reject.problems)
        keys.add(part.table, part.lines, str(path), ordinal)
        if progress is not None:
            progress(str(path), report.valid + report.invalid)


def _add_duplicates(keys: KeyLog, scratch: Path, result: ValidateResult) -> None:
    with duckdb.connect(config={"temp_directory": str(scratch / "spill")}) as con:
        duplicates = find_duplicates(con, keys.files)
    by_file = {r.path: r for r in result.reports}
    for duplicate in duplicates:
        report = by_file[duplicate.file]
        report.valid -= 1
        report.invalid += 1
        report.reasons["duplicate"] += 1
        result.problems.append(LineProblem(duplicate.file, duplicate.line, "game_id", "duplicate", duplicate.message()))
