"""Self-play: PPO against the league, then the trained policy's games exported as the teacher's labels."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from toolkit.catalog import remote
from toolkit.loop.steps.base import StepContext
from toolkit.train.export import ExportCounts
from toolkit.train.ppo import OpponentRecord, UpdateStats


class LeagueEntry(BaseModel):
    """One opponent of the league: its name in reports, the player (a type, or a card relative to the data root),
    its weight."""

    name: str
    player: str
    weight: float
    win_rate: float | None = Field(
        None, description="The learner's pairwise win rate against it that PFSP weighed by (None: not measured)."
    )


class SelfPlayInput(BaseModel):
    run_id: str
    warm_start: str  # a card, relative to the data root
    critic_warmup_updates: int
    learning_rate: float
    ent_coef: float
    league: list[LeagueEntry]


class SelfPlayResult(BaseModel):
    final: str  # paths (the final card, the export's files) relative to the data root
    steps: int
    seconds: float
    steps_per_second: float
    export: ExportCounts
    last_update: UpdateStats | None
    league: list[LeagueEntry]
    learning_rate: float
    ent_coef: float
    warm_start: str
    opponents: list[OpponentRecord] = Field(
        default_factory=list, description="The learner's training games by league entry (by its name)."
    )


def selfplay_step(ctx: StepContext, step: SelfPlayInput) -> SelfPlayResult:
    from toolkit.train.checkpoints import CARD_SUFFIX
    from toolkit.train.config import ExportConfig, PolicySpec, PPOConfig
    from toolkit.train.ppo import train_ppo

    p = ctx.config.ppo
    hidden = ctx.config.student.hidden
    players = [str(ctx.resolve(e.player)) if e.player.endswith(CARD_SUFFIX) else e.player for e in step.league]
    config = PPOConfig(
        run_id=step.run_id,
        seed=ctx.seed,
        total_steps=p.total_steps,
        n_envs=p.n_envs,
        n_steps=p.n_steps,
        batch_size=p.batch_size,
        n_epochs=p.n_epochs,
        learning_rate=step.learning_rate,
        lr_schedule=p.lr_schedule,
        ent_coef=step.ent_coef,
        warm_start=ctx.resolve(step.warm_start),
        critic_warmup_updates=step.critic_warmup_updates,
        opponents=tuple(players),
        opponent_weights=tuple(e.weight for e in step.league),
        opponent_mirror=p.league.mirror,
        max_rounds=ctx.config.max_rounds,
        turn_limit_reward=p.turn_limit_reward,
        eval_every=0,
        eval_games=40,
        generation=ctx.generation,
        export=ExportConfig(games=p.export_games, export_eval=False, compression=ctx.config.log_compression),
        policy=PolicySpec(pi=hidden, vf=hidden),
    )
    location = remote.location_of(ctx.layout)  # a shared lake: the export's workers stage their files there
    result = train_ppo(
        config,
        ctx.folder,
        backend=ctx.config.backend,
        layout=ctx.layout,
        engine=ctx.engine,
        stage_at=location.uri if location is not None else None,
    )
    assert result.export is not None  # export.games >= 1
    if result.export.staged:  # the logs the workers staged at the shared lake, on the driver's disk from now on
        from toolkit.ingest.shards import fetch_logs

        fetch_logs(result.export.staged, ctx.layout)
    export = result.export.model_copy(update={"files": [Path(ctx.layout.stored(f)) for f in result.export.files]})
    return SelfPlayResult(
        final=ctx.layout.stored(result.final),
        steps=result.steps,
        seconds=result.seconds,
        steps_per_second=result.steps_per_second,
        export=export,
        last_update=result.updates[-1] if result.updates else None,
        league=step.league,
        learning_rate=step.learning_rate,
        ent_coef=step.ent_coef,
        warm_start=step.warm_start,
        opponents=[
            r.model_copy(update={"name": e.name})
            for e, player in zip(step.league, players, strict=True)
            for r in result.opponents
            if r.name == player
        ],
    )
