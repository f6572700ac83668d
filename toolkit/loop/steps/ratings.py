"""The rating tournament: this generation's models against the baselines and the generation before."""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.game.config import TournamentConfig
from toolkit.loop.steps.base import StepContext
from toolkit.ratings import RatingPool, Standing, play_tournament, standings


class RatingsInput(BaseModel):
    pool: str  # paths relative to the data root
    tournament: str
    focus: dict[str, str]  # this generation's models' cards, by rating name
    others: dict[str, str]  # the generation before's


class RatingsResult(BaseModel):
    tournament: str
    entrants: list[str]
    focus: list[str]
    games: int
    standings: list[Standing]


def ratings_step(ctx: StepContext, step: RatingsInput) -> RatingsResult:
    from toolkit.train.agents import PlayerRef, player_from_ref, policy_blob

    entrants: dict[str, PlayerRef] = {name: name for name in ctx.config.tournament.baselines}
    for name, card in {**step.others, **step.focus}.items():
        entrants[name] = policy_blob(ctx.resolve(card))
    pool = RatingPool(ctx.resolve(step.pool))
    if not pool.has(step.tournament):
        games = play_tournament(
            entrants,
            list(step.focus),
            TournamentConfig(
                deals_per_lineup=ctx.config.tournament.deals_per_lineup, max_rounds=ctx.config.max_rounds, seed=ctx.seed
            ),
            load=player_from_ref,
            backend=ctx.config.backend,
            engine=ctx.engine,
        )
        pool.rate(step.tournament, games)
        pool.save()
    return RatingsResult(
        tournament=step.tournament,
        entrants=sorted(entrants),
        focus=sorted(step.focus),
        games=len(pool.data.games),
        standings=standings(pool),
    )
