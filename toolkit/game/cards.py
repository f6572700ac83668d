"""The card pool and the archetype decks of the Distill game.

Every card has a real Commander name so that the records' card lists and
``action.card`` read like a real game, but its rules text is simplified to one
number per role: a creature is a body (power / toughness), a removal spell
destroys the strongest threat, a draw spell draws N cards, a ramp card is a
mana rock that taps for M, a land taps for 1, a commander is a creature cast
from the command zone.

The card table is turned into numpy lookup arrays (``COST``, ``POWER`` ...)
indexed by card id; index ``-1`` (the last entry, :data:`NO_CARD`) is an empty
slot with zero everything, so ``POWER[creature_slots]`` works on empty slots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

LAND, CREATURE, REMOVAL, DRAW, RAMP, COMMANDER = range(6)
KIND_NAMES: Final = ("land", "creature", "removal", "draw", "ramp", "commander")
DECK_SIZE: Final = 99


@dataclass(frozen=True)
class Card:
    """One card: its name, role and the numbers the rules read."""

    name: str
    kind: int
    cost: int = 0
    power: int = 0
    toughness: int = 0
    mana: int = 0  # mana the permanent adds each turn (lands, rocks)
    draws: int = 0  # cards a draw spell draws


CARDS: Final[tuple[Card, ...]] = (
    # Lands
    Card("Forest", LAND, mana=1),
    Card("Island", LAND, mana=1),
    Card("Mountain", LAND, mana=1),
    Card("Plains", LAND, mana=1),
    Card("Swamp", LAND, mana=1),
    Card("Command Tower", LAND, mana=1),
    # Creatures
    Card("Savannah Lions", CREATURE, 1, 2, 1),
    Card("Goblin Guide", CREATURE, 1, 2, 2),
    Card("Watchwolf", CREATURE, 2, 3, 3),
    Card("Tarmogoyf", CREATURE, 2, 3, 4),
    Card("Boros Reckoner", CREATURE, 3, 3, 3),
    Card("Troll Ascetic", CREATURE, 3, 3, 2),
    Card("Wilt-Leaf Liege", CREATURE, 4, 4, 4),
    Card("Ravenous Chupacabra", CREATURE, 4, 2, 2),
    Card("Thragtusk", CREATURE, 5, 5, 3),
    Card("Baneslayer Angel", CREATURE, 5, 5, 5),
    Card("Consecrated Sphinx", CREATURE, 6, 4, 6),
    Card("Wurmcoil Engine", CREATURE, 6, 6, 6),
    Card("Sphinx of the Steel Wind", CREATURE, 7, 6, 6),
    Card("Ulamog's Crusher", CREATURE, 8, 8, 8),
    Card("Terastodon", CREATURE, 8, 9, 9),
    # Removal
    Card("Swords to Plowshares", REMOVAL, 1),
    Card("Path to Exile", REMOVAL, 1),
    Card("Beast Within", REMOVAL, 3),
    Card("Chaos Warp", REMOVAL, 3),
    Card("Vindicate", REMOVAL, 3),
    # Card draw
    Card("Night's Whisper", DRAW, 2, draws=2),
    Card("Sign in Blood", DRAW, 2, draws=2),
    Card("Harmonize", DRAW, 4, draws=3),
    Card("Rishkar's Expertise", DRAW, 5, draws=4),
    # Ramp (mana rocks)
    Card("Sol Ring", RAMP, 1, mana=2),
    Card("Arcane Signet", RAMP, 2, mana=1),
    Card("Mind Stone", RAMP, 2, mana=1),
    Card("Commander's Sphere", RAMP, 3, mana=1),
    Card("Thran Dynamo", RAMP, 4, mana=3),
    # Commanders
    Card("Najeela, the Blade-Blossom", COMMANDER, 3, 3, 3),
    Card("Isshin, Two Heavens as One", COMMANDER, 3, 3, 4),
    Card("Talrand, Sky Summoner", COMMANDER, 4, 3, 3),
    Card("Grand Arbiter Augustin IV", COMMANDER, 4, 3, 4),
    Card("Atraxa, Praetors' Voice", COMMANDER, 4, 4, 4),
    Card("Korvold, Fae-Cursed King", COMMANDER, 5, 5, 5),
    Card("Kenrith, the Returned King", COMMANDER, 5, 5, 5),
    Card("Thrasios, Triton Hero", COMMANDER, 4, 3, 4),
    Card("Selvala, Heart of the Wilds", COMMANDER, 3, 3, 3),
    Card("Zacama, Primal Calamity", COMMANDER, 7, 9, 9),
)

CARD_ID: Final[dict[str, int]] = {card.name: i for i, card in enumerate(CARDS)}
N_CARDS: Final = len(CARDS)
NO_CARD: Final = -1


def _table(attribute: str, dtype: type) -> np.ndarray:
    # One extra zero entry at the end so that index -1 (an empty slot) reads as nothing.
    return np.array([getattr(card, attribute) for card in CARDS] + [0], dtype=dtype)


KIND = np.array([card.kind for card in CARDS] + [-1], dtype=np.int8)
COST = _table("cost", np.int16)
POWER = _table("power", np.int16)
TOUGHNESS = _table("toughness", np.int16)
MANA = _table("mana", np.int16)
DRAWS = _table("draws", np.int16)
NAMES: Final[tuple[str, ...]] = tuple(card.name for card in CARDS)


@dataclass(frozen=True)
class Archetype:
    """A deck plan: its commanders (one is drawn per game) and its 99 cards by name."""

    name: str
    commanders: tuple[str, ...]
    cards: dict[str, int]

    def deck_ids(self) -> np.ndarray:
        """The 99 card ids of the deck, in table order (shuffled per game)."""
        ids = [CARD_ID[name] for name, count in self.cards.items() for _ in range(count)]
        return np.array(ids, dtype=np.int16)


ARCHETYPES: Final[tuple[Archetype, ...]] = (
    Archetype(
        "aggro",
        ("Najeela, the Blade-Blossom", "Isshin, Two Heavens as One"),
        {
            "Mountain": 17,
            "Plains": 15,
            "Command Tower": 1,
            "Sol Ring": 1,
            "Arcane Signet": 1,
            "Mind Stone": 4,
            "Savannah Lions": 7,
            "Goblin Guide": 7,
            "Watchwolf": 7,
            "Boros Reckoner": 7,
            "Troll Ascetic": 6,
            "Wilt-Leaf Liege": 5,
            "Thragtusk": 4,
            "Swords to Plowshares": 1,
            "Path to Exile": 1,
            "Vindicate": 5,
            "Night's Whisper": 5,
            "Sign in Blood": 5,
        },
    ),
    Archetype(
        "control",
        ("Talrand, Sky Summoner", "Grand Arbiter Augustin IV"),
        {
            "Island": 18,
            "Plains": 16,
            "Command Tower": 1,
            "Sol Ring": 1,
            "Arcane Signet": 1,
            "Mind Stone": 4,
            "Commander's Sphere": 3,
            "Thran Dynamo": 2,
            "Watchwolf": 4,
            "Tarmogoyf": 4,
            "Ravenous Chupacabra": 4,
            "Baneslayer Angel": 4,
            "Consecrated Sphinx": 4,
            "Sphinx of the Steel Wind": 4,
            "Swords to Plowshares": 1,
            "Path to Exile": 1,
            "Beast Within": 4,
            "Chaos Warp": 4,
            "Vindicate": 6,
            "Night's Whisper": 4,
            "Harmonize": 5,
            "Rishkar's Expertise": 4,
        },
    ),
    Archetype(
        "midrange",
        ("Atraxa, Praetors' Voice", "Korvold, Fae-Cursed King"),
        {
            "Forest": 13,
            "Swamp": 13,
            "Island": 12,
            "Command Tower": 1,
            "Sol Ring": 1,
            "Arcane Signet": 1,
            "Mind Stone": 3,
            "Commander's Sphere": 3,
            "Thran Dynamo": 1,
            "Goblin Guide": 4,
            "Watchwolf": 5,
            "Tarmogoyf": 5,
            "Troll Ascetic": 4,
            "Wilt-Leaf Liege": 5,
            "Thragtusk": 4,
            "Baneslayer Angel": 4,
            "Wurmcoil Engine": 4,
            "Swords to Plowshares": 1,
            "Path to Exile": 1,
            "Beast Within": 4,
            "Chaos Warp": 4,
            "Night's Whisper": 3,
            "Harmonize": 3,
        },
    ),
    Archetype(
        "combo",
        ("Kenrith, the Returned King", "Thrasios, Triton Hero"),
        {
            "Island": 17,
            "Forest": 17,
            "Command Tower": 1,
            "Sol Ring": 1,
            "Arcane Signet": 1,
            "Mind Stone": 4,
            "Commander's Sphere": 3,
            "Thran Dynamo": 2,
            "Watchwolf": 5,
            "Tarmogoyf": 5,
            "Ravenous Chupacabra": 3,
            "Consecrated Sphinx": 4,
            "Sphinx of the Steel Wind": 3,
            "Ulamog's Crusher": 3,
            "Terastodon": 2,
            "Swords to Plowshares": 1,
            "Beast Within": 4,
            "Chaos Warp": 3,
            "Night's Whisper": 5,
            "Sign in Blood": 4,
            "Harmonize": 5,
            "Rishkar's Expertise": 6,
        },
    ),
    Archetype(
        "ramp",
        ("Selvala, Heart of the Wilds", "Zacama, Primal Calamity"),
        {
            "Forest": 35,
            "Command Tower": 1,
            "Sol Ring": 1,
            "Arcane Signet": 1,
            "Mind Stone": 4,
            "Commander's Sphere": 4,
            "Thran Dynamo": 4,
            "Goblin Guide": 3,
            "Watchwolf": 4,
            "Tarmogoyf": 4,
            "Troll Ascetic": 3,
            "Thragtusk": 4,
            "Wurmcoil Engine": 4,
            "Ulamog's Crusher": 5,
            "Terastodon": 5,
            "Swords to Plowshares": 1,
            "Beast Within": 5,
            "Chaos Warp": 3,
            "Harmonize": 4,
            "Rishkar's Expertise": 4,
        },
    ),
)
for _archetype in ARCHETYPES:  # a broken deck list is a programming error, caught at import
    if sum(_archetype.cards.values()) != DECK_SIZE:
        raise ValueError(f"deck {_archetype.name!r} has {sum(_archetype.cards.values())} cards, not {DECK_SIZE}")
ARCHETYPE_NAMES: Final[tuple[str, ...]] = tuple(a.name for a in ARCHETYPES)
DECKS: Final[np.ndarray] = np.stack([a.deck_ids() for a in ARCHETYPES])  # [archetype, 99]
COMMANDER_IDS: Final[np.ndarray] = np.array(
    [[CARD_ID[name] for name in a.commanders] for a in ARCHETYPES], dtype=np.int16
)  # [archetype, 2]
