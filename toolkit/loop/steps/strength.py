"""Promotion gates: PPO (the export floor, head to head, the scripted floor) and the student (head to head, the
scripted floor).

Head to head decides: the candidate must beat the previous promoted model of
its kind in the pod (``gates.head_to_head_gate``, at tables of the previous
model and the league's past models). The scripted floor then keeps it from
being worse than the previous model against the scripted table. Each gate
stops at the first test that fails; the result keeps every verdict it has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from toolkit.loop.gates import (
    FloorVerdict,
    HeadToHeadVerdict,
    StrengthVerdict,
    floor_gate,
    head_to_head_gate,
    strength_gate,
)
from toolkit.loop.steps.base import StepContext

if TYPE_CHECKING:
    from toolkit.train.agents import PolicyBlob


class StrengthInput(BaseModel):
    candidate: str  # cards, relative to the data root
    baseline: str
    past: list[str] = Field(default_factory=list, description="The league's past models, latest first (mixed tables).")


class PPOGateResult(BaseModel):
    passed: bool
    reason: str
    floor: FloorVerdict
    head_to_head: HeadToHeadVerdict | None = None
    strength: StrengthVerdict | None = Field(None, description="The scripted floor (run once head to head passed).")


class StudentGateResult(BaseModel):
    passed: bool
    reason: str
    head_to_head: HeadToHeadVerdict | None = Field(
        None, description="None only in runs recorded before promotion was head to head."
    )
    strength: StrengthVerdict | None = Field(None, description="The scripted floor (run once head to head passed).")

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """A run recorded before promotion was head to head saved the student gate as its strength verdict."""
        if isinstance(data, dict) and "head_to_head" not in data and "diff" in data:
            return {"passed": data.get("passed"), "reason": data.get("reason"), "strength": data}
        return data


def _player(ctx: StepContext, card: str) -> PolicyBlob:
    from toolkit.train.agents import policy_blob

    return policy_blob(ctx.resolve(card))


def _head_to_head(ctx: StepContext, step: StrengthInput) -> HeadToHeadVerdict:
    return head_to_head_gate(
        _player(ctx, step.candidate),
        _player(ctx, step.baseline),
        [_player(ctx, card) for card in step.past],
        ctx.config.head_to_head,
        seed=ctx.seed,
        max_rounds=ctx.config.max_rounds,
        backend=ctx.config.backend,
        engine=ctx.engine,
    )


def _scripted(ctx: StepContext, step: StrengthInput, student: bool) -> StrengthVerdict:
    config = (ctx.config.student_gate if student else None) or ctx.config.strength_gate
    return strength_gate(
        _player(ctx, step.candidate),
        _player(ctx, step.baseline),
        config,
        seed=ctx.seed + 1,
        max_rounds=ctx.config.max_rounds,
        backend=ctx.config.backend,
        engine=ctx.engine,
    )


def student_gate(ctx: StepContext, step: StrengthInput) -> StudentGateResult:
    """The student against the previous promoted student: head to head, then the scripted floor."""
    beat = _head_to_head(ctx, step)
    if not beat.passed:
        return StudentGateResult(passed=False, reason=f"head to head: {beat.reason}", head_to_head=beat)
    scripted = _scripted(ctx, step, student=True)
    return StudentGateResult(passed=scripted.passed, reason=_both(beat, scripted), head_to_head=beat, strength=scripted)


def _both(beat: HeadToHeadVerdict, scripted: StrengthVerdict) -> str:
    """The reason of a gate that ran both tests: the one that decided first."""
    if scripted.passed:
        return f"head to head: {beat.reason}; scripted floor: {scripted.reason}"
    return f"scripted floor: {scripted.reason} (head to head: {beat.reason})"


def ppo_gate(ctx: StepContext, step: StrengthInput) -> PPOGateResult:
    """The export floor first (the seed's > 30% against three heuristics), then head to head against the
    baseline, then the scripted floor."""
    floor = floor_gate(
        _player(ctx, step.candidate),
        ctx.config.floor,
        seed=ctx.seed,
        max_rounds=ctx.config.max_rounds,
        backend=ctx.config.backend,
        engine=ctx.engine,
    )
    if not floor.passed:
        return PPOGateResult(passed=False, reason=f"floor: {floor.reason}", floor=floor)
    beat = _head_to_head(ctx, step)
    if not beat.passed:
        return PPOGateResult(passed=False, reason=f"head to head: {beat.reason}", floor=floor, head_to_head=beat)
    scripted = _scripted(ctx, step, student=False)
    return PPOGateResult(
        passed=scripted.passed,
        reason=_both(beat, scripted),
        floor=floor,
        head_to_head=beat,
        strength=scripted,
    )
