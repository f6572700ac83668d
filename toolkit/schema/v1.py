"""The canonical decision record, version 1, FROZEN: what version-1 writers wrote, and how it is read today.

Never edit this module: it is the contract version 1 as it was released. It
gives ``schemas/decision_snapshot.v1.schema.json`` (a test keeps the two
equal) and the one way a version-1 record becomes a current one,
:func:`upcast`. Its vocabularies are copied here, not imported, so that a
later change to the shared ones (a new dialect, a new flag) cannot change it.

Ingest does not need this model: the current :class:`toolkit.schema.models.DecisionSnapshot`
reads a version-1 record as it is (``schema_version`` 1, the version-2 fields
``lineup`` and ``outcome`` null), which is exactly what :func:`upcast` gives;
a test holds the two to that.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolkit.schema import models

MacroAction = Literal[
    "cast_creature",
    "cast_removal",
    "cast_draw",
    "cast_ramp",
    "cast_commander",
    "attack_opponent",
    "hold_mana",
    "pass",
]
ACTION_INDEX: Final[dict[str, int]] = {name: i for i, name in enumerate(get_args(MacroAction))}
N_ACTIONS: Final = 8
Phase = Literal["main_1", "combat", "main_2", "end"]
Dialect = Literal["canonical", "forge", "sim", "ds", "ppo_legacy"]
LabelSource = Literal["logged", "mapped", "card_role", "default", "mana_rule"]
KNOWN_FLAGS: Final = (
    "ds_outcome_ambiguous",
    "ppo_active_seat_mismatch",
    "decision_index_from_file_order",
    "terminal_from_file_order",
)
SOURCE_PATTERN: Final = r"^[a-z][a-z0-9_-]{0,31}$"
MODEL_VERSION_PATTERN: Final = r"^gen-(\d{3,})$"
MAX_POD_SIZE: Final = 8
MIN_POD_SIZE: Final = 2

_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)

Seat = Annotated[int, Field(ge=0, le=MAX_POD_SIZE - 1)]
Count = Annotated[int, Field(ge=0, le=100_000)]
CardName = Annotated[str, Field(min_length=1, max_length=200)]
Flag = Literal[KNOWN_FLAGS]  # type: ignore[valid-type]


class PlayerState(BaseModel):
    """The public state of one seat at the moment of a decision."""

    model_config = _STRICT

    seat: Seat
    life: int = Field(ge=-1000, le=100_000, description="Life total; may be negative once lost.")
    commander_damage_taken: Count = Field(description="Total commander damage taken.")
    mana_available: Count = Field(description="Untapped mana the seat can spend now.")
    commander_tax: Count = Field(description="Extra mana the next commander cast costs.")
    hand_size: Count
    graveyard_size: Count
    creatures: Count | None = None
    lands: Count | None = None
    permanents: Count | None = None
    total_power: Count | None = Field(default=None, description="Summed power of creatures.")
    eliminated: bool | None = None
    hand: list[CardName] | None = Field(default=None, max_length=1000)
    battlefield: list[CardName] | None = Field(default=None, max_length=1000)
    graveyard: list[CardName] | None = Field(default=None, max_length=1000)
    command_zone: list[CardName] | None = Field(default=None, max_length=16)


class ActionRecord(BaseModel):
    """The decision taken: the macro-action label plus what the engine said."""

    model_config = _STRICT

    macro: MacroAction
    index: int = Field(ge=0, le=N_ACTIONS - 1, description="Position of `macro` in the vocabulary.")
    label_source: LabelSource = Field(description="How the label was obtained; see vocab.")
    raw_type: str | None = Field(default=None, max_length=64, description="Engine action type.")
    card: str | None = Field(default=None, max_length=200)
    target: str | None = Field(default=None, max_length=200)
    target_seat: Seat | None = Field(default=None, description="Seat attacked or targeted.")
    raw: str | None = Field(default=None, max_length=2000, description="Engine log line.")
    requested_index: int | None = Field(
        default=None,
        ge=0,
        le=N_ACTIONS - 1,
        description="Action the policy asked for when it was replaced by a legal fallback.",
    )


class DecisionSnapshot(BaseModel):
    """One decision of one seat: the canonical decision record, version 1."""

    model_config = _STRICT

    schema_version: Literal[1]
    source: str = Field(pattern=SOURCE_PATTERN, description="Role of the writer: forge, sim, ds, ppo...")
    dialect: Dialect = Field(description="Dialect the record was read from.")
    engine: str = Field(min_length=1, max_length=64, description="Program that produced the decision.")
    game_id: str = Field(min_length=1, max_length=128)
    decision_index: int = Field(ge=0, le=10_000_000, description="Order of the decision in its game.")
    turn: int = Field(ge=0, le=100_000)
    phase: Phase
    seat: Seat = Field(description="The acting seat.")
    pod_size: int = Field(ge=MIN_POD_SIZE, le=MAX_POD_SIZE)
    players: list[PlayerState] = Field(min_length=MIN_POD_SIZE, max_length=MAX_POD_SIZE)
    action: ActionRecord
    legal_actions: list[bool] | None = Field(
        default=None, min_length=N_ACTIONS, max_length=N_ACTIONS, description="Legal-action mask."
    )
    reward: float | None = Field(default=None, ge=-1000.0, le=1000.0, description="Per-step reward.")
    episode_return: float | None = Field(default=None, ge=-100_000.0, le=100_000.0)
    winner_seat: Seat | None = None
    is_draw: bool
    timed_out: bool = Field(description="The game stopped at its turn limit (a truncation).")
    seat_won: bool | None = Field(default=None, description="Whether the acting seat won.")
    placement: int | None = Field(default=None, ge=1, le=MAX_POD_SIZE, description="Acting seat's final place.")
    is_terminal: bool = Field(description="Last decision of the acting seat in a game that ended.")
    truncated: bool = Field(description="Last decision of the acting seat in a game cut short.")
    model_version: str | None = Field(default=None, pattern=MODEL_VERSION_PATTERN)
    generation: int | None = Field(default=None, ge=0, le=100_000)
    deck_name: str | None = Field(default=None, max_length=200)
    commander: str | None = Field(default=None, max_length=200)
    archetype: str | None = Field(default=None, max_length=64)
    raw_outcome: str | None = Field(default=None, max_length=64, description="Outcome as the dialect wrote it.")
    flags: list[Flag] | None = Field(default=None, max_length=len(KNOWN_FLAGS))

    @model_validator(mode="after")
    def _cross_field_rules(self) -> DecisionSnapshot:
        problems = cross_field_errors(self)
        if problems:
            # One line per broken rule, each "field: reason"; the ingest error
            # formatter splits them back into separate problems.
            raise ValueError("\n".join(f"{field}: {reason}" for field, reason in problems))
        return self


def cross_field_errors(s: DecisionSnapshot) -> list[tuple[str, str]]:
    """The cross-field rules of the contract as (field, reason); empty when all hold.

    The vectorised twin of these rules lives in ``toolkit.ingest.rules``;
    a property test keeps both in agreement.
    """
    errors: list[tuple[str, str]] = []
    n = s.pod_size
    if s.seat >= n:
        errors.append(("seat", f"acting seat {s.seat} is outside the pod of {n}"))
    if len(s.players) != n:
        errors.append(("players", f"{len(s.players)} player entries for a pod of {n}"))
    seats = [p.seat for p in s.players]
    if seats != list(range(len(seats))):
        errors.append(("players", f"seats must be 0..{len(seats) - 1} in order, one entry each, got {seats}"))
    if ACTION_INDEX[s.action.macro] != s.action.index:
        errors.append(
            (
                "action.index",
                f"{s.action.index} does not match macro {s.action.macro!r} (index {ACTION_INDEX[s.action.macro]})",
            )
        )
    if s.legal_actions is not None and not s.legal_actions[s.action.index]:
        errors.append(("action.index", f"chosen action {s.action.macro!r} is illegal under legal_actions"))
    if s.action.target_seat is not None and (s.action.target_seat >= n or s.action.target_seat == s.seat):
        errors.append(("action.target_seat", f"{s.action.target_seat} is not an opponent in the pod of {n}"))
    if s.winner_seat is not None and s.winner_seat >= n:
        errors.append(("winner_seat", f"{s.winner_seat} is outside the pod of {n}"))
    if s.is_draw and s.winner_seat is not None:
        errors.append(("is_draw", "a draw has no winner_seat"))
    if s.timed_out and (s.winner_seat is not None or s.is_draw):
        errors.append(("timed_out", "a game stopped at its turn limit has no winner and is not a draw"))
    if s.timed_out and s.is_terminal:
        errors.append(("is_terminal", "a timeout is a truncation, set truncated instead"))
    if s.is_terminal and s.truncated:
        errors.append(("truncated", "a decision cannot be both terminal and truncated"))
    if s.winner_seat is not None and s.seat_won is not None and s.seat_won != (s.winner_seat == s.seat):
        errors.append(("seat_won", f"{s.seat_won} contradicts winner_seat {s.winner_seat} for seat {s.seat}"))
    if (s.is_draw or s.timed_out) and s.seat_won:
        errors.append(("seat_won", "nobody wins a draw or a timeout"))
    if s.placement is not None and s.placement > n:
        errors.append(("placement", f"{s.placement} is beyond the pod of {n}"))
    if s.model_version is not None:
        number = int(re.match(MODEL_VERSION_PATTERN, s.model_version).group(1))  # type: ignore[union-attr]
        if s.generation != number:
            errors.append(("generation", f"{s.generation} does not match model_version {s.model_version!r}"))
    return errors


def upcast(record: DecisionSnapshot) -> models.DecisionSnapshot:
    """A version-1 record as the current contract reads it: the same values, ``schema_version`` still 1
    (the mark of a record written as version 1), the fields version 2 added null."""
    return models.DecisionSnapshot.model_validate(record.model_dump())


def read(data: dict[str, Any]) -> models.DecisionSnapshot:
    """Validate ``data`` as a version-1 record and upcast it (raises pydantic's ``ValidationError``)."""
    return upcast(DecisionSnapshot.model_validate(data))
