"""What a closed loop does: :class:`LoopConfig`, one YAML file, every field documented.

The defaults are the README's demo: a small loop that runs at least two
generations end to end on a 2-core laptop in minutes. Scale ``bootstrap``,
``ppo.total_steps`` and the gates up for real work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolkit.build.config import HoldoutConfig
from toolkit.config import load_config as load_model

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"


class BootstrapConfig(BaseModel):
    """Generation 0: the Forge stand-in's games (or existing logs) that the first BC model learns from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    games: int = Field(300, ge=1, description="Heuristic games to simulate (0 when `logs` are given).")
    players: tuple[str, ...] = Field(
        ("heuristic", "tuned", "heuristic", "tuned"), description="The simulated table (their role is forge)."
    )
    logs: list[Path] = Field(default_factory=list, description="Existing Forge logs to ingest instead of simulating.")


class DataConfig(BaseModel):
    """How each generation's dataset is built (see ``distill build``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weight_mode: Literal["ratio", "share"] = "ratio"
    weights: dict[str, float] = Field(
        default_factory=lambda: {"forge": 1.0, "ppo": 0.5, "random": 0.0, "ppo-eval": 0.0},
        description="Per-source weights or shares (forge 1.0, ppo 0.5 by default).",
    )
    min_reward: float | None = Field(None, description="Minimum episode return of policy-written episodes.")
    wins_only: list[str] = Field(default_factory=list, description="Sources of which only won episodes are kept.")
    holdout: HoldoutConfig = Field(default_factory=HoldoutConfig, description="The FIXED holdout; never change it mid-loop.")
    other_runs: Literal["exclude", "include"] = Field(
        "exclude",
        description="Batches of files other loop runs of the same data root wrote (runs/<other>/: their bootstrap "
        "logs and self-play exports): left out of this run's datasets (default), or used like any other data. "
        "Logs from anywhere else (e.g. real Forge logs, also when a run's bootstrap ingests them) always count.",
    )


class BCStepConfig(BaseModel):
    """Behaviour cloning in each generation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    epochs: int = Field(8, ge=1, description="Most passes over the train split.")
    batch_size: int = Field(1024, ge=1)
    learning_rate: float = Field(1e-3, gt=0)
    patience: int = Field(2, ge=1, description="Epochs without holdout improvement before stopping.")
    hidden: tuple[int, ...] = Field((128, 128), description="Hidden layers (shared with PPO's actor).")


class PPOStepConfig(BaseModel):
    """Self-play PPO in each generation, warm-started from the current BC model
    (or from the last promoted PPO model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warm_start: Literal["bc", "ppo"] = Field(
        "bc",
        description="bc: start from the promoted BC student (PPO re-learns from the distilled policy each "
        "generation); ppo: continue the last promoted PPO model (the BC student before one is promoted).",
    )
    total_steps: int = Field(20_000, ge=64, description="Learner decisions per attempt.")
    n_envs: int = Field(8, ge=1)
    n_steps: int = Field(256, ge=8, description="Steps per env per rollout.")
    batch_size: int = Field(512, ge=8)
    n_epochs: int = Field(4, ge=1)
    learning_rate: float = Field(3e-4, gt=0, description="Initial learning rate (retries scale it).")
    ent_coef: float = Field(0.01, ge=0, description="Entropy bonus (retries raise it).")
    opponents: tuple[str, ...] = Field(
        ("heuristic", "tuned", "random", "self"), description="Opponent pool: heuristic, tuned, random, self."
    )
    eval_games: int = Field(40, ge=4, description="Games of PPO's own end-of-run evaluation.")
    export_losses: bool = Field(False, description="Export the learner's lost episodes too (default: wins only).")


class WinRateGateConfig(BaseModel):
    """Step 2: the PPO agent must beat the heuristic table, by a sequential test or a fixed threshold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["sprt", "threshold"] = Field("sprt", description="SPRT, or the origin's fixed threshold.")
    score: Literal["win", "placement"] = Field(
        "win",
        description="Test wins (Commander's only result), or the placement score (1, 2/3, 1/3, 0; decides sooner, "
        "but an all-in agent that wins often and dies first otherwise scores no better than the table).",
    )
    p0: float | None = Field(None, gt=0, lt=1, description="H0 (default 0.25 for wins, 0.5 for placement).")
    p1: float | None = Field(None, gt=0, lt=1, description="H1 (default 0.30 for wins, 0.55 for placement).")
    alpha: float = Field(0.05, gt=0, lt=0.5)
    beta: float = Field(0.05, gt=0, lt=0.5)
    min_games: int = Field(40, ge=1, description="Games before the test may decide.")
    max_games: int = Field(400, ge=4, description="Games after which an undecided test fails.")
    games_per_round: int = Field(40, ge=4, description="Games per round (seat-rotated groups of the same deals).")
    threshold: float = Field(0.30, gt=0, lt=1, description="Threshold mode: pass at this win rate or above...")
    threshold_games: int = Field(20, ge=1, description="...over at least this many games.")
    opponents: tuple[str, ...] = Field(("heuristic", "heuristic", "heuristic"), description="The gate's table.")

    def hypotheses(self) -> tuple[float, float]:
        default = (0.25, 0.30) if self.score == "win" else (0.5, 0.55)
        return (self.p0 or default[0], self.p1 or default[1])

    @model_validator(mode="after")
    def _ordered(self) -> WinRateGateConfig:
        p0, p1 = self.hypotheses()
        if not p0 < p1:
            raise ValueError(f"p0 ({p0}) must be below p1 ({p1})")
        if self.min_games > self.max_games:
            raise ValueError("min_games must not exceed max_games")
        return self


class RegressionGateConfig(BaseModel):
    """Step 5: the new BC model's accuracy on the FIXED holdout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    floor: float = Field(0.35, ge=0, le=1, description="Minimum holdout accuracy.")
    margin: float = Field(0.03, ge=0, le=1, description="Largest allowed drop below the previous generation's model.")


class RetryConfig(BaseModel):
    """What a failed generation changes before it tries again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(1, ge=0, description="Attempts after the first.")
    lr_factor: float = Field(0.5, gt=0, description="PPO learning rate x this per retry.")
    ent_coef_step: float = Field(0.005, ge=0, description="PPO entropy coefficient + this per retry.")
    on_failure: Literal["continue", "stop"] = Field(
        "continue", description="After the last failed attempt: record it and go on with the old models, or stop."
    )


class ConvergenceConfig(BaseModel):
    """When to stop before max_generations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: int = Field(3, ge=2, description="Generations the plateau rule looks back over.")
    min_win_rate_gain: float = Field(0.01, ge=0, description="Plateau: the gated win rate rose less than this over the window.")
    min_rating_gain: float | None = Field(None, description="Stop when the best ordinal rose less than this in a generation.")


class TournamentStepConfig(BaseModel):
    """Step 7: the rating tournament."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deals_per_lineup: int = Field(4, ge=1, description="Deals per lineup, each played in every seat rotation.")
    baselines: tuple[str, ...] = Field(("heuristic", "tuned", "random"), description="Fixed anchors of the pool.")


class LoopConfig(BaseModel):
    """A closed loop: bootstrap, then generations of self-play -> gates -> merge -> BC."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("demo", pattern=NAME_PATTERN, description="Run folder runs/<name> and dataset loop-<name>.")
    seed: int = Field(0, ge=0, description="Seeds everything; each step derives its own seed from it.")
    max_generations: int = Field(2, ge=1, le=999, description="Generations after the bootstrap (generation 0).")
    max_rounds: int = Field(30, ge=1, le=1000, description="Rounds before a game is truncated.")
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    bc: BCStepConfig = Field(default_factory=BCStepConfig)
    ppo: PPOStepConfig = Field(default_factory=PPOStepConfig)
    win_rate_gate: WinRateGateConfig = Field(default_factory=WinRateGateConfig)
    regression_gate: RegressionGateConfig = Field(default_factory=RegressionGateConfig)
    data_gate: bool = Field(True, description="Run the lake suite on each new batch (blocking failures reject it).")
    data_gate_suite: Path | None = Field(None, description="Lake suite for new batches (default: checks/lake.json).")
    data_gate_entropy_floor: float | None = Field(
        None, ge=0, le=1, description="Override the suite's action-entropy floor (ratio to the maximum) for new batches."
    )
    retry: RetryConfig = Field(default_factory=RetryConfig)
    convergence: ConvergenceConfig = Field(default_factory=ConvergenceConfig)
    tournament: TournamentStepConfig = Field(default_factory=TournamentStepConfig)

    @property
    def dataset(self) -> str:
        return f"loop-{self.name}"


def load_loop_config(path: str | Path | None = None, **overrides: object) -> LoopConfig:
    """A :class:`LoopConfig` from YAML (optional) with ``overrides`` (flags, dotted keys for nested fields) on top.

    Raises:
        ConfigError: naming each invalid field.
    """
    return load_model(LoopConfig, Path(path) if path is not None else None, overrides)
