"""The run page's one row per generation: what was promoted, what was kept, what was refused and why.

A generation record (``generations.jsonl``) evaluates the models *in use*
after the generation: when the student's candidate is refused, the record's
student win rate is the previous student's, measured again, and its holdout
accuracy is the refused candidate's. A :class:`GenerationRow` says which is
which: for the PPO teacher and the student separately, the model in use
(promoted now, or kept from an earlier generation) and every candidate the
generation trained, with its gates' figures, labelled as the candidate's.

Everything is derived from the records alone (older runs' records too).
To show a new per-generation figure (a label-issue rate, an exploitability
score from a new loop step), add a field to :class:`GenerationRow`, fill it in
:func:`generation_row` from the record's steps, and add its column to
``templates/run.html`` (table ``#table-generations``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, Field

from toolkit.layout import generation_label
from toolkit.loop.record import GenerationRecord
from toolkit.loop.steps.base import StepName
from toolkit.loop.steps.evaluate import Gain, Score

Kind = Literal["student", "ppo"]
PLURAL = {"random": "random players", "heuristic": "heuristics", "tuned": "tuned heuristics"}
STRENGTH_GATES = (StepName.PPO_GATE, StepName.STUDENT_GATE)


class GateFigure(BaseModel):
    """One gate's verdict on a candidate, as one line of figures, with its report page when there is one."""

    gate: str
    passed: bool | None
    summary: str
    report: str | None = Field(None, description="URL of the gate's report page.")


class Candidate(BaseModel):
    """A model a generation trained: promoted, or refused by the first gate it failed."""

    name: str = Field(description="Its rating name, gen-NNN-student or gen-NNN-ppo.")
    attempt: int
    promoted: bool
    refused_by: str | None = Field(description="The gate that refused it (None: promoted, or no gate decided).")
    holdout_accuracy: float | None = Field(None, description="A student candidate's accuracy on the FIXED holdout.")
    verdicts: list[GateFigure]


class ModelOutcome(BaseModel):
    """What one generation did with one kind of model."""

    kind: Kind
    status: Literal["promoted", "kept", "none"] = Field(
        description="promoted: this generation's candidate is in use; kept: an earlier model stays in use; "
        "none: no model of this kind yet."
    )
    in_use: str | None = Field(description="Rating name of the model in use after this generation.")
    in_use_generation: int | None = Field(description="The generation that trained the model in use.")
    candidates: list[Candidate]
    note: str = Field(description="One line: what happened, e.g. 'kept gen-001-student: candidate refused by ...'.")


class Exploitability(BaseModel):
    """A fresh exploiter's win rate against three copies of the student (25% is even), with its 95% interval."""

    rate: float
    low: float | None
    high: float | None
    steps: int | None = Field(description="The exploiter's PPO budget.")


class GenerationRow(BaseModel):
    """One generation at a glance: the teacher's and the student's outcome and the strength of the models in use."""

    generation: int
    outcome: str
    reason: str | None
    attempts: int
    ppo: ModelOutcome
    student: ModelOutcome
    student_scores: dict[str, Score] = Field(description="table -> the student in use, fixed-size evaluation.")
    ppo_scores: dict[str, Score] = Field(description="table -> the PPO model in use, fixed-size evaluation.")
    student_gain: dict[str, Gain] = Field(description="table -> the student in use over the gen-0 student, paired.")
    exploitability: Exploitability | None = Field(
        None, description="The exploiter probe against three copies of the student in use (None: no probe)."
    )


def table_label(opponents: Sequence[str]) -> str:
    """An evaluation table as words: ``("heuristic",) * 3`` -> ``3 heuristics``."""
    counts = Counter(opponents)
    return " + ".join(f"{n} {PLURAL.get(name, name) if n > 1 else name}" for name, n in counts.items())


def gate_report_url(run: str, generation: int, gate: str) -> str:
    return f"/runs/{quote(run)}/gates/{generation}/{gate}"


def generation_rows(records: Sequence[GenerationRecord]) -> list[GenerationRow]:
    """The rows of a run's records, in generation order (the models in use carried from one to the next)."""
    rows: list[GenerationRow] = []
    in_use: dict[Kind, int | None] = {"student": None, "ppo": None}
    for record in records:
        row = generation_row(record, in_use)
        in_use = {"student": row.student.in_use_generation, "ppo": row.ppo.in_use_generation}
        rows.append(row)
    return rows


def generation_row(record: GenerationRecord, in_use: dict[Kind, int | None]) -> GenerationRow:
    """One record's row, given the generations whose models were in use before it."""
    scores = record.evaluation or {}
    return GenerationRow(
        generation=record.generation,
        outcome=record.outcome,
        reason=record.reason,
        attempts=record.retries + 1,
        ppo=_outcome(record, "ppo", record.teacher_promoted, in_use["ppo"]),
        student=_outcome(record, "student", record.student_promoted, in_use["student"]),
        student_scores=scores.get("student", {}),
        ppo_scores=scores.get("ppo", {}),
        student_gain=record.student_gain or {},
        exploitability=_exploitability(record),
    )


def _exploitability(record: GenerationRecord) -> Exploitability | None:
    if record.exploitability is None:
        return None
    return Exploitability(
        rate=record.exploitability,
        low=record.exploitability_low,
        high=record.exploitability_high,
        steps=record.exploiter_steps,
    )


def _outcome(record: GenerationRecord, kind: Kind, promoted: bool, before: int | None) -> ModelOutcome:
    g = record.generation
    candidates = [c for a in record.attempts if (c := _candidate(record, kind, a.attempt, a.steps)) is not None]
    if promoted and candidates:
        candidates[-1] = candidates[-1].model_copy(update={"promoted": True, "refused_by": None})
    now = g if promoted else before
    name = None if now is None else f"{generation_label(now)}-{kind}"
    refused = [c for c in candidates if not c.promoted]
    if promoted:
        status, note = "promoted", f"promoted {name}"
    elif now is None:
        status, note = "none", f"no {_word(kind)} yet"
    else:
        status, note = "kept", f"kept {name} (trained in generation {now})"
    if refused:
        why = "; ".join(f"{c.name} refused by the {c.refused_by}" for c in refused if c.refused_by)
        note += f": {why}" if why else ""
    elif not promoted and now is not None:
        note += ": no candidate this generation"
    return ModelOutcome(kind=kind, status=status, in_use=name, in_use_generation=now, candidates=candidates, note=note)


def _word(kind: Kind) -> str:
    return "PPO model" if kind == "ppo" else "student"


def _candidate(
    record: GenerationRecord, kind: Kind, attempt: int, steps: dict[str, dict[str, Any]]
) -> Candidate | None:
    trained = StepName.SELFPLAY if kind == "ppo" else StepName.TRAIN_STUDENT
    if trained not in steps:
        return None
    g = record.generation
    verdicts = _ppo_verdicts(record, steps) if kind == "ppo" else _student_verdicts(record, steps)
    refused = next((v.gate for v in verdicts if v.passed is False), None)
    suffix = f" (attempt {attempt})" if record.retries else ""
    guard = steps.get(StepName.ACCURACY_GUARD) if kind == "student" else None
    return Candidate(
        name=f"{generation_label(g)}-{kind}{suffix}",
        attempt=attempt,
        promoted=False,
        refused_by=refused,
        holdout_accuracy=None if guard is None else guard.get("accuracy"),
        verdicts=verdicts,
    )


def _ppo_verdicts(record: GenerationRecord, steps: dict[str, dict[str, Any]]) -> list[GateFigure]:
    found = []
    gate = steps.get(StepName.PPO_GATE)
    url = gate_report_url(record.loop, record.generation, StepName.PPO_GATE)
    if gate is not None:
        floor = gate.get("floor") or {}
        found.append(
            GateFigure(gate="export floor", passed=floor.get("passed"), summary=floor.get("reason", ""), report=url)
        )
        found.extend(_promotion("PPO gate", gate, url))
    data = steps.get(StepName.DATA_GATE)
    if data is not None and gate is not None and gate.get("passed"):
        found.append(GateFigure(gate="data gate", passed=data.get("passed"), summary=data.get("reason", "")))
    return found


def _student_verdicts(record: GenerationRecord, steps: dict[str, dict[str, Any]]) -> list[GateFigure]:
    found = []
    guard = steps.get(StepName.ACCURACY_GUARD)
    if guard is not None:
        found.append(GateFigure(gate="accuracy guard", passed=guard.get("passed"), summary=guard.get("reason", "")))
    gate = steps.get(StepName.STUDENT_GATE)
    if gate is not None:
        url = gate_report_url(record.loop, record.generation, StepName.STUDENT_GATE)
        found.extend(_promotion("student gate", gate, url))
    return found


def _promotion(name: str, gate: dict[str, Any], url: str) -> list[GateFigure]:
    """Head to head against the previous model, then the scripted floor (a run before head-to-head promotion saved
    the student gate as its scripted verdict)."""
    found = []
    legacy = "head_to_head" not in gate  # its strength verdict was the promotion test itself
    if gate.get("head_to_head"):
        found.append(_strength(f"{name}: head to head", gate["head_to_head"], url, "the previous model"))
    if gate.get("strength"):
        found.append(_strength(name if legacy else f"{name}: scripted floor", gate["strength"], url))
    elif "diff" in gate and legacy:
        found.append(_strength(name, gate, url))
    return found


def _strength(name: str, verdict: dict[str, Any], url: str, baseline: str = "its baseline") -> GateFigure:
    """A strength verdict as one line: the paired difference in points with its interval, over how many deals."""
    diff, low, high = (100 * verdict.get(k, 0.0) for k in ("diff", "diff_low", "diff_high"))
    words = {"accept_h1": "better", "accept_h0": "no better", "undecided": "not shown better"}
    if verdict.get("delta1", 1.0) <= 0:  # a non-inferiority test (the scripted floor)
        words = {"accept_h1": "not worse", "accept_h0": "worse", "undecided": "not shown not worse"}
    summary = (
        f"{words.get(verdict.get('decision', ''), verdict.get('decision', ''))} than {baseline}: win rate "
        f"{diff:+.1f} points [{low:+.1f}, {high:+.1f}] over {verdict.get('deals', 0)} paired deals"
    )
    return GateFigure(gate=name, passed=verdict.get("passed"), summary=summary, report=url)
