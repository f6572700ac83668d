"""One loop run: strength per generation with intervals, gates, rejected batches, composition, ratings,
and the chart this product exists for: imitation accuracy on the Forge holdout against playing strength."""

from __future__ import annotations

import polars as pl

from toolkit.analysis.errors import NothingToShowError
from toolkit.catalog.lake import Lake
from toolkit.layout import Layout
from toolkit.loop.record import GenerationRecord
from toolkit.loop.state import RunFolder


def load_records(layout: Layout, name: str) -> list[GenerationRecord]:
    """The finished generations of run ``name``, in order.

    Raises:
        NothingToShowError: no such run, or none of its generations finished yet.
    """
    run = RunFolder(layout, name)
    if not run.exists():
        raise NothingToShowError(
            f"no loop run named {name!r} in {layout.home}",
            hint=f"start one: distill --home {layout.home} loop run --name {name}",
        )
    records = [GenerationRecord.model_validate(r) for r in run.records()]
    if not records:
        raise NothingToShowError(
            f"loop run {name!r} has not finished a generation yet",
            hint=f"see where it is: distill --home {layout.home} loop status --name {name}",
        )
    return records


def strength(records: list[GenerationRecord]) -> pl.DataFrame:
    """Per generation, promoted model and table: the fixed-size evaluation's win rate and 95% interval."""
    rows = [
        {
            "generation": r.generation,
            "model": model,
            "table": table,
            "win_rate": s.win_rate,
            "low": s.win_low,
            "high": s.win_high,
            "games": s.games,
        }
        for r in records
        for model, tables in (r.evaluation or {}).items()
        for table, s in tables.items()
    ]
    return pl.DataFrame(
        rows,
        schema={
            "generation": pl.Int64,
            "model": pl.String,
            "table": pl.String,
            "win_rate": pl.Float64,
            "low": pl.Float64,
            "high": pl.Float64,
            "games": pl.Int64,
        },
    )


def student_gain(records: list[GenerationRecord]) -> pl.DataFrame:
    """Per generation and table, the promoted student's paired gain over the generation-0 student."""
    rows = [
        {"generation": r.generation, "table": table, "gain": g.diff, "low": g.low, "high": g.high, "deals": g.deals}
        for r in records
        for table, g in (r.student_gain or {}).items()
    ]
    return pl.DataFrame(
        rows,
        schema={
            "generation": pl.Int64,
            "table": pl.String,
            "gain": pl.Float64,
            "low": pl.Float64,
            "high": pl.Float64,
            "deals": pl.Int64,
        },
    )


def gates(records: list[GenerationRecord]) -> pl.DataFrame:
    """Per generation, every gate's verdict in its last attempt, the outcome and its reason."""
    rows = []
    for r in records:
        steps = r.attempts[-1].steps
        ppo = steps.get("ppo_gate") or {}
        strength_verdict = ppo.get("strength") or {}
        student = steps.get("student_gate") or {}
        rows.append(
            {
                "generation": r.generation,
                "outcome": r.outcome,
                "tries": r.retries + 1,
                "floor": (ppo.get("floor") or {}).get("reason"),
                "ppo_gate": ppo.get("reason") if "head_to_head" in ppo else strength_verdict.get("reason"),
                "data_gate": (steps.get("data_gate") or {}).get("reason"),
                "accuracy_guard": (steps.get("accuracy_guard") or {}).get("reason"),
                "student_gate": student.get("reason"),
                "teacher_promoted": r.teacher_promoted,
                "student_promoted": r.student_promoted,
                "reason": r.reason,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "generation": pl.Int64,
            "outcome": pl.String,
            "tries": pl.Int64,
            "floor": pl.String,
            "ppo_gate": pl.String,
            "data_gate": pl.String,
            "accuracy_guard": pl.String,
            "student_gate": pl.String,
            "teacher_promoted": pl.Boolean,
            "student_promoted": pl.Boolean,
            "reason": pl.String,
        },
    )


def generation_composition(records: list[GenerationRecord]) -> pl.DataFrame:
    """Per generation and source, the student's training rows and their share."""
    rows = [
        {"generation": r.generation, "source": source, "rows": n}
        for r in records
        for source, n in (r.rows_by_source or {}).items()
    ]
    frame = pl.DataFrame(rows, schema={"generation": pl.Int64, "source": pl.String, "rows": pl.Int64})
    return frame.with_columns((pl.col("rows") / pl.col("rows").sum().over("generation")).alias("share"))


def rating_table(records: list[GenerationRecord]) -> pl.DataFrame:
    """The rating table as it stood after each generation: one row per (generation, player)."""
    rows = [{"generation": r.generation, **s.model_dump()} for r in records for s in (r.ratings or [])]
    return pl.DataFrame(
        rows,
        schema={
            "generation": pl.Int64,
            "name": pl.String,
            "elo": pl.Float64,
            "elo_se": pl.Float64,
            "mu": pl.Float64,
            "sigma": pl.Float64,
            "ordinal": pl.Float64,
            "games": pl.Int64,
            "wins": pl.Int64,
        },
    )


def accuracy_vs_strength(records: list[GenerationRecord]) -> pl.DataFrame:
    """For each promoted student: its accuracy on the FIXED Forge holdout and its win rate (first table)."""
    rows = [
        {
            "generation": r.generation,
            "holdout_accuracy": r.holdout_accuracy,
            "win_rate": r.student_win_rate,
            "low": r.student_win_low,
            "high": r.student_win_high,
        }
        for r in records
        if (r.generation == 0 or r.student_promoted)
        and r.holdout_accuracy is not None
        and r.student_win_rate is not None
    ]
    return pl.DataFrame(
        rows,
        schema={
            "generation": pl.Int64,
            "holdout_accuracy": pl.Float64,
            "win_rate": pl.Float64,
            "low": pl.Float64,
            "high": pl.Float64,
        },
    )


def rejected_batches(layout: Layout, name: str) -> pl.DataFrame:
    """The run's batches a gate rejected (kept in the lake, out of every build), with the reason."""
    batches = sorted(RunFolder(layout, name).load().batches())
    schema = {"batch_id": pl.String, "generations": pl.List(pl.Int32), "rows": pl.Int64, "reason": pl.String}
    if not batches or not layout.catalog.exists():
        return pl.DataFrame(schema=schema)
    wanted = set(batches)
    with Lake.open(layout).at() as catalog:
        rejected = [b for b in catalog.batches() if b.status == "rejected" and b.batch_id in wanted]
    rejected.sort(key=lambda b: b.created_at)
    return pl.DataFrame(
        {
            "batch_id": [b.batch_id for b in rejected],
            "generations": [b.generations for b in rejected],
            "rows": [b.rows_valid for b in rejected],
            "reason": [b.status_reason for b in rejected],
        },
        schema=schema,
    )
