"""Derive the Arrow schema and the per-field constraints from the Pydantic models.

The models stay the single source of truth: the lake's Arrow schema, the
explicit schema of the fast JSON reader and the vectorised range/enum checks
are all read off the model fields here, never written by hand.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types as at
import pyarrow as pa
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from toolkit.schema.columns import LINEAGE
from toolkit.schema.models import DecisionSnapshot

_SCALARS: dict[type, pa.DataType] = {int: pa.int32(), float: pa.float64(), bool: pa.bool_(), str: pa.string()}


@dataclass(frozen=True)
class FieldRule:
    """The constraints of one leaf field, at a dotted path (``players[].life``)."""

    path: str
    kind: type
    nullable: bool
    ge: float | None = None
    le: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    allowed: tuple[Any, ...] | None = None
    list_min: int | None = None
    list_max: int | None = None
    children: tuple[FieldRule, ...] = field(default=())


def _unwrap(annotation: Any) -> tuple[Any, bool, list[Any]]:
    """Strip Optional and Annotated: (inner type, nullable, extra metadata)."""
    nullable = False
    metadata: list[Any] = []
    while True:
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = get_args(annotation)
            for item in extra:
                metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            nullable = nullable or len(args) < len(get_args(annotation))
            (annotation,) = args
        else:
            return annotation, nullable, metadata


def _apply_metadata(rule: dict[str, Any], metadata: list[Any]) -> None:
    for item in metadata:
        if isinstance(item, at.Ge):
            rule["ge"] = item.ge
        elif isinstance(item, at.Le):
            rule["le"] = item.le
        elif isinstance(item, at.MinLen):
            rule["min_length"] = item.min_length
        elif isinstance(item, at.MaxLen):
            rule["max_length"] = item.max_length
        elif getattr(item, "pattern", None) is not None:
            rule["pattern"] = item.pattern


def _rule_for(path: str, annotation: Any, nullable: bool, metadata: list[Any]) -> FieldRule:
    inner, inner_nullable, inner_meta = _unwrap(annotation)
    nullable = nullable or inner_nullable
    metadata = [*inner_meta, *metadata]
    origin = get_origin(inner)
    if origin is list:
        (item,) = get_args(inner)
        list_bounds: dict[str, Any] = {}
        _apply_metadata(list_bounds, metadata)
        child = _rule_for(path + "[]", item, False, [])
        return FieldRule(
            path,
            list,
            nullable,
            list_min=list_bounds.get("min_length"),
            list_max=list_bounds.get("max_length"),
            children=(child,),
        )
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return FieldRule(path, dict, nullable, children=model_rules(inner, prefix=path + "."))
    rule: dict[str, Any] = {}
    _apply_metadata(rule, metadata)
    if origin is Literal:
        allowed = get_args(inner)
        return FieldRule(path, type(allowed[0]), nullable, allowed=allowed, **rule)
    if inner not in _SCALARS:
        raise TypeError(f"{path}: no Arrow mapping for {inner!r}")
    return FieldRule(path, inner, nullable, **rule)


def model_rules(model: type[BaseModel], prefix: str = "") -> tuple[FieldRule, ...]:
    """One :class:`FieldRule` per field of ``model``, nested fields as children."""
    rules = []
    for name, info in model.model_fields.items():
        nullable = not info.is_required()
        rules.append(_rule_for(prefix + name, info.annotation, nullable, list(info.metadata)))
    return tuple(rules)


def _arrow_type(rule: FieldRule) -> pa.DataType:
    if rule.kind is list:
        return pa.list_(_arrow_type(rule.children[0]))
    if rule.kind is dict:
        return pa.struct([_arrow_field(child) for child in rule.children])
    return _SCALARS[rule.kind]


def _arrow_field(rule: FieldRule) -> pa.Field:
    name = rule.path.rsplit(".", 1)[-1].removesuffix("[]")
    return pa.field(name, _arrow_type(rule), nullable=rule.nullable)


@cache
def snapshot_rules() -> tuple[FieldRule, ...]:
    """The field rules of :class:`DecisionSnapshot`."""
    return model_rules(DecisionSnapshot)


@cache
def snapshot_schema() -> pa.Schema:
    """Arrow schema of a canonical record as written in JSON (no lineage)."""
    return pa.schema([_arrow_field(rule) for rule in snapshot_rules()])


@cache
def lake_schema() -> pa.Schema:
    """Arrow schema of a lake row: the canonical record plus lineage columns."""
    lineage = [
        pa.field(LINEAGE[0], pa.string(), nullable=False),
        pa.field(LINEAGE[1], pa.string(), nullable=False),
        pa.field(LINEAGE[2], pa.int64(), nullable=False),
        pa.field(LINEAGE[3], pa.string(), nullable=False),
    ]
    return pa.schema([*snapshot_schema(), *lineage])
