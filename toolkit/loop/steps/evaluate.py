"""The fixed-size evaluation every generation reports: the promoted models on the same deals every generation.

Each model plays ``evaluation.games`` games per table (seats rotated), with
one seed for the whole run, so generations are compared on identical
deals: the student's gain over the generation-0 student is a paired
difference with its 95% interval (over deal units). Every win rate the
history shows comes from here, never from where a sequential test stopped.
"""

from __future__ import annotations

from pydantic import BaseModel

from toolkit.loop.steps.base import StepContext

STUDENT = "student"


class Score(BaseModel):
    """One model against one table."""

    games: int
    wins: int
    win_rate: float
    win_low: float
    win_high: float
    placement_score: float
    truncations: int


class Gain(BaseModel):
    """A paired difference of win rates on the same deals, with its 95% interval."""

    deals: int
    diff: float
    low: float
    high: float


class EvaluateInput(BaseModel):
    models: dict[str, str]  # model -> its card, relative to the data root
    reference: str | None = None  # the generation-0 evaluation folder, for the student's paired gain
    seed: int


class EvaluationStepResult(BaseModel):
    scores: dict[str, dict[str, Score]]  # model -> table -> score
    student_gain: dict[str, Gain] | None = None  # table -> gain over the generation-0 student
    folder: str  # relative to the data root


def evaluate_step(ctx: StepContext, step: EvaluateInput) -> EvaluationStepResult:
    from toolkit.train.agents import policy_blob
    from toolkit.train.config import EvaluateConfig
    from toolkit.train.evaluate import compare, evaluate, read_evaluation, write_evaluation

    evaluation = ctx.config.evaluation
    scores: dict[str, dict[str, Score]] = {}
    gains: dict[str, Gain] = {}
    for model, card in step.models.items():
        policy = policy_blob(ctx.resolve(card))
        scores[model] = {}
        for table, opponents in evaluation.tables.items():
            result = evaluate(
                policy,
                EvaluateConfig(
                    opponents=opponents, games=evaluation.games, seed=step.seed, max_rounds=ctx.config.max_rounds
                ),
                backend=ctx.config.backend,
                engine=ctx.engine,
            )
            write_evaluation(ctx.folder / f"{model}-{table}.json", result)
            scores[model][table] = Score(
                games=result.games,
                wins=result.wins,
                win_rate=result.win_rate,
                win_low=result.win_low,
                win_high=result.win_high,
                placement_score=result.placement_score,
                truncations=result.truncations,
            )
            reference = ctx.resolve(step.reference) / f"{model}-{table}.json" if step.reference else None
            if model == STUDENT and reference is not None and reference.exists():
                diff = compare(result, read_evaluation(reference))
                gains[table] = Gain(
                    deals=diff.deals, diff=diff.win_rate_diff, low=diff.win_rate_diff_low, high=diff.win_rate_diff_high
                )
    return EvaluationStepResult(scores=scores, student_gain=gains or None, folder=ctx.layout.stored(ctx.folder))
