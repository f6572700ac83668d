"""The origin's legacy PPO exporter dialect -> canonical.

The exporter logs the macro action itself (``action.macro_action`` and
``action.action_idx``, which must agree) and the agent's seat in
``action.seat``; its ``active_seat`` may wrongly say 0, so a disagreement is
flagged ``ppo_active_seat_mismatch`` and ``action.seat`` wins. Players carry
camelCase counts and no card lists. Every row is the agent's, so the lineup
is partly known: the acting seat is a PPO policy of the logged model
version, the other seats ``unknown``. See ``DIALECTS.md``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from toolkit.dialects.forge import read_deck_fields
from toolkit.dialects.labels import Label, make_action, require_action_type
from toolkit.dialects.raw import RawObject, add_flag, is_int, json_type, make_row
from toolkit.dialects.sim import read_relative_outcome
from toolkit.schema.vocab import (
    ACTION_INDEX,
    FLAG_PPO_ACTIVE_SEAT_MISMATCH,
    MACRO_ACTIONS,
    MODEL_VERSION_PATTERN,
    UNKNOWN_KIND,
)

DIALECT: Final = "ppo_legacy"
SOURCE: Final = "ppo"
ENGINE: Final = "origin-ppo-exporter"
# What the spec documents the exporter's readers assume when a field is omitted.
DEFAULT_TURN: Final = 1
DEFAULT_PHASE: Final = "main_1"
DEFAULT_ACTIVE_SEAT: Final = 0
AGENT_KIND: Final = "ppo"

# camelCase raw key -> canonical player field; the first five are required.
PLAYER_FIELDS: Final[dict[str, str]] = {
    "life": "life",
    "commanderDamageTaken": "commander_damage_taken",
    "manaAvailable": "mana_available",
    "commanderTax": "commander_tax",
    "handSize": "hand_size",
    "graveyardSize": "graveyard_size",
    "permanentCount": "permanents",
    "totalPowerOnBoard": "total_power",
}
REQUIRED_PLAYER_FIELDS: Final = tuple(PLAYER_FIELDS)[:6]


def convert_ppo_legacy(record: dict[str, Any]) -> dict[str, Any]:
    """Convert one legacy PPO-exporter record into a canonical record dict.

    Args:
        record: the raw JSON object of one line.

    Returns:
        A canonical record dict; ``decision_index``/``is_terminal`` are left
        for the file's sequencer to assign.

    Raises:
        DialectError: a required field is missing or unusable, the macro action
            and its index disagree, or the outcome is not ``win``/``loss``.
    """
    raw = RawObject(record, DIALECT)
    game_id = raw.require_str("game_id")
    action = raw.require_object("action")
    seat = action.require_int("seat")
    players = raw.require_objects("players")
    model_version = raw.get("model_version")
    row = make_row(
        source=SOURCE,
        dialect=DIALECT,
        engine=ENGINE,
        game_id=game_id,
        turn=raw.get("turn", DEFAULT_TURN),
        phase=raw.get("phase", DEFAULT_PHASE),
        seat=seat,
        pod_size=len(players),
        players=[convert_camel_player(p) for p in players],
        action=read_ppo_action(action),
        reward=raw.get("reward"),
        episode_return=raw.get("episode_return"),
        model_version=model_version,
        generation=generation_of(model_version),
        lineup=agent_lineup(seat, len(players), model_version),
        **read_relative_outcome(raw, seat, len(players)),
        **read_deck_fields(raw),
    )
    # The documented default applies when the exporter omitted active_seat.
    if raw.get("active_seat", DEFAULT_ACTIVE_SEAT) != seat:
        add_flag(row, FLAG_PPO_ACTIVE_SEAT_MISMATCH)
    return row


def agent_lineup(seat: int, pod_size: int, model_version: Any) -> list[dict[str, Any]] | None:
    """The lineup as far as the exporter knows it: the agent's seat, every other seat unknown.

    None (unknown) when it would only repeat a problem the canonical model
    reports anyway: a seat outside the pod, a malformed model version.
    """
    if not 0 <= seat < pod_size or (model_version is not None and generation_of(model_version) is None):
        return None
    lineup: list[dict[str, Any]] = [
        {"seat": s, "kind": UNKNOWN_KIND, "model_version": None, "name": None} for s in range(pod_size)
    ]
    lineup[seat].update(kind=AGENT_KIND, model_version=model_version)
    return lineup


def convert_camel_player(player: RawObject) -> dict[str, Any]:
    """One camelCase count-only player entry -> a canonical player entry (no card lists)."""
    for key in REQUIRED_PLAYER_FIELDS:
        player.require(key)
    converted: dict[str, Any] = {"seat": player.require("seat")}
    converted.update({name: player.get(key) for key, name in PLAYER_FIELDS.items()})
    converted.update(creatures=None, lands=None, eliminated=None)
    converted.update(hand=None, battlefield=None, graveyard=None, command_zone=None)
    return converted


def read_ppo_action(action: RawObject) -> dict[str, Any]:
    """The logged label from ``macro_action``/``action_idx`` (either suffices; both must agree)."""
    raw_type = require_action_type(action) if action.has("type") else None
    macro = read_macro_action(action)
    index = read_action_idx(action)
    if macro is None and index is None:
        raise action.fail("macro_action", "and `action.action_idx` are both missing; one of them is the label")
    if macro is not None and index is not None and ACTION_INDEX[macro] != index:
        raise action.fail(
            "action_idx",
            f"is {index} ({MACRO_ACTIONS[index]}) but `action.macro_action` is {macro!r} (index {ACTION_INDEX[macro]})",
        )
    label = Label(macro if macro is not None else MACRO_ACTIONS[index], "logged")  # type: ignore[index]
    return make_action(label, raw_type=raw_type, card=action.get("card"), target=action.get("target"))


def read_macro_action(action: RawObject) -> str | None:
    """``action.macro_action`` when written, checked against the vocabulary."""
    macro = action.get("macro_action")
    if macro is None:
        return None
    if not isinstance(macro, str) or macro not in MACRO_ACTIONS:
        raise action.fail("macro_action", f"is {macro!r:.60}, not one of {', '.join(MACRO_ACTIONS)}")
    return macro


def read_action_idx(action: RawObject) -> int | None:
    """``action.action_idx`` when written, checked to be 0..7."""
    index = action.get("action_idx")
    if index is None:
        return None
    if not is_int(index) or not 0 <= index < len(MACRO_ACTIONS):
        raise action.fail(
            "action_idx", f"is {json_type(index)} {index!r:.40}; it must be an integer 0..{len(MACRO_ACTIONS) - 1}"
        )
    return index


def generation_of(model_version: Any) -> int | None:
    """The generation number of a tag like ``gen-003``; ``None`` when absent or malformed.

    A malformed tag is still copied to ``model_version``, where the canonical
    model rejects it with the expected pattern.
    """
    if not isinstance(model_version, str):
        return None
    match = re.match(MODEL_VERSION_PATTERN, model_version)
    return int(match.group(1)) if match else None
