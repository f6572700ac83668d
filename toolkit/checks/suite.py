"""Expectation suites as data: JSON files. The default ones ship with the package (``toolkit/checks/suites/``,
shown in the top-level ``checks/`` folder as links); a user's own suites go anywhere (``--suite FILE``).

A suite names its target (``lake`` or ``dataset``) and lists expectations.
Each expectation is either a Great Expectations 1.x column-map expectation
(its snake-case type, e.g. ``expect_column_values_to_be_between``, run on
pandas chunks of just the columns it needs) or a native check of Distill
(a set-level invariant run in DuckDB or Arrow, e.g. ``decision_key_unique``;
see :mod:`toolkit.checks.native`). Every expectation carries a severity:
``blocking`` (the gate fails) or ``warning`` (reported only).

Columns are named as in the target's schema; nested fields by a dotted path
(``action.macro``) and fields of the per-seat list with ``players[].life``.
A suite is validated whole when it is loaded, and every problem is reported
at once with the file it comes from.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Final, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkit.checks.spec import LIST_MARK, ExpectationSpec
from toolkit.config import validation_message
from toolkit.datasets.dataset import SCHEMA as DATASET_SCHEMA
from toolkit.errors import CheckError
from toolkit.schema.arrow import lake_schema

Target = Literal["lake", "dataset"]
SUITES_DIR: Final = Path(str(files("toolkit.checks").joinpath("suites")))  # package data: found by any install
DEFAULT_SUITES: Final[dict[str, str]] = {"lake": "lake.json", "dataset": "dataset.json"}


class Suite(BaseModel):
    """A whole suite file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: Literal[1]  # toolkit.layout.SUITE_FORMAT_VERSION
    name: str
    target: Target
    description: str = ""
    expectations: list[ExpectationSpec]
    path: str = Field("", description="Where the suite was read from (filled by load_suite).")
    sha256: str = Field("", description="sha256 of the suite file (filled by load_suite).")

    def gx_specs(self) -> list[ExpectationSpec]:
        return [e for e in self.expectations if e.is_gx]

    def native_specs(self) -> list[ExpectationSpec]:
        return [e for e in self.expectations if not e.is_gx]


def default_suite_path(target: str) -> Path:
    """The default suite of ``target``, shipped with the package."""
    return SUITES_DIR / DEFAULT_SUITES[target]


def load_suite(path: Path, target: str) -> Suite:
    """Read and validate a suite file for ``target``.

    Raises:
        CheckError: unreadable file, malformed suite, wrong target, unknown
            expectation types or columns (all problems listed at once).
    """
    try:
        data = path.read_bytes()
        raw = json.loads(data)
    except FileNotFoundError:
        raise CheckError(
            f"no suite file at {path}",
            hint=f"pass --suite FILE (the default: {SUITES_DIR / DEFAULT_SUITES.get(target, '')})",
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckError(f"{path}: unreadable suite: {exc}", hint="fix the JSON of the suite") from None
    try:
        suite = Suite.model_validate({**raw, "path": str(path), "sha256": hashlib.sha256(data).hexdigest()})
    except ValidationError as exc:
        raise CheckError(
            f"{path}: invalid suite: {validation_message(exc)}", hint="see checks/README.md for the suite format"
        ) from None
    problems = suite_problems(suite, target)
    if problems:
        raise CheckError(f"{path}: " + "; ".join(problems), hint="see checks/README.md for the suite format")
    return suite


def suite_problems(suite: Suite, target: str) -> list[str]:
    """Every problem of ``suite`` as a target-``target`` suite; empty when it is sound."""
    from toolkit.checks.native import NATIVE_CHECKS

    problems = []
    if suite.target != target:
        problems.append(f"suite targets {suite.target!r}, not {target!r}")
    seen: set[str] = set()
    for spec in suite.expectations:
        if spec.id in seen:
            problems.append(f"{spec.id}: duplicate id")
        seen.add(spec.id)
        if spec.is_gx:
            problems.extend(f"{spec.id}: {p}" for p in _gx_problems(spec))
        elif spec.type not in NATIVE_CHECKS:
            problems.append(
                f"{spec.id}: unknown type {spec.type!r} (native checks: {', '.join(sorted(NATIVE_CHECKS))})"
            )
        elif target not in NATIVE_CHECKS[spec.type].targets:
            problems.append(f"{spec.id}: {spec.type} does not apply to a {target}")
        for column in spec.columns:
            if not column_exists(target, column):
                problems.append(f"{spec.id}: no column {column!r} in the {target} schema")
    return problems


def _gx_problems(spec: ExpectationSpec) -> list[str]:
    """GX types must exist and be row-level (map) expectations, so chunked results add up exactly."""
    from toolkit.checks.gx import gx_expectation_class, is_map_expectation

    cls = gx_expectation_class(spec.type)
    if cls is None:
        return [f"unknown Great Expectations type {spec.type!r}"]
    if not is_map_expectation(cls):
        return [f"{spec.type} is not a row-level (map) expectation; aggregate checks belong in a native check"]
    if not spec.columns:
        return ["names no column (kwargs.column, or column_A and column_B)"]
    return []


@cache
def _schema(target: str) -> pa.Schema:
    return lake_schema() if target == "lake" else DATASET_SCHEMA


def column_exists(target: str, column: str) -> bool:
    """Whether a (dotted or ``players[].x``) column path exists in the target's schema."""
    schema = _schema(target)
    head, _, rest = column.replace(LIST_MARK, ".").partition(".")
    if head not in schema.names:
        return False
    kind = schema.field(head).type
    for part in rest.split(".") if rest else []:
        if pa.types.is_list(kind):
            kind = kind.value_type
        if not pa.types.is_struct(kind) or kind.get_field_index(part) < 0:
            return False
        kind = kind.field(part).type
    return True
