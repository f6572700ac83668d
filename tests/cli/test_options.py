"""Options defined once: a flag that sets a config model's field takes its help, default and bounds from that
field, in every command that has it."""

from __future__ import annotations

import pytest
from annotated_types import Ge, Le

from tests.factories import cli_params
from toolkit.cli.app import backend_config
from toolkit.errors import ConfigError
from toolkit.jobs.config import BackendConfig

# The back end's flags, and the field of BackendConfig each one sets.
BACKEND_FLAGS = {"--backend": "kind", "--workers": "workers", "--address": "address", "--shard-games": "shard_games"}


def test_every_back_end_flag_of_every_command_is_the_back_end_configs_field() -> None:
    found = [(where, p) for where, p in cli_params() if set(p.opts) & BACKEND_FLAGS.keys()]
    commands = {where for where, _ in found}
    assert {"simulate", "evaluate", "tournament", "train ppo", "ablate"} <= commands
    for where, param in found:
        [flag] = param.opts
        field = BackendConfig.model_fields[BACKEND_FLAGS[flag]]
        assert param.default is None, (where, flag)  # not given: the config's default
        assert param.help.startswith(field.description.split(" (--")[0].rstrip(".")), (where, flag)
        if field.default is not None:
            assert f"(default: {field.default})" in param.help, (where, flag)
        low = next((m.ge for m in field.metadata if isinstance(m, Ge)), None)
        high = next((m.le for m in field.metadata if isinstance(m, Le)), None)
        assert (getattr(param, "min", None), getattr(param, "max", None)) == (low, high), (where, flag)


def test_flags_left_out_give_the_configs_defaults_and_bad_values_its_message() -> None:
    assert backend_config(None, None, None, None) == BackendConfig()
    assert backend_config("pool", 2, None, 64) == BackendConfig(kind="pool", workers=2, shard_games=64)
    with pytest.raises(ConfigError, match="invalid back end: kind"):
        backend_config("cloud", None, None, None)
