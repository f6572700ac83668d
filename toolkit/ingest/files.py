"""``validate_paths``: check files against the contract without writing anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from toolkit.ingest.dedup import find_duplicates
from toolkit.ingest.reader import expand_paths
from toolkit.ingest.validate import FileReport, ReadOptions, decision_keys, validate_file
from toolkit.schema import columns as col


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
    keys: list[pa.Table] = []
    for ordinal, path in enumerate(expand_paths(paths)):
        report = FileReport(str(path))
        for part in validate_file(path, options, report):
            for reject in part.rejects:
                result.problems.extend(
                    LineProblem(reject.file, reject.line, p.field, p.code, p.message) for p in reject.problems
                )
            part_keys = decision_keys(part)
            n = part_keys.num_rows
            part_keys = part_keys.append_column(col.SOURCE_FILE, pa.array([str(path)] * n, pa.string()))
            keys.append(part_keys.append_column("ordinal", pa.array([ordinal] * n, pa.int32())))
            if progress is not None:
                progress(str(path), report.valid + report.invalid)
        if report.lines == report.blank:
            report.reasons["empty_file"] += 1
            result.problems.append(LineProblem(str(path), 0, "", "empty_file", "file holds no record"))
        result.reports.append(report)
    if keys:
        _add_duplicates(pa.concat_tables(keys), result)
    result.problems.sort(key=lambda p: (p.file, p.line))
    return result


def _add_duplicates(keys: pa.Table, result: ValidateResult) -> None:
    with duckdb.connect() as con:
        duplicates = find_duplicates(con, keys)
    by_file = {r.path: r for r in result.reports}
    for duplicate in duplicates:
        report = by_file[duplicate.file]
        report.valid -= 1
        report.invalid += 1
        report.reasons["duplicate"] += 1
        result.problems.append(LineProblem(duplicate.file, duplicate.line, "game_id", "duplicate", duplicate.message()))
