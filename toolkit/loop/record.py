"""One generation's complete record: a line of ``generations.jsonl`` (the SQL view ``generations``).

Built from the typed results of the generation's steps. The headline
fields (win rates, the student's paired gain over generation 0, accuracy,
composition, ratings, the exploiter probe's exploitability) come from the fixed-size evaluation and the build,
never from a gate's sequential test; the gates' own figures stay in the
attempts.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, Field

from toolkit.datasets.dataset import Share
from toolkit.loop.gates import GuardVerdict
from toolkit.loop.state import GenerationState, LoopState, now
from toolkit.loop.steps.base import StepName
from toolkit.loop.steps.build import BuildStepResult
from toolkit.loop.steps.evaluate import EvaluationStepResult, Gain, Score
from toolkit.loop.steps.exploit import ExploitResult
from toolkit.loop.steps.ratings import RatingsResult
from toolkit.ratings import Standing

R = TypeVar("R", bound=BaseModel)


class AttemptRecord(BaseModel):
    """One attempt of a generation: each step's result as saved, and its timing."""

    attempt: int
    steps: dict[str, dict[str, Any]]
    timings: dict[str, float]


class GenerationRecord(BaseModel):
    """What a finished generation did and measured."""

    loop: str
    generation: int
    outcome: str
    reason: str | None
    retries: int
    teacher_promoted: bool
    student_promoted: bool
    student: str | None = Field(description="Card of the promoted student after this generation (root-relative).")
    ppo: str | None = Field(description="Card of the promoted PPO model after this generation (root-relative).")
    holdout_accuracy: float | None = Field(description="This generation's student on the FIXED Forge holdout.")
    previous_accuracy: float | None
    student_win_rate: float | None = Field(description="Promoted student vs the first evaluation table.")
    student_win_low: float | None
    student_win_high: float | None
    ppo_win_rate: float | None
    evaluation: dict[str, dict[str, Score]] | None = Field(description="model -> table -> fixed-size score.")
    student_gain: dict[str, Gain] | None = Field(description="table -> paired gain over the generation-0 student.")
    rows_by_source: dict[str, int] | None = Field(description="The student's training rows by source.")
    shares: dict[str, Share] | None
    ratings: list[Standing] | None
    exploitability: float | None = Field(
        None,
        description="The exploiter probe's win rate against three copies of the promoted student (25% is even; "
        "None: no probe).",
    )
    exploitability_low: float | None = Field(None, description="Wilson 95% interval of the exploitability.")
    exploitability_high: float | None = None
    exploiter_steps: int | None = Field(None, description="The exploiter's PPO budget (steps) behind that figure.")
    attempts: list[AttemptRecord]
    seconds: float
    recorded_at: str


def generation_record(gen: GenerationState, state: LoopState, loop: str) -> GenerationRecord:
    """The record of ``gen`` once it finished."""
    attempts = []
    for attempt in range(gen.attempt + 1):
        steps = {r.name: r for k, r in gen.steps.items() if k.startswith(f"{attempt}:")}
        attempts.append(
            AttemptRecord(
                attempt=attempt,
                steps={n: r.result for n, r in steps.items()},
                timings={n: r.seconds for n, r in steps.items()},
            )
        )
    last = attempts[-1].steps
    guard = _result(last, StepName.ACCURACY_GUARD, GuardVerdict)
    build = _result(last, StepName.BUILD, BuildStepResult)
    ratings = _result(last, StepName.RATINGS, RatingsResult)
    evaluation = _result(last, StepName.EVALUATE, EvaluationStepResult)
    probe = _result(last, StepName.EXPLOIT, ExploitResult)
    scores = evaluation.scores if evaluation else {}
    student = next(iter(scores.get("student", {}).values()), None)
    ppo = next(iter(scores.get("ppo", {}).values()), None)
    promoted = {p.kind for p in state.promoted if p.generation == gen.generation}
    return GenerationRecord(
        loop=loop,
        generation=gen.generation,
        outcome=gen.outcome,
        reason=gen.reason,
        retries=gen.attempt,
        teacher_promoted="ppo" in promoted,
        student_promoted="student" in promoted,
        student=state.current_student,
        ppo=state.current_ppo,
        holdout_accuracy=guard.accuracy if guard else None,
        previous_accuracy=guard.previous_accuracy if guard else None,
        student_win_rate=student.win_rate if student else None,
        student_win_low=student.win_low if student else None,
        student_win_high=student.win_high if student else None,
        ppo_win_rate=ppo.win_rate if ppo else None,
        evaluation=scores or None,
        student_gain=evaluation.student_gain if evaluation else None,
        rows_by_source=build.rows_by_source if build else None,
        shares=build.shares if build else None,
        ratings=ratings.standings if ratings else None,
        exploitability=probe.exploitability if probe else None,
        exploitability_low=probe.low if probe else None,
        exploitability_high=probe.high if probe else None,
        exploiter_steps=probe.steps if probe else None,
        attempts=attempts,
        seconds=round(sum(r.seconds for r in gen.steps.values()), 3),
        recorded_at=now(),
    )


def _result(steps: dict[str, dict[str, Any]], name: StepName, model: type[R]) -> R | None:
    """The saved result of step ``name`` as its type, if the step ran in this attempt."""
    return model.model_validate(steps[name]) if name in steps else None
