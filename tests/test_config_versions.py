"""A loop.yaml carries its format version as a run's config.json does: one written by today's Distill (a fixture
kept for good) reads back as the default, one from a newer Distill is refused naming file, version and range, an
older one is migrated, and the version never enters the config's value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from toolkit.cli.main import app
from toolkit.config import load_config
from toolkit.errors import ConfigError
from toolkit.layout import RUN_CONFIG_FORMAT_VERSION
from toolkit.loop.config import LoopConfig

FIXTURE = Path(__file__).parent / "data" / "formats" / "loop-config-v2.yaml"


def _written(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(FIXTURE.read_text()), **fields}))
    return path


def test_the_loop_yaml_distill_writes_today_carries_its_version_and_reads_back_as_the_default() -> None:
    assert yaml.safe_load(FIXTURE.read_text())["format_version"] == 2
    assert load_config(LoopConfig, FIXTURE) == LoopConfig()
    printed = CliRunner().invoke(app, ["loop", "config"]).stdout
    assert yaml.safe_load(printed)["format_version"] == RUN_CONFIG_FORMAT_VERSION


def test_a_loop_yaml_from_a_newer_distill_is_refused_naming_file_version_and_range(tmp_path: Path) -> None:
    path = _written(tmp_path, format_version=RUN_CONFIG_FORMAT_VERSION + 1)
    with pytest.raises(ConfigError) as refused:
        load_config(LoopConfig, path, {"max_generations": 1})
    assert refused.value.message == (
        f"{path} is a loop config of format version {RUN_CONFIG_FORMAT_VERSION + 1}; "
        f"this Distill reads versions 1 to {RUN_CONFIG_FORMAT_VERSION}"
    )
    done = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), "loop", "run", "--config", str(path)])
    assert done.exit_code == 2 and "format version" in done.output and "loop.yaml" in done.output
    assert not (tmp_path / "home" / "runs").exists()


@pytest.mark.parametrize("found", ["2", None, 2.0, True, [2]])
def test_a_format_version_that_is_not_an_integer_is_refused_by_name(tmp_path: Path, found: object) -> None:
    with pytest.raises(ConfigError, match=r"loop\.yaml is not a valid loop config: format_version"):
        load_config(LoopConfig, _written(tmp_path, format_version=found))


def test_older_and_unversioned_files_are_read_as_todays(tmp_path: Path) -> None:
    assert load_config(LoopConfig, _written(tmp_path, format_version=1, seed=7)) == LoopConfig(seed=7)
    (tmp_path / "hand.yaml").write_text("seed: 3\n")  # a file a user writes names only what it changes
    assert load_config(LoopConfig, tmp_path / "hand.yaml") == LoopConfig(seed=3)


def test_the_version_is_never_part_of_the_configs_value() -> None:
    assert "format_version" not in LoopConfig().model_dump()
    assert "format_version" not in json.loads(LoopConfig().model_dump_json())
    assert LoopConfig(format_version=1).model_dump() == LoopConfig().model_dump()


def test_an_ablation_cannot_vary_the_format_version() -> None:
    from toolkit.ablate.config import Vary
    from toolkit.ablate.grid import check_field

    said = check_field(LoopConfig, Vary(field="format_version", values=[1, 2]))
    assert said is not None and "has no field 'format_version'" in said and "max_generations" in said
    assert check_field(LoopConfig, Vary(field="max_generations", values=[1, 2])) is None


def test_a_config_written_as_json_carries_its_version_first_and_reads_back(tmp_path: Path) -> None:
    config = LoopConfig(seed=5, max_generations=3)
    written = json.loads(config.file_text())
    assert next(iter(written)) == "format_version" and written["format_version"] == RUN_CONFIG_FORMAT_VERSION
    (tmp_path / "requested.json").write_text(config.file_text())  # YAML reads JSON: `loop run --config` takes it
    assert load_config(LoopConfig, tmp_path / "requested.json") == config
