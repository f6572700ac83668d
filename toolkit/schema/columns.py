"""Column names of the lake, as constants: no string literals for columns elsewhere.

The decision columns are the top-level fields of
:class:`toolkit.schema.models.DecisionSnapshot`; lineage columns are added at
ingest, never by writers.
"""

from __future__ import annotations

from typing import Final

SCHEMA_VERSION: Final = "schema_version"
SOURCE: Final = "source"
DIALECT: Final = "dialect"
ENGINE: Final = "engine"
GAME_ID: Final = "game_id"
DECISION_INDEX: Final = "decision_index"
TURN: Final = "turn"
PHASE: Final = "phase"
SEAT: Final = "seat"
POD_SIZE: Final = "pod_size"
PLAYERS: Final = "players"
ACTION: Final = "action"
LEGAL_ACTIONS: Final = "legal_actions"
REWARD: Final = "reward"
EPISODE_RETURN: Final = "episode_return"
WINNER_SEAT: Final = "winner_seat"
IS_DRAW: Final = "is_draw"
TIMED_OUT: Final = "timed_out"
SEAT_WON: Final = "seat_won"
PLACEMENT: Final = "placement"
IS_TERMINAL: Final = "is_terminal"
TRUNCATED: Final = "truncated"
MODEL_VERSION: Final = "model_version"
GENERATION: Final = "generation"
FLAGS: Final = "flags"
LINEUP: Final = "lineup"
OUTCOME: Final = "outcome"

# The top-level columns contract version 2 added: all nullable, so that rows
# written before them (version 1) read them as null, their files unchanged.
V2_COLUMNS: Final[tuple[str, ...]] = (LINEUP, OUTCOME)

# Fields of the nested lineup entries (version 2).
LINEUP_SEAT: Final = "seat"
LINEUP_KIND: Final = "kind"
LINEUP_MODEL_VERSION: Final = "model_version"
LINEUP_NAME: Final = "name"

# Fields of the nested action struct.
ACTION_MACRO: Final = "macro"
ACTION_INDEX: Final = "index"
ACTION_LABEL_SOURCE: Final = "label_source"
ACTION_TARGET_SEAT: Final = "target_seat"
ACTION_REQUESTED_INDEX: Final = "requested_index"

# Lineage, added at ingest.
BATCH_ID: Final = "batch_id"
SOURCE_FILE: Final = "source_file"
SOURCE_LINE: Final = "source_line"
FILE_SHA256: Final = "file_sha256"
LINEAGE: Final[tuple[str, ...]] = (BATCH_ID, SOURCE_FILE, SOURCE_LINE, FILE_SHA256)

# The identity of a decision: duplicates share it.
DECISION_KEY: Final[tuple[str, ...]] = (GAME_ID, SEAT, DECISION_INDEX)
