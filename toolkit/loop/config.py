"""What a closed loop does: :class:`LoopConfig`, one YAML file, every field documented.

The defaults are the measured ones (``bench/bench_learning.py``): each
generation trains PPO for 500k steps on the vectorised game, continuing the
last promoted PPO model, against a league of heuristics, earlier
generations and itself; its final policy plays 2,000 games whose decisions
(every episode, wins and losses) are the next student's training rows; PPO
and student alike are promoted only when they beat the previous promoted
model head to head, in its own pod, on paired deals (``head_to_head``), and
are not worse against the scripted table (``strength_gate``); an exploiter
probe measures each promoted student's exploitability (``exploiter``). The Forge-role data trains the first student and
stays the FIXED holdout every student is measured on. The README's demo
runs two generations of it in a few minutes on a 2-core laptop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolkit.config import map_paths
from toolkit.datasets.config import HoldoutConfig
from toolkit.engine.config import EngineConfig
from toolkit.game import DEFAULT_MAX_ROUNDS
from toolkit.game.config import DealsPerLineup
from toolkit.jobs.config import BackendConfig
from toolkit.layout import NAME_PATTERN, RUN_CONFIG_FORMAT_VERSION, Layout
from toolkit.limits import (
    MAX_BATCH,
    MAX_COEF,
    MAX_DEALS,
    MAX_ENVS,
    MAX_EPOCHS,
    MAX_GAMES,
    MAX_MODELS,
    MAX_RATE,
    MAX_REWARD,
    MAX_ROLLOUT,
    MAX_SEED,
    MAX_STEPS,
    MAX_UPDATES,
    LayerSize,
    MaxRounds,
    SourceWeight,
)
from toolkit.train.config import BatchRows, Epochs, LearningRate, Patience, Selection

TEACHER_SOURCE = "ppo"  # the role PPO's exported decisions carry in the lake


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BootstrapConfig(_Config):
    """Generation 0: the Forge stand-in's games (or existing logs) that the first student learns from."""

    games: int = Field(
        300, ge=1, le=MAX_GAMES, description="Heuristic games to simulate (unused when `logs` are given)."
    )
    players: tuple[str, ...] = Field(
        ("heuristic", "tuned", "heuristic", "tuned"), description="The simulated table (their role is forge)."
    )
    logs: list[Path] = Field(
        default_factory=list,
        description="Existing logs to ingest instead of simulating (e.g. real Forge logs: JSONL files or folders "
        "of them; relative paths from the folder the loop starts in). The loop never deletes them.",
    )


class DataConfig(_Config):
    """How each generation's dataset is built (see ``distill build``).

    Generation 0's student learns the bootstrap (Forge-role) data alone. From
    generation 1 the student learns the teacher: measured on the same teacher
    exports, a share of Forge-role rows in its training pulled it back to the
    heuristic's play (generation 2 of the reference run: 75% against three
    heuristics with 0% Forge rows, 59% with 5%, 32% with 30%, while its
    teacher won 74%); ``distill ablate`` on today's demo lake measures a
    smaller cost, -0.6 points at 5% and -2.8 at 30% (the README). The
    Forge-role data keeps its role: the FIXED holdout and the accuracy guard
    measure every student on it.
    """

    weight_mode: Literal["ratio", "share"] = Field(
        "share",
        description="share: `weights` are each source's target share of the training rows (unlisted sources "
        "dropped); ratio: a weight below 1 keeps that fraction of a source's games, above 1 draws more, 0 drops "
        "it (see `distill build --mode`).",
    )
    weights: dict[str, SourceWeight] = Field(
        default_factory=lambda: {"forge": 0.0, TEACHER_SOURCE: 1.0, "random": 0.0, "ppo-eval": 0.0},
        description="Per-source shares (or ratios) of the students' datasets from generation 1 on.",
    )
    teacher_generations: int = Field(
        1,
        ge=1,
        le=MAX_MODELS,
        description="The student learns from the teacher exports of this many latest generations (measured: "
        "wider windows, equal or decaying, gained nothing head to head and cost up to 2.8 points against the "
        "scripted tables; the README's 'More than the latest teacher?').",
    )
    teacher_decay: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Within the teacher window, generation g's exports weigh decay^(newest - g) (KataGo's "
        "shuffle window; `distill build --generation-decay`). null: the window's generations weigh the same.",
    )
    min_reward: float | None = Field(
        None, ge=-MAX_REWARD, le=MAX_REWARD, description="Minimum episode return of policy-written episodes."
    )
    wins_only: list[str] = Field(default_factory=list, description="Sources of which only won episodes are kept.")
    holdout: HoldoutConfig = Field(
        default_factory=HoldoutConfig, description="The FIXED holdout; never change it mid-loop."
    )
    other_runs: Literal["exclude", "include"] = Field(
        "exclude",
        description="Batches of files other loop runs of the same data root wrote (runs/<other>/: their bootstrap "
        "logs and self-play exports): left out of this run's datasets (default), or used like any other data. "
        "Logs from anywhere else (e.g. real Forge logs, also when a run's bootstrap ingests them) always count.",
    )


class StudentConfig(_Config):
    """Behaviour cloning of the student in each generation."""

    # distill train bc's own settings (one type each, toolkit.train.config); the loop's defaults: a student learns
    # a teacher that plays unlike the holdout's Forge-role source, so it keeps its last epoch's weights
    epochs: Epochs = 8
    batch_size: BatchRows = 1024
    learning_rate: LearningRate = 1e-3
    select: Selection = "last_epoch"
    patience: Patience = 2
    hidden: tuple[LayerSize, ...] = Field(
        (128, 128), max_length=64, description="Hidden layers (shared with PPO's actor)."
    )


class LeagueConfig(_Config):
    """Who PPO plays against: each opponent seat is drawn per episode with these relative weights.

    The past generations kept are the ``past_models`` latest promoted models
    plus a sample of ``older_models`` of the ones before them (drawn from the
    loop's seed, so a resumed run keeps the same league). With
    ``past_weighting: pfsp`` the ``past`` weight is split among them by
    prioritised fictitious self-play (AlphaStar's ``f_hard``): each past
    model's share is proportional to ``(1 - x) ** pfsp_power``, where ``x`` is
    the learner's measured pairwise win rate against it (from the last
    generation's training games that seated it; unmeasured models count as
    even, x = 0.5). See ``toolkit.game.league.pfsp_weights``.
    """

    heuristic: float = Field(1.0, ge=0, le=MAX_COEF, description="The reference heuristic (the Forge stand-in).")
    tuned: float = Field(1.0, ge=0, le=MAX_COEF, description="The tuned heuristic.")
    random: float = Field(0.0, ge=0, le=MAX_COEF, description="The random player.")
    self: float = Field(1.0, ge=0, le=MAX_COEF, description="The learner's own current policy.")
    past: float = Field(
        1.0,
        ge=0,
        le=MAX_COEF,
        description="Earlier generations' promoted students and PPO models, this weight split among them "
        "(evenly, or by PFSP: past_weighting).",
    )
    past_models: int = Field(
        4, ge=0, le=MAX_MODELS, description="How many of the latest earlier models the league keeps."
    )
    older_models: int = Field(
        2,
        ge=0,
        le=MAX_MODELS,
        description="How many of the models before those it keeps too, a seeded sample (0: none).",
    )
    past_weighting: Literal["even", "pfsp"] = Field(
        "pfsp", description="Split `past` evenly, or by prioritised fictitious self-play (the hardest most)."
    )
    pfsp_power: float = Field(2.0, gt=0, le=MAX_COEF, description="PFSP's f_hard exponent p in (1 - x) ** p.")
    mirror: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Share of training and export games whose three opponent seats hold one drawn player: the "
        "learner against three copies of itself, of a past model or of a heuristic, the tables it is promoted "
        "and measured on (0: every seat drawn on its own; the README's 'Does the student get stronger?').",
    )

    @model_validator(mode="after")
    def _some_weight(self) -> LeagueConfig:
        if self.heuristic + self.tuned + self.random + self.self + self.past <= 0:
            raise ValueError("give the league at least one positive weight")
        return self


class PPOStepConfig(_Config):
    """Self-play PPO in each generation."""

    warm_start: Literal["ppo", "student"] = Field(
        "ppo",
        description="ppo: continue the last promoted PPO model, critic included (generation 1 starts from the "
        "student); student: start every generation from the promoted student's actor.",
    )
    total_steps: int = Field(500_000, ge=64, le=MAX_STEPS, description="Learner decisions per attempt.")
    n_envs: int = Field(512, ge=1, le=MAX_ENVS, description="Games stepped together.")
    n_steps: int = Field(16, ge=8, le=MAX_ROLLOUT, description="Steps per env per rollout.")
    batch_size: int = Field(1024, ge=8, le=MAX_BATCH, description="Minibatch size of the PPO update.")
    n_epochs: int = Field(4, ge=1, le=MAX_EPOCHS, description="Passes over each rollout in the PPO update.")
    learning_rate: float = Field(3e-4, gt=0, le=MAX_RATE, description="Learning rate (retries scale it).")
    lr_schedule: Literal["constant", "linear"] = Field(
        "constant", description="constant (measured best when each generation continues the last), or linear decay."
    )
    ent_coef: float = Field(0.01, ge=0, le=MAX_COEF, description="Entropy bonus (retries raise it).")
    critic_warmup_updates: int = Field(
        3,
        ge=0,
        le=MAX_UPDATES,
        description="Updates that train only the critic when PPO starts "
        "from a student (whose critic does not exist yet).",
    )
    turn_limit_reward: float = Field(
        -2.0,
        ge=-10,
        le=0,
        description="The learner's terminal reward when a training game ends at the turn limit (-1: the same as a "
        "loss; -2, measured best: a stall costs more than a loss, a push towards closing games; the README's "
        "'Does the student get stronger?').",
    )
    league: LeagueConfig = Field(default_factory=LeagueConfig)
    export_games: int = Field(
        2000,
        ge=1,
        le=MAX_GAMES,
        description="Games the trained policy plays against the league; all its "
        "decisions (wins and losses) are exported as the teacher's labels.",
    )


class SequentialConfig(_Config):
    """A paired GSPRT's hypotheses, error rates and budget (shared by the head-to-head and scripted gates)."""

    delta0: float = Field(0.0, ge=-1, lt=1, description="H0: the mean paired win difference (0: no better).")
    delta1: float = Field(0.03, gt=-1, le=1, description="H1: the gain worth detecting (win-rate points / 100).")
    alpha: float = Field(0.05, gt=0, lt=0.5, description="Chance of accepting H1 when H0 holds (a false promotion).")
    beta: float = Field(0.1, gt=0, lt=0.5, description="Chance of refusing a model better by delta1.")
    min_deals: int = Field(50, ge=1, le=MAX_DEALS, description="Deals (each in every seat) before the test may decide.")
    max_deals: int = Field(1500, ge=1, le=MAX_DEALS, description="Deals after which an undecided test fails.")
    deals_per_round: int = Field(250, ge=1, le=MAX_DEALS, description="Deals played at a time.")

    @model_validator(mode="after")
    def _ordered(self) -> SequentialConfig:
        if not self.delta0 < self.delta1:
            raise ValueError(f"delta0 ({self.delta0}) must be below delta1 ({self.delta1})")
        if self.min_deals > self.max_deals:
            raise ValueError("min_deals must not exceed max_deals")
        return self


class HeadToHeadConfig(SequentialConfig):
    """Promotion: a candidate must beat the previous promoted model of its kind in the pod itself.

    Tables: three copies of the previous model, and ``past_tables`` mixed
    tables (the previous model and two copies of one of the league's other
    past models). Each deal is played at every table twice per seat: with
    the candidate in that seat, and with the previous model in that same
    seat (the other seats unchanged). A deal's unit is the candidate's wins
    minus the previous model's, averaged over seats and tables (in [-1, 1]);
    "beats" means the GSPRT on those units accepts H1 (mean ``delta1``)
    against H0 (mean ``delta0``, no better). A game at the turn limit is no
    win for anyone.
    """

    past_tables: int = Field(
        2, ge=0, le=MAX_MODELS, description="Mixed tables, one per latest other past model of the league."
    )
    max_deals: int = Field(1000, ge=1, le=MAX_DEALS, description="Deals after which an undecided test fails.")
    deals_per_round: int = Field(200, ge=1, le=MAX_DEALS, description="Deals played at a time (at every table).")


class StrengthGateConfig(SequentialConfig):
    """The scripted floor: the candidate must not be worse than the previous promoted model against scripts.

    Both play the same deals in every seat against ``opponents``; each deal's
    unit is the candidate's wins minus the baseline's, averaged over the
    seats. A GSPRT on those units (H0: mean ``delta0``, H1: mean ``delta1``)
    decides after ``min_deals``, or fails undecided at ``max_deals``. The
    defaults test non-inferiority (H0: 3 points worse, H1: no worse): the
    head-to-head gate decides promotion, this one keeps a candidate from
    trading the scripted tables away. Set ``delta0: 0, delta1: 0.03`` to ask
    it to be better.
    """

    opponents: tuple[str, ...] = Field(("heuristic", "tuned", "tuned"), description="The table both play against.")
    delta0: float = Field(-0.03, ge=-1, lt=1, description="H0: the mean paired win difference (-0.03: worse).")
    delta1: float = Field(0.0, gt=-1, le=1, description="H1: the mean paired win difference (0: no worse).")


class FloorConfig(_Config):
    """The seed's absolute floor for merging PPO's export: a fixed-size evaluation against the floor's table."""

    win_rate: float | None = Field(
        0.30, ge=0, lt=1, description="The PPO model's win rate must exceed this (None: no floor)..."
    )
    games: int = Field(400, ge=4, le=MAX_GAMES, description="...over this many games (seats rotated)...")
    opponents: tuple[str, ...] = Field(("heuristic",) * 3, description="...against this table.")


class AccuracyGuardConfig(_Config):
    """A guard on the student's imitation of the FIXED Forge holdout (not what decides promotion).

    A student that learns a stronger teacher imitates the heuristic less:
    measured in the reference run, holdout accuracy fell from 0.91 (the
    generation-0 student, 35% against three heuristics) to 0.71-0.72 for
    students of the later teachers (73-77%). The guard only catches a student
    that lost the game's basics (a uniform random policy scores ~0.3).
    """

    floor: float = Field(0.5, ge=0, le=1, description="Minimum holdout accuracy.")
    margin: float = Field(0.25, ge=0, le=1, description="Largest drop below the previous promoted student.")


class EvaluationConfig(_Config):
    """The fixed-size evaluation of the promoted models every generation reports (same deals every generation)."""

    games: int = Field(1000, ge=4, le=MAX_GAMES, description="Games per model and table, seats rotated.")
    tables: dict[str, tuple[str, ...]] = Field(
        default_factory=lambda: {"heuristic": ("heuristic",) * 3, "tuned": ("tuned",) * 3},
        description="Named tables of opponents.",
    )


class ExploiterConfig(_Config):
    """The exploiter probe: how exploitable each generation's promoted student is.

    A fresh PPO run (from the generation-0 student, the league's supervised
    start, as AlphaStar's exploiters reset to theirs; or from scratch) trains
    ``total_steps`` against the promoted student alone (all three other
    seats); its win rate over ``games`` games against three copies of the
    student (seats rotated) is the student's exploitability: 25% is even, a
    student nobody can exploit holds it there or below.
    """

    total_steps: int = Field(50_000, ge=0, le=MAX_STEPS, description="The exploiter's PPO budget (0: no probe).")
    start: Literal["bootstrap_student", "scratch"] = Field(
        "bootstrap_student", description="Start from the generation-0 student, or from a fresh network."
    )
    games: int = Field(
        400, ge=4, le=MAX_GAMES, description="Games of the exploiter against three copies of the student."
    )


class RetryConfig(_Config):
    """What a failed generation changes before it tries again."""

    max_retries: int = Field(1, ge=0, le=MAX_MODELS, description="Attempts after the first.")
    lr_factor: float = Field(0.5, gt=0, le=MAX_COEF, description="PPO learning rate x this per retry.")
    ent_coef_step: float = Field(0.005, ge=0, le=MAX_COEF, description="PPO entropy coefficient + this per retry.")
    on_failure: Literal["continue", "stop"] = Field(
        "continue", description="After the last failed attempt: record it and go on with the old models, or stop."
    )


class ConvergenceConfig(_Config):
    """When to stop before max_generations."""

    window: int = Field(3, ge=2, le=MAX_MODELS, description="Generations the plateau rule looks back over.")
    min_win_rate_gain: float = Field(
        0.01,
        ge=0,
        le=MAX_RATE,
        description="Plateau: the promoted student's evaluated win rate rose less than this over the window.",
    )


class TournamentStepConfig(_Config):
    """The rating tournament."""

    deals_per_lineup: DealsPerLineup = 16
    baselines: tuple[str, ...] = Field(("heuristic", "tuned", "random"), description="Fixed anchors of the pool.")


class LoopConfig(_Config):
    """A closed loop: bootstrap, then generations of self-play -> gates -> merge -> student.

    Written as YAML (``distill loop config``, read by ``load_config``) and as a run's ``config.json``
    (``RunFolder``), both with their ``format_version``; the field is not part of the config's value (never in
    a dump: a config's fingerprint and an ablation's keys do not change with it).
    """

    FORMAT_UPGRADES: ClassVar[Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {
        1: dict  # version 2 added the format_version alone
    }

    format_version: int = Field(
        RUN_CONFIG_FORMAT_VERSION,
        ge=1,
        le=RUN_CONFIG_FORMAT_VERSION,
        exclude=True,
        description="The format of this file: one from a newer Distill is refused, an older one's migrated as it "
        "is read (absent in a YAML file: this Distill's). Leave it as written.",
    )
    name: str = Field("demo", pattern=NAME_PATTERN, description="Run folder runs/<name> and dataset loop-<name>.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds everything; each step derives its own seed from it.")
    max_generations: int = Field(2, ge=1, le=999, description="Generations after the bootstrap (generation 0).")
    max_rounds: MaxRounds = DEFAULT_MAX_ROUNDS
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    student: StudentConfig = Field(default_factory=StudentConfig)
    ppo: PPOStepConfig = Field(default_factory=PPOStepConfig)
    head_to_head: HeadToHeadConfig = Field(
        default_factory=HeadToHeadConfig,
        description="Promotion of PPO models and students: beat the previous promoted model in the pod.",
    )
    strength_gate: StrengthGateConfig = Field(
        default_factory=StrengthGateConfig,
        description="The scripted floor of PPO models and (unless student_gate is set) of students.",
    )
    student_gate: StrengthGateConfig | None = Field(
        None,
        description="The students' own scripted floor, if different: null (the strength_gate's), or a section "
        "with strength_gate's fields.",
    )
    floor: FloorConfig = Field(default_factory=FloorConfig)
    accuracy_guard: AccuracyGuardConfig = Field(default_factory=AccuracyGuardConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    exploiter: ExploiterConfig = Field(default_factory=ExploiterConfig)
    data_gate: bool = Field(True, description="Run the lake suite on each new batch (blocking failures reject it).")
    data_gate_suite: Path | None = Field(
        None,
        description="Lake suite for new batches (default: the lake suite shipped "
        "with Distill, shown in checks/lake.json).",
    )
    data_gate_entropy_floor: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Override the suite's action-entropy floor (ratio to the maximum) for new batches.",
    )
    retry: RetryConfig = Field(default_factory=RetryConfig)
    convergence: ConvergenceConfig = Field(default_factory=ConvergenceConfig)
    tournament: TournamentStepConfig = Field(default_factory=TournamentStepConfig)
    retention: Literal["keep", "compress", "delete"] = Field(
        "delete",
        description="The logs the loop writes itself (the bootstrap's simulated games, the teacher's exports, "
        "under runs/<name>/): keep: written as plain JSONL and kept; compress: written zstd-compressed "
        "(.jsonl.zst) and kept; delete: written zstd-compressed and deleted once their ingest step's result is "
        "saved (the lake holds every row, the quarantine every rejected line). Logs named in `bootstrap.logs` "
        "are never touched.",
    )
    backend: BackendConfig = Field(
        default_factory=BackendConfig,
        description="Where the game jobs run (bootstrap games, export games, gates, evaluation, tournament): "
        "in-process, a local process pool or Ray; the results are the same on each.",
    )
    engine: EngineConfig | None = Field(
        None,
        description="A lab's own engine (docs/engine-protocol.md): its command and processes. The gates, the "
        "fixed-size evaluation, the rating tournament, the exploiter probe and the teacher's export games play in "
        "it, player types sitting as its own AI profiles and checkpoints as Distill's seats (PPO's training steps "
        "stay in Distill's game). None: Distill's own game.",
    )

    @property
    def dataset(self) -> str:
        return f"loop-{self.name}"

    @property
    def log_compression(self) -> Literal["none", "zstd"]:
        """How the loop writes its own logs (see ``retention``)."""
        return "none" if self.retention == "keep" else "zstd"

    def file_text(self) -> str:
        """This config as a JSON file carries it (a run's ``config.json``, the dashboard's request to start one):
        its ``format_version`` first, then its fields."""
        body = {"format_version": RUN_CONFIG_FORMAT_VERSION, **self.model_dump(mode="json")}
        return json.dumps(body, indent=1) + "\n"

    def recorded(self, layout: Layout) -> LoopConfig:
        """This config as a run records and reads it: every file it names (bootstrap logs, the data gate's suite)
        relative to the data root when inside it, else absolute (``Layout.stored``; steps open them through
        ``Layout.resolve``)."""
        return map_paths(self, lambda _where, path: Path(layout.stored(path)))

    def named_paths(self) -> list[Path]:
        """Every file and folder this config names (bootstrap logs, the data gate's suite), as it holds them: the
        only places outside the data root a run reads (never writes or deletes); see ``Layout.resolve``."""
        named: list[Path] = []
        map_paths(self, lambda _where, path: named.append(path) or path)
        return named
