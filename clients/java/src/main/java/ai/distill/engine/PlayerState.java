package ai.distill.engine;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The public state of one seat at the moment of a decision: one entry of a contract row's {@code players}.
 * Built with {@link #builder(int)}; the six counts the contract requires (life, commander damage taken, mana
 * available, commander tax, hand size, graveyard size) must be set, the rest may stay unknown (null).
 *
 * <pre>{@code
 * PlayerState me = PlayerState.builder(0)
 *         .life(40).commanderDamageTaken(0).manaAvailable(3).commanderTax(0)
 *         .handSize(hand.size()).graveyardSize(0)
 *         .lands(3).creatures(1).totalPower(2)
 *         .hand(hand).battlefield(List.of("Forest", "Forest", "Forest", "Goblin Guide"))
 *         .build();
 * }</pre>
 */
public final class PlayerState {
    private static final int MAX_COUNT = 100_000;
    private static final int MAX_ZONE = 1000;

    private final Map<String, Object> json;
    private final int seat;

    private PlayerState(Builder b) {
        seat = Require.range("seat", b.seat, 0, Protocol.MAX_POD_SIZE - 1);
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("seat", seat);
        json.put("life", Require.range("life", required("life", b.life), -1000, MAX_COUNT));
        json.put("commander_damage_taken", count("commander_damage_taken", required("commander_damage_taken",
                b.commanderDamageTaken)));
        json.put("mana_available", count("mana_available", required("mana_available", b.manaAvailable)));
        json.put("commander_tax", count("commander_tax", required("commander_tax", b.commanderTax)));
        json.put("hand_size", count("hand_size", required("hand_size", b.handSize)));
        json.put("graveyard_size", count("graveyard_size", required("graveyard_size", b.graveyardSize)));
        json.put("creatures", count("creatures", b.creatures));
        json.put("lands", count("lands", b.lands));
        json.put("permanents", count("permanents", b.permanents));
        json.put("total_power", count("total_power", b.totalPower));
        json.put("eliminated", b.eliminated);
        json.put("hand", Require.cardNames("hand", b.hand, MAX_ZONE));
        json.put("battlefield", Require.cardNames("battlefield", b.battlefield, MAX_ZONE));
        json.put("graveyard", Require.cardNames("graveyard", b.graveyard, MAX_ZONE));
        json.put("command_zone", Require.cardNames("command_zone", b.commandZone, 16));
        this.json = Collections.unmodifiableMap(json);
    }

    private int required(String field, Integer value) {
        if (value == null) {
            throw new IllegalStateException("seat " + seat + ": " + field + " is required by the contract, not set");
        }
        return value;
    }

    private static Integer count(String field, Integer value) {
        return value == null ? null : Require.range(field, value, 0, MAX_COUNT);
    }

    /**
     * @param seat the seat described (0-based; {@code players[i]} of a row is seat i)
     * @return a builder with nothing set
     */
    public static Builder builder(int seat) {
        return new Builder(seat);
    }

    /** @return the seat described */
    public int seat() {
        return seat;
    }

    /** The entry as the row writes it (every field present, unknown ones null; read-only). */
    Map<String, Object> toJson() {
        return json;
    }

    /** Builds a {@link PlayerState}; every setter returns this builder. */
    public static final class Builder {
        private final int seat;
        private Integer life;
        private Integer commanderDamageTaken;
        private Integer manaAvailable;
        private Integer commanderTax;
        private Integer handSize;
        private Integer graveyardSize;
        private Integer creatures;
        private Integer lands;
        private Integer permanents;
        private Integer totalPower;
        private Boolean eliminated;
        private List<String> hand;
        private List<String> battlefield;
        private List<String> graveyard;
        private List<String> commandZone;

        private Builder(int seat) {
            this.seat = seat;
        }

        /**
         * @param life the life total (-1000 to 100,000; may be negative once lost); required
         * @return this builder
         */
        public Builder life(int life) {
            this.life = life;
            return this;
        }

        /**
         * @param damage the total commander damage taken; required
         * @return this builder
         */
        public Builder commanderDamageTaken(int damage) {
            this.commanderDamageTaken = damage;
            return this;
        }

        /**
         * @param mana the untapped mana the seat can spend now; required
         * @return this builder
         */
        public Builder manaAvailable(int mana) {
            this.manaAvailable = mana;
            return this;
        }

        /**
         * @param tax the extra mana the next commander cast costs; required
         * @return this builder
         */
        public Builder commanderTax(int tax) {
            this.commanderTax = tax;
            return this;
        }

        /**
         * @param size the cards in hand; required
         * @return this builder
         */
        public Builder handSize(int size) {
            this.handSize = size;
            return this;
        }

        /**
         * @param size the cards in the graveyard; required
         * @return this builder
         */
        public Builder graveyardSize(int size) {
            this.graveyardSize = size;
            return this;
        }

        /**
         * @param creatures the creatures on the battlefield, or null (unknown)
         * @return this builder
         */
        public Builder creatures(Integer creatures) {
            this.creatures = creatures;
            return this;
        }

        /**
         * @param lands the lands on the battlefield, or null (unknown)
         * @return this builder
         */
        public Builder lands(Integer lands) {
            this.lands = lands;
            return this;
        }

        /**
         * @param permanents the permanents on the battlefield, or null (unknown)
         * @return this builder
         */
        public Builder permanents(Integer permanents) {
            this.permanents = permanents;
            return this;
        }

        /**
         * @param power the summed power of its creatures, or null (unknown)
         * @return this builder
         */
        public Builder totalPower(Integer power) {
            this.totalPower = power;
            return this;
        }

        /**
         * @param eliminated whether the seat is out of the game, or null (unknown)
         * @return this builder
         */
        public Builder eliminated(Boolean eliminated) {
            this.eliminated = eliminated;
            return this;
        }

        /**
         * @param cards the names of the cards in hand (the acting seat's; others' are hidden: null)
         * @return this builder
         */
        public Builder hand(List<String> cards) {
            this.hand = cards;
            return this;
        }

        /**
         * @param cards the names of its permanents, or null (unknown)
         * @return this builder
         */
        public Builder battlefield(List<String> cards) {
            this.battlefield = cards;
            return this;
        }

        /**
         * @param cards the names of the cards in its graveyard, or null (unknown)
         * @return this builder
         */
        public Builder graveyard(List<String> cards) {
            this.graveyard = cards;
            return this;
        }

        /**
         * @param cards the names of the cards in its command zone (at most 16), or null (unknown)
         * @return this builder
         */
        public Builder commandZone(List<String> cards) {
            this.commandZone = cards;
            return this;
        }

        /**
         * @return the seat's state
         * @throws IllegalStateException a required count not set
         * @throws IllegalArgumentException a field out of the contract's bounds (a count below 0, a card name
         *     empty or over 200 characters, a zone too large)
         */
        public PlayerState build() {
            return new PlayerState(this);
        }
    }
}
