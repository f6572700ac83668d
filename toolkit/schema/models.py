"""The canonical decision record, version 2: :class:`DecisionSnapshot`.

One row is one decision of one seat. Every dialect in the wild is turned
into this record by an adapter (``toolkit.dialects``); our own simulator and
PPO exporter write it directly. These models are the single source of truth:
the Arrow schema of the lake, the vectorised checks of the fast ingest path
and the JSON Schema in ``schemas/`` are all derived from them.

Version 2 evolves version 1 without rewriting it: it only adds top-level
fields, all nullable (``lineup``: who played every seat; ``outcome``: +1 the
acting seat won, -1 it did not). A version-1 record is read by this same
model as it is: ``schema_version`` stays 1 (the mark of a record written as
version 1) and the version-2 fields are null, as they read in lake files
written before version 2. The frozen version-1 model is
:mod:`toolkit.schema.v1`.

Conventions:
- Every field is present in the canonical JSON; a nullable field may be
  ``null`` (or omitted) where the writer does not know it.
- Seats are 0-based and ``players[i]`` describes seat ``i``.
- The result of the game is ``winner_seat`` (``null`` for a draw, a timeout
  or an unknown winner) with ``is_draw`` and ``timed_out``; ``seat_won`` says
  whether the acting seat won, and is ``null`` when nobody can know.
- ``outcome`` (version 2) is the game's result for the acting seat on the
  scale a reward uses: +1 a win, -1 anything else (a loss, a draw, the turn
  limit); it is ``seat_won`` as a number, never shaped. ``reward`` and
  ``episode_return`` are what the writer logged, shaping included.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolkit.schema.columns import V2_COLUMNS
from toolkit.schema.vocab import (
    ACTION_INDEX,
    KNOWN_FLAGS,
    MAX_POD_SIZE,
    MIN_POD_SIZE,
    MODEL_VERSION_PATTERN,
    N_ACTIONS,
    SOURCE_PATTERN,
    Dialect,
    LabelSource,
    MacroAction,
    Phase,
    PlayerKind,
)

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


class SeatLineup(BaseModel):
    """Who played one seat of the game (version 2): the kind of player and, for a learned one, its version."""

    model_config = _STRICT

    seat: Seat
    kind: PlayerKind = Field(description="The kind of player (see vocab.PlayerKind); `unknown` when not known.")
    model_version: str | None = Field(
        default=None, pattern=MODEL_VERSION_PATTERN, description="The model's generation tag, for a learned policy."
    )
    name: str | None = Field(
        default=None, min_length=1, max_length=200, description="The player's own name: a player type, a checkpoint."
    )


class DecisionSnapshot(BaseModel):
    """One decision of one seat: the canonical decision record, version 2."""

    model_config = _STRICT

    schema_version: Literal[1, 2] = Field(
        description="The contract version the record was written in; 1: version-2 fields are null."
    )
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
    reward: float | None = Field(
        default=None, ge=-1000.0, le=1000.0, description="Per-step reward as the writer logged it (may be shaped)."
    )
    episode_return: float | None = Field(
        default=None, ge=-100_000.0, le=100_000.0, description="The acting seat's summed reward as logged."
    )
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
    lineup: list[SeatLineup] | None = Field(
        default=None,
        min_length=MIN_POD_SIZE,
        max_length=MAX_POD_SIZE,
        description="Version 2: who played each seat, lineup[i] seat i; null when unknown.",
    )
    outcome: Literal[1, -1] | None = Field(
        default=None,
        description="Version 2: +1 the acting seat won the game, -1 it did not (loss, draw, turn limit); "
        "null when unknown. seat_won as a number; never shaped.",
    )

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
    return errors + version_errors(s)


def version_errors(s: DecisionSnapshot) -> list[tuple[str, str]]:
    """The rules of the fields version 2 added: none in a version-1 record; in a version-2 one, an outcome
    that is ``seat_won`` as a number and a lineup of the whole pod whose acting seat is the acting player."""
    if s.schema_version == 1:
        present = [name for name in V2_COLUMNS if getattr(s, name) is not None]
        return [(name, "is a version-2 field: a version-1 record has none") for name in present]
    errors: list[tuple[str, str]] = []
    expected = None if s.seat_won is None else (1 if s.seat_won else -1)
    if s.outcome != expected:
        errors.append(("outcome", f"{s.outcome} contradicts seat_won {s.seat_won} (a win is 1, else -1; unknown null)"))
    if s.lineup is None:
        return errors
    n = s.pod_size
    seats = [entry.seat for entry in s.lineup]
    if len(seats) != n:
        errors.append(("lineup", f"{len(seats)} lineup entries for a pod of {n}"))
    if seats != list(range(len(seats))):
        errors.append(("lineup", f"seats must be 0..{len(seats) - 1} in order, one entry each, got {seats}"))
    acting = s.lineup[s.seat].model_version if s.seat < len(s.lineup) else s.model_version
    if acting != s.model_version:
        errors.append(("lineup", f"the acting seat's model_version is {acting!r}, the record's {s.model_version!r}"))
    return errors
