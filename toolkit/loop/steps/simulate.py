"""Generation 0's data: the Forge stand-in's games (or the Forge logs the config names); with the loop's engine,
the records of that engine's own AI."""

from __future__ import annotations

from pydantic import BaseModel, Field

from toolkit.ingest.handover import StagedShard
from toolkit.loop.steps.base import StepContext


class SimulateInput(BaseModel):
    games: int
    players: list[str]
    logs: list[str]  # the config's logs, as recorded (relative to the data root inside it)


class SimulateStepResult(BaseModel):
    files: list[str]  # as recorded: the simulated logs relative to the data root, or the config's logs
    simulated: bool
    games: int | None = None
    decisions: int | None = None
    staged: list[StagedShard] = Field(
        default_factory=list, description="The logs the workers staged at the shared lake's location (none: local)."
    )


def simulate_step(ctx: StepContext, step: SimulateInput) -> SimulateStepResult:
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate

    if step.logs:
        return SimulateStepResult(files=step.logs, simulated=False)
    config = SimulateConfig(
        games=step.games,
        players=tuple(step.players),
        seed=ctx.seed,
        out=ctx.folder,
        max_rounds=ctx.config.max_rounds,
        compression=ctx.config.log_compression,
    )
    engine = ctx.engine
    if engine is not None:  # the engine's own AI plays the bootstrap: its records are the teacher data
        from toolkit.engine.simulate import simulate_on_engine

        result = simulate_on_engine(config, engine)
    else:  # on a shared lake, the workers stage their logs there for the ingest step to commit
        from toolkit.ingest.shards import fetch_logs, staging_for

        result = simulate(config, backend=ctx.config.backend, handoff=staging_for(ctx.layout, ctx.folder))
        fetch_logs(result.staged, ctx.layout)
    return SimulateStepResult(
        files=[ctx.layout.stored(f) for f in result.files],
        simulated=True,
        games=result.games,
        decisions=result.decisions,
        staged=result.staged,
    )
