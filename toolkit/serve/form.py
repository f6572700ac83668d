"""The dashboard's form inputs, from the config fields they set (one definition: type, bounds, default, help).

An input's ``min``/``max`` are its field's bounds, its ``pattern`` the field's (in the browser's syntax), its
placeholder the field's default and its tooltip the field's description: the form refuses in the browser what the
config would refuse on the server, and shows what an empty input means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel

from toolkit.config import field_bounds
from toolkit.loop.config import LoopConfig


@dataclass(frozen=True)
class FormInput:
    """One ``<input>``: the field it sets and its HTML attributes."""

    name: str
    label: str
    attributes: dict[str, str]


def form_input(model: type[BaseModel], name: str, label: str, *, required: bool = False) -> FormInput:
    """The input of ``model``'s field ``name``."""
    field = model.model_fields[name]
    attributes: dict[str, str] = {}
    if field.annotation in (int, float):
        attributes["type"] = "number"
        low, high = field_bounds(field)
        attributes |= {key: str(bound) for key, bound in (("min", low), ("max", high)) if bound is not None}
        if field.annotation is float:
            attributes["step"] = "any"
    pattern = next((m.pattern for m in field.metadata if getattr(m, "pattern", None)), None)
    if pattern:
        attributes["pattern"] = browser_pattern(pattern)
    if required:
        attributes["required"] = "required"
    if not field.is_required() and field.default is not None:
        attributes["placeholder"] = str(field.default)
    if field.description:
        attributes["title"] = field.description
    return FormInput(name, label, attributes)


def browser_pattern(pattern: str) -> str:
    """A Python regex anchored with ``^...$`` as an HTML ``pattern`` (anchored by the browser; compiled with the
    ``v`` flag, under which a literal ``-`` in a class is escaped)."""
    return re.sub(r"(?<!\\)-\]", r"\\-]", pattern.removeprefix("^").removesuffix("$"))


# The start form's inputs beside its YAML config (toolkit.serve.control.StartRequest takes the same fields).
START_INPUTS = (
    form_input(LoopConfig, "name", "name", required=True),
    form_input(LoopConfig, "max_generations", "generations"),
    form_input(LoopConfig, "seed", "seed"),
)
