"""``distill loop config``: the full default loop.yaml, every field described, loading back as the default."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from toolkit.cli.main import app
from toolkit.config import load_config
from toolkit.loop.config import LoopConfig


def _fields(model: type[BaseModel], value: BaseModel, where: str = "") -> list[tuple[str, str]]:
    """(dotted field, its documentation) of every field, nested sections' fields included."""
    found = []
    for name, field in model.model_fields.items():
        current = getattr(value, name)
        section = isinstance(current, BaseModel)
        found.append((where + name, field.description or (type(current).__doc__ or "" if section else "")))
        if section:
            found += _fields(type(current), current, f"{where}{name}.")
    return found


def test_loop_config_prints_every_field_documented_and_loads_back_as_the_default() -> None:
    done = CliRunner().invoke(app, ["loop", "config"])
    assert done.exit_code == 0, done.output
    assert LoopConfig.model_validate(yaml.safe_load(done.stdout)) == LoopConfig()
    comments = " ".join(line.strip().lstrip("#").strip() for line in done.stdout.splitlines() if "#" in line)
    fields = _fields(LoopConfig, LoopConfig())
    assert {"bootstrap.logs", "ppo.league.past", "data.holdout.salt", "backend.kind", "max_rounds"} <= dict(
        fields
    ).keys()
    for name, doc in fields:
        assert doc.strip(), f"{name} has no description"
        assert " ".join(doc.split()[:6]) in comments, name


def test_loop_config_output_is_a_file_loop_run_reads_and_is_never_overwritten_unasked(tmp_path: Path) -> None:
    target = tmp_path / "loop.yaml"
    assert CliRunner().invoke(app, ["loop", "config", "--output", str(target)]).exit_code == 0
    target.write_text(target.read_text().replace("  logs: []", "  logs: [forge-logs/]"))
    assert load_config(LoopConfig, target).bootstrap.logs == [Path("forge-logs/")]
    again = CliRunner().invoke(app, ["loop", "config", "--output", str(target)])
    assert again.exit_code == 2 and "--force" in again.stderr
    assert "forge-logs" in target.read_text()
    assert CliRunner().invoke(app, ["loop", "config", "-o", str(target), "--force"]).exit_code == 0
    assert load_config(LoopConfig, target) == LoopConfig()
