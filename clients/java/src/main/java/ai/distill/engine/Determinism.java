package ai.distill.engine;

/** How reproducible an engine's games are: the level its hello declares (and the check holds it to). */
public enum Determinism {
    /** A game is a function of its start message alone, whatever else the process plays. */
    REPLAY("replay"),
    /** A game is a function of the process's start messages, in order (one global generator). */
    PROCESS("process"),
    /** Neither (an AI with a wall-clock cutoff, threads racing). */
    NONE("none");

    private final String wireName;

    Determinism(String wireName) {
        this.wireName = wireName;
    }

    /** @return the name on the wire */
    public String wireName() {
        return wireName;
    }
}
