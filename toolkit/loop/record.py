"""One generation's complete record: a line of ``generations.jsonl`` (the SQL view ``generations``).

Built from the typed results of the generation's steps (:func:`toolkit.loop.summary.generation_record`). The headline
fields (win rates, the student's paired gain over generation 0, accuracy,
composition, ratings, the exploiter probe's exploitability) come from the fixed-size evaluation and the build,
never from a gate's sequential test; the gates' own figures stay in the
attempts.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, Field

from toolkit.datasets.dataset import Share
from toolkit.layout import GENERATION_RECORD_FORMAT_VERSION
from toolkit.loop.steps.evaluate import Gain, Score
from toolkit.ratings import Standing

R = TypeVar("R", bound=BaseModel)


class AttemptRecord(BaseModel):
    """One attempt of a generation: each step's result as saved, and its timing."""

    attempt: int
    steps: dict[str, dict[str, Any]]
    timings: dict[str, float]


class GenerationRecord(BaseModel):
    """What a finished generation did and measured (a line of ``generations.jsonl``, read back by
    :meth:`~toolkit.loop.state.RunFolder.records`)."""

    format_version: int = Field(
        GENERATION_RECORD_FORMAT_VERSION,
        ge=1,
        le=GENERATION_RECORD_FORMAT_VERSION,
        description="The format of this record (1: written before records carried one).",
    )
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
