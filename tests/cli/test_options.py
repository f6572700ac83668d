"""Options defined once: a flag that sets a config model's field takes its help, choices, default and bounds from
that field, in every command that has it; the dashboard's start form and its request take the same fields'."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from annotated_types import Ge, Le
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from tests.factories import cli_params
from toolkit.ablate.config import AblateConfig
from toolkit.catalog.sandbox import SandboxLimits
from toolkit.checks.config import CheckConfig
from toolkit.cli.app import backend_config
from toolkit.datasets.config import BuildConfig, LabelIssueFilter
from toolkit.engine.config import EngineConfig
from toolkit.errors import ConfigError
from toolkit.export.config import MinariExportConfig
from toolkit.game import DEFAULT_MAX_ROUNDS
from toolkit.game.config import SimulateConfig, TournamentConfig
from toolkit.ingest.config import ReadOptions
from toolkit.jobs.config import BackendConfig
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig, StudentConfig, TournamentStepConfig
from toolkit.quality.config import LabelCheckConfig
from toolkit.serve.control import StartRequest
from toolkit.train.config import BCConfig, EvaluateConfig, ExportConfig, PPOConfig

# The back end's flags, and the field of BackendConfig each one sets.
BACKEND_FLAGS = {"--backend": "kind", "--workers": "workers", "--address": "address", "--shard-games": "shard_games"}
BACKEND_COMMANDS = ("simulate", "evaluate", "tournament", "train ppo", "ablate")
ENGINE_COMMANDS = ("simulate", "evaluate", "tournament", "train ppo")

# Each command's flags that set a config field: (command, model, {flag: field}).
MODEL_FLAGS: list[tuple[str, type[BaseModel], dict[str, str]]] = [
    *((command, BackendConfig, BACKEND_FLAGS) for command in BACKEND_COMMANDS),
    *((command, EngineConfig, {"--engine-processes": "processes"}) for command in ENGINE_COMMANDS),
    (
        "train bc",
        BCConfig,
        {
            "--dataset": "dataset",
            "--epochs": "epochs",
            "--batch-size": "batch_size",
            "--lr": "learning_rate",
            "--class-weighting": "class_weighting",
            "--patience": "patience",
            "--select": "select",
            "--allow-retired": "allow_retired",
            "--seed": "seed",
            "--run-id": "run_id",
            "--generation": "generation",
        },
    ),
    (
        "train ppo",
        PPOConfig,
        {
            "--policy": "policy_kind",
            "--steps": "total_steps",
            "--envs": "n_envs",
            "--warm-start": "warm_start",
            "--opponents": "opponents",
            "--opponent-weights": "opponent_weights",
            "--mirror": "opponent_mirror",
            "--eval-every": "eval_every",
            "--eval-games": "eval_games",
            "--eval-vs": "eval_opponents",
            "--max-rounds": "max_rounds",
            "--lr": "learning_rate",
            "--ent-coef": "ent_coef",
            "--lstm-hidden": "lstm_hidden",
            "--seed": "seed",
            "--run-id": "run_id",
            "--generation": "generation",
        },
    ),
    ("train ppo", ExportConfig, {"--export": "enabled", "--export-games": "games", "--wins-only": "only_wins"}),
    (
        "evaluate",
        EvaluateConfig,
        {"--vs": "opponents", "--games": "games", "--seed": "seed", "--max-rounds": "max_rounds"},
    ),
    (
        "build",
        BuildConfig,
        {
            "--name": "name",
            "--source": "sources",
            "--generation": "generations",
            "--batch": "batches",
            "--weight": "weights",
            "--mode": "weight_mode",
            "--min-reward": "min_reward",
            "--wins-only": "wins_only",
            "--min-length": "min_episode_length",
            "--exclude-labels": "exclude_label_sources",
            "--pod-size": "pod_sizes",
            "--seed": "seed",
            "--generation-decay": "generation_decay",
        },
    ),
    ("build", LabelIssueFilter, {"--min-label-quality": "min_quality", "--label-scores": "scores"}),
    *(
        (command, ReadOptions, {"--dialect": "dialect", "--source": "source", "--max-line-bytes": "max_line_bytes"})
        for command in ("validate", "ingest")
    ),
    (
        "simulate",
        SimulateConfig,
        {
            "--games": "games",
            "--players": "players",
            "--seed": "seed",
            "--out": "out",
            "--compress": "compression",
            "--batch-size": "batch_size",
            "--max-rounds": "max_rounds",
        },
    ),
    (
        "ablate",
        AblateConfig,
        {"--loop": "loop", "--build": "build", "--zip": "zip", "--name": "name", "--games": "games", "--seed": "seed"},
    ),
    *(
        (
            command,
            CheckConfig,
            {
                "--suite": "suite",
                "--entropy-floor": "entropy_floor",
                "--baseline": "baseline",
                "--write": "write",
                "--chunk-rows": "chunk_rows",
                "--sample-rows": "sample_rows",
            },
        )
        for command in ("check lake", "check dataset")
    ),
    ("sql", SandboxLimits, {"--timeout": "timeout", "--memory-limit": "memory_limit"}),
    (
        "check labels",
        LabelCheckConfig,
        {
            "--teacher": "teacher",
            "--folds": "folds",
            "--seed": "seed",
            "--epochs": "epochs",
            "--min-steps": "min_steps",
            "--max-steps": "max_steps",
            "--learning-rate": "learning_rate",
            "--schedule": "schedule",
            "--filter-by": "filter_by",
            "--workers": "workers",
            "--write": "write",
        },
    ),
    ("tournament", TournamentConfig, {"--deals": "deals_per_lineup", "--seed": "seed", "--max-rounds": "max_rounds"}),
    ("export", MinariExportConfig, {"--out": "out", "--split": "split", "--version": "version"}),
    (
        "loop run",
        LoopConfig,
        {"--name": "name", "--max-generations": "max_generations", "--seed": "seed", "--max-rounds": "max_rounds"},
    ),
]


def _params(command: str) -> dict[str, Any]:
    return {param.opts[0]: param for where, param in cli_params() if where == command}


def _bounds(field: FieldInfo) -> tuple[Any, Any]:
    """The field's bounds, or a list field's items' (``list[Annotated[int, Field(ge=0)]] | None``)."""
    found = list(field.metadata)
    for arg in (field.annotation, *get_args(field.annotation)):
        if get_origin(arg) is list:
            [item] = get_args(arg)
            found += [m for info in getattr(item, "__metadata__", ()) for m in info.metadata]
    low = next((m.ge for m in found if isinstance(m, Ge)), None)
    high = next((m.le for m in found if isinstance(m, Le)), None)
    return low, high


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return ",".join(map(_shown, value)) if isinstance(value, tuple | list) else str(value)


@pytest.mark.parametrize(("command", "model", "flags"), MODEL_FLAGS, ids=lambda v: getattr(v, "__name__", None))
def test_every_flag_that_sets_a_config_field_is_that_field(
    command: str, model: type[BaseModel], flags: dict[str, str]
) -> None:
    params = _params(command)
    if model is BackendConfig:  # a command that plays no shards has no --shard-games
        assert "--backend" in params, command
        flags = {flag: name for flag, name in flags.items() if flag in params}
    for flag, name in flags.items():
        param, field = params[flag], model.model_fields[name]
        where = (command, flag)
        assert param.default is None, where  # not given: the config's default
        assert param.help.startswith(re.split(r" \(--", field.description or "")[0].rstrip(".")), where
        if not field.is_required() and (default := field.get_default(call_default_factory=True)) not in (None, [], {}):
            assert f"default: {_shown(default)})" in param.help, where
        for choices in (get_args(a) for a in (field.annotation, *get_args(field.annotation))):
            if choices and get_origin(field.annotation) is Literal:
                assert all(str(c) in param.help for c in choices), where
        assert (getattr(param, "min", None), getattr(param, "max", None)) == _bounds(field), where


def test_every_max_rounds_flag_states_the_one_default_and_bounds() -> None:
    found = [(where, p) for where, p in cli_params() if "--max-rounds" in p.opts]
    assert {"simulate", "evaluate", "tournament", "train ppo", "loop run", "ablate"} <= {w for w, _ in found}
    for where, param in found:
        assert param.default is None, where
        assert (param.min, param.max) == _bounds(LoopConfig.model_fields["max_rounds"]), where
        if where != "ablate":  # ablate's leaves the base run's value
            assert f"(default: {DEFAULT_MAX_ROUNDS})" in param.help, where


def test_flags_left_out_give_the_configs_defaults_and_bad_values_its_message() -> None:
    assert backend_config(None, None, None, None) == BackendConfig()
    assert backend_config("pool", 2, None, 64) == BackendConfig(kind="pool", workers=2, shard_games=64)
    with pytest.raises(ConfigError, match="invalid back end: kind"):
        backend_config("cloud", None, None, None)


class _Inputs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.inputs: dict[str, dict[str, str | None]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "input" and found.get("name"):
            self.inputs[str(found["name"])] = found


@pytest.mark.parametrize("name", ["name", "max_generations", "seed"])
def test_the_start_form_the_start_request_and_loop_run_take_the_loop_configs_field(name: str, tmp_path: Path) -> None:
    from tests.serve.conftest import client_for

    field = LoopConfig.model_fields[name]
    low, high = _bounds(field)
    page = client_for(Layout.at(tmp_path / "home")).get("/")
    assert page.status_code == 200
    parser = _Inputs()
    parser.feed(page.text)
    form = parser.inputs[name]
    assert form["title"] == field.description
    assert form["placeholder"] == str(field.default)
    flag = _params("loop run")["--" + name.replace("_", "-")]
    assert f"default: {field.default})" in flag.help
    if low is not None:  # a number: the same bounds in the form, the request and the flag
        assert (form["min"], form["max"]) == (str(low), str(high))
        assert (flag.min, flag.max) == (low, high)
        schema = StartRequest.model_json_schema()["properties"][name]["anyOf"][0]
        assert (schema["minimum"], schema["maximum"]) == (low, high)
        assert StartRequest(name="x", **{name: high}).model_dump()[name] == high
        with pytest.raises(ValidationError):
            StartRequest(name="x", **{name: high + 1})
    else:  # the run's name: the browser's pattern accepts exactly what the config accepts
        for candidate in ["demo", "a-b", "a.b_c", "A", "-x", "x" * 64, "x" * 65, "a b", "a/b"]:
            config_accepts = re.fullmatch(field.metadata[0].pattern, candidate) is not None
            assert (re.fullmatch(str(form["pattern"]), candidate) is not None) == config_accepts, candidate


def test_the_loop_students_settings_are_train_bcs_own_fields() -> None:
    """The same type, bounds and description in the loop's student and in ``train bc``; each its own default."""
    for name in ("epochs", "batch_size", "learning_rate", "select", "patience"):
        student, bc = StudentConfig.model_fields[name], BCConfig.model_fields[name]
        assert (student.annotation, student.metadata, student.description) == (
            bc.annotation,
            bc.metadata,
            bc.description,
        ), name


def test_the_loops_tournament_deals_are_the_tournaments_own_field() -> None:
    """``tournament --deals`` and the loop's ``tournament.deals_per_lineup``: one type, bounds and description."""
    step, played = (
        TournamentStepConfig.model_fields["deals_per_lineup"],
        TournamentConfig.model_fields["deals_per_lineup"],
    )
    assert (step.annotation, step.metadata, step.description) == (
        played.annotation,
        played.metadata,
        played.description,
    )
    assert step.description and step.metadata
