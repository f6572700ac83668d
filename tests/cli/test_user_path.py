"""What a user reads where the first session with Distill used to stall (issue "user path 2", its smaller items)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from toolkit.cli.main import app
from toolkit.layout import Layout
from toolkit.loop.state import LoopState, RunFolder, now

runner = CliRunner()


def test_a_required_option_left_out_is_named_as_the_flag_to_give(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--home", str(tmp_path / "home"), "train", "bc"])
    assert result.exit_code == 2
    assert "--dataset is required" in result.stderr and "`dataset:`" in result.stderr
    assert "BCConfig" not in result.stderr and "Field required" not in result.stderr


def test_loop_status_prints_no_empty_fields(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    run = RunFolder(layout, "idle")
    run.root.mkdir(parents=True)
    run.save(LoopState(name="idle", status="stopped", started_at=now(), updated_at=now()))
    result = runner.invoke(app, ["--home", str(layout.home), "loop", "status", "--name", "idle"])
    assert result.exit_code == 0 and "stopped" in result.stdout
    assert "None" not in result.stdout, result.stdout
    as_json = runner.invoke(app, ["--home", str(layout.home), "loop", "status", "--name", "idle", "--json"])
    assert '"message": null' in as_json.stdout  # the JSON keeps every field
