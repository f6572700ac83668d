package ai.distill.engine;

/** The phase of the turn a decision is taken in, as the decision contract names it. */
public enum Phase {
    /** The first main phase. */
    MAIN_1("main_1"),
    /** Combat. */
    COMBAT("combat"),
    /** The second main phase. */
    MAIN_2("main_2"),
    /** The end step. */
    END("end");

    private final String wireName;

    Phase(String wireName) {
        this.wireName = wireName;
    }

    /** @return the name on the wire, e.g. {@code main_1} */
    public String wireName() {
        return wireName;
    }
}
