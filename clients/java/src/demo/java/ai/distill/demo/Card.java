package ai.distill.demo;

import java.util.ArrayList;
import java.util.List;

/**
 * A card of the demo game: a real Commander name, its rules cut down to one role and a few numbers.
 *
 * @param name the card's name (what the rows show)
 * @param kind its role
 * @param cost the mana it costs
 * @param power a creature's power
 * @param amount what a spell gives: the cards a draw spell draws, the mana a ramp card adds each turn
 */
record Card(String name, Kind kind, int cost, int power, int amount) {
    /** A card's role. */
    enum Kind { LAND, CREATURE, REMOVAL, DRAW, RAMP, COMMANDER }

    static final List<Card> COMMANDERS = List.of(
            new Card("Najeela, the Blade-Blossom", Kind.COMMANDER, 3, 3, 0),
            new Card("Talrand, Sky Summoner", Kind.COMMANDER, 4, 3, 0),
            new Card("Kenrith, the Returned King", Kind.COMMANDER, 5, 5, 0));

    /** The deck every seat plays (30 cards), before its shuffle. */
    static List<Card> deck() {
        List<Card> deck = new ArrayList<>();
        add(deck, 6, new Card("Forest", Kind.LAND, 0, 0, 1));
        add(deck, 6, new Card("Mountain", Kind.LAND, 0, 0, 1));
        add(deck, 2, new Card("Savannah Lions", Kind.CREATURE, 1, 2, 0));
        add(deck, 2, new Card("Goblin Guide", Kind.CREATURE, 1, 2, 0));
        add(deck, 2, new Card("Watchwolf", Kind.CREATURE, 2, 3, 0));
        add(deck, 1, new Card("Troll Ascetic", Kind.CREATURE, 3, 3, 0));
        add(deck, 1, new Card("Wilt-Leaf Liege", Kind.CREATURE, 4, 4, 0));
        add(deck, 1, new Card("Thragtusk", Kind.CREATURE, 5, 5, 0));
        add(deck, 1, new Card("Wurmcoil Engine", Kind.CREATURE, 6, 6, 0));
        add(deck, 2, new Card("Swords to Plowshares", Kind.REMOVAL, 1, 0, 0));
        add(deck, 1, new Card("Beast Within", Kind.REMOVAL, 3, 0, 0));
        add(deck, 1, new Card("Night's Whisper", Kind.DRAW, 2, 0, 2));
        add(deck, 1, new Card("Harmonize", Kind.DRAW, 4, 0, 3));
        add(deck, 1, new Card("Sol Ring", Kind.RAMP, 1, 0, 2));
        add(deck, 1, new Card("Arcane Signet", Kind.RAMP, 2, 0, 1));
        add(deck, 1, new Card("Mind Stone", Kind.RAMP, 2, 0, 1));
        return deck;
    }

    private static void add(List<Card> deck, int copies, Card card) {
        for (int i = 0; i < copies; i++) {
            deck.add(card);
        }
    }
}
