"""What the dashboard shows, as typed records: a run's history, ratings, composition, and the lake.

Every record is read from the run folder (``generations.jsonl``, the same
records ``distill loop history --json`` prints) or from the catalog's read
snapshot, so a page never waits for a loop that is ingesting or building.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolkit.analysis import lake as lake_frames
from toolkit.analysis import loop as loop_frames
from toolkit.analysis.errors import NothingToShowError
from toolkit.catalog.lake import Lake
from toolkit.catalog.lifecycle import history
from toolkit.catalog.records import BatchRecord
from toolkit.datasets.dataset import list_builds, read_manifest
from toolkit.datasets.scores import GroupRate, read_scores_info
from toolkit.errors import DistillError
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.record import GenerationRecord
from toolkit.loop.state import RunFolder
from toolkit.ratings import Standing
from toolkit.serve import charts as specs
from toolkit.serve.curves import TrainingCurves, tensorboard_note, training_curves
from toolkit.serve.generations import STRENGTH_GATES, GenerationRow, gate_report_url, generation_rows, table_label


class RatingsPoint(BaseModel):
    """The rating table as it stood after one generation (every player rated so far)."""

    generation: int
    standings: list[Standing]


class CompositionPoint(BaseModel):
    """The student's training rows of one generation, by source."""

    generation: int
    rows: dict[str, int]
    share: dict[str, float] = Field(description="rows / all rows of the generation, per source.")
    teacher_share: float = Field(description="Share of the teacher's (PPO) rows.")
    forge_share: float = Field(description="Share of the Forge-role rows.")
    dataset: str | None = Field(None, description="The build the student trained on: its name...")
    fingerprint: str | None = Field(None, description="... its fingerprint (NAME@FINGERPRINT names it anywhere)...")
    lake_version: int | None = Field(None, description="... and the lake version it read (None: not recorded).")


class GateLink(BaseModel):
    """A gate's verdict in a generation's last attempt, with its report when it wrote one."""

    generation: int
    gate: str
    passed: bool | None
    reason: str | None
    reports: list[str] = Field(default_factory=list, description="File names under reports/ (HTML).")
    page: str | None = Field(None, description="URL of the PPO or student gate's report page.")


class RejectedBatch(BaseModel):
    batch_id: str
    generations: list[int]
    rows: int
    reason: str | None


class Thresholds(BaseModel):
    """The lines the charts draw: the floor PPO's export must clear, the accuracy guard's floor."""

    ppo_floor: float | None
    accuracy_floor: float


class RunDetail(BaseModel):
    """Everything the run page shows besides the live status."""

    name: str
    generations: list[GenerationRecord]
    rows: list[GenerationRow] = Field(description="Per generation: what was promoted, kept and refused, and why.")
    tables: dict[str, str] = Field(description="Evaluation table -> its opponents in words (e.g. '3 heuristics').")
    charts: list[specs.Chart] = Field(description="What the run page's charts draw (strength per table, ...).")
    curves: list[TrainingCurves] = Field(description="The trainers' curves per generation (PPO, BC).")
    ratings: list[RatingsPoint]
    composition: list[CompositionPoint]
    gates: list[GateLink]
    rejected: list[RejectedBatch]
    thresholds: Thresholds
    tensorboard: str = Field(description="The command that opens the run's training curves.")
    tensorboard_install: str | None = Field(description="What to install for TensorBoard (None: it is installed).")


class SourceRows(BaseModel):
    source: str
    generation: int | None
    rows: int
    games: int
    batches: int


class RejectReason(BaseModel):
    reason: str
    lines: int
    example: str
    lines_at: list[str]


class BatchRow(BaseModel):
    batch_id: str
    created_at: str
    sources: list[str]
    generations: list[int]
    rows_valid: int
    rows_rejected: int
    rows_duplicate: int
    status: str
    status_reason: str | None
    lake_version: int | None = None
    retired: bool = False
    retired_reason: str | None = None

    @classmethod
    def of(cls, batch: BatchRecord) -> BatchRow:
        return cls.model_validate({**batch.model_dump(), "created_at": str(batch.created_at)})


class VersionRow(BaseModel):
    """One version of the lake (``distill lake history``)."""

    version: int
    committed_at: str
    operation: str
    batches: list[str]
    reason: str | None
    rows_added: int
    rows_removed: int


class LakeSummary(BaseModel):
    """What the lake holds at its latest version: rows by source and generation, quarantined lines by reason,
    the latest batches (retired ones marked), the latest versions."""

    rows: list[SourceRows]
    rejects: list[RejectReason]
    batches: list[BatchRow]
    total_rows: int
    total_rejected: int
    version: int = -1
    versions: list[VersionRow] = []


def generations(layout: Layout, name: str) -> list[GenerationRecord]:
    """The run's finished generations (empty while the first one runs)."""
    return [GenerationRecord.model_validate(r) for r in RunFolder(layout, name).records()]


def ratings_points(records: list[GenerationRecord]) -> list[RatingsPoint]:
    return [RatingsPoint(generation=r.generation, standings=r.ratings) for r in records if r.ratings]


def composition_points(records: list[GenerationRecord], layout: Layout | None = None) -> list[CompositionPoint]:
    """Each generation's training rows by source, and the build they are (with ``layout``, the lake version it
    read, from its manifest)."""
    points = []
    for r in records:
        rows = r.rows_by_source or {}
        total = sum(rows.values())
        share = {source: n / total for source, n in rows.items()} if total else {}
        build = r.attempts[-1].steps.get("build") if r.attempts else None
        points.append(
            CompositionPoint(
                generation=r.generation,
                rows=rows,
                share=share,
                teacher_share=share.get("ppo", 0.0),
                forge_share=share.get("forge", 0.0),
                dataset=build.get("name") if build else None,
                fingerprint=build.get("fingerprint") if build else None,
                lake_version=_lake_version(layout, build) if build and layout else None,
            )
        )
    return points


def _lake_version(layout: Layout, build: dict[str, Any]) -> int | None:
    """The lake version a loop's build read, from its manifest (None where the build is gone or unreadable)."""
    try:
        return read_manifest(layout.resolve(build["path"])).lake_version
    except (DistillError, OSError, KeyError, TypeError):
        return None


def run_detail(layout: Layout, name: str) -> RunDetail:
    """The run page's records (raises ConfigError for an unknown run)."""
    run = RunFolder(layout, name)
    run.load()
    records = generations(layout, name)
    config = run_config(layout, name)
    rejected = loop_frames.rejected_batches(layout, name).to_dicts() if layout.catalog.exists() else []
    rows = generation_rows(records)
    points = ratings_points(records)
    shares = composition_points(records, layout)
    tensorboard, install = tensorboard_note(run)
    return RunDetail(
        name=name,
        generations=records,
        rows=rows,
        tables={t: table_label(o) for t, o in config.evaluation.tables.items()},
        charts=[
            *specs.strength_charts(rows, config),
            specs.accuracy_chart(rows, config),
            specs.composition_chart("chart-composition", [(c.generation, c.share) for c in shares]),
            *rating_charts(points),
        ],
        curves=training_curves(run, len(records)),
        ratings=points,
        composition=shares,
        gates=_gates(records),
        rejected=[RejectedBatch.model_validate(r) for r in rejected],
        thresholds=Thresholds(ppo_floor=config.floor.win_rate, accuracy_floor=config.accuracy_guard.floor),
        tensorboard=tensorboard,
        tensorboard_install=install,
    )


def run_config(layout: Layout, name: str) -> LoopConfig:
    """The config run ``name`` started with."""
    return RunFolder(layout, name).config()


def rating_charts(points: list[RatingsPoint]) -> list[specs.Chart]:
    """Elo and OpenSkill's ordinal of every rated model over generations."""
    return [
        specs.ratings_chart(
            f"chart-{key}",
            [(p.generation, {s.name: getattr(s, key) for s in p.standings}) for p in points],
            title,
        )
        for key, title in (("elo", "Elo (heuristic = 1500)"), ("ordinal", "OpenSkill ordinal (mu - 3 sigma)"))
    ]


def _gates(records: list[GenerationRecord]) -> list[GateLink]:
    links = []
    for r in records:
        steps = r.attempts[-1].steps
        for gate in ("data_gate", "ppo_gate", "accuracy_guard", "student_gate"):
            result = steps.get(gate)
            if result is None:
                continue
            verdict = result  # every gate's result says passed and why at its top
            reports = [Path(p).with_suffix(".html").name for p in result.get("reports", [])]
            links.append(
                GateLink(
                    generation=r.generation,
                    gate=gate,
                    passed=verdict.get("passed"),
                    reason=verdict.get("reason") or result.get("reason"),
                    reports=reports,
                    page=gate_report_url(r.loop, r.generation, gate) if gate in STRENGTH_GATES else None,
                )
            )
    return links


def lake_summary(layout: Layout, batches: int = 20, versions: int = 10) -> LakeSummary:
    """The lake page's records; an empty summary before the first ingest."""
    try:
        rows = lake_frames.rows_by_source(layout).to_dicts()
        rejects = lake_frames.rejects_by_reason(layout).to_dicts()
    except NothingToShowError:
        return LakeSummary(rows=[], rejects=[], batches=[], total_rows=0, total_rejected=0)
    with Lake.open(layout).at() as catalog:
        latest = catalog.batches(newest_first=True, limit=batches)
        version = catalog.version
        recent = [
            VersionRow.model_validate({**v.model_dump(), "committed_at": str(v.committed_at)})
            for v in reversed(history(catalog)[-versions:])
        ]
    return LakeSummary(
        version=version,
        versions=recent,
        rows=[SourceRows.model_validate(r) for r in rows],
        rejects=[
            RejectReason(reason=r["reason"], lines=r["lines"], example=r["example"], lines_at=r["lines_at"])
            for r in rejects
        ],
        batches=[BatchRow.of(b) for b in latest],
        total_rows=sum(r["rows"] for r in rows),
        total_rejected=sum(r["lines"] for r in rejects),
    )


def label_issue_rates(layout: Layout, name: str) -> list[GroupRate]:
    """The label-issue rate per source and generation of the run's dataset, from its newest scored build
    (``distill check labels loop-<name>``); empty when none was scored."""
    run = RunFolder(layout, name)
    if not run.config_path.exists():
        return []
    dataset = run.config().dataset
    for build in reversed(list_builds(layout, dataset)):
        info = read_scores_info(layout, build)
        if info is not None:
            return info.groups
    return []
