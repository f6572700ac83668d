"""The grid: every variant of the base, validated before anything runs.

A field path is checked against the base's model (a section's fields, or
any key of a mapping such as ``data.weights``); each variant's config is
the base's with the new values, validated by the same Pydantic model, and
turned into what it runs: a build config, a student config, the tables and
the turn limit. Every problem of every variant is collected and reported
once, each naming the ``--vary`` to change.
"""

from __future__ import annotations

import copy
import itertools
import types
import typing
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from toolkit.ablate.base import Base, BuildSubject
from toolkit.ablate.config import AblateConfig, Vary
from toolkit.config import validation_message
from toolkit.datasets.config import BuildConfig
from toolkit.errors import ConfigError
from toolkit.loop.config import EvaluationConfig, LoopConfig, StudentConfig

DEFAULT_MAX_ROUNDS = 30


@dataclass(frozen=True)
class Variant:
    """One point of the grid and what it runs."""

    index: int
    settings: dict[str, Any]  # field path -> value, in --vary order
    build: BuildConfig
    student: StudentConfig
    tables: dict[str, tuple[str, ...]]
    max_rounds: int

    @property
    def label(self) -> str:
        return " ".join(f"{k}={setting_text(v)}" for k, v in self.settings.items())


def setting_text(value: Any) -> str:
    """A value as YAML flow text (``0.05``, ``[ppo]``, ``[]``)."""
    return yaml.safe_dump(value, default_flow_style=True, width=1_000).strip().removesuffix("...").strip()


def make_grid(base: Base, config: AblateConfig) -> list[Variant]:
    """Every variant of ``base`` that ``config.vary`` describes, in grid order (the first is the baseline).

    Raises:
        ConfigError: an unknown field, or values no variant config accepts (all of them listed).
    """
    problems = [p for v in config.vary if (p := check_field(base.model, v))]
    if problems:
        raise ConfigError("; ".join(problems), hint="vary a field of the base's config (see distill ablate --help)")
    variants, problems = [], []
    for index, settings in enumerate(_points(config)):
        try:
            variants.append(_variant(base, config, index, settings))
        except ConfigError as error:
            problems.append(error.message)
    if problems:
        raise ConfigError("; ".join(dict.fromkeys(problems)), hint="change the values of the --vary named")
    _check_distinct(variants)
    return variants


def _check_distinct(variants: list[Variant]) -> None:
    """Refuse variants that would run the same thing: a value that changes nothing (e.g. a source the lake does
    not hold, which a loop's build leaves out) would otherwise read as "no effect"."""
    seen: dict[str, Variant] = {}
    for variant in variants:
        what = repr((variant.build, variant.student, sorted(variant.tables.items()), variant.max_rounds))
        if what in seen:
            raise ConfigError(
                f"variants {seen[what].label!r} and {variant.label!r} build and train exactly the same thing",
                hint="vary a field that changes the build or the student (a loop base keeps only the sources its "
                "last build read)",
            )
        seen[what] = variant


def check_field(model: type[BaseModel], vary: Vary, *, flag: str = "--vary") -> str | None:
    """Why ``vary.field`` names no field of ``model`` (None when it does), as the message of ``flag``."""
    annotation: Any = model
    for depth, part in enumerate(vary.path):
        annotation = _unwrap_optional(annotation)
        where = ".".join(vary.path[:depth]) or "the config"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            settings = {name: f for name, f in annotation.model_fields.items() if not f.exclude}  # not a format_version
            if part not in settings:
                known = ", ".join(settings)
                return f"{flag} {vary.field}: {where} has no field {part!r} (its fields: {known})"
            annotation = annotation.model_fields[part].annotation
        elif typing.get_origin(annotation) is dict:
            annotation = typing.get_args(annotation)[1]
        else:
            return f"{flag} {vary.field}: {where} is a value, not a section with fields"
    return None


def set_field(document: dict[str, Any], field: str, value: Any) -> None:
    """Set the dotted ``field`` of a config document (a model's dump) to a copy of ``value``, making sections the
    document lacks."""
    *parents, leaf = field.split(".")
    node = document
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = copy.deepcopy(value)


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _points(config: AblateConfig) -> list[dict[str, Any]]:
    fields = [v.field for v in config.vary]
    columns = [v.values for v in config.vary]
    rows = zip(*columns, strict=True) if config.zip else itertools.product(*columns)
    return [dict(zip(fields, row, strict=True)) for row in rows]


def _variant(base: Base, config: AblateConfig, index: int, settings: dict[str, Any]) -> Variant:
    document = copy.deepcopy(base.document)
    for field, value in settings.items():
        set_field(document, field, value)
    flags = " ".join(f"--vary {k}={setting_text(v)}" for k, v in settings.items())
    try:
        subject = base.model.model_validate(document)
        return _runs(base, config, index, settings, subject)
    except ValidationError as error:
        raise ConfigError(f"{flags}: {validation_message(error)}") from None


def _runs(base: Base, config: AblateConfig, index: int, settings: dict[str, Any], subject: BaseModel) -> Variant:
    name = f"ablate-{config.name}"
    if isinstance(subject, LoopConfig):
        from toolkit.loop.steps.build import dataset_config

        usable = base.window(subject.data.teacher_generations)
        build = dataset_config(subject, base.generation, usable, seed=config.seed, pin=True)
        student, tables, rounds = subject.student, subject.evaluation.tables, subject.max_rounds
    else:
        assert isinstance(subject, BuildSubject)
        build, student, tables, rounds = subject.data, subject.student, EvaluationConfig().tables, DEFAULT_MAX_ROUNDS
    return Variant(
        index=index,
        settings=settings,
        build=build.model_copy(update={"name": name}),
        student=student,
        tables=dict(config.tables or tables),
        max_rounds=config.max_rounds or rounds,
    )
