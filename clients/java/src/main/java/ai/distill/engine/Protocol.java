package ai.distill.engine;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The constants of the engine protocol this library speaks ("distill-engine" 1.0). */
public final class Protocol {
    /** The protocol's name, as the hello sends it. */
    public static final String NAME = "distill-engine";
    /** The major version: Distill refuses an engine of another. */
    public static final int MAJOR = 1;
    /** The minor version: later minors only add optional fields. */
    public static final int MINOR = 0;
    /** The decision contract the rows follow ({@code schema_version}). */
    public static final int CONTRACT_VERSION = 2;
    /** The longest frame either side may send, in bytes (without its newline). */
    public static final int MAX_FRAME_BYTES = 1 << 20;
    /** The smallest pod the contract knows. */
    public static final int MIN_POD_SIZE = 2;
    /** The largest pod the contract knows. */
    public static final int MAX_POD_SIZE = 8;
    /** The largest turn limit a start may ask for. */
    public static final int MAX_TURN_LIMIT = 100_000;
    /** The action vocabulary's names, in index order, as the hello sends them. */
    public static final List<String> ACTIONS;

    static {
        List<String> names = new ArrayList<>();
        for (Action action : Action.values()) {
            names.add(action.wireName());
        }
        ACTIONS = Collections.unmodifiableList(names);
    }

    private Protocol() {}
}
