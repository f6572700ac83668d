"""The training commands end to end through the CLI: bc -> ppo warm-started from it -> evaluate."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toolkit.cli.main import app


def test_train_bc_then_ppo_from_it_then_evaluate(tiny_dataset, tmp_path: Path) -> None:
    layout, _ = tiny_dataset
    runner = CliRunner()
    home = ["--home", str(layout.home)]
    config = tmp_path / "bc.yaml"
    config.write_text("epochs: 2\npolicy:\n  pi: [32, 32]\n  vf: [32, 32]\n")
    bc = runner.invoke(
        app,
        [
            *home,
            "train",
            "bc",
            "--dataset",
            "tiny",
            "--config",
            str(config),
            "--epochs",
            "1",
            "--out",
            str(tmp_path),
            "--json",
        ],
    )
    assert bc.exit_code == 0, bc.output
    bc_result = json.loads(bc.output)
    assert len(bc_result["epochs"]) == 1  # the flag overrode the file
    ppo_config = tmp_path / "ppo.yaml"
    ppo_config.write_text(
        "n_steps: 64\nbatch_size: 64\nn_epochs: 1\neval_games: 8\npolicy:\n  pi: [32, 32]\n  vf: [32, 32]\n"
    )
    ppo = runner.invoke(
        app,
        [
            *home,
            "train",
            "ppo",
            "--config",
            str(ppo_config),
            "--steps",
            "128",
            "--envs",
            "2",
            "--warm-start",
            bc_result["checkpoint"],
            "--eval-every",
            "0",
            "--out",
            str(tmp_path),
            "--generation",
            "3",
            "--export-games",
            "4",
            "--json",
        ],
    )
    assert ppo.exit_code == 0, ppo.output
    ppo_result = json.loads(ppo.output)
    assert ppo_result["export"]["files"] and "ppo" in Path(ppo_result["final"]).name
    ev = runner.invoke(
        app,
        [
            "evaluate",
            "--policy",
            ppo_result["final"],
            "--vs",
            "random,random,random",
            "--games",
            "8",
            "--compare",
            bc_result["checkpoint"],
        ],
    )
    assert ev.exit_code == 0, ev.output
    assert "difference" in ev.output and "win rate" in ev.output


def test_a_bad_flag_is_a_usage_error_naming_the_field(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "train", "ppo", "--opponents", "grandmaster"])
    assert result.exit_code == 2 and "grandmaster" in result.output
