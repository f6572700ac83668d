"""Training speed: PPO on the vectorised env against the single-game env path, BC against a plain torch loop,
evaluation.

Run: ``.venv/bin/python bench/bench_train.py [--steps 100000]``.

All in one process, one torch thread, each baseline run alongside what it
is compared with, so the ratios hold on a busy machine even when the
absolute figures move. Targets (the learning issue): ``distill train ppo``
with its defaults >= 5,000 agent steps/s end to end and >= 10x the
single-game env path (MaskablePPO over a DummyVecEnv of 8 single-game envs,
the origin's settings: n_steps 512, batch 512, 10 epochs); the vectorised
env alone with a random agent >= 25,000 agent steps/s (bench_game prints it
too).

Last run (2 cores, quiet; --steps 100000): PPO with the defaults (512 envs x
16 steps) 9,280 agent steps/s, 13.8 s with its evaluation and 1,000 exported
games; the single-game env path 764 steps/s: 12.2x (target 10x met); the
vectorised env with a random agent 26,147 steps/s (target 25,000 met). BC
196,735 samples/s streamed from Parquet vs 320,178 for a plain in-memory
torch loop (0.61x); evaluation 511 games/s (60.5k decisions/s).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

PPO_TARGET = 5_000
PPO_RATIO_TARGET = 10.0
VEC_ENV_TARGET = 25_000


def ppo_figures(steps: int, baseline_steps: int, tmp: Path) -> dict[str, float]:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from toolkit.game.env import CommanderEnv
    from toolkit.game.league import OpponentPool
    from toolkit.train.export import ExportConfig
    from toolkit.train.ppo import PPOConfig, train_ppo

    out: dict[str, float] = {}
    config = PPOConfig(total_steps=steps, eval_every=0, eval_games=4, run_id="bench", export=ExportConfig(games=1000))
    start = time.perf_counter()
    result = train_ppo(config, tmp / "ppo")
    out["ppo_defaults_steps_per_s"] = result.steps_per_second
    out["ppo_defaults_wall_s_with_eval_and_export"] = round(time.perf_counter() - start, 1)
    pool = OpponentPool(["heuristic", "tuned", "random"], weights=[1, 1, 1])
    env = DummyVecEnv([lambda: CommanderEnv(pool, learner_seat=None) for _ in range(8)])
    model = MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=512, n_epochs=10, seed=0, device="cpu")
    start = time.perf_counter()
    model.learn(baseline_steps)
    out["ppo_single_game_env_steps_per_s"] = round(model.num_timesteps / (time.perf_counter() - start), 1)
    out["ppo_vectorised_vs_single_game"] = round(
        out["ppo_defaults_steps_per_s"] / out["ppo_single_game_env_steps_per_s"], 1
    )
    return out


def vec_env_figures() -> dict[str, float]:
    from bench_game import vec_env_rate

    return {"vec_env_random_agent_steps_per_s": round(vec_env_rate(1024, 10.0), 1)}


def bc_figures(tmp: Path) -> dict[str, float]:
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig
    from toolkit.game.simulate import SimulateConfig, simulate
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout
    from toolkit.train.bc import BCConfig, read_split, train_bc
    from toolkit.train.policy import ActorNet, PolicySpec

    layout = Layout.at(tmp / "home")
    logs = simulate(SimulateConfig(games=1000, seed=1, out=tmp / "logs"))
    ingest_paths(logs.files, layout)
    dataset = build_dataset(layout, BuildConfig(name="bench", sources=["forge"])).dataset
    result = train_bc(layout, BCConfig(dataset="bench", epochs=3, patience=10, run_id="bench"), out=tmp / "bc")
    features, labels, masks, weights = read_split(dataset, "train")
    actor = ActorNet(PolicySpec())
    optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
    x, y, m = torch.from_numpy(features), torch.from_numpy(labels), torch.from_numpy(masks)
    start = time.perf_counter()
    for _ in range(3):
        order = torch.randperm(len(y))
        for i in range(0, len(y), 1024):
            rows = order[i : i + 1024]
            loss = torch.nn.functional.cross_entropy(actor.masked_logits(x[rows], m[rows]), y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    plain = 3 * len(y) / (time.perf_counter() - start)
    return {
        "bc_rows": len(y),
        "bc_samples_per_s": result.samples_per_second,
        "bc_plain_torch_samples_per_s": round(plain, 1),
        "bc_ours_vs_plain": round(result.samples_per_second / plain, 2),
        "bc_holdout_accuracy": result.holdout_accuracy,
        "bc_checkpoint": str(result.checkpoint),
    }


def eval_figures(checkpoint: str) -> dict[str, float]:
    from toolkit.train.agents import load_agent
    from toolkit.train.evaluate import EvaluateConfig, evaluate

    agent = load_agent(Path(checkpoint))
    result = evaluate(agent.player, EvaluateConfig(opponents=("heuristic",) * 3, games=400, seed=3))
    return {
        "eval_games_per_s": result.games_per_second,
        "eval_decisions_per_s": result.decisions_per_second,
        "bc_vs_3_heuristics_win_rate": result.win_rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100_000, help="PPO steps with the defaults")
    parser.add_argument("--baseline-steps", type=int, default=8_192, help="PPO steps on the single-game env path")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        figures = {**bc_figures(Path(tmp))}
        figures.update(eval_figures(figures.pop("bc_checkpoint")))
        figures.update(ppo_figures(args.steps, args.baseline_steps, Path(tmp)))
        figures.update(vec_env_figures())
    for key, value in figures.items():
        print(f"{key:42s} {value}")
    checks = [
        ("PPO end to end, defaults", figures["ppo_defaults_steps_per_s"] >= PPO_TARGET, f">= {PPO_TARGET:,} steps/s"),
        (
            "PPO vectorised / single-game env path",
            figures["ppo_vectorised_vs_single_game"] >= PPO_RATIO_TARGET,
            f">= {PPO_RATIO_TARGET:.0f}x",
        ),
        (
            "vectorised env, random agent",
            figures["vec_env_random_agent_steps_per_s"] >= VEC_ENV_TARGET,
            f">= {VEC_ENV_TARGET:,} steps/s",
        ),
    ]
    for label, ok, target in checks:
        print(f"target {label}: {target}: {'met' if ok else 'NOT MET'}")


if __name__ == "__main__":
    main()
