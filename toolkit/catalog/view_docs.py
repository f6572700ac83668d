"""What each SQL view is and what each of its columns means: the one place ``distill sql --schema`` reads.

:data:`VIEWS` lists the views users query, in the order they are shown,
each with a one-line summary, the order its rows come back in (the view's
own ``ORDER BY``, see :mod:`toolkit.catalog.views`) and a description per
column, in the view's column order. The ``decisions`` columns the contract
describes (:class:`~toolkit.schema.models.DecisionSnapshot`) take the
contract's words; the others are described here. A test fails when a view
gains a column that has no description.

Everything else a catalog holds (the index tables ``lake_files``,
``batch_log``, ``batch_states``, ``file_log``, ``catalog_meta``) is
internal: a sandboxed connection (``distill sql``) does not show it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from toolkit.schema import columns as col
from toolkit.schema import scores
from toolkit.schema.arrow import lake_schema
from toolkit.schema.models import DecisionSnapshot


@dataclass(frozen=True)
class ViewDoc:
    """One view: its name, what a row is, the order rows come in (None: no order; use ORDER BY), its columns."""

    name: str
    summary: str
    order: str | None
    columns: MappingProxyType[str, str]


_LINEAGE = {
    col.BATCH_ID: "The batch (one ingested file) the row came in with.",
    col.SOURCE_FILE: "The file the row was read from (relative to the data root when it lies inside it).",
    col.SOURCE_LINE: "The line of that file (1-based).",
    col.FILE_SHA256: "SHA-256 of that file's bytes.",
}
# decisions columns the contract gives no description
_DECISIONS = {
    col.GAME_ID: "The game the decision belongs to.",
    col.TURN: "The game's turn (round) at the decision.",
    col.PHASE: "The turn's phase: main_1, combat, main_2, end.",
    col.POD_SIZE: "Number of seats in the game (2 to 8).",
    col.PLAYERS: "Every seat's public state at the decision, players[i] seat i (life, mana, zones' sizes...).",
    col.ACTION: "The chosen action: its macro label, index in the vocabulary, how it was labelled, its target.",
    col.WINNER_SEAT: "The seat that won the game; null for a draw or a game cut short.",
    col.IS_DRAW: "The game ended in a draw.",
    col.MODEL_VERSION: "The generation tag of the model that made the decision (learned policies only).",
    col.GENERATION: "The loop generation whose self-play produced the decision; null for other sources.",
    "deck_name": "The acting seat's deck, as the writer named it.",
    "commander": "The acting seat's commander.",
    "archetype": "The acting seat's deck archetype (aggro, control...).",
    col.FLAGS: "Notes a dialect adapter left on the record (how a value was inferred).",
}


def _decisions() -> dict[str, str]:
    described = {}
    for name in lake_schema().names:
        field = DecisionSnapshot.model_fields.get(name)
        described[name] = (field.description if field else None) or _DECISIONS.get(name) or _LINEAGE.get(name, "")
    return described


_GAMES = {
    col.GAME_ID: "The game.",
    "source": "The source of its decisions, or 'mixed' when they came from several.",
    "sources": "Every source its decisions came from.",
    "pod_size": "Number of seats.",
    "winner_seat": "The seat that won; null for a draw or a game cut short.",
    "is_draw": "The game ended in a draw.",
    "timed_out": "The game stopped at its turn limit (a truncation).",
    "turns": "The last turn logged.",
    "decisions": "Decisions logged (all seats).",
    "seats_logged": "Seats with at least one decision logged.",
    "generation": "The loop generation that played it (self-play); null for other sources.",
    "batches": "The batches its decisions came in with.",
}
_BATCHES = {
    "batch_id": "The batch: the valid rows of one ingested file.",
    "created_at": "When it was ingested (UTC).",
    "file_sha256": "SHA-256 of the file's bytes (a file is ingested once).",
    "rows_valid": "Rows that entered the lake.",
    "rows_rejected": "Lines quarantined (see rejects).",
    "rows_duplicate": "Valid rows already in the lake, not added again.",
    "sources": "The sources of its rows.",
    "generations": "The loop generations of its rows.",
    "source_override": "The --source the ingest forced, if any.",
    "dialect_override": "The --dialect the ingest forced, if any.",
    "status": "Review status at the version read: ingested, accepted or rejected (set by gates and the loop).",
    "status_reason": "Why a gate gave that status.",
    "distill_version": "The Distill version that ingested it.",
    "lake_version": "The lake version that brought it in.",
    "retired": "Retired at the version read: its rows are in no view, build or gate (distill lake retire).",
    "retired_reason": "Why it was retired.",
}
_FILES = {
    "file_sha256": "SHA-256 of the file's bytes.",
    "path": "Where it was read (relative to the data root when it lies inside it; <stdin> for standard input).",
    "size_bytes": "Its size in bytes.",
    "batch_id": "The batch it became.",
    "lines": "Lines read.",
    "blank_lines": "Blank lines (skipped).",
    "rows_valid": "Lines that were valid decisions.",
    "rows_rejected": "Lines quarantined (see rejects).",
    "dialects": 'Lines per dialect, as JSON text ({"forge": 120}).',
    "ingested_at": "When it was ingested (UTC).",
}
_QUARANTINE = {
    col.BATCH_ID: "The batch of the file the line was in.",
    col.SOURCE_FILE: "The file the line was read from.",
    col.SOURCE_LINE: "The line number (1-based).",
    col.FILE_SHA256: "SHA-256 of that file's bytes.",
    "raw": "The line's exact bytes (of a line over --max-line-bytes, its first 4 KiB).",
    "reason": "Every problem found, as one text (with the field, and where a duplicate was first seen).",
    "problems": "The problems, one struct each: the field, a code and a message.",
}
_REJECTS = {
    col.BATCH_ID: _QUARANTINE[col.BATCH_ID],
    col.SOURCE_FILE: _QUARANTINE[col.SOURCE_FILE],
    col.SOURCE_LINE: _QUARANTINE[col.SOURCE_LINE],
    "code": "The first problem's code, one per kind of problem (invalid_json, duplicate, inconsistent, missing...).",
    "field": "The first problem's field ('' for the line as a whole).",
    "reason": _QUARANTINE["reason"],
    "line": "The line as text (bytes that are not UTF-8 escaped); raw has its exact bytes.",
    "raw": _QUARANTINE["raw"],
    "problems": _QUARANTINE["problems"],
    col.FILE_SHA256: _QUARANTINE[col.FILE_SHA256],
}
_REJECT_REASONS = {
    "code": _REJECTS["code"],
    "field": _REJECTS["field"],
    "lines": "Quarantined lines with this code and field.",
    "batches": "Batches they are in.",
    "first_at": "The first such line, as file:line.",
    "example": "That line's first problem, in words.",
}
_VERSIONS = {
    "version": "The lake version (Delta table version), from 0.",
    "committed_at": "When it was committed (UTC).",
    "operation": "What made it: create, ingest, review, retire, restore, compact, vacuum, migrate, evolve.",
    "batches": "The batches it concerns.",
    "reason": "The reason given (retire, restore, review...).",
    "distill_version": "The Distill version that committed it.",
    "files_added": "Lake files it made live.",
    "files_removed": "Lake files it removed from the table.",
    "rows_added": "Rows in the files it added.",
    "rows_removed": "Rows in the files it removed.",
    "detail": "The rest of its commit information, as JSON.",
}
# One record per finished loop generation (toolkit.loop.record.GenerationRecord), columns in its field order.
GENERATION_COLUMNS: Final = MappingProxyType(
    {
        "format_version": "The format of the record (1: written before records carried one).",
        "loop": "The loop run's name (runs/<loop>/).",
        "generation": "The generation number, from 0.",
        "outcome": "passed or failed.",
        "reason": "Why: what was promoted, or what failed it (a step, a gate's verdict).",
        "retries": "Attempts retried before it ended.",
        "teacher_promoted": "Its PPO model was promoted (passed the PPO gate).",
        "student_promoted": "Its student was promoted (passed the student gate).",
        "student": "Card of the promoted student after this generation (root-relative); kept from before if none was.",
        "ppo": "Card of the promoted PPO model after this generation (root-relative).",
        "holdout_accuracy": "This generation's student's accuracy on the fixed Forge holdout.",
        "previous_accuracy": "The previous student's accuracy on the same holdout.",
        "student_win_rate": "Win rate of the promoted student against the first evaluation table (fraction).",
        "student_win_low": "Lower end of its 95% interval.",
        "student_win_high": "Upper end of its 95% interval.",
        "ppo_win_rate": "Win rate of the promoted PPO model against the first evaluation table (fraction).",
        "evaluation": "model -> table -> fixed-size score (games, wins, win_rate, win_low, win_high, "
        "placement_score, truncations).",
        "student_gain": "table -> the student's paired gain over the generation-0 student on the same deals "
        "(deals, diff, low, high).",
        "rows_by_source": "The student's training rows by source.",
        "shares": "source -> its share of the training set (target, achieved).",
        "ratings": "The rating pool after the generation: one struct per player (name, elo, elo_se, mu, sigma, "
        "ordinal, games, wins).",
        "exploitability": "The exploiter probe's win rate (fraction) against three copies of the promoted student "
        "(0.25 is even; null: no probe).",
        "exploitability_low": "Lower end of its 95% interval.",
        "exploitability_high": "Upper end of its 95% interval.",
        "exploiter_steps": "The exploiter's PPO budget (steps) behind that figure.",
        "attempts": "Every attempt: each step's saved result and its timing.",
        "seconds": "Seconds its steps took, in all.",
        "recorded_at": "When the record was written (UTC).",
    }
)

VIEWS: Final = MappingProxyType(
    {
        view.name: view
        for view in (
            ViewDoc(
                "decisions",
                "One row per decision in the lake: the canonical record plus its lineage.",
                None,
                MappingProxyType(_decisions()),
            ),
            ViewDoc("games", "One row per game of the lake.", "game_id", MappingProxyType(_GAMES)),
            ViewDoc(
                "batches",
                "One row per ingested batch (one file's rows), with its review status and retirement.",
                "lake_version, batch_id",
                MappingProxyType(_BATCHES),
            ),
            ViewDoc("files", "One row per ingested file.", "ingested_at, path", MappingProxyType(_FILES)),
            ViewDoc(
                "rejects",
                "One row per quarantined line of the batches that are not retired: its reason code and text first.",
                "batch (as in batches), then source_line",
                MappingProxyType(_REJECTS),
            ),
            ViewDoc(
                "reject_reasons",
                "The quarantine summarised: one row per reason code and field, with a count and an example.",
                "lines, most first",
                MappingProxyType(_REJECT_REASONS),
            ),
            ViewDoc(
                "quarantine",
                "The quarantine files as stored (rejects reads them): one row per quarantined line.",
                "batch (as in batches), then source_line",
                MappingProxyType(_QUARANTINE),
            ),
            ViewDoc(
                "versions",
                "One row per version of the lake (its history: distill lake history).",
                "version",
                MappingProxyType(_VERSIONS),
            ),
            ViewDoc(
                "generations",
                "One record per finished loop generation: evaluations, gains, gates, data, accuracy, ratings.",
                "loop, generation",
                GENERATION_COLUMNS,
            ),
            ViewDoc(
                "label_scores",
                "One row per decision of every build `distill check labels` scored (train and holdout).",
                None,
                MappingProxyType(scores.COLUMN_DOCS),
            ),
        )
    }
)

VIEWS_HINT: Final = "views: " + ", ".join(VIEWS) + " (distill sql --schema [VIEW] lists their columns)"
