package ai.distill.engine;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A decision Distill is asked to take: a contract row (schema version 2) as it stands before the decision,
 * without its label, reward or outcome. The builder holds it to the contract's rules, so that a bad row fails
 * here, in the engine, with the field named, rather than in Distill.
 *
 * <p>Start from {@link Game#request()}, which fills in the engine's name and the game's id:
 *
 * <pre>{@code
 * DecisionRequest request = game.request()
 *         .decisionIndex(decisions).turn(round).phase(Phase.MAIN_1).seat(seat)
 *         .players(states)                       // one PlayerState per seat, seat 0 first
 *         .legal(Action.CAST_CREATURE, Action.PASS)
 *         .commander("Najeela, the Blade-Blossom")
 *         .build();
 * int number = game.ask(request);
 * }</pre>
 */
public final class DecisionRequest {
    private final int seat;
    private final Set<Action> legal;
    private final Map<String, Object> row;

    private DecisionRequest(Builder b) {
        String engine = Require.text("engine", b.engine, 1, 64);
        String gameId = Require.text("game_id", b.gameId, 1, 128);
        if (b.phase == null) {
            throw new IllegalStateException("phase is not set");
        }
        if (b.players == null) {
            throw new IllegalStateException("players are not set");
        }
        int pod = Require.range("pod_size (the players given)", b.players.size(), Protocol.MIN_POD_SIZE,
                Protocol.MAX_POD_SIZE);
        seat = Require.range("seat", b.seat, 0, pod - 1);
        List<Object> players = new ArrayList<>(pod);
        for (int i = 0; i < pod; i++) {
            PlayerState player = b.players.get(i);
            if (player.seat() != i) {
                throw new IllegalArgumentException("players[" + i + "] describes seat " + player.seat()
                        + ": the players must be seats 0.." + (pod - 1) + " in order");
            }
            players.add(player.toJson());
        }
        if (b.legal.isEmpty()) {
            throw new IllegalStateException("no legal action: a request needs one at least");
        }
        legal = Collections.unmodifiableSet(EnumSet.copyOf(b.legal));
        List<Object> mask = new ArrayList<>(Action.values().length);
        for (Action action : Action.values()) {
            mask.add(legal.contains(action));
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("schema_version", Protocol.CONTRACT_VERSION);
        r.put("engine", engine);
        r.put("game_id", gameId);
        r.put("decision_index", Require.range("decision_index", b.decisionIndex, 0, 10_000_000));
        r.put("turn", Require.range("turn", b.turn, 0, Protocol.MAX_TURN_LIMIT));
        r.put("phase", b.phase.wireName());
        r.put("seat", seat);
        r.put("pod_size", pod);
        r.put("players", Collections.unmodifiableList(players));
        r.put("legal_actions", Collections.unmodifiableList(mask));
        r.put("commander", Require.optionalText("commander", b.commander, 1, 200));
        r.put("archetype", Require.optionalText("archetype", b.archetype, 0, 64));
        row = Collections.unmodifiableMap(r);
    }

    /** @return a builder with nothing set (see also {@link Game#request()}, which fills engine and game id) */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the acting seat */
    public int seat() {
        return seat;
    }

    /** @return the game's id as the row gives it */
    public String gameId() {
        return (String) row.get("game_id");
    }

    /** @return the number of seats */
    public int podSize() {
        return (Integer) row.get("pod_size");
    }

    /** @return the legal actions */
    public Set<Action> legal() {
        return legal;
    }

    /**
     * @param action an action
     * @return whether it is legal in this decision
     */
    public boolean isLegal(Action action) {
        return legal.contains(action);
    }

    /**
     * The row as a JSON object: what the request carries, and the start of a whole contract row for
     * {@link Game#sendRecords} (add the label and the outcome to a copy).
     *
     * @return a read-only view of the row
     */
    public Map<String, Object> toRow() {
        return row;
    }

    /** Builds a {@link DecisionRequest}; every setter returns this builder. */
    public static final class Builder {
        private String engine;
        private String gameId;
        private int decisionIndex;
        private int turn;
        private Phase phase;
        private int seat;
        private List<PlayerState> players;
        private final Set<Action> legal = EnumSet.noneOf(Action.class);
        private String commander;
        private String archetype;

        private Builder() {}

        /**
         * @param engine the engine's name (its hello's)
         * @return this builder
         */
        public Builder engine(String engine) {
            this.engine = engine;
            return this;
        }

        /**
         * @param gameId the game's id (the start's)
         * @return this builder
         */
        public Builder gameId(String gameId) {
            this.gameId = gameId;
            return this;
        }

        /**
         * @param index the decision's order in its game, from 0 (every seat's decisions counted)
         * @return this builder
         */
        public Builder decisionIndex(int index) {
            this.decisionIndex = index;
            return this;
        }

        /**
         * @param turn the turn (0 to 100,000)
         * @return this builder
         */
        public Builder turn(int turn) {
            this.turn = turn;
            return this;
        }

        /**
         * @param phase the phase of the turn
         * @return this builder
         */
        public Builder phase(Phase phase) {
            this.phase = phase;
            return this;
        }

        /**
         * @param seat the acting seat
         * @return this builder
         */
        public Builder seat(int seat) {
            this.seat = seat;
            return this;
        }

        /**
         * @param players every seat's state, seat 0 first (their number is the pod size)
         * @return this builder
         */
        public Builder players(List<PlayerState> players) {
            this.players = List.copyOf(players);
            return this;
        }

        /**
         * @param actions the legal actions (added to those given before)
         * @return this builder
         */
        public Builder legal(Action... actions) {
            Collections.addAll(legal, actions);
            return this;
        }

        /**
         * @param actions the legal actions (added to those given before)
         * @return this builder
         */
        public Builder legal(Collection<Action> actions) {
            legal.addAll(actions);
            return this;
        }

        /**
         * @param commander the acting seat's commander, or null
         * @return this builder
         */
        public Builder commander(String commander) {
            this.commander = commander;
            return this;
        }

        /**
         * @param archetype the acting seat's deck archetype (up to 64 characters), or null
         * @return this builder
         */
        public Builder archetype(String archetype) {
            this.archetype = archetype;
            return this;
        }

        /**
         * @return the request
         * @throws IllegalStateException a field the contract requires not set, or no legal action
         * @throws IllegalArgumentException a field out of the contract's bounds, or players that are not seats
         *     0 to n-1 in order
         */
        public DecisionRequest build() {
            return new DecisionRequest(this);
        }
    }
}
