package ai.distill.engine;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One game's settings: Distill's start message as the engine plays it, echoed back in the game's result.
 *
 * @param game the game's id, chosen by Distill
 * @param seed the game's only source of randomness (0 to 2^63-1)
 * @param podSize the number of seats
 * @param seats who plays each seat, seat 0 first
 * @param turnLimit rounds before the game stops with no winner
 * @param records whether Distill asked for the rows of the engine AI's decisions
 */
public record GameSettings(String game, long seed, int podSize, List<SeatSpec> seats, int turnLimit,
        boolean records) {

    /**
     * Checks the fields' bounds.
     *
     * @param game the game's id, chosen by Distill
     * @param seed the game's only source of randomness (0 to 2^63-1)
     * @param podSize the number of seats
     * @param seats who plays each seat, seat 0 first
     * @param turnLimit rounds before the game stops with no winner
     * @param records whether Distill asked for the rows of the engine AI's decisions
     * @throws IllegalArgumentException a field out of bounds, or seats that are not the pod
     */
    public GameSettings {
        Require.text("game", game, 1, 128);
        if (seed < 0) {
            throw new IllegalArgumentException("seed is " + seed + ", not 0 or more");
        }
        Require.range("pod_size", podSize, Protocol.MIN_POD_SIZE, Protocol.MAX_POD_SIZE);
        if (seats == null || seats.size() != podSize) {
            throw new IllegalArgumentException(
                    (seats == null ? "no" : String.valueOf(seats.size())) + " seats for a pod of " + podSize);
        }
        seats = List.copyOf(seats);
        Require.range("turn_limit", turnLimit, 1, Protocol.MAX_TURN_LIMIT);
    }

    /**
     * @param seat a seat of the pod
     * @return whether Distill plays it
     */
    public boolean isDistill(int seat) {
        return seats.get(seat).isDistill();
    }

    /** The settings as a start message (what a result echoes). */
    Map<String, Object> toJson() {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("type", "start");
        json.put("game", game);
        json.put("seed", seed);
        json.put("pod_size", podSize);
        List<Object> seatList = new ArrayList<>(seats.size());
        for (SeatSpec seat : seats) {
            seatList.add(seat.toJson());
        }
        json.put("seats", seatList);
        json.put("turn_limit", turnLimit);
        json.put("records", records);
        return json;
    }

    /**
     * Reads a start message, holding it to the protocol and to what the engine offered.
     *
     * <p>An engine seat without a profile is given the engine's first profile (and the echo says so).
     *
     * @throws BadStartException a start this engine cannot play, with the reason
     */
    static GameSettings parse(Map<String, Object> message, EngineInfo info) throws BadStartException {
        String game = string(message, "game", true);
        Object seedValue = message.get("seed");
        if (!(seedValue instanceof Long) || (Long) seedValue < 0) {
            String shown = seedValue instanceof BigInteger ? "past 2^63-1" : String.valueOf(seedValue);
            throw new BadStartException("seed must be an integer from 0 to 2^63-1, not " + shown);
        }
        int pod = integer(message, "pod_size", Protocol.MIN_POD_SIZE, Protocol.MAX_POD_SIZE);
        int turnLimit = integer(message, "turn_limit", 1, Protocol.MAX_TURN_LIMIT);
        Object records = message.getOrDefault("records", Boolean.FALSE);
        if (!(records instanceof Boolean)) {
            throw new BadStartException("records must be true or false, not " + records);
        }
        if (!(message.get("seats") instanceof List)) {
            throw new BadStartException("seats must be a list");
        }
        List<?> seatValues = (List<?>) message.get("seats");
        if (seatValues.size() != pod) {
            throw new BadStartException(seatValues.size() + " seats for a pod_size of " + pod);
        }
        if (pod > info.maxPodSize()) {
            throw new BadStartException("a pod of " + pod + ": this engine seats at most " + info.maxPodSize());
        }
        List<SeatSpec> seats = new ArrayList<>(pod);
        for (Object value : seatValues) {
            seats.add(seat(value, info));
        }
        try {
            return new GameSettings(game, (Long) seedValue, pod, seats, turnLimit, (Boolean) records);
        } catch (IllegalArgumentException e) {
            throw new BadStartException(e.getMessage());
        }
    }

    private static SeatSpec seat(Object value, EngineInfo info) throws BadStartException {
        if (!(value instanceof Map)) {
            throw new BadStartException("a seat must be an object, not " + value);
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> seat = (Map<String, Object>) value;
        Object player = seat.get("player");
        String profile = string(seat, "profile", false);
        String name = string(seat, "name", false);
        if ("distill".equals(player)) {
            return new SeatSpec(SeatSpec.Player.DISTILL, profile, name);
        }
        if (!"engine".equals(player)) {
            throw new BadStartException("a seat's player must be distill or engine, not " + player);
        }
        List<String> profiles = info.engineAi();
        if (profiles.isEmpty()) {
            throw new BadStartException("this engine offers no AI of its own: every seat must be Distill's");
        }
        if (profile == null) {
            profile = profiles.get(0);
        } else if (!profiles.contains(profile)) {
            throw new BadStartException("unknown engine AI profile '" + profile + "': this engine has " + profiles);
        }
        try {
            return new SeatSpec(SeatSpec.Player.ENGINE, profile, name);
        } catch (IllegalArgumentException e) {
            throw new BadStartException(e.getMessage());
        }
    }

    private static String string(Map<String, Object> map, String key, boolean required) throws BadStartException {
        Object value = map.get(key);
        if (value == null && !required) {
            return null;
        }
        if (!(value instanceof String)) {
            throw new BadStartException(key + " must be a string, not " + value);
        }
        return (String) value;
    }

    private static int integer(Map<String, Object> map, String key, int min, int max) throws BadStartException {
        Object value = map.get(key);
        if (!(value instanceof Long) || (Long) value < min || (Long) value > max) {
            throw new BadStartException(key + " must be an integer from " + min + " to " + max + ", not " + value);
        }
        return ((Long) value).intValue();
    }
}
