"""Promotion gates: PPO (the export floor, then strength against its baseline) and the student (strength)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from toolkit.loop.gates import FloorVerdict, StrengthVerdict, floor_gate, strength_gate
from toolkit.loop.steps.base import StepContext

if TYPE_CHECKING:
    from toolkit.train.agents import PolicyBlob


class StrengthInput(BaseModel):
    candidate: str  # cards, relative to the data root
    baseline: str


class PPOGateResult(BaseModel):
    passed: bool
    reason: str
    floor: FloorVerdict
    strength: StrengthVerdict | None = None


def _player(ctx: StepContext, card: str) -> PolicyBlob:
    from toolkit.train.agents import policy_blob

    return policy_blob(ctx.layout.resolve(card))


def student_gate(ctx: StepContext, step: StrengthInput) -> StrengthVerdict:
    """The student against the previous promoted student on paired deals."""
    config = ctx.config.student_gate or ctx.config.strength_gate
    return strength_gate(
        _player(ctx, step.candidate),
        _player(ctx, step.baseline),
        config,
        seed=ctx.seed,
        max_rounds=ctx.config.max_rounds,
        backend=ctx.config.backend,
    )


def ppo_gate(ctx: StepContext, step: StrengthInput) -> PPOGateResult:
    """The export floor first (the seed's > 30% against three heuristics), then strength against the baseline."""
    floor = floor_gate(
        _player(ctx, step.candidate),
        ctx.config.floor,
        seed=ctx.seed,
        max_rounds=ctx.config.max_rounds,
        backend=ctx.config.backend,
    )
    if not floor.passed:
        return PPOGateResult(passed=False, reason=f"floor: {floor.reason}", floor=floor)
    strength = strength_gate(
        _player(ctx, step.candidate),
        _player(ctx, step.baseline),
        ctx.config.strength_gate,
        seed=ctx.seed,
        max_rounds=ctx.config.max_rounds,
        backend=ctx.config.backend,
    )
    return PPOGateResult(passed=strength.passed, reason=f"strength: {strength.reason}", floor=floor, strength=strength)
