"""The trainers' configs: what ``distill train bc``, ``train ppo`` and ``evaluate`` do, and the network's shape.

Each field is a YAML key and, where the command has one, a flag built from the field itself (its description,
default and bounds: :func:`toolkit.cli.app.model_option`). This module imports no torch, so the CLI can build its
options from these models at start-up; the trainers (:mod:`toolkit.train.bc`, :mod:`toolkit.train.ppo`,
:mod:`toolkit.train.evaluate`, :mod:`toolkit.train.export`) import torch when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolkit.datasets.ref import split_build_field
from toolkit.game import DEFAULT_MAX_ROUNDS, PLAYER_TYPES, Compression
from toolkit.limits import (
    MAX_BATCH,
    MAX_COEF,
    MAX_EPOCHS,
    MAX_GAMES,
    MAX_MB,
    MAX_ROLLOUT,
    MAX_ROWS,
    MAX_SEED,
    MAX_STEPS,
    MAX_UPDATES,
    LayerSize,
    MaxRounds,
)

if TYPE_CHECKING:
    from toolkit.train.checkpoints import Kind

SELF: Final = "self"  # the learner's own current policy, as a league entrant


# How a learning rate moves over training: held, or falling linearly (PPO's to a fraction of itself, the fold models
# of ``distill check labels`` to zero).
LrSchedule = Literal["constant", "linear"]


class PolicySpec(BaseModel):
    """The network's shape; the same spec builds the BC net and the PPO policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pi: tuple[LayerSize, ...] = Field(
        (128, 128), min_length=1, max_length=64, description="Hidden sizes of the actor (policy) MLP."
    )
    vf: tuple[LayerSize, ...] = Field(
        (128, 128), min_length=1, max_length=64, description="Hidden sizes of the critic (value) MLP (PPO only)."
    )
    activation: Literal["tanh", "relu"] = Field("tanh", description="Activation between layers, actor and critic.")


# The behaviour-cloning settings a loop's student shares with `distill train bc` (toolkit.loop.config.StudentConfig):
# one type each (bounds, description); each config sets its own default.
Epochs = Annotated[int, Field(ge=1, le=MAX_EPOCHS, description="Most passes over the train split.")]
BatchRows = Annotated[int, Field(ge=1, le=MAX_BATCH, description="Rows per gradient step.")]
LearningRate = Annotated[float, Field(gt=0, le=1, description="Adam learning rate.")]
Selection = Annotated[
    Literal["holdout_loss", "last_epoch"],
    Field(
        description="Which weights to keep: those of the lowest holdout loss (early stopping), or the last epoch's "
        "(for a student distilled from a teacher that plays unlike the holdout's source)."
    ),
]
Patience = Annotated[
    int,
    Field(ge=1, le=MAX_EPOCHS, description="Epochs without holdout-loss improvement before stopping (holdout_loss)."),
]


class BCConfig(BaseModel):
    """Everything `distill train bc` does; each field is a YAML key and most are flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str = Field(description="The build to train on: NAME (its latest) or NAME@FINGERPRINT (--dataset).")
    fingerprint: str | None = Field(None, description="A specific build of it; default: its latest (--fingerprint).")

    @model_validator(mode="before")
    @classmethod
    def _one_build_reference(cls, data: Any) -> Any:
        return split_build_field(data, "dataset")

    allow_retired: bool = Field(
        False,
        description="Train on a build that read batches the lake has retired since (--allow-retired); without it, "
        "such a build is refused, naming each batch and why it was retired.",
    )
    run_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="Names this run's files; default: UTC time + random suffix (--run-id).",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds the initial weights and the shuffles (--seed).")
    epochs: Epochs = 20
    batch_size: BatchRows = 1024
    read_batch_rows: int = Field(
        65_536, ge=1, le=MAX_ROWS, description="Rows read from Parquet at a time (and shuffled together)."
    )
    cache_mb: int = Field(
        2048,
        ge=0,
        le=MAX_MB,
        description="Keep the decoded train split in memory across epochs when it takes at most this many MiB "
        "(0: read it from Parquet every epoch). The minibatches are the same either way.",
    )
    learning_rate: LearningRate = 1e-3
    weight_decay: float = Field(0.0, ge=0, le=MAX_COEF, description="Adam weight decay.")
    use_sample_weights: bool = Field(True, description="Weight each row's loss by its sample_weight.")
    class_weighting: Literal["none", "balanced"] = Field(
        "none", description="balanced: also weight rows by the inverse frequency of their label (--class-weighting)."
    )
    select: Selection = "holdout_loss"
    patience: Patience = 3
    min_delta: float = Field(
        1e-4, ge=0, le=MAX_COEF, description="Smallest holdout-loss decrease that counts as improvement."
    )
    policy: PolicySpec = Field(
        default_factory=PolicySpec, description="Network shape (must match PPO's to warm-start)."
    )
    generation: int | None = Field(
        None, ge=0, le=999, description="Loop generation stamped on the card (--generation)."
    )
    torch_threads: int = Field(1, ge=1, le=64, description="torch threads (1 is fastest for small nets on 2 cores).")
    tensorboard: bool | None = Field(
        None,
        description="Training curves as TensorBoard event files too: None when "
        "the tensorboard package is installed, True to require it (CSV is always written).",
    )


class EvaluateConfig(BaseModel):
    """How to evaluate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    opponents: tuple[str, ...] = Field(
        ("heuristic",) * 3,
        min_length=1,
        max_length=5,
        description="The other seats, comma-separated, in seat order: player types (random, heuristic, tuned) and "
        "checkpoints (card .json, .safetensors or their stem; relative paths are looked up here, then under the data "
        "root), mixed as you like; with --engine, ai:PROFILE seats the engine's own AI of that profile. Head to "
        "head: --policy gen2.json --vs gen1.json,gen1.json,gen1.json (--vs).",
    )
    games: int = Field(
        200, ge=1, le=MAX_GAMES, description="Games in all, rounded up to a multiple of the pod size (--games)."
    )
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Seed of the deals; the same deals are replayed for every seat (--seed)."
    )
    max_rounds: MaxRounds = DEFAULT_MAX_ROUNDS
    batch_size: int = Field(256, ge=1, le=MAX_BATCH, description="Games stepped at once.")


class ExportConfig(BaseModel):
    """Which decisions the exporter writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="Write the learner's decisions at all (--export/--no-export).")
    games: int = Field(
        1000,
        ge=0,
        le=MAX_GAMES,
        description="Games the trained policy plays against the league after training, "
        "its decisions written as the teacher's labels (--export-games).",
    )
    only_wins: bool = Field(
        False,
        description="Keep only the episodes the agent won; by default every episode: a teacher's play is worth "
        "learning in the games it loses too (--wins-only/--all-games).",
    )
    min_decisions: int = Field(
        3, ge=1, le=MAX_ROWS, description="Skip episodes with fewer learner decisions than this."
    )
    episodes_per_flush: int = Field(
        256, ge=1, le=MAX_GAMES, description="Episodes buffered before rows are built and written."
    )
    compression: Compression = Field("none", description="none, gzip or zstd.")
    export_eval: bool = Field(True, description="Also write evaluation games, as source `<source>-eval`.")


_RECURRENT_DEFAULTS = {"n_steps": 16, "batch_size": 2048, "n_epochs": 4}
_FLAT_DEFAULTS = {"n_steps": 16, "batch_size": 1024, "n_epochs": 4}


class CurriculumStage(BaseModel):
    """One stage of the opponent curriculum."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Shown in the metrics (e.g. easy, medium, hard).")
    opponents: tuple[str, ...] = Field(min_length=1, description="The pool of this stage (names or checkpoints).")
    promote_win_rate: float = Field(
        0.5, gt=0, le=1, description="Move on when an evaluation against this stage's pool reaches this win rate..."
    )
    min_steps: int = Field(
        0, ge=0, le=MAX_STEPS, description="...and at least this many steps were spent in the stage."
    )


class PPOConfig(BaseModel):
    """Everything `distill train ppo` does; each field is a YAML key and most are flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy_kind: Literal["flat", "recurrent"] = Field(
        "flat", description="MaskablePPO (flat) or RecurrentPPO with an LSTM (--policy)."
    )
    run_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="Names this run's files; default: UTC time + random suffix (--run-id).",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds the model, the envs and the opponent draws (--seed).")
    total_steps: int = Field(100_000, ge=1, le=MAX_STEPS, description="Learner decisions to train on (--steps).")
    n_envs: int = Field(512, ge=1, le=4096, description="Games stepped together in the vectorised env (--envs).")
    n_steps: int | None = Field(None, ge=2, le=MAX_ROLLOUT, description="Steps per env per rollout; default 16.")
    batch_size: int | None = Field(
        None, ge=2, le=MAX_BATCH, description="Minibatch size; default 1024 (flat), 2048 (recurrent)."
    )
    n_epochs: int | None = Field(None, ge=1, le=MAX_EPOCHS, description="Passes over each rollout; default 4.")
    learning_rate: float = Field(3e-4, gt=0, le=1, description="Initial learning rate (--lr).")
    lr_schedule: LrSchedule = Field(
        "linear", description="constant, or linear down to lr_final_fraction x the initial rate at the end."
    )
    lr_final_fraction: float = Field(0.1, ge=0, le=1, description="Final rate of the linear schedule, as a fraction.")
    gamma: float = Field(0.995, gt=0, le=1, description="Discount factor (a game is ~30-60 learner decisions).")
    gae_lambda: float = Field(0.95, ge=0, le=1, description="GAE lambda.")
    clip_range: float = Field(0.2, gt=0, le=1, description="PPO ratio clip.")
    ent_coef: float = Field(
        0.01, ge=0, le=1, description="Entropy bonus (keeps a sharp BC start exploring) (--ent-coef)."
    )
    vf_coef: float = Field(0.5, ge=0, le=MAX_COEF, description="Value loss weight.")
    max_grad_norm: float = Field(
        0.5, gt=0, le=MAX_COEF, description="Gradient clipping norm (the norm is logged before clipping)."
    )
    target_kl: float | None = Field(
        None, gt=0, le=MAX_COEF, description="Stop an update's epochs early beyond this KL."
    )
    critic_warmup_updates: int = Field(
        0, ge=0, le=MAX_UPDATES, description="Updates with the actor frozen, training only the critic."
    )
    policy: PolicySpec = Field(
        default_factory=PolicySpec, description="Network shape; taken from the BC checkpoint when warm-starting."
    )
    lstm_hidden: int = Field(128, ge=1, le=4096, description="LSTM hidden size (recurrent) (--lstm-hidden).")
    warm_start: Path | None = Field(
        None,
        description="Checkpoint to start from: a flat PPO one gives its whole policy, critic included; a BC one its "
        "actor (--warm-start).",
    )
    opponents: tuple[str, ...] = Field(
        ("heuristic", "tuned", "self"),
        min_length=1,
        description="The league each opponent seat is drawn from per episode: "
        "heuristic, tuned, random, self, or a checkpoint path (--opponents).",
    )
    opponent_weights: tuple[Annotated[float, Field(ge=0, le=MAX_COEF)], ...] | None = Field(
        None,
        description="Relative weight of each opponent in the draw, comma-separated (e.g. 1,1,2); default: equal "
        "(--opponent-weights).",
    )
    opponent_mirror: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of episodes (training and export) whose opponent seats all hold one player drawn from "
        "the league: the learner against three copies, where passive players stall (--mirror).",
    )
    curriculum: tuple[CurriculumStage, ...] = Field(
        (), description="Stages of opponent pools with promotion rules; replaces `opponents` when given."
    )
    pod_size: int = Field(4, ge=2, le=6, description="Seats at the table.")
    max_rounds: MaxRounds = DEFAULT_MAX_ROUNDS
    turn_limit_reward: float = Field(
        -1.0,
        ge=-10,
        le=0,
        description="The learner's terminal reward at the turn limit (-1: the same as a loss; lower makes a stall "
        "cost more than a loss).",
    )
    eval_every: int = Field(
        20_000, ge=0, le=MAX_STEPS, description="Steps between evaluations; 0: only before and after (--eval-every)."
    )
    eval_games: int = Field(100, ge=1, le=MAX_GAMES, description="Games per evaluation, seats rotated (--eval-games).")
    eval_opponents: tuple[str, ...] = Field(
        ("heuristic",) * 3, min_length=1, description="Opponents of the evaluation pods, comma-separated (--eval-vs)."
    )
    generation: int = Field(
        0, ge=0, le=999, description="Loop generation: model_version gen-NNN on exports and cards (--generation)."
    )
    export: ExportConfig = Field(default_factory=ExportConfig, description="The decision exporter.")
    torch_threads: int = Field(1, ge=1, le=64, description="torch threads; 1 is fastest for small nets on a busy box.")
    tensorboard: bool | None = Field(
        None,
        description="Training curves as TensorBoard event files too: None when "
        "the tensorboard package is installed, True to require it (CSV is always written).",
    )

    @model_validator(mode="after")
    def _check(self) -> PPOConfig:
        for name in (*self.opponents, *(o for s in self.curriculum for o in s.opponents)):
            if name not in (*PLAYER_TYPES, SELF) and not name.endswith((".json", ".safetensors")):
                raise ValueError(f"opponent {name!r}: use {', '.join(PLAYER_TYPES)}, {SELF} or a checkpoint .json")
        if self.policy_kind == "recurrent" and SELF in self.opponents:
            raise ValueError("opponent 'self' is for the flat policy; use a checkpoint of the recurrent one")
        if self.opponent_weights is not None and (
            len(self.opponent_weights) != len(self.opponents)
            or min(self.opponent_weights) < 0
            or sum(self.opponent_weights) <= 0
        ):
            raise ValueError("opponent_weights: one non-negative weight per opponent, not all zero")
        for name in self.eval_opponents:
            if name not in PLAYER_TYPES:
                raise ValueError(f"eval opponent {name!r}: use {', '.join(PLAYER_TYPES)}")
        return self

    def resolved(self, key: str) -> int:
        """n_steps / batch_size / n_epochs, defaulted by policy kind."""
        value = getattr(self, key)
        return (
            value
            if value is not None
            else (_RECURRENT_DEFAULTS if self.policy_kind == "recurrent" else _FLAT_DEFAULTS)[key]
        )

    @property
    def kind(self) -> Kind:
        return "ppo-recurrent" if self.policy_kind == "recurrent" else "ppo"
