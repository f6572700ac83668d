package ai.distill.engine;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Who plays one seat of a game: Distill (the engine asks it for every decision of that seat) or the engine's
 * own AI, by profile name.
 *
 * @param player who plays the seat
 * @param profile the engine AI's profile (an engine seat), else null
 * @param name a label for records (a checkpoint's name), or null
 */
public record SeatSpec(Player player, String profile, String name) {
    /** Who plays a seat. */
    public enum Player {
        /** Distill: its decisions are asked for. */
        DISTILL,
        /** The engine's own AI: its decisions never cross the wire. */
        ENGINE
    }

    /**
     * Checks the fields' bounds.
     *
     * @param player who plays the seat
     * @param profile the engine AI's profile (an engine seat), else null
     * @param name a label for records (a checkpoint's name), or null
     * @throws IllegalArgumentException a field out of bounds
     */
    public SeatSpec {
        if (player == null) {
            throw new IllegalArgumentException("a seat's player is missing");
        }
        Require.optionalText("profile", profile, 0, 64);
        Require.optionalText("name", name, 0, 200);
    }

    /** @return whether Distill plays this seat */
    public boolean isDistill() {
        return player == Player.DISTILL;
    }

    /** The seat as the start message writes it (null fields left out). */
    Map<String, Object> toJson() {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("player", player == Player.DISTILL ? "distill" : "engine");
        if (profile != null) {
            json.put("profile", profile);
        }
        if (name != null) {
            json.put("name", name);
        }
        return json;
    }
}
