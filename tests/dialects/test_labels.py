"""Macro-action labels: mapped types, the card-role table, the mana rule and the default."""

from __future__ import annotations

import csv
from importlib.resources import files

import pytest

from toolkit.dialects.labels import (
    ACCEPTED_TYPES,
    CARD_ROLES_FILE,
    ROLE_TO_MACRO,
    card_role,
    label_cast,
    label_engine_type,
    label_pass_by_mana,
    load_card_roles,
    make_action,
)
from toolkit.schema.models import ActionRecord


@pytest.mark.parametrize(
    ("card", "role"),
    [
        ("Swords to Plowshares", "removal"),
        ("Path to Exile", "removal"),
        ("Beast Within", "removal"),
        ("Chaos Warp", "removal"),
        ("Cyclonic Rift", "removal"),
        ("Rhystic Study", "draw"),
        ("Mystic Remora", "draw"),
        ("Sol Ring", "ramp"),
        ("Arcane Signet", "ramp"),
        ("Cultivate", "ramp"),
        ("Kodama's Reach", "ramp"),
        ("Rampant Growth", "ramp"),
    ],
)
def test_the_card_role_table_knows_well_known_staples(card: str, role: str) -> None:
    assert card_role(card) == role


def test_card_roles_are_looked_up_case_insensitively() -> None:
    assert card_role("sOL rING") == "ramp"
    assert card_role("  swords to plowshares ") == "removal"


def test_unknown_or_missing_cards_have_no_role() -> None:
    assert card_role("Grizzly Bears") is None
    assert card_role("") is None
    assert card_role(None) is None


def test_the_card_role_table_is_well_formed_with_a_few_hundred_distinct_cards() -> None:
    text = files("toolkit.dialects").joinpath(CARD_ROLES_FILE).read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    names = [row["card"].casefold() for row in rows]
    assert len(rows) >= 300
    assert len(names) == len(set(names)), "a card is listed twice"
    assert {row["role"] for row in rows} == set(ROLE_TO_MACRO)
    assert all(row["card"] == row["card"].strip() and row["card"] for row in rows)
    assert len(load_card_roles()) == len(rows)


def test_the_card_role_table_is_read_once() -> None:
    assert load_card_roles() is load_card_roles()


@pytest.mark.parametrize(
    ("card", "macro"),
    [("Swords to Plowshares", "cast_removal"), ("Rhystic Study", "cast_draw"), ("Arcane Signet", "cast_ramp")],
)
def test_a_cast_of_a_known_card_is_labelled_by_its_role(card: str, macro: str) -> None:
    label = label_cast(card)
    assert (label.macro, label.label_source) == (macro, "card_role")


@pytest.mark.parametrize("card", ["Grizzly Bears", None, ""])
def test_a_cast_of_an_unknown_or_missing_card_defaults_to_a_creature(card: str | None) -> None:
    label = label_cast(card)
    assert (label.macro, label.label_source) == ("cast_creature", "default")


@pytest.mark.parametrize(
    ("raw_type", "macro"),
    [
        ("cast_commander", "cast_commander"),
        ("attack", "attack_opponent"),
        ("land", "cast_ramp"),
        ("hold", "hold_mana"),
        ("pass", "pass"),
    ],
)
def test_one_to_one_engine_types_are_mapped(raw_type: str, macro: str) -> None:
    label = label_engine_type(raw_type, card=None)
    assert (label.macro, label.label_source) == (macro, "mapped")


@pytest.mark.parametrize(("mana", "macro"), [(0, "pass"), (1, "pass"), (2, "hold_mana"), (7, "hold_mana")])
def test_the_mana_rule_holds_with_two_or_more_mana_open(mana: int, macro: str) -> None:
    label = label_pass_by_mana(mana)
    assert (label.macro, label.label_source) == (macro, "mana_rule")


def test_every_accepted_type_of_the_engine_dialects_has_a_label() -> None:
    for dialect in ("sim", "ds"):
        for raw_type in ACCEPTED_TYPES[dialect]:
            label_engine_type(raw_type, card=None)


def test_a_built_action_is_a_valid_canonical_action_with_blank_strings_as_null() -> None:
    action = make_action(label_cast("Sol Ring"), raw_type="cast", card="Sol Ring", target="", raw="")
    ActionRecord.model_validate(action)
    assert action["index"] == 3
    assert action["target"] is None and action["raw"] is None
