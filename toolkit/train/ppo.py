"""The PPO stage: MaskablePPO (or RecurrentPPO) self-play on the vectorised game, evaluated, exported, checkpointed.

``train_ppo(PPOConfig(...), out)`` trains one learner seat (drawn per
episode, so it rotates) in ``n_envs`` games stepped together by
:class:`~toolkit.game.vec_env.CommanderVecEnv`, against a league: each
opponent seat is drawn per episode from ``opponents`` (``heuristic``,
``tuned``, ``random``, ``self`` — the learner's current greedy policy — or a
checkpoint path, such as earlier generations' models) with
``opponent_weights``, optionally in curriculum stages with promotion rules.
Throughput settings follow the field notes for 2 cores, then what learned
best per second in the loop: 512 envs x 16 steps (the env's numpy calls
spread over more games: 1.4x the steps/s of 256 x 32 for the same gain per
step), minibatches of 1024, 4 epochs, ``torch.set_num_threads(1)``. The result
times each phase (set-up, rollouts, updates, evaluations, export) and gives
the steady rate: steps per second, and per CPU second, from the second
rollout on (bench_train compares it with MaskablePPO's own ceiling).

A warm start from a flat PPO checkpoint loads its whole policy, critic
included (a generation continues where the last one stopped); from a BC
checkpoint it loads the actor, and ``critic_warmup_updates`` can train the
untrained critic first with the actor frozen.

Every update logs policy loss, value loss, entropy, approximate KL, clip
fraction, learning rate and the true (pre-clip) gradient norm: sb3's own
clipping is disabled (``max_grad_norm=inf``) and an optimizer step pre-hook
clips with ``config.max_grad_norm`` and records the norm it measured. The
learning rate follows a schedule (sb3 reads it every update; the model is
never rebuilt).

An evaluation callback plays ``eval_games`` games in pods (policy rotated
through the seats) every ``eval_every`` steps and once before training,
keeping the best checkpoint by win rate. After training, the final policy
plays ``export.games`` games against the league (every seat it holds
exported: it is the teacher, and its greedy choices are the labels the
next student learns from) through the decision exporter, and, tagged
``ppo-eval``, the evaluation games can be exported too.

Artefacts in ``out`` (kind ``ppo`` or ``ppo-recurrent``, see checkpoints)::

    <kind>-<run_id>-best.{safetensors,json}   best evaluation win rate
    <kind>-<run_id>-final.{safetensors,json}  end of training
    <kind>-<run_id>-metrics.jsonl             one line per update and per evaluation
    <kind>-<run_id>-metrics-{update,evaluation}.csv   the same, as tables
    tensorboard/<run_id>/                     event files (with the tensorboard extra; see train.metrics)
    exports/ml-decisions-ppo-<run_id>-part-0000.jsonl   (and ppo-eval)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import torch
from pydantic import BaseModel, Field
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger

from toolkit.engine.config import EngineConfig
from toolkit.engine.vec_env import EngineVecEnv
from toolkit.errors import ConfigError, TrainError
from toolkit.game.league import OpponentPool, OpponentTally
from toolkit.game.players import PLAYER_TYPES, Player, PolicyPlayer, make_player
from toolkit.game.vec_env import CommanderVecEnv
from toolkit.ingest.handover import ShardStaging
from toolkit.jobs.config import BackendConfig
from toolkit.layout import Layout
from toolkit.progress import Progress, ProgressFn
from toolkit.train import checkpoints
from toolkit.train.agents import RecurrentPlayer, load_agent, player_ref, policy_blob
from toolkit.train.config import SELF, CurriculumStage, EvaluateConfig, PPOConfig
from toolkit.train.evaluate import EvaluationResult, evaluate
from toolkit.train.export import DecisionExporter, ExportCounts, export_league_games
from toolkit.train.metrics import MetricsWriter
from toolkit.train.policy import ActorNet, actor_state_from_sb3, sb3_greedy_policy, sb3_policy_kwargs, warm_start


class UpdateStats(BaseModel):
    """One PPO update, as logged."""

    update: int
    steps: int
    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float
    clip_fraction: float
    learning_rate: float
    grad_norm: float = Field(description="Mean over the update's minibatches of the total gradient norm, pre-clip.")
    grad_norm_max: float
    explained_variance: float


class EvalPoint(BaseModel):
    steps: int
    stage: str | None
    result: EvaluationResult


class OpponentRecord(BaseModel):
    """The learner's training games against one opponent of its league (every game that seated it)."""

    name: str
    games: int
    wins: int


class PPOResult(BaseModel):
    """What a PPO run did and wrote."""

    run_id: str
    kind: str
    steps: int
    seconds: float
    steps_per_second: float = Field(
        description="Steps over the wall time of learning (its first evaluation and first rollout included)."
    )
    steady_steps_per_second: float | None = Field(
        None,
        description="Steps per second of the rollouts and updates from the second rollout on (no set-up, warm-up, "
        "evaluations or export); None when there was one rollout.",
    )
    steady_cpu_steps_per_second: float | None = Field(
        None, description="The same per CPU second of this process: what a busy machine's load does not move."
    )
    timings: dict[str, float] = Field(
        default_factory=dict,
        description="Seconds of set-up (env, model), rollouts, updates, evaluations and the export.",
    )
    best: Path | None = Field(description="Card of the best checkpoint by evaluation win rate.")
    final: Path
    metrics: Path
    best_win_rate: float | None
    updates: list[UpdateStats]
    evaluations: list[EvalPoint]
    export: ExportCounts | None = Field(
        description="The final policy's games against the league (the teacher's labels)."
    )
    eval_export: ExportCounts | None
    stages_reached: list[str]
    opponents: list[OpponentRecord] = Field(
        default_factory=list, description="The learner's training results by opponent (what PFSP weighs by)."
    )


class LinearSchedule:
    """sb3 learning-rate schedule: ``start`` at progress 1 down to ``start * final_fraction`` at progress 0."""

    def __init__(self, start: float, final_fraction: float) -> None:
        self.start, self.final_fraction = start, final_fraction

    def __call__(self, progress_remaining: float) -> float:
        return self.start * (self.final_fraction + (1 - self.final_fraction) * progress_remaining)


class _GradMeter:
    """Optimizer step pre-hook: clips the gradient itself and records the true norm; can freeze the actor."""

    def __init__(
        self, params: list[torch.nn.Parameter], actor: list[torch.nn.Parameter], max_norm: float, freeze_updates: int
    ) -> None:
        self.params, self.actor, self.max_norm, self.freeze_updates = params, actor, max_norm, freeze_updates
        self.norms: list[float] = []
        self.update = 0

    def __call__(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.norms.append(float(torch.nn.utils.clip_grad_norm_(self.params, self.max_norm)))
        if self.update < self.freeze_updates:
            for p in self.actor:
                p.grad = None  # Adam skips parameters without a gradient: no step, no moment update

    def take(self) -> tuple[float, float]:
        norms, self.norms = self.norms, []
        self.update += 1
        return (float(np.mean(norms)), float(np.max(norms))) if norms else (math.nan, math.nan)


class _League:
    """The players of the opponent names, one per name, loaded once; ``self`` plays the live model greedily."""

    def __init__(self, config: PPOConfig) -> None:
        self.config = config
        self.model: Any = None  # set once the model exists (the env needs the league first)
        self.players: dict[str, Player] = {}
        self._greedy: tuple[Any, Callable[[np.ndarray, np.ndarray], np.ndarray]] | None = None

    def _live_greedy(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The model's greedy play as it is now (its weights are read in place; a new model is picked up)."""
        policy = self.model.policy
        if self._greedy is None or self._greedy[0] is not policy:
            self._greedy = (policy, sb3_greedy_policy(policy))
        return self._greedy[1](obs, mask)

    def player(self, name: str) -> Player:
        if name not in self.players:
            if name in PLAYER_TYPES:
                self.players[name] = make_player(name)
            elif name == SELF:
                self.players[name] = PolicyPlayer(self._live_greedy, source="ppo")
            else:
                self.players[name] = load_agent(Path(name)).player()
        return self.players[name]

    def pool(self, names: tuple[str, ...], weights: tuple[float, ...] | None = None) -> OpponentPool:
        """The pool of ``names`` (equal weights by default); ``self`` seats are the live policy's."""
        players = [self.player(name) for name in names]
        return OpponentPool(
            players, weights=weights or [1.0] * len(names), names=list(names), mirror=self.config.opponent_mirror
        )


@dataclass
class _Run:
    """One run: what it trains with (set once), and what it has done so far (updated by the callback)."""

    config: PPOConfig
    run_id: str
    out: Path
    model: Any  # MaskablePPO or RecurrentPPO
    env: CommanderVecEnv
    league: _League
    meter: _GradMeter
    metrics: MetricsWriter
    eval_exporter: DecisionExporter | None = None
    layout: Layout | None = None  # the data root the cards record checkpoints relative to
    parent: str | None = None
    dataset: checkpoints.DatasetRef | None = None
    progress: ProgressFn | None = None
    stage_at: str | None = None  # a shared lake's location, where the export is staged (see train_ppo)
    # progress so far
    stage: int = 0
    stage_start: int = 0
    updates: list[UpdateStats] = field(default_factory=list)
    evaluations: list[EvalPoint] = field(default_factory=list)
    best: Path | None = None
    best_win_rate: float | None = None
    tally: OpponentTally = field(default_factory=OpponentTally)


class _RunCallback(BaseCallback):
    """sb3's hooks into one run: records every update, evaluates on schedule, reports progress, times the phases."""

    def __init__(self, run: _Run) -> None:
        super().__init__()
        self.run = run
        self.next_eval = run.config.eval_every or math.inf
        self.clock = _PhaseClock()

    def _on_training_start(self) -> None:
        self.clock.evaluate(lambda: _evaluate(self.run))

    def _on_step(self) -> bool:
        run = self.run
        names = run.env.pool.names
        for info in self.locals.get("infos", ()):
            if "opponents" in info:  # an episode ended
                run.tally.add([names[i] for i in info["opponents"]], info["won"])
        if self.num_timesteps >= self.next_eval:
            self.next_eval += run.config.eval_every
            self.clock.evaluate(lambda: _evaluate(run))
        if run.progress is not None:
            run.progress(Progress(self.num_timesteps, run.config.total_steps, "steps"))
        return True

    def _on_rollout_start(self) -> None:
        self.clock.rollout_start(self.num_timesteps)
        _log_update(self.run)

    def _on_rollout_end(self) -> None:
        self.clock.rollout_end()

    def _on_training_end(self) -> None:
        self.clock.training_end(self.num_timesteps)
        _log_update(self.run)


class _PhaseClock:
    """Where a run's learning time goes: rollouts, updates and evaluations, and the steady rate.

    The steady rate counts the steps and the time from the second rollout on
    (the first one warms up, and model set-up, the final evaluation and the
    export lie outside ``learn``), less the evaluations in between.
    """

    def __init__(self) -> None:
        self.seconds = {"rollouts": 0.0, "updates": 0.0, "evaluations": 0.0}
        self.rollouts = 0
        self._mark = 0.0  # when the current phase started
        self._evaluation_cpu = 0.0
        self._steady: tuple[float, int, float, float] | None = None  # time, steps, evaluations, CPU at rollout 2
        self.steady_steps_per_second: float | None = None
        self.steady_cpu_steps_per_second: float | None = None  # per CPU second of the process: robust to load

    def evaluate(self, run: Callable[[], Any]) -> None:
        start, cpu = time.perf_counter(), time.process_time()
        run()
        spent = time.perf_counter() - start
        self.seconds["evaluations"] += spent
        self._evaluation_cpu += time.process_time() - cpu
        self._mark += spent  # not the rollout's time

    def rollout_start(self, steps: int) -> None:
        now = time.perf_counter()
        if self.rollouts:
            self.seconds["updates"] += now - self._mark
        self.rollouts += 1
        if self.rollouts == 2:
            self._steady = (now, steps, self.seconds["evaluations"], time.process_time() - self._evaluation_cpu)
        self._mark = now

    def rollout_end(self) -> None:
        now = time.perf_counter()
        self.seconds["rollouts"] += now - self._mark
        self._mark = now

    def training_end(self, steps: int) -> None:
        now = time.perf_counter()
        self.seconds["updates"] += now - self._mark
        if self._steady is not None:
            start, start_steps, evaluations, cpu = self._steady
            spent = now - start - (self.seconds["evaluations"] - evaluations)
            self.steady_steps_per_second = round((steps - start_steps) / max(spent, 1e-9), 1)
            cpu = time.process_time() - self._evaluation_cpu - cpu
            self.steady_cpu_steps_per_second = round((steps - start_steps) / max(cpu, 1e-9), 1)


def train_ppo(
    config: PPOConfig,
    out: Path,
    progress: ProgressFn | None = None,
    backend: BackendConfig | None = None,
    layout: Layout | None = None,
    engine: EngineConfig | None = None,
    stage_at: str | None = None,
) -> PPOResult:
    """Train PPO per ``config``; checkpoints, metrics and exports go to ``out``.

    The teacher's export games are a game job, run where ``backend`` says (default: ``auto``), or played in
    ``engine`` (its rows then come from that engine). With an engine whose ``selfplay`` is on (the default), the
    training games are played there too, through :class:`~toolkit.engine.vec_env.EngineVecEnv` (outcome rewards
    only: an engine shapes none); the periodic evaluations stay in Distill's game.
    The cards record the checkpoints the config names (warm start, opponents) relative to ``layout``'s data
    root when they lie inside it. ``stage_at``: a shared lake's location, where the export's workers stage its
    files for the caller to commit (the loop on a shared lake: :mod:`toolkit.ingest.shards`).

    Raises:
        TrainError: the warm-start checkpoint is missing or does not fit.
        ConfigError: an invalid combination of options.
    """
    setup_start = time.perf_counter()
    torch.set_num_threads(config.torch_threads)
    run_id = config.run_id or checkpoints.new_run_id()
    out.mkdir(parents=True, exist_ok=True)
    metrics_path = out / f"{checkpoints.checkpoint_stem(config.kind, run_id, 'metrics')}.jsonl"
    if metrics_path.exists():
        raise ConfigError(f"{metrics_path} exists: run {run_id} already ran here", hint="choose another --run-id")
    stages = config.curriculum
    league = _League(config)
    pool = league.pool(stages[0].opponents) if stages else league.pool(config.opponents, config.opponent_weights)
    if engine is not None and engine.selfplay:
        env: Any = EngineVecEnv(
            config.n_envs,
            engine,
            pool,
            seed=config.seed,
            pod_size=config.pod_size,
            max_rounds=config.max_rounds,
            turn_limit_reward=config.turn_limit_reward,
        )
    else:
        env = CommanderVecEnv(
            config.n_envs,
            pool,
            seed=config.seed,
            pod_size=config.pod_size,
            max_rounds=config.max_rounds,
            turn_limit_reward=config.turn_limit_reward,
        )
    try:
        return _train(config, out, progress, backend, layout, engine, league, env, run_id, setup_start, stage_at)
    finally:
        env.close()  # an engine env's processes end here


def _train(
    config: PPOConfig,
    out: Path,
    progress: ProgressFn | None,
    backend: BackendConfig | None,
    layout: Layout | None,
    engine: EngineConfig | None,
    league: _League,
    env: Any,
    run_id: str,
    setup_start: float,
    stage_at: str | None = None,
) -> PPOResult:
    """The run itself, on ``env`` (see :func:`train_ppo`)."""
    stages = config.curriculum
    metrics_path = out / f"{checkpoints.checkpoint_stem(config.kind, run_id, 'metrics')}.jsonl"
    model = league.model = _make_model(config, env)
    parent, dataset = _warm_start(config, model) if config.warm_start is not None else (None, None)
    model.set_logger(Logger(folder=None, output_formats=[]))
    meter = _install_meter(model, config)
    exports = out / "exports"
    eval_exporter = None
    if config.export.enabled and config.export.export_eval:
        eval_exporter = DecisionExporter(
            exports,
            batch=run_id,
            generation=config.generation,
            seed=config.seed,
            source="ppo-eval",
            config=config.export,
            kind=config.kind,
            name=f"{config.kind}-{run_id}",  # the live model of this run (its checkpoints share the prefix)
        )
    start = time.perf_counter()
    stem = checkpoints.checkpoint_stem(config.kind, run_id, "metrics")
    with MetricsWriter(out, stem, "ppo", run_id, tensorboard=config.tensorboard) as metrics:
        run = _Run(
            config=config,
            run_id=run_id,
            out=out,
            model=model,
            env=env,
            league=league,
            meter=meter,
            metrics=metrics,
            eval_exporter=eval_exporter,
            layout=layout,
            parent=parent,
            dataset=dataset,
            progress=progress,
            stage_at=stage_at,
        )
        callback = _RunCallback(run)
        model.learn(total_timesteps=config.total_steps, callback=callback, log_interval=None)
        seconds = time.perf_counter() - start
        if not run.evaluations or run.evaluations[-1].steps != model.num_timesteps:
            callback.clock.evaluate(lambda: _evaluate(run, final=True))
    final = _save(run, "final", {"steps": model.num_timesteps})
    export_start = time.perf_counter()
    counts = (
        _export_teacher_games(run, exports, final, backend, engine)
        if config.export.enabled and config.export.games
        else None
    )
    clock = callback.clock
    timings = {
        "setup": round(start - setup_start, 3),
        **{k: round(v, 3) for k, v in clock.seconds.items()},
        "export": round(time.perf_counter() - export_start, 3),
    }
    eval_counts = eval_exporter.close() if eval_exporter is not None else None
    steps = int(model.num_timesteps)
    return PPOResult(
        run_id=run_id,
        kind=config.kind,
        steps=steps,
        seconds=round(seconds, 3),
        steps_per_second=round(steps / max(seconds, 1e-9), 1),
        steady_steps_per_second=clock.steady_steps_per_second,
        steady_cpu_steps_per_second=clock.steady_cpu_steps_per_second,
        timings=timings,
        best=run.best,
        final=final,
        metrics=metrics_path,
        best_win_rate=run.best_win_rate,
        updates=run.updates,
        evaluations=run.evaluations,
        export=counts,
        eval_export=eval_counts,
        stages_reached=[s.name for s in stages[: run.stage + 1]],
        opponents=[
            OpponentRecord(name=name, games=games, wins=run.tally.wins[name])
            for name, games in sorted(run.tally.games.items())
        ],
    )


def _export_teacher_games(
    run: _Run, exports: Path, final: Path, backend: BackendConfig | None, engine: EngineConfig | None = None
) -> ExportCounts:
    """The final checkpoint plays ``export.games`` games against the league (a game job); its decisions are exported."""
    config = run.config
    names = config.curriculum[run.stage].opponents if config.curriculum else config.opponents
    weights = None if config.curriculum else config.opponent_weights
    return export_league_games(
        policy_blob(final),
        [name if name == SELF else player_ref(name) for name in names],
        exports,
        weights=weights or [1.0] * len(names),
        mirror=config.opponent_mirror,
        games=config.export.games,
        seed=config.seed + 3,
        batch=run.run_id,
        generation=config.generation,
        config=config.export,
        pod_size=config.pod_size,
        max_rounds=config.max_rounds,
        backend=backend,
        engine=engine,
        staging=None
        if run.stage_at is None
        else ShardStaging(
            location=run.stage_at, recorded=run.layout.stored(exports) if run.layout else str(exports.resolve())
        ),
    )


def _policy_player(run: _Run) -> Player:
    """A player of the live model, greedy (flat) or with its LSTM state (recurrent)."""
    run.model.policy.set_training_mode(False)
    if run.config.policy_kind == "recurrent":
        return RecurrentPlayer(run.model.policy)
    return PolicyPlayer(sb3_greedy_policy(run.model.policy))


# sb3's own Adam settings (the eps it sets only when given no optimizer kwargs) and foreach: the same updates bit for
# bit, in one call over all the parameters instead of a Python loop over them (~5% of an update, issue 26).
_OPTIMIZER_KWARGS: Final = {"eps": 1e-5, "foreach": True}


def _make_model(config: PPOConfig, env: Any) -> Any:
    lr: Any = config.learning_rate
    if config.lr_schedule == "linear":
        lr = LinearSchedule(config.learning_rate, config.lr_final_fraction)
    common = dict(
        learning_rate=lr,
        n_steps=config.resolved("n_steps"),
        batch_size=config.resolved("batch_size"),
        n_epochs=config.resolved("n_epochs"),
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=math.inf,
        target_kl=config.target_kl,
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    if config.policy_kind == "recurrent":
        from sb3_contrib import RecurrentPPO

        kwargs = {**sb3_policy_kwargs(config.policy), "lstm_hidden_size": config.lstm_hidden}
        return RecurrentPPO("MlpLstmPolicy", env, policy_kwargs=kwargs, **common)
    from sb3_contrib import MaskablePPO

    from toolkit.train.maskable import DirectMaskablePolicy

    kwargs = {**sb3_policy_kwargs(config.policy), "optimizer_kwargs": dict(_OPTIMIZER_KWARGS)}
    return MaskablePPO(DirectMaskablePolicy, env, policy_kwargs=kwargs, **common)


def _warm_start(config: PPOConfig, model: Any) -> tuple[str, checkpoints.DatasetRef | None]:
    """Load the warm-start checkpoint into the model; returns its name and its dataset.

    A flat PPO checkpoint of the same shape gives its whole policy (actor and
    critic: the run continues it); otherwise the actor is copied.
    """
    agent = load_agent(config.warm_start)  # type: ignore[arg-type]
    if agent.actor is None:
        raise TrainError(
            f"{config.warm_start} is a recurrent checkpoint", hint="warm-start from a bc or ppo checkpoint"
        )
    if config.policy_kind == "recurrent":
        transfer_compatible(model.policy, agent.actor)
        return agent.name, agent.card.dataset
    if agent.actor.spec.pi != config.policy.pi or agent.actor.spec.activation != config.policy.activation:
        raise TrainError(
            f"the warm-start network {agent.card.arch.spec.model_dump()} differs from policy "
            f"{config.policy.model_dump()}",
            hint="set policy.pi / policy.activation to the BC checkpoint's (see its card)",
        )
    if agent.card.kind == "ppo" and agent.card.arch.vf == config.policy.vf:
        _, tensors = checkpoints.load_tensors(config.warm_start)  # type: ignore[arg-type]
        model.policy.load_state_dict(tensors, strict=True)  # in place: the optimizer keeps these tensors
    else:
        warm_start(model.policy, agent.actor)
    return agent.name, agent.card.dataset


def transfer_compatible(sb3_policy: torch.nn.Module, actor: ActorNet) -> list[str]:
    """Copy every actor tensor whose sb3 name and shape match (e.g. into a recurrent policy); returns their names.

    The recurrent actor's first layer reads the LSTM output, not the features, so it usually does not match.
    """
    target = sb3_policy.state_dict()
    copied = {}
    for key, tensor in actor.state_dict().items():
        name = ("mlp_extractor." + key) if key.startswith("policy_net.") else key
        if name in target and target[name].shape == tensor.shape:
            copied[name] = tensor
    sb3_policy.load_state_dict({**target, **copied}, strict=True)
    return sorted(copied)


def _install_meter(model: Any, config: PPOConfig) -> _GradMeter:
    policy = model.policy
    actor = [
        p
        for name, p in policy.named_parameters()
        if name.startswith(("mlp_extractor.policy_net.", "action_net.", "lstm_actor."))
    ]
    meter = _GradMeter(list(policy.parameters()), actor, config.max_grad_norm, config.critic_warmup_updates)
    policy.optimizer.register_step_pre_hook(meter)
    return meter


def _log_update(run: _Run) -> None:
    """Record the update that just ran (sb3 put its figures in the logger; the meter has the norms)."""
    values = run.model.logger.name_to_value
    if "train/value_loss" not in values or run.meter.norms == []:
        return
    mean, high = run.meter.take()
    stats = UpdateStats(
        update=len(run.updates) + 1,
        steps=int(run.model.num_timesteps),
        policy_loss=float(values["train/policy_gradient_loss"]),
        value_loss=float(values["train/value_loss"]),
        entropy=-float(values["train/entropy_loss"]),
        approx_kl=float(values["train/approx_kl"]),
        clip_fraction=float(values["train/clip_fraction"]),
        learning_rate=float(values["train/learning_rate"]),
        grad_norm=mean,
        grad_norm_max=high,
        explained_variance=float(values["train/explained_variance"]),
    )
    values.clear()
    run.updates.append(stats)
    run.metrics.write("update", stats.steps, stats.model_dump())


def _evaluate(run: _Run, final: bool = False) -> EvaluationResult:
    """Play the evaluation pods, keep the best checkpoint, and apply the curriculum's promotion rule."""
    config, model = run.config, run.model

    def make() -> Player:
        return _policy_player(run)

    eval_config = EvaluateConfig(
        opponents=config.eval_opponents, games=config.eval_games, seed=config.seed + 1, max_rounds=config.max_rounds
    )
    result = evaluate(make, eval_config, exporter=run.eval_exporter if not final else None)
    steps = int(model.num_timesteps)
    stage = config.curriculum[run.stage].name if config.curriculum else None
    run.evaluations.append(EvalPoint(steps=steps, stage=stage, result=result))
    summary = {k: v for k, v in result.model_dump().items() if k not in ("outcomes", "per_seat")}
    run.metrics.write("evaluation", steps, {"steps": steps, "stage": stage, **summary})
    if run.best_win_rate is None or result.win_rate > run.best_win_rate:
        run.best_win_rate = result.win_rate
        run.best = _save(run, "best", {"steps": steps, "evaluation": summary}, replace=True)
    if config.curriculum and not final:
        _maybe_promote(run, make, steps)
    return result


def _maybe_promote(run: _Run, make: Callable[[], Player], steps: int) -> None:
    stages = run.config.curriculum
    if run.stage + 1 >= len(stages) or steps - run.stage_start < stages[run.stage].min_steps:
        return
    stage = stages[run.stage]
    pool_players = [run.league.player(n) for n in stage.opponents]
    others = [pool_players[i % len(pool_players)] for i in range(run.config.pod_size - 1)]
    check = evaluate(
        make,
        EvaluateConfig(
            games=run.config.eval_games,
            seed=run.config.seed + 2,
            max_rounds=run.config.max_rounds,
            opponents=stage.opponents[:1],
        ),
        opponents=others,
    )
    if check.win_rate >= stage.promote_win_rate:
        run.stage += 1
        run.stage_start = steps
        run.env.set_pool(run.league.pool(stages[run.stage].opponents))
        run.metrics.write(
            "promotion",
            steps,
            {"steps": steps, "from": stage.name, "to": stages[run.stage].name, "win_rate": check.win_rate},
        )


def _save(run: _Run, tag: str, metrics: dict[str, Any], replace: bool = False) -> Path:
    config = run.config
    arch = {**config.policy.model_dump(mode="json")}
    if config.policy_kind == "recurrent":
        arch["lstm_hidden"] = config.lstm_hidden
    return checkpoints.save_checkpoint(
        run.out,
        run.model.policy.state_dict(),
        kind=config.kind,
        run_id=run.run_id,
        tag=tag,
        arch=arch,
        replace=replace,
        generation=config.generation,
        parent=run.parent,
        dataset=run.dataset,
        config=_recorded_config(config, run.layout),
        metrics=metrics,
    )


def _recorded_config(config: PPOConfig, layout: Layout | None) -> dict[str, Any]:
    """``config`` as a card records it: the checkpoints it names inside ``layout``'s data root relative to it."""
    recorded = config.model_dump(mode="json")
    if layout is None:
        return recorded

    def named(player: str) -> str:
        return player if player in (*PLAYER_TYPES, SELF) else layout.stored(player)

    if config.warm_start is not None:
        recorded["warm_start"] = layout.stored(config.warm_start)
    recorded["opponents"] = [named(p) for p in config.opponents]
    for stage in recorded["curriculum"]:
        stage["opponents"] = [named(p) for p in stage["opponents"]]
    return recorded


def actor_of(card_path: Path) -> ActorNet:
    """The actor of a flat PPO checkpoint (for tests and tools)."""
    agent = load_agent(card_path)
    if agent.actor is None:
        raise TrainError(f"{card_path} has no flat actor", hint="pass a bc or ppo checkpoint")
    return agent.actor


__all__ = [
    "PPOConfig",
    "PPOResult",
    "CurriculumStage",
    "train_ppo",
    "transfer_compatible",
    "actor_of",
    "actor_state_from_sb3",
    "ExportCounts",
]
