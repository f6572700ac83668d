"""PPO smoke runs: the run logs every update, evaluates, checkpoints, feeds the exporter, and is deterministic."""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from tests.train.conftest import tiny_ppo
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout
from toolkit.train import checkpoints
from toolkit.train.agents import load_agent
from toolkit.train.config import CurriculumStage, EvaluateConfig
from toolkit.train.evaluate import evaluate
from toolkit.train.ppo import train_ppo


def test_a_short_run_logs_evaluates_checkpoints_and_exports(tmp_path: Path) -> None:
    result = train_ppo(tiny_ppo(opponents=("heuristic", "random", "self")), tmp_path)
    assert result.steps >= 256 and len(result.updates) == 2
    for update in result.updates:
        for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm"):
            assert math.isfinite(getattr(update, name)), name
        assert update.grad_norm > 0 and update.grad_norm_max >= update.grad_norm
    assert result.updates[1].learning_rate < result.updates[0].learning_rate  # the linear schedule
    assert [e.steps for e in result.evaluations] == [0, 128, 256]
    # Where the time went: every phase is accounted for, and the steady rate covers the second rollout on.
    assert set(result.timings) == {"setup", "rollouts", "updates", "evaluations", "export"}
    assert all(seconds >= 0 for seconds in result.timings.values()) and result.timings["evaluations"] > 0
    assert result.steady_steps_per_second > 0 and result.steady_cpu_steps_per_second > 0
    assert result.best.name == "ppo-test-best.json" and result.final.name == "ppo-test-final.json"
    card = checkpoints.read_card(result.best)
    assert (
        card.metrics["evaluation"]["win_rate"]
        == result.best_win_rate
        == max(e.result.win_rate for e in result.evaluations)
    )
    lines = [json.loads(line) for line in result.metrics.read_text().splitlines()]
    assert sum(line["type"] == "update" for line in lines) == 2
    # The final policy played the league and its games were exported: the files hold exactly what it counted.
    export = result.export
    assert export.exported_episodes >= 8  # every game of the teacher (8 asked), its self-play seats too
    rows = sum(len(Path(f).read_bytes().splitlines()) for f in export.files)
    assert rows == export.exported_decisions
    ingested = ingest_paths([Path(f) for f in export.files + result.eval_export.files], Layout.at(tmp_path / "h"))
    assert ingested.rows_rejected == 0 and ingested.rows_valid > rows


def test_same_seed_same_weights(tmp_path: Path) -> None:
    config = tiny_ppo(total_steps=128, eval_every=0, export={"enabled": False})
    a = train_ppo(config, tmp_path / "a")
    b = train_ppo(config, tmp_path / "b")
    assert a.steady_steps_per_second is a.steady_cpu_steps_per_second is None  # one rollout: no steady phase
    _, ta = checkpoints.load_tensors(a.final)
    _, tb = checkpoints.load_tensors(b.final)
    assert all(torch.equal(ta[k], tb[k]) for k in ta)
    c = train_ppo(config.model_copy(update={"seed": 1}), tmp_path / "c")
    _, tc = checkpoints.load_tensors(c.final)
    assert not all(torch.equal(ta[k], tc[k]) for k in ta)


def test_warm_start_plays_like_bc_first_and_critic_warmup_keeps_the_actor(tmp_path: Path, bc_checkpoint: Path) -> None:
    config = tiny_ppo(
        total_steps=128, eval_every=0, warm_start=bc_checkpoint, critic_warmup_updates=5, export={"enabled": False}
    )
    result = train_ppo(config, tmp_path)
    bc = load_agent(bc_checkpoint)
    alone = evaluate(
        bc.player, EvaluateConfig(opponents=config.eval_opponents, games=config.eval_games, seed=config.seed + 1)
    )
    assert result.evaluations[0].result.outcomes == alone.outcomes
    card = checkpoints.read_card(result.final)
    assert card.parent == "bc-t-final" and card.dataset.name == "tiny"
    actor = load_agent(result.final).actor
    assert all(torch.equal(actor.state_dict()[k], v) for k, v in bc.actor.state_dict().items())
    assert result.updates[0].value_loss > 0


def test_curriculum_promotes_when_the_rule_is_met(tmp_path: Path) -> None:
    stages = (
        CurriculumStage(name="easy", opponents=("random",), promote_win_rate=0.01),
        CurriculumStage(name="hard", opponents=("heuristic",), promote_win_rate=1.0),
    )
    result = train_ppo(tiny_ppo(curriculum=stages, export={"enabled": False}), tmp_path)
    lines = [json.loads(line) for line in result.metrics.read_text().splitlines()]
    promoted = [line for line in lines if line["type"] == "promotion"]
    assert result.stages_reached == ["easy", "hard"] and promoted[0]["to"] == "hard"
