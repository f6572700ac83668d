"""The canonical decision contract: models, vocabularies, column names, derived schemas."""

from toolkit.schema.models import ActionRecord, DecisionSnapshot, PlayerState, SeatLineup, cross_field_errors
from toolkit.schema.vocab import ACTION_INDEX, MACRO_ACTIONS, N_ACTIONS, SCHEMA_VERSION

__all__ = [
    "ACTION_INDEX",
    "MACRO_ACTIONS",
    "N_ACTIONS",
    "SCHEMA_VERSION",
    "ActionRecord",
    "DecisionSnapshot",
    "PlayerState",
    "SeatLineup",
    "cross_field_errors",
]
