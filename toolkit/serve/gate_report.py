"""The report of a PPO or student gate in one generation: each attempt's verdict, its paired results per round
of deals, and the GSPRT's trace (the log-likelihood ratio after each round against the test's bounds).

Read from the run's ``state.json`` (a generation still running shows its
finished gates). Runs recorded before the loop kept the per-round results
show the final verdict and LLR only.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from toolkit.charts_svg import Series, line_chart
from toolkit.errors import ConfigError
from toolkit.layout import Layout
from toolkit.loop.gates import FloorVerdict, HeadToHeadVerdict, StrengthVerdict
from toolkit.loop.state import RunFolder, RunNotFoundError
from toolkit.loop.steps.base import StepName
from toolkit.loop.steps.strength import PPOGateResult, StudentGateResult

GATE_NAMES = {StepName.PPO_GATE: "PPO gate", StepName.STUDENT_GATE: "student gate"}


class GateAttempt(BaseModel):
    """One attempt's run of the gate."""

    attempt: int
    candidate: str = Field(description="The candidate's card, relative to the data root.")
    baseline: str = Field(description="The baseline's card: the model in use before.")
    passed: bool
    reason: str
    floor: FloorVerdict | None = Field(None, description="The PPO gate's export floor, decided first.")
    head_to_head: HeadToHeadVerdict | None = Field(
        None, description="Against the previous model in the pod; None: refused before it, or a run before it."
    )
    head_to_head_trace: str | None = Field(None, description="Its GSPRT trace as an inline SVG chart.")
    strength: StrengthVerdict | None = Field(None, description="The scripted floor; None: refused before it.")
    trace: str | None = Field(None, description="The scripted floor's GSPRT trace as an inline SVG chart.")


class GateReportPage(BaseModel):
    run: str
    generation: int
    gate: str
    title: str
    attempts: list[GateAttempt]


def gate_report(layout: Layout, run: str, generation: int, gate: str) -> GateReportPage:
    """The report page of ``gate`` (ppo_gate or student_gate) in ``generation`` of ``run``.

    Raises:
        RunNotFoundError: no such run, generation, or no such gate in it.
    """
    if gate not in GATE_NAMES:
        raise RunNotFoundError(f"no gate {gate!r} reports here", hint="gates with reports: ppo_gate, student_gate")
    state = RunFolder(layout, run).load()
    if not 0 <= generation < len(state.generations):
        raise RunNotFoundError(f"run {run!r} has no generation {generation}", hint=f"open /runs/{run}")
    steps = state.generations[generation].steps
    attempts = [_attempt(step.attempt, step.input, step.result, gate) for step in steps.values() if step.name == gate]
    if not attempts:
        raise RunNotFoundError(
            f"generation {generation} of run {run!r} ran no {GATE_NAMES[StepName(gate)]}", hint=f"open /runs/{run}"
        )
    return GateReportPage(
        run=run,
        generation=generation,
        gate=gate,
        title=f"Generation {generation}: {GATE_NAMES[StepName(gate)]}",
        attempts=sorted(attempts, key=lambda a: a.attempt),
    )


def _attempt(attempt: int, given: dict, result: dict, gate: str) -> GateAttempt:
    try:
        if gate == StepName.PPO_GATE:
            ppo = PPOGateResult.model_validate(result)
            floor, beat, strength, passed, reason = ppo.floor, ppo.head_to_head, ppo.strength, ppo.passed, ppo.reason
        else:
            student = StudentGateResult.model_validate(result)
            floor, beat, strength = None, student.head_to_head, student.strength
            passed, reason = student.passed, student.reason
    except ValueError as error:
        raise ConfigError(f"the {gate} result of attempt {attempt} is not readable: {error}") from None
    return GateAttempt(
        attempt=attempt,
        candidate=given.get("candidate", ""),
        baseline=given.get("baseline", ""),
        passed=passed,
        reason=reason,
        floor=floor,
        head_to_head=beat,
        head_to_head_trace=None if beat is None else trace_chart(beat),
        strength=strength,
        trace=None if strength is None else trace_chart(strength),
    )


def trace_chart(verdict: StrengthVerdict | HeadToHeadVerdict) -> str:
    """The LLR after each round against the bounds, over the paired deals played (from 0 at 0 deals)."""
    deals, llr = [0], [0.0]
    for r in verdict.rounds:
        deals.append(deals[-1] + r.deals)
        llr.append(r.llr)
    if not verdict.rounds:  # recorded before the loop kept its rounds: the final point only
        deals.append(verdict.deals)
        llr.append(verdict.llr)
    shown = [max(min(v, verdict.upper * 3), verdict.lower * 3) for v in llr]  # a decisive round can jump far
    notes = [f"after {d} paired deals: LLR {v:.2f}" for d, v in zip(deals, llr, strict=True)]
    return line_chart(
        deals,
        [Series("log-likelihood ratio", shown, notes)],
        title="GSPRT trace: the log-likelihood ratio after each round of deals",
        x_label="paired deals played",
        y_label="LLR",
        references=[("accept 'better' above", verdict.upper), ("accept 'no better' below", verdict.lower)],
        value_format=lambda v: f"{v:.2f}",
    )
