"""The per-row path: one line at a time, every dialect, every error worded.

Used for lines the fast path could not pass and for whole files in a
non-canonical dialect. The Pydantic models judge; this module only turns
their verdicts (and JSON, UTF-8 and dialect failures) into :class:`Problem`s
that name the field and the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

import orjson
from pydantic import ValidationError

from toolkit.dialects import FileAdapter
from toolkit.errors import DialectError
from toolkit.jsontext import MAX_NESTING, too_deep
from toolkit.schema.models import DecisionSnapshot

_NON_FINITE = re.compile(rb"(?<![\"\w])-?(NaN|Infinity)(?![\"\w])")
# Problems kept of one line; the others are counted in a last one, coded MORE_PROBLEMS. (A 1 MB line of
# 100k unknown keys had 100k problems: a 4 MB reason.)
MAX_PROBLEMS: Final = 16
MORE_PROBLEMS: Final = "more_problems"
# Characters kept of a problem's field and message: a key (an unknown field's name) can be megabytes long.
MAX_FIELD_CHARS: Final = 200
MAX_MESSAGE_CHARS: Final = 1000


@dataclass(frozen=True)
class Problem:
    """One reason a line was rejected: ``field`` is a dotted path ('' for the whole line)."""

    field: str
    code: str
    message: str

    def render(self) -> str:
        return f"{self.field or '-'}: {self.message}"


def bounded(problems: list[Problem]) -> list[Problem]:
    """``problems`` cut to what a reject keeps: at most :data:`MAX_PROBLEMS` (plus one counting the others),
    each field and message cut to a bounded length."""
    kept = [
        Problem(_cut(p.field, MAX_FIELD_CHARS), p.code, _cut(p.message, MAX_MESSAGE_CHARS))
        for p in problems[:MAX_PROBLEMS]
    ]
    if len(problems) > MAX_PROBLEMS:
        kept.append(Problem("", MORE_PROBLEMS, f"{len(problems) - MAX_PROBLEMS:,} more problems on this line"))
    return kept


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _json_problem(error: orjson.JSONDecodeError, text: bytes, at_open_end: bool) -> Problem:
    if _NON_FINITE.search(text):
        return Problem("", "invalid_json", "NaN and Infinity are not valid JSON numbers")
    message = f"invalid JSON: {error}"
    if at_open_end:
        message += " (the file's last line has no newline: the file looks truncated)"
    return Problem("", "invalid_json", message)


def parse_line(text: bytes, *, at_open_end: bool = False) -> tuple[Any, Problem | None]:
    """Decode one cleaned line (no terminator, no BOM) into a Python object.

    Refused before any parser sees it: a line nested deeper than
    :data:`~toolkit.jsontext.MAX_NESTING`. Refused after: an object
    holding a key twice (JSON parsers keep the last value; such a record is
    ambiguous, so it is rejected naming the key).
    """
    depth = too_deep(text)
    if depth is not None:
        return None, Problem("", "too_deeply_nested", f"values nested {depth} levels deep; the limit is {MAX_NESTING}")
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, Problem("", "invalid_utf8", f"invalid UTF-8 at byte {error.start}: {error.reason}")
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        return None, _json_problem(error, text, at_open_end)
    repeated = repeated_key(text)
    if repeated is not None:
        return None, Problem(
            repeated, "duplicate_key", f"key {repeated!r} appears twice in one object: the record is ambiguous"
        )
    return value, None


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> None:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _RepeatedKey(key)
        seen.add(key)


def repeated_key(text: bytes) -> str | None:
    """The first key found twice in one object of ``text`` (valid JSON), or None."""
    try:
        json.loads(text, object_pairs_hook=_unique_pairs)
    except _RepeatedKey as found:
        return found.key
    return None


def problems_from(error: ValidationError) -> list[Problem]:
    """Word a Pydantic error as one :class:`Problem` per failing field or rule."""
    problems = []
    for detail in error.errors(include_url=False, include_input=False):
        field = ".".join(str(part) for part in detail["loc"])
        message = detail["msg"]
        if detail["type"] == "value_error" and not field:
            # Cross-field rules: one "field: reason" per line (see models.py).
            for line in message.removeprefix("Value error, ").splitlines():
                rule_field, _, reason = line.partition(": ")
                problems.append(Problem(rule_field, "inconsistent", reason))  # fields that contradict each other
            continue
        problems.append(Problem(field, detail["type"], message))
    return problems


def validate_canonical(record: dict[str, Any]) -> tuple[dict[str, Any] | None, list[Problem]]:
    """Validate a canonical dict; returns the normalised record or the problems."""
    try:
        model = DecisionSnapshot.model_validate(record)
    except ValidationError as error:
        return None, problems_from(error)
    return model.model_dump(), []


@dataclass(frozen=True)
class RowOutcome:
    """The verdict on one line: a normalised canonical record, or problems."""

    line: int
    record: dict[str, Any] | None
    problems: list[Problem]

    @classmethod
    def rejected(cls, line: int, problems: list[Problem]) -> RowOutcome:
        """A rejected line's verdict: its problems, :func:`bounded`."""
        return cls(line, None, bounded(problems))


class RowValidator:
    """Streams one file's lines through dialect adaptation and Pydantic validation."""

    def __init__(self, *, dialect: str | None = None, source: str | None = None) -> None:
        self.adapter = FileAdapter(dialect=dialect, source=source)

    @property
    def dialects_seen(self) -> dict[str, int]:
        return dict(self.adapter.dialects_seen)

    def feed(self, line: int, text: bytes, *, at_open_end: bool = False) -> list[RowOutcome]:
        """Validate one cleaned line; returns the verdicts now complete (possibly
        for earlier lines the dialect adapter held back)."""
        value, problem = parse_line(text, at_open_end=at_open_end)
        if problem is not None:
            return [RowOutcome.rejected(line, [problem])]
        if not isinstance(value, dict):
            kind = type(value).__name__ if value is not None else "null"
            return [
                RowOutcome.rejected(line, [Problem("", "not_an_object", f"a record must be a JSON object, got {kind}")])
            ]
        try:
            emitted = self.adapter.feed(line, value)
        except DialectError as error:
            code = "dialect" if error.field else "unknown_dialect"
            return [RowOutcome.rejected(line, [Problem(error.field, code, error.message)])]
        return self._judge(emitted)

    def finish(self) -> list[RowOutcome]:
        """Verdicts for the rows the adapter still held at end of file."""
        return self._judge(self.adapter.finish())

    @staticmethod
    def _judge(emitted: list[tuple[int, dict[str, Any]]]) -> list[RowOutcome]:
        outcomes = []
        for line, record in emitted:
            normalised, problems = validate_canonical(record)
            outcomes.append(RowOutcome.rejected(line, problems) if problems else RowOutcome(line, normalised, []))
        return outcomes
