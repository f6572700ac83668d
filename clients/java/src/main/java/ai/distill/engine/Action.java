package ai.distill.engine;

/**
 * The action vocabulary of the decision contract, in index order: an answer's {@code action} is an index into
 * it. The order is part of the protocol (the hello sends these names in this order) and never changes.
 */
public enum Action {
    /** Cast a creature spell. */
    CAST_CREATURE("cast_creature"),
    /** Cast a removal spell. */
    CAST_REMOVAL("cast_removal"),
    /** Cast a card-draw spell. */
    CAST_DRAW("cast_draw"),
    /** Cast a ramp spell (mana rock, land search). */
    CAST_RAMP("cast_ramp"),
    /** Cast the commander from the command zone. */
    CAST_COMMANDER("cast_commander"),
    /** Attack an opponent. */
    ATTACK_OPPONENT("attack_opponent"),
    /** End the step holding mana open (2 or more). */
    HOLD_MANA("hold_mana"),
    /** Pass. */
    PASS("pass");

    private static final Action[] BY_INDEX = values();

    private final String wireName;

    Action(String wireName) {
        this.wireName = wireName;
    }

    /** @return the name on the wire, e.g. {@code cast_creature} */
    public String wireName() {
        return wireName;
    }

    /** @return the index on the wire (its position in the vocabulary) */
    public int index() {
        return ordinal();
    }

    /**
     * @param index an index into the vocabulary
     * @return the action at that index
     * @throws IllegalArgumentException an index outside the vocabulary
     */
    public static Action ofIndex(int index) {
        if (index < 0 || index >= BY_INDEX.length) {
            throw new IllegalArgumentException("no action " + index + " (0 to " + (BY_INDEX.length - 1) + ")");
        }
        return BY_INDEX[index];
    }
}
