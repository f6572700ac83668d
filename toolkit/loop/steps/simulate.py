"""Generation 0's data: the Forge stand-in's games (or the Forge logs the config names)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from toolkit.loop.steps.base import StepContext


class SimulateInput(BaseModel):
    games: int
    players: list[str]
    logs: list[Path]


class SimulateResult(BaseModel):
    files: list[Path]
    simulated: bool
    games: int | None = None
    decisions: int | None = None


def run(ctx: StepContext, step: SimulateInput) -> SimulateResult:
    from toolkit.game.simulate import SimulateConfig, simulate

    if step.logs:
        return SimulateResult(files=step.logs, simulated=False)
    result = simulate(
        SimulateConfig(
            games=step.games,
            players=tuple(step.players),
            seed=ctx.seed,
            out=ctx.folder,
            max_rounds=ctx.config.max_rounds,
        ),
        backend=ctx.config.backend,
    )
    return SimulateResult(files=result.files, simulated=True, games=result.games, decisions=result.decisions)
