"""Typed configs (build, train, loop...) from YAML with command-line overrides, validated once, up front."""

from __future__ import annotations

import inspect
import re
import textwrap
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo

from toolkit.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def load_config(model: type[M], path: Path | None = None, overrides: dict[str, Any] | None = None) -> M:
    """``model`` from the YAML mapping at ``path`` (if any), then ``overrides`` (flags; None values are ignored).

    Nested fields are overridden with dotted keys (``{"export.only_wins": False}``). A model with a
    ``format_version`` field (:class:`toolkit.loop.config.LoopConfig`) reads files of its format: the file's
    ``format_version`` (absent: the model's) is checked and the file migrated first (:func:`file_format`).

    Raises:
        ConfigError: the file is unreadable, of a format version this Distill does not read, or a field is
            invalid; every problem is listed, each naming its field.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"cannot read config {path}: {error}", hint="pass a YAML mapping with --config") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config {path} is not a mapping", hint="write one `field: value` per line")
        data = file_format(model, loaded or {}, path)
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        *parents, leaf = key.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    try:
        return model.model_validate(data)
    except ValidationError as error:
        flags = {key for key in (overrides or {}) if "." not in key}  # fields the command offers as flags
        missing = [e["loc"][0] for e in error.errors() if e["type"] == "missing" and len(e["loc"]) == 1]
        if missing and all(name in flags for name in missing) and len(missing) == len(error.errors()):
            asked = ", ".join(f"--{str(name).replace('_', '-')}" for name in missing)
            raise ConfigError(
                f"{asked} {'is' if len(missing) == 1 else 'are'} required",
                hint=f"give {asked}, or {', '.join(f'`{name}:`' for name in missing)} in the file given with --config",
            ) from None
        raise ConfigError(
            f"invalid {model.__name__}: {validation_message(error)}",
            hint="fix the field in the YAML file or the matching --flag",
        ) from None


def file_format(model: type[BaseModel], data: dict[str, Any], path: Path) -> dict[str, Any]:
    """A config file's fields as ``model``'s format writes them today: those of a model with a ``format_version``
    field (its default: the format this Distill writes) migrated from an older format by the model's
    ``FORMAT_UPGRADES`` (a mapping: older version -> function of its fields); a file without a version is of the
    current format (a file a user wrote by hand names only the fields it changes).

    Raises:
        ConfigError: the file is of a format version this Distill does not read (a newer one's), or its
            ``format_version`` is not an integer.
    """
    field = model.model_fields.get("format_version")
    if field is None:
        return data
    from toolkit.storage import migrated

    return migrated(
        data,
        field.default,
        where=str(path),
        what=re.sub(r"(?<!^)(?=[A-Z])", " ", model.__name__).lower(),
        error=ConfigError,
        hint="without its format_version it is read as this Distill's format, if its fields are this Distill's",
        upgrades=getattr(model, "FORMAT_UPGRADES", None),
        unversioned=field.default,
    )


def optional_field(model: type[BaseModel], name: str) -> Any:
    """``model``'s field ``name`` as an optional type for another model (a request, a form) that leaves it to
    ``model``'s default when not given: the same type, bounds and description, default None."""
    field = model.model_fields[name]
    return typing.Annotated[field.annotation | None, Field(description=field.description), *field.metadata]


def field_bounds(field: FieldInfo) -> tuple[Any, Any]:
    """A field's inclusive bounds (``ge``, ``le``; None where it has none); a list field's are its items'
    (``list[Annotated[int, Field(ge=0)]] | None``)."""
    from annotated_types import Ge, Le

    found = list(field.metadata)
    for arg in (field.annotation, *typing.get_args(field.annotation)):
        for item in typing.get_args(arg) if typing.get_origin(arg) is list else ():
            for meta in getattr(item, "__metadata__", ()):
                found.extend(getattr(meta, "metadata", [meta]))
    low = next((m.ge for m in found if isinstance(m, Ge)), None)
    high = next((m.le for m in found if isinstance(m, Le)), None)
    return low, high


def validation_message(error: ValidationError, *, as_flags: bool = False) -> str:
    """Every problem of a Pydantic validation error, each naming its field (``a.b: msg``, or ``--a-b: msg``)."""

    def where(loc: tuple[int | str, ...]) -> str:
        if as_flags and loc:
            return "--" + "-".join(map(str, loc)).replace("_", "-")
        return ".".join(map(str, loc)) or "(config)"

    return "; ".join(f"{where(e['loc'])}: {e['msg']}" for e in error.errors())


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> its documentation (for help texts and the default YAML)."""
    return {name: field.description or "" for name, field in model.model_fields.items()}


COMMENT_WIDTH = 100


def default_yaml(model: type[BaseModel], header: str = "") -> str:
    """The default ``model`` as a YAML file to edit: every field at its default value under its documentation as
    comments (the field's description, or a section's class docstring; the choices of a ``Literal``), nested
    sections indented under their name. ``yaml.safe_load`` of the text validates to ``model()``.

    Args:
        model: a config model whose every field has a default.
        header: comment lines to open the file with.
    """
    lines = _comment(header, 0) if header else []
    return "\n".join(lines + _section(model(), 0)) + "\n"


def _section(value: BaseModel, indent: int) -> list[str]:
    lines: list[str] = []
    dumped = value.model_dump(mode="json")
    for name, field in type(value).model_fields.items():
        current = getattr(value, name)
        if isinstance(current, BaseModel):
            lines += ["", *_comment(_field_doc(field, type(current)), indent), f"{' ' * indent}{name}:"]
            lines += _section(current, indent + 2)
            continue
        if indent == 0:
            lines.append("")
        lines += _comment(_field_doc(field, None), indent)
        # collections of scalars in flow style ([a, b]), everything else in block style
        shown = dumped.get(name, current)  # a field kept out of dumps (a format_version) is written all the same
        flow = None if isinstance(shown, list | dict) else False
        text = yaml.safe_dump({name: shown}, default_flow_style=flow, sort_keys=False, width=10**6)
        lines += [" " * indent + line for line in text.rstrip("\n").split("\n")]
    return lines


def _field_doc(field: FieldInfo, section: type[BaseModel] | None) -> str:
    """A field's description, else its section's docstring; and the choices of a Literal field."""
    doc = field.description or (inspect.cleandoc(section.__doc__ or "") if section is not None else "")
    choices = _choices(field.annotation)
    return doc + (f" One of: {', '.join(map(str, choices))}." if choices else "")


def _choices(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)
    return ()


def _comment(text: str, indent: int) -> list[str]:
    pad = " " * indent + "# "
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        wrapped = textwrap.wrap(" ".join(paragraph.split()), COMMENT_WIDTH - len(pad), break_on_hyphens=False)
        lines += ([""] if lines and wrapped else []) + wrapped
    return [pad + line if line else pad.rstrip() for line in lines]


def map_paths(config: M, change: Callable[[str, Path], Path]) -> M:
    """``config`` with every path it holds replaced by ``change(where, path)``: in nested models, lists, tuples
    and dict values too, ``where`` naming the field as a validation error does (``bootstrap.logs.0``).

    The paths are found by walking the values, not a list of fields, so a path field added later is covered.
    """
    return _map_paths(config, change, ())


def _map_paths(value: Any, change: Callable[[str, Path], Path], where: tuple[str | int, ...]) -> Any:
    if isinstance(value, Path):
        return change(".".join(map(str, where)), value)
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return value.model_copy(update={k: _map_paths(getattr(value, k), change, (*where, k)) for k in fields})
    if isinstance(value, list | tuple):
        return type(value)(_map_paths(v, change, (*where, i)) for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: _map_paths(v, change, (*where, k)) for k, v in value.items()}
    return value
