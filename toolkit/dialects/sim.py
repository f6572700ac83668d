"""The origin's Python simulator dialects, ``sim`` and ``ds`` -> canonical.

Both write Forge's snake_case keys with an action that is only ``{"type": ...}``
and an outcome ``win``/``loss``. In ``sim`` the outcome is relative to the
acting seat. In ``ds`` it is relative to an AI seat that is not logged and is
stamped on every row, the opponent's included: it is never trusted as the
acting seat's result (winner and ``seat_won`` unknown, row flagged
``ds_outcome_ambiguous``). See ``DIALECTS.md``.
"""

from __future__ import annotations

from typing import Any, Final

from toolkit.dialects.forge import convert_snake_player, read_deck_fields
from toolkit.dialects.labels import label_engine_type, make_action, require_action_type
from toolkit.dialects.raw import RawObject, make_row
from toolkit.schema.vocab import FLAG_DS_OUTCOME_AMBIGUOUS

ENGINES: Final[dict[str, str]] = {"sim": "origin-sim", "ds": "origin-ds"}
RELATIVE_OUTCOMES: Final = ("win", "loss")


def convert_sim(record: dict[str, Any]) -> dict[str, Any]:
    """Convert one base-simulator record; see :func:`convert_sim_family`."""
    return convert_sim_family(record, "sim")


def convert_ds(record: dict[str, Any]) -> dict[str, Any]:
    """Convert one ``ds``-batch record; see :func:`convert_sim_family`."""
    return convert_sim_family(record, "ds")


def convert_sim_family(record: dict[str, Any], dialect: str) -> dict[str, Any]:
    """Convert one record of the simulator family (``sim`` or ``ds``).

    Args:
        record: the raw JSON object of one line.
        dialect: ``"sim"`` or ``"ds"``; decides the accepted action types and
            how far the outcome is trusted.

    Returns:
        A canonical record dict; ``decision_index``/``is_terminal`` are left
        for the file's sequencer to assign.

    Raises:
        DialectError: a required field is missing or unusable, or the action
            type or the outcome is not one the dialect defines.
    """
    raw = RawObject(record, dialect)
    game_id = raw.require_str("game_id")
    seat = raw.require_int("active_seat")
    players = raw.require_objects("players")
    action = raw.require_object("action")
    raw_type = require_action_type(action)
    card = action.optional_str("card")
    if dialect == "ds":
        outcome = read_untrusted_outcome(raw)
    else:
        outcome = read_relative_outcome(raw, seat, len(players))
    return make_row(
        source=dialect,
        dialect=dialect,
        engine=ENGINES[dialect],
        game_id=game_id,
        turn=raw.require("turn"),
        phase=raw.require("phase"),
        seat=seat,
        pod_size=len(players),
        players=[convert_snake_player(p) for p in players],
        action=make_action(
            label_engine_type(raw_type, card),
            raw_type=raw_type,
            card=card,
            target=action.get("target"),
            raw=action.get("raw"),
        ),
        **outcome,
        **read_deck_fields(raw),
    )


def read_relative_outcome(raw: RawObject, seat: int, pod_size: int) -> dict[str, Any]:
    """Result fields from ``win``/``loss`` written from the acting seat's view.

    A loss names the winner only in a 2-seat pod; with more seats the winner
    is unknown (null), never guessed.
    """
    text = raw.require_str("game_outcome")
    if text not in RELATIVE_OUTCOMES:
        raise raw.fail("game_outcome", f"is {text!r:.60}; the {raw.dialect} dialect writes win or loss")
    if text == "win":
        winner: int | None = seat
    else:
        winner = 1 - seat if pod_size == 2 and seat in (0, 1) else None
    return {"winner_seat": winner, "is_draw": False, "seat_won": text == "win", "raw_outcome": text}


def read_untrusted_outcome(raw: RawObject) -> dict[str, Any]:
    """Result fields for ``ds``: the raw text is kept, the result itself is unknown."""
    text = raw.require_str("game_outcome")
    if text not in RELATIVE_OUTCOMES:
        raise raw.fail("game_outcome", f"is {text!r:.60}; the {raw.dialect} dialect writes win or loss")
    return {
        "winner_seat": None,
        "is_draw": False,
        "seat_won": None,
        "raw_outcome": text,
        "flags": [FLAG_DS_OUTCOME_AMBIGUOUS],
    }
