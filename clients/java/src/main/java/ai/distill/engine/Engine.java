package ai.distill.engine;

/**
 * A game engine, as the {@link EngineServer} drives it: the part an engine author writes.
 *
 * <p>The server calls these methods on its own thread, one at a time. An engine plays its own AI's seats
 * itself and asks Distill only for the decisions of Distill's seats ({@link Game#ask}); it reports the end of
 * each game with {@link Game#finish}. A typical engine runs each game forward until it reaches a decision of a
 * Distill seat, asks, and returns; {@link #answer} applies the action and runs it forward again.
 *
 * <p>The server has already checked every answer it passes on: the game is live, the request is open and the
 * action is legal in it (an illegal answer got an {@code illegal_action} error, never reaches the engine, and
 * the request stays open). An exception thrown here (other than {@link BadStartException} from
 * {@link #start}) is the engine's own failure: Distill gets an {@code internal} error and the process exits.
 */
public interface Engine {
    /**
     * Starts a game: deal it from {@code game.settings().seed()} alone, play its engine seats, ask for the
     * first decision of a Distill seat (or finish it).
     *
     * @param game the new game (its settings are Distill's start message)
     * @throws BadStartException a game this engine cannot play (Distill gets {@code bad_start})
     */
    void start(Game game) throws BadStartException;

    /**
     * Applies Distill's answer to an open request of a game, then plays on.
     *
     * @param game the game
     * @param request the request's number (what {@link Game#ask} returned)
     * @param action the action Distill chose, legal in that request
     */
    void answer(Game game, int request, Action action);

    /**
     * A game Distill will not finish (it said shutdown, or its input ended, with the game in play): free what
     * it holds. The game reports no result. Does nothing by default.
     *
     * @param game the game abandoned
     */
    default void abandon(Game game) {}
}
