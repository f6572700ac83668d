"""Macro-action labels for dialects that log an engine action type, not a macro action.

Every label says how it was obtained (``label_source``, see
:mod:`toolkit.schema.vocab`) so that gates can measure and limit inferred ones:

- ``mapped``: a one-to-one map of the engine's type (``attack`` -> attack_opponent);
- ``mana_rule``: the Forge dialect's ``pass`` (written only by the origin's
  synthetic generator) is ``hold_mana`` when the acting seat had 2+ mana open,
  else ``pass``, as the origin labelled it;
- ``card_role``: a ``cast`` whose card is in the card-role table;
- ``default``: a ``cast`` with no card or a card not in the table, taken as a
  creature.

The card-role table (``card_roles.csv``, shipped with the package) lists
well-known Commander staples that are NOT creatures, with the role they are
cast for (removal, draw or ramp). Creature spells are deliberately absent, a
mana elf included: casting a creature is ``cast_creature``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Final

from toolkit.dialects.raw import RawObject, blank_to_none, json_type
from toolkit.schema.vocab import ACTION_INDEX

CARD_ROLES_FILE: Final = "card_roles.csv"
ROLE_TO_MACRO: Final[dict[str, str]] = {"removal": "cast_removal", "draw": "cast_draw", "ramp": "cast_ramp"}
MANA_RULE_THRESHOLD: Final = 2

# Engine types that map one-to-one onto a macro action.
MAPPED_TYPES: Final[dict[str, str]] = {
    "cast_commander": "cast_commander",
    "attack": "attack_opponent",
    "land": "cast_ramp",
    "hold": "hold_mana",
    "pass": "pass",
}

# The engine action types each dialect writes (the labeller refuses others).
ACCEPTED_TYPES: Final[dict[str, tuple[str, ...]]] = {
    "forge": ("cast", "cast_commander", "land", "attack", "pass"),
    "sim": ("attack", "cast", "hold", "pass"),
    "ds": ("attack", "cast", "hold", "pass", "land", "cast_commander"),
    "ppo_legacy": ("cast_spell", "attack", "pass_priority"),
}


@dataclass(frozen=True)
class Label:
    """A macro action with the way it was obtained."""

    macro: str
    label_source: str

    @property
    def index(self) -> int:
        """Position of the macro action in the shared vocabulary."""
        return ACTION_INDEX[self.macro]


@cache
def load_card_roles() -> dict[str, str]:
    """The card-role table as ``{casefolded card name: role}``, read once."""
    text = files("toolkit.dialects").joinpath(CARD_ROLES_FILE).read_text(encoding="utf-8")
    return {row["card"].strip().casefold(): row["role"].strip() for row in csv.DictReader(text.splitlines())}


def card_role(card: str | None) -> str | None:
    """The role of ``card`` (removal, draw or ramp), case-insensitive; ``None`` when unknown."""
    if not card:
        return None
    return load_card_roles().get(card.strip().casefold())


def label_cast(card: str | None) -> Label:
    """Label a ``cast``: by the card-role table, else a creature by default."""
    role = card_role(card)
    if role is None:
        return Label("cast_creature", "default")
    return Label(ROLE_TO_MACRO[role], "card_role")


def label_pass_by_mana(mana_open: int) -> Label:
    """The origin's rule for an unlabelled pass: hold mana when 2+ mana is open."""
    return Label("hold_mana" if mana_open >= MANA_RULE_THRESHOLD else "pass", "mana_rule")


def require_action_type(action: RawObject) -> str:
    """The engine's ``action.type``, refused unless its dialect writes that type.

    Raises:
        DialectError: the type is missing, not a string, or not one the dialect writes.
    """
    raw_type = action.require("type")
    accepted = ACCEPTED_TYPES[action.dialect]
    if not isinstance(raw_type, str) or raw_type not in accepted:
        shown = repr(raw_type) if isinstance(raw_type, str) else f"a {json_type(raw_type)}"
        raise action.fail(
            "type",
            f"is {shown:.60}, which the {action.dialect} dialect does not define; "
            f"accepted types: {', '.join(accepted)}",
        )
    return raw_type


def label_engine_type(raw_type: str, card: str | None) -> Label:
    """Label an accepted engine type other than Forge's ``pass`` (``cast`` or a mapped one).

    ``raw_type`` must have passed :func:`require_action_type`.
    """
    if raw_type == "cast":
        return label_cast(card)
    return Label(MAPPED_TYPES[raw_type], "mapped")


def make_action(
    label: Label, *, raw_type: object, card: object = None, target: object = None, raw: object = None
) -> dict[str, object]:
    """The canonical ``action`` object: the label plus what the engine wrote (``""`` -> null)."""
    return {
        "macro": label.macro,
        "index": label.index,
        "label_source": label.label_source,
        "raw_type": blank_to_none(raw_type),
        "card": blank_to_none(card),
        "target": blank_to_none(target),
        "target_seat": None,
        "raw": blank_to_none(raw),
        "requested_index": None,
    }
