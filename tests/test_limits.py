"""Every number a user gives has an upper bound: each config model's numeric fields (their container elements
too) and each CLI option that takes a number, found by walking them, so a field or flag added later is held to
it without a change here; and a bound refuses clearly, naming the flag or field."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import time
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import toolkit
from tests.factories import cli_params
from toolkit.cli.main import app
from toolkit.config import load_config
from toolkit.errors import ConfigError
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig

NUMBERS = (int, float)


def config_models() -> Iterator[type[BaseModel]]:
    """Every ``*Config`` model of the package and the models its fields hold (a network's spec, a gate's test)."""
    seen: set[type[BaseModel]] = set()
    todo = []
    for module in pkgutil.walk_packages(toolkit.__path__, "toolkit."):
        found = importlib.import_module(module.name)
        todo += [
            obj
            for name, obj in vars(found).items()
            if inspect.isclass(obj) and issubclass(obj, BaseModel) and name.endswith("Config")
        ]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        yield model
        for info in model.model_fields.values():
            todo += [t for t in _types_in(info.annotation) if inspect.isclass(t) and issubclass(t, BaseModel)]


def _types_in(annotation: Any) -> Iterator[Any]:
    yield annotation
    for arg in typing.get_args(annotation):
        yield from _types_in(arg)


def _bounded(metadata: list[Any]) -> bool:
    return any(getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None for m in metadata)


def unbounded_numbers(annotation: Any, metadata: list[Any], where: str) -> Iterator[str]:
    """Where in a field's annotation a number has no upper bound (``metadata``: the bounds that apply to it)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        found = [m for e in extra for m in getattr(e, "metadata", [e])]
        yield from unbounded_numbers(inner, metadata + found, where)
    elif annotation in NUMBERS:
        if not _bounded(metadata):
            yield where
    elif origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from unbounded_numbers(arg, metadata, where)
    elif origin in (tuple, list, set, frozenset):
        for arg in typing.get_args(annotation):
            if arg is not Ellipsis:
                yield from unbounded_numbers(arg, [], f"{where}[]")  # an element's own bound, not the length's
    elif origin is dict:
        yield from unbounded_numbers(typing.get_args(annotation)[1], [], f"{where}[key]")


def test_every_number_of_every_config_has_an_upper_bound() -> None:
    models = list(config_models())
    assert {m.__name__ for m in models} >= {"LoopConfig", "EvaluateConfig", "BuildConfig", "PolicySpec", "EngineConfig"}
    unbounded = [
        found
        for model in models
        for name, info in model.model_fields.items()
        if info.annotation is not bool
        for found in unbounded_numbers(info.annotation, list(info.metadata), f"{model.__name__}.{name}")
    ]
    assert unbounded == [], "bound these in toolkit/limits.py's terms"


def cli_number_options() -> Iterator[tuple[str, Any]]:
    for where, param in cli_params():
        annotation = param.type_descriptor.annotation
        if any(t in NUMBERS and t is not bool for t in (annotation, *typing.get_args(annotation))):
            yield " ".join([where, *param.opts]).strip(), param


def test_every_number_a_cli_option_takes_has_an_upper_bound_shown_in_its_help() -> None:
    options = dict(cli_number_options())
    assert len(options) > 60 and "evaluate --games" in options
    assert [name for name, param in options.items() if param.max is None] == []


runner = CliRunner()


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--policy", "x.json", "--games", "99999999999999999999"],
        ["simulate", "--games", "99999999999999999999"],
        ["train", "ppo", "--steps", "99999999999999999999"],
        ["tournament", "--deals", "99999999999999999999"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_a_count_past_its_bound_is_refused_at_once_naming_the_flag(layout: Layout, argv: list[str]) -> None:
    started = time.monotonic()
    result = runner.invoke(app, ["--home", str(layout.home), *argv])
    assert result.exit_code == 2, result.output
    flag = next(a for a in argv if a.startswith("--") and a != "--policy")
    assert f"Invalid value for '{flag}'" in result.output and "less than or equal to" in result.output
    assert time.monotonic() - started < 5


def test_a_loop_config_past_a_bound_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("evaluation:\n  games: 99999999999999999999\nstudent:\n  hidden: [128, 100000000]\n")
    with pytest.raises(ConfigError) as error:
        load_config(LoopConfig, path)
    assert "evaluation.games" in str(error.value) and "student.hidden.1" in str(error.value)
    assert LoopConfig().evaluation.games <= 10_000_000  # the defaults lie within


def test_the_turn_limit_is_one_definition_in_every_config_and_every_command() -> None:
    from toolkit.game import DEFAULT_MAX_ROUNDS
    from toolkit.limits import MAX_ROUNDS, MAX_ROUNDS_HELP, MaxRounds

    [rule] = typing.get_args(MaxRounds)[1:]
    fields = {m.__name__: m.model_fields["max_rounds"] for m in config_models() if "max_rounds" in m.model_fields}
    assert {"LoopConfig", "SimulateConfig", "EvaluateConfig", "TournamentConfig", "PPOConfig"} <= set(fields)
    for name, info in fields.items():  # a config whose max_rounds may be left out (None: its base's) holds the same
        constrained = info.metadata == rule.metadata or MaxRounds in typing.get_args(info.annotation)
        assert constrained and info.default in (DEFAULT_MAX_ROUNDS, None), name
        assert (info.description or "").startswith(MAX_ROUNDS_HELP), name
    options = {where: option for where, option in cli_number_options() if "--max-rounds" in option.opts}
    assert {"simulate", "evaluate", "tournament", "train ppo", "loop run", "ablate"} <= {
        w.rsplit(" ", 1)[0] for w in options
    }
    for where, option in options.items():
        assert (option.min, option.max) == (1, MAX_ROUNDS), where
        assert option.help.startswith(MAX_ROUNDS_HELP) and option.default in (DEFAULT_MAX_ROUNDS, None), where
