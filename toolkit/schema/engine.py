"""The engine protocol's messages: how Distill plays games in a lab's own engine (version 1.0).

An engine is a process that speaks one compact JSON object per line on its
standard output and reads Distill's on its standard input (``docs/engine-protocol.md``
walks through an exchange). Every message has a ``type``; unknown fields are
ignored (a later minor version may add some), so these models only ever
*add* optional fields within a major version.

1. The engine says :class:`Hello` (protocol, major and minor, the contract
   version, the action vocabulary in order, its limits and capabilities).
   Distill answers :class:`Welcome`, or :class:`Refuse` (another major, another
   vocabulary) and closes the pipe.
2. Distill starts games (:class:`Start`: a seed, the pod, who plays each
   seat: Distill, or the engine's own AI by profile name, the turn limit).
3. The engine asks for Distill's decisions, several per frame
   (:class:`Decisions`; each request's ``row`` is a contract row without its
   label: :class:`DecisionState`), Distill answers with action indexes
   (:class:`Actions`); an illegal answer gets an :class:`Error`, never a silent
   substitute, and the request stays open.
4. The engine reports each game's :class:`Result` (echoing the settings it
   used) and, when asked, the rows of its own AI's decisions
   (:class:`Records`: whole contract rows, teacher data for the lake).
5. :class:`Shutdown` (or the end of its input): the engine says :class:`Bye`
   and exits.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from toolkit.schema.models import CardName, PlayerState, Seat
from toolkit.schema.vocab import MACRO_ACTIONS, MAX_POD_SIZE, MIN_POD_SIZE, N_ACTIONS, SCHEMA_VERSION, Phase

PROTOCOL: Final = "distill-engine"
MAJOR: Final = 1
MINOR: Final = 0
MAX_FRAME_BYTES: Final = 1 << 20  # a frame longer than this is refused (a runaway engine)
MAX_SEED: Final = 2**63 - 1
Determinism = Literal["replay", "process", "none"]
SeatPlayer = Literal["distill", "engine"]

_MESSAGE = ConfigDict(extra="ignore", frozen=True)


class EngineInfo(BaseModel):
    model_config = _MESSAGE

    name: str = Field(min_length=1, max_length=64, description="The engine's name (written into its rows' engine).")
    version: str = Field("", max_length=64)


class Capabilities(BaseModel):
    model_config = _MESSAGE

    engine_ai: list[str] = Field(
        default_factory=list, max_length=64, description="Profiles of the engine's own AI a seat can be given."
    )
    ai_records: bool = Field(False, description="It can send the rows of its own AI's decisions (Records).")
    determinism: Determinism = Field(
        "none",
        description="replay: a game is a function of its start message; process: of the process's start "
        "messages in order; none: neither.",
    )


class Hello(BaseModel):
    """The engine's first frame."""

    model_config = _MESSAGE

    type: Literal["hello"] = "hello"
    protocol: str
    major: int
    minor: int = 0
    contract_version: int = Field(description="The decision contract its rows follow.")
    actions: list[str] = Field(description="The action vocabulary, in index order: Distill's own, or refused.")
    max_pod_size: int = Field(ge=MIN_POD_SIZE, le=MAX_POD_SIZE)
    games_per_process: int = Field(ge=1, le=65_536, description="Games it plays at once.")
    capabilities: Capabilities = Field(default_factory=Capabilities)
    engine: EngineInfo


class Welcome(BaseModel):
    model_config = _MESSAGE

    type: Literal["welcome"] = "welcome"
    protocol: str = PROTOCOL
    major: int = MAJOR
    minor: int = MINOR


class Refuse(BaseModel):
    model_config = _MESSAGE

    type: Literal["refuse"] = "refuse"
    reason: str


class SeatSpec(BaseModel):
    """Who plays one seat: Distill (the engine asks for its decisions) or the engine's own AI by profile."""

    model_config = _MESSAGE

    player: SeatPlayer
    profile: str | None = Field(None, max_length=64, description="The engine AI's profile (engine seats).")
    name: str | None = Field(None, max_length=200, description="A label for the records (a checkpoint's name).")


class Start(BaseModel):
    """Start one game."""

    model_config = _MESSAGE

    type: Literal["start"] = "start"
    game: str = Field(min_length=1, max_length=128, description="The game's id, chosen by Distill.")
    seed: int = Field(ge=0, le=MAX_SEED, description="The game's only source of randomness.")
    pod_size: int = Field(ge=MIN_POD_SIZE, le=MAX_POD_SIZE)
    seats: list[SeatSpec] = Field(min_length=MIN_POD_SIZE, max_length=MAX_POD_SIZE)
    turn_limit: int = Field(ge=1, le=100_000, description="Rounds before the game stops with no winner.")
    records: bool = Field(False, description="Send the rows of the engine AI's decisions (Records).")


class DecisionState(BaseModel):
    """A decision to take: the contract row (:class:`~toolkit.schema.models.DecisionSnapshot`) as it stands
    before the decision, without its label, reward or outcome."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    schema_version: Literal[2] = SCHEMA_VERSION
    engine: str = Field(min_length=1, max_length=64)
    game_id: str = Field(min_length=1, max_length=128)
    decision_index: int = Field(ge=0, le=10_000_000)
    turn: int = Field(ge=0, le=100_000)
    phase: Phase
    seat: Seat
    pod_size: int = Field(ge=MIN_POD_SIZE, le=MAX_POD_SIZE)
    players: list[PlayerState] = Field(min_length=MIN_POD_SIZE, max_length=MAX_POD_SIZE)
    legal_actions: list[bool] = Field(min_length=N_ACTIONS, max_length=N_ACTIONS)
    commander: CardName | None = None
    archetype: str | None = Field(default=None, max_length=64)


class Request(BaseModel):
    model_config = _MESSAGE

    game: str
    request: int = Field(ge=0, description="Numbers the game's requests, from 0.")
    row: DecisionState


class Decisions(BaseModel):
    model_config = _MESSAGE

    type: Literal["decisions"] = "decisions"
    requests: list[Request] = Field(min_length=1)


class Answer(BaseModel):
    model_config = _MESSAGE

    game: str
    request: int
    action: int = Field(ge=0, le=N_ACTIONS - 1, description="Index into the action vocabulary.")


class Actions(BaseModel):
    model_config = _MESSAGE

    type: Literal["actions"] = "actions"
    answers: list[Answer] = Field(min_length=1)


class Result(BaseModel):
    """A game that ended, with the settings the engine actually used."""

    model_config = _MESSAGE

    type: Literal["result"] = "result"
    game: str
    winner_seat: int | None = Field(None, ge=0, le=MAX_POD_SIZE - 1)
    placements: list[int | None] = Field(description="Each seat's final place (1 first); null for one not placed.")
    truncated: bool = Field(description="Stopped at the turn limit.")
    turns: int = Field(ge=0)
    decisions: int = Field(ge=0)
    settings: Start = Field(description="The start message as the engine played it.")


class Records(BaseModel):
    model_config = _MESSAGE

    type: Literal["records"] = "records"
    game: str
    rows: list[dict[str, object]] = Field(description="Contract rows of the engine AI's decisions in that game.")


ErrorCode = Literal["illegal_action", "unknown_game", "bad_frame", "bad_start", "unsupported", "internal"]


class Error(BaseModel):
    model_config = _MESSAGE

    type: Literal["error"] = "error"
    code: ErrorCode
    message: str = Field(max_length=2000)
    game: str | None = None
    request: int | None = None


class Shutdown(BaseModel):
    model_config = _MESSAGE

    type: Literal["shutdown"] = "shutdown"


class Bye(BaseModel):
    model_config = _MESSAGE

    type: Literal["bye"] = "bye"
    games: int = Field(0, ge=0, description="Games it played.")


EngineMessage = Annotated[Hello | Decisions | Result | Records | Error | Bye, Field(discriminator="type")]
DistillMessage = Annotated[Welcome | Refuse | Start | Actions | Shutdown, Field(discriminator="type")]
ENGINE_MESSAGES: Final = TypeAdapter(EngineMessage)
DISTILL_MESSAGES: Final = TypeAdapter(DistillMessage)
ACTIONS: Final = list(MACRO_ACTIONS)
