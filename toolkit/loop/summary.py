"""A finished generation's record (:class:`~toolkit.loop.record.GenerationRecord`), summarised from the loop's
state: the typed results of its steps, attempt by attempt."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from toolkit.loop.gates import GuardVerdict
from toolkit.loop.record import AttemptRecord, GenerationRecord
from toolkit.loop.state import GenerationState, LoopState, now
from toolkit.loop.steps.base import StepName
from toolkit.loop.steps.build import BuildStepResult
from toolkit.loop.steps.evaluate import EvaluationStepResult
from toolkit.loop.steps.exploit import ExploitResult
from toolkit.loop.steps.ratings import RatingsResult

R = TypeVar("R", bound=BaseModel)


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
