"""``validate_paths``: check files against the contract without writing anything."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, computed_field, model_serializer

from toolkit.errors import FileReadError
from toolkit.ingest.config import ReadOptions
from toolkit.ingest.dedup import KeyLog, find_duplicates
from toolkit.ingest.inputs import Input, SkippedFile, find_inputs, opened_inputs
from toolkit.ingest.parts import FileReport
from toolkit.ingest.rowpath import Problem
from toolkit.ingest.validate import validate_file
from toolkit.progress import Progress, ProgressFn


class LineProblem(BaseModel):
    """One problem, located: ``file:line:field: reason``."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    field: str
    code: str
    reason: str

    @classmethod
    def of(cls, file: str, line: int, problem: Problem) -> LineProblem:
        return cls(file=file, line=line, field=problem.field, code=problem.code, reason=problem.message)

    def render(self) -> str:
        return f"{self.file}:{self.line}:{self.field or '-'}: {self.reason}"


class ValidateResult(BaseModel):
    """Per-file counts and every problem found, in file and line order; folder entries not read (``skipped``:
    not regular files)."""

    reports: list[FileReport] = Field(default_factory=list)
    problems: list[LineProblem] = Field(default_factory=list)
    skipped: list[SkippedFile] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return not self.problems

    @model_serializer(mode="wrap")
    def _ok_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        body = handler(self)  # JSON: {"ok", "files" (the reports), "problems", "skipped"}
        return {"ok": body.pop("ok"), "files": body.pop("reports"), **body}


def validate_paths(
    paths: list[Path], options: ReadOptions | None = None, progress: ProgressFn | None = None
) -> ValidateResult:
    """Validate every log file under ``paths``: contract, dialects, duplicates.

    An empty file (no record at all) is a problem at line 0. Duplicates are
    judged across all the files given, first occurrence winning. Standard
    input (``-``) is read once into a temporary file.

    Raises:
        UsageError: a path is missing or not a regular file or folder, a folder holds no log file, or
            standard input is a terminal or too long.
    """
    options = options or ReadOptions()
    found = find_inputs(paths)
    result = ValidateResult(skipped=found.skipped)
    with (
        tempfile.TemporaryDirectory(prefix="distill-validate-") as scratch,
        opened_inputs(found, Path(scratch) / "spool", options.max_stdin_bytes) as inputs,
    ):
        keys = KeyLog(Path(scratch) / "keys.parquet")
        for ordinal, source in enumerate(inputs):
            name = source.name
            report = FileReport(path=name)
            try:
                _validate_file(source, ordinal, options, report, keys, result, progress)
            except FileReadError as error:
                report.reasons["unreadable_file"] += 1
                result.problems.append(
                    LineProblem(file=name, line=0, field="", code="unreadable_file", reason=error.reason)
                )
                result.reports.append(report)
                continue
            if report.lines == report.blank:
                report.reasons["empty_file"] += 1
                result.problems.append(
                    LineProblem(file=name, line=0, field="", code="empty_file", reason="file holds no record")
                )
            result.reports.append(report)
        keys.close()
        _add_duplicates(keys, Path(scratch), result)
    result.problems.sort(key=lambda p: (p.file, p.line))
    return result


def _validate_file(
    source: Input,
    ordinal: int,
    options: ReadOptions,
    report: FileReport,
    keys: KeyLog,
    result: ValidateResult,
    progress: ProgressFn | None,
) -> None:
    for part in validate_file(source.path, options, report, source.name):
        for reject in part.rejects:
            result.problems.extend(LineProblem.of(reject.file, reject.line, p) for p in reject.problems)
        keys.add(part.table, part.lines, source.name, ordinal)
        if progress is not None:
            progress(Progress(report.valid + report.invalid, None, "rows", source.name))


def _add_duplicates(keys: KeyLog, scratch: Path, result: ValidateResult) -> None:
    with duckdb.connect(config={"temp_directory": str(scratch / "spill")}) as con:
        duplicates = find_duplicates(con, keys.files)
    by_file = {r.path: r for r in result.reports}
    for duplicate in duplicates:
        problem = duplicate.problem()
        by_file[duplicate.file].demote(problem)
        result.problems.append(LineProblem.of(duplicate.file, duplicate.line, problem))
