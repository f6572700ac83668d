package ai.distill.engine;

/**
 * A start the engine cannot play (a pod it does not seat, a turn limit past its own, an unknown AI profile):
 * Distill gets a {@code bad_start} error with this message and the game is not started.
 */
public final class BadStartException extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * @param message why the game cannot be played, for Distill's log
     */
    public BadStartException(String message) {
        super(message);
    }
}
