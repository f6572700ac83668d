package ai.distill.engine;

/** Text that is not the JSON {@link Json#parse} was asked to read. */
public final class JsonException extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong and where
     */
    public JsonException(String message) {
        super(message);
    }
}
