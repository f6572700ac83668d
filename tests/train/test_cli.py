"""The training commands end to end through the CLI: bc -> ppo warm-started from it -> evaluate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
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


def _evaluate(*args: str) -> Result:
    return CliRunner().invoke(app, ["evaluate", *args])


def test_evaluate_vs_three_copies_of_a_checkpoint_is_a_head_to_head_against_the_chance_line(
    bc_checkpoint: Path,
) -> None:
    copies = ",".join([str(bc_checkpoint)] * 3)
    done = _evaluate("--policy", str(bc_checkpoint), "--vs", copies, "--games", "64", "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["opponents"] == [bc_checkpoint.stem] * 3 and result["chance"] == 0.25
    # four identical players: each decided deal is won by one seat, so by the policy in one rotation of four
    assert result["wins"] == (result["games"] - result["truncations"]) / 4
    assert result["win_low"] <= result["win_rate"] <= result["win_high"]
    shown = _evaluate("--policy", str(bc_checkpoint), "--vs", copies, "--games", "16")
    assert "chance 25.0% (1 in 4 seats)" in " ".join(shown.stdout.split())


def test_evaluate_vs_a_mixed_table_plays_the_checkpoint_in_its_seat(bc_checkpoint: Path) -> None:
    from toolkit.game.players import make_player
    from toolkit.train.agents import load_agent, policy_blob
    from toolkit.train.config import EvaluateConfig
    from toolkit.train.evaluate import evaluate

    done = _evaluate(
        "--policy", str(bc_checkpoint), "--vs", f"heuristic,{bc_checkpoint},tuned", "--games", "32", "--json"
    )
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["opponents"] == ["heuristic", bc_checkpoint.stem, "tuned"]
    # the same games as the loaded checkpoint seated by hand, as a live player
    live = [make_player("heuristic"), load_agent(bc_checkpoint).player(), make_player("tuned")]
    expected = evaluate(policy_blob(bc_checkpoint), EvaluateConfig(games=32), opponents=live)
    for key in ("games", "wins", "truncations", "placement_score", "per_seat"):
        assert result[key] == expected.model_dump(mode="json")[key], key


def test_evaluate_vs_an_unknown_name_names_the_option_and_what_it_takes(bc_checkpoint: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app, ["--home", str(tmp_path), "evaluate", "--policy", str(bc_checkpoint), "--vs", "S1,heuristic,tuned"]
    )
    assert done.exit_code == 2
    assert "--vs: 'S1' is neither a player type nor a checkpoint" in done.stderr
    assert "random, heuristic, tuned" in done.stderr and "checkpoints" in done.stderr
    assert "--players" not in done.stderr


def test_evaluate_compare_prints_the_difference_in_percentage_points(bc_checkpoint: Path, tmp_path: Path) -> None:
    import torch

    from tests.train.conftest import SMALL, save_actor
    from toolkit.train.policy import ActorNet

    torch.manual_seed(4)
    other = save_actor(tmp_path / "other", ActorNet(SMALL))
    args = ("--policy", str(bc_checkpoint), "--vs", "random,random,random", "--games", "32", "--compare", str(other))
    diff = json.loads(_evaluate(*args, "--json").stdout)
    assert diff["a"]["win_rate"] - diff["b"]["win_rate"] == pytest.approx(diff["win_rate_diff"], abs=1e-3)
    shown = " ".join(_evaluate(*args).stdout.split())
    points = [round(diff[k] * 100, 1) for k in ("win_rate_diff", "win_rate_diff_low", "win_rate_diff_high")]
    low, high = diff["win_rate_diff_low"], diff["win_rate_diff_high"]
    verdict = "better" if low > 0 else "worse" if high < 0 else "no detectable difference"  # what the interval says
    assert f"win rate {points[0]:+.1f} pts [{points[1]:+.1f}, {points[2]:+.1f}] {verdict} (percentage points)" in shown
    assert f"{diff['a']['win_rate']:.1%}" in shown  # the win rates it is the difference of, in percent


def test_ppo_finds_a_league_checkpoint_named_relative_to_the_data_root(bc_checkpoint: Path, tmp_path: Path) -> None:
    relative = bc_checkpoint.relative_to(tmp_path)  # not found from here: only under the data root
    assert not relative.exists()
    args = ["--steps", "256", "--envs", "4", "--eval-games", "4", "--no-export", "--out", str(tmp_path / "out")]
    opponents = ["--opponents", f"heuristic,{relative}"]
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "train", "ppo", *opponents, *args, "--json"])
    assert result.exit_code == 0, result.output
    league = {o["name"] for o in json.loads(result.stdout)["opponents"]}  # each with the games it sat in
    assert league == {"heuristic", str(tmp_path / relative)}
