"""The Forge engine's dialect (and the origin's synthetic generator of it) -> canonical.

Forge logs one snake_case row per decision: the acting seat is
``active_seat``, ``game_outcome`` (``win_seat_N`` or ``draw``) describes the
game, and each player carries card-name lists. The synthetic generator of
this dialect (game ids ``synthetic-NNNN``) also writes ``pass`` rows, which
are labelled by the mana rule. See ``DIALECTS.md``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from toolkit.dialects.labels import label_engine_type, label_pass_by_mana, make_action, require_action_type
from toolkit.dialects.raw import RawObject, acting_player, blank_to_none, make_row

DIALECT: Final = "forge"
SOURCE: Final = "forge"
ENGINE: Final = "forge"
# The origin's synthetic generator writes this dialect without being Forge:
# its rows keep the forge role but name their real engine.
SYNTHETIC_ENGINE: Final = "origin-synthetic"
SYNTHETIC_GAME_PREFIX: Final = "synthetic-"
_WIN_SEAT: Final = re.compile(r"^win_seat_(\d+)$")


def convert_forge(record: dict[str, Any]) -> dict[str, Any]:
    """Convert one Forge-dialect record into a canonical record dict.

    Args:
        record: the raw JSON object of one line.

    Returns:
        A canonical record dict; ``decision_index``/``is_terminal`` are left
        for the file's sequencer to assign.

    Raises:
        DialectError: a required field is missing or unusable, the action type
            or the outcome is not one the dialect defines.
    """
    raw = RawObject(record, DIALECT)
    game_id = raw.require_str("game_id")
    seat = raw.require_int("active_seat")
    players = raw.require_objects("players")
    return make_row(
        source=SOURCE,
        dialect=DIALECT,
        engine=SYNTHETIC_ENGINE if game_id.startswith(SYNTHETIC_GAME_PREFIX) else ENGINE,
        game_id=game_id,
        turn=raw.require("turn"),
        phase=raw.require("phase"),
        seat=seat,
        pod_size=len(players),
        players=[convert_snake_player(p) for p in players],
        action=read_forge_action(raw, players, seat),
        **read_game_outcome(raw, seat),
        **read_deck_fields(raw),
    )


def convert_snake_player(player: RawObject) -> dict[str, Any]:
    """One snake_case player entry (Forge, sim, ds) -> a canonical player entry.

    Sizes come from the card lists (``hand_size = len(hand)``...); the total
    power on board is not logged, so it is unknown.
    """
    hand = player.require_list("hand")
    graveyard = player.require_list("graveyard")
    battlefield = player.optional_list("battlefield")
    return {
        "seat": player.require("seat"),
        "life": player.require("life"),
        "commander_damage_taken": player.require("cmdr_dmg"),
        "mana_available": player.require("mana"),
        "commander_tax": player.require("cmdr_tax"),
        "hand_size": len(hand),
        "graveyard_size": len(graveyard),
        "creatures": player.get("creatures"),
        "lands": player.get("lands"),
        "permanents": None if battlefield is None else len(battlefield),
        "total_power": None,
        "eliminated": None,
        "hand": hand,
        "battlefield": battlefield,
        "graveyard": graveyard,
        "command_zone": player.optional_list("command_zone"),
    }


def read_forge_action(raw: RawObject, players: list[RawObject], seat: int) -> dict[str, Any]:
    """The canonical action of a Forge row: mapped, card role, default or mana rule."""
    action = raw.require_object("action")
    raw_type = require_action_type(action)
    card = action.optional_str("card")
    if raw_type == "pass":
        mana = acting_player(players, seat, "active_seat", raw).require_int("mana")
        label = label_pass_by_mana(mana)
    else:
        label = label_engine_type(raw_type, card)
    return make_action(label, raw_type=raw_type, card=card, target=action.get("target"), raw=action.get("raw"))


def read_game_outcome(raw: RawObject, seat: int) -> dict[str, Any]:
    """The result fields from ``win_seat_N`` / ``draw``, which describe the whole game."""
    text = raw.require_str("game_outcome")
    if text == "draw":
        return {"winner_seat": None, "is_draw": True, "seat_won": False, "raw_outcome": text}
    match = _WIN_SEAT.match(text)
    if match is None:
        raise raw.fail("game_outcome", f"is {text!r:.60}; the {raw.dialect} dialect writes win_seat_N or draw")
    winner = int(match.group(1))
    return {"winner_seat": winner, "is_draw": False, "seat_won": winner == seat, "raw_outcome": text}


def read_deck_fields(raw: RawObject) -> dict[str, Any]:
    """Deck name, commander and archetype as written (``""`` -> null; nothing invented)."""
    return {key: blank_to_none(raw.get(key)) for key in ("deck_name", "commander", "archetype")}
