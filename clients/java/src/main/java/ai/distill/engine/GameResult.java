package ai.distill.engine;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * How a game ended, reported with {@link Game#finish}.
 *
 * @param winnerSeat the seat that won, or null (a draw, the turn limit)
 * @param placements each seat's final place (1 first), null for a seat not placed
 * @param truncated whether the game stopped at its turn limit (then there is no winner)
 * @param turns the turns played
 * @param decisions the decisions taken in the game, every seat's
 */
public record GameResult(Integer winnerSeat, List<Integer> placements, boolean truncated, int turns,
        int decisions) {

    /**
     * Checks the fields' bounds.
     *
     * @param winnerSeat the seat that won, or null (a draw, the turn limit)
     * @param placements each seat's final place (1 first), null for a seat not placed
     * @param truncated whether the game stopped at its turn limit (then there is no winner)
     * @param turns the turns played
     * @param decisions the decisions taken in the game, every seat's
     * @throws IllegalArgumentException a field out of bounds, or a truncated game with a winner
     */
    public GameResult {
        if (winnerSeat != null) {
            Require.range("winner_seat", winnerSeat, 0, Protocol.MAX_POD_SIZE - 1);
        }
        if (truncated && winnerSeat != null) {
            throw new IllegalArgumentException("a game stopped at its turn limit has no winner");
        }
        if (placements == null) {
            throw new IllegalArgumentException("placements are missing");
        }
        placements = Collections.unmodifiableList(new ArrayList<>(placements)); // nulls allowed
        for (Integer place : placements) {
            if (place != null) {
                Require.range("a placement", place, 1, Protocol.MAX_POD_SIZE);
            }
        }
        Require.range("turns", turns, 0, Integer.MAX_VALUE);
        Require.range("decisions", decisions, 0, Integer.MAX_VALUE);
    }

    /**
     * A game won.
     *
     * @param winnerSeat the seat that won
     * @param placements each seat's final place (1 first), null for a seat not placed
     * @param turns the turns played
     * @param decisions the decisions taken, every seat's
     * @return the result
     */
    public static GameResult won(int winnerSeat, List<Integer> placements, int turns, int decisions) {
        return new GameResult(winnerSeat, placements, false, turns, decisions);
    }

    /**
     * A game stopped at its turn limit: no winner.
     *
     * @param placements each seat's final place where it has one (eliminated seats), else null
     * @param turns the turns played
     * @param decisions the decisions taken, every seat's
     * @return the result
     */
    public static GameResult truncated(List<Integer> placements, int turns, int decisions) {
        return new GameResult(null, placements, true, turns, decisions);
    }
}
