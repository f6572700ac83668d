package ai.distill.engine;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One game in play, as Distill started it: the engine's handle to ask for decisions and report the end.
 *
 * <p>Its methods are safe to call from any thread. Called on the server's thread (from {@link Engine}'s
 * methods), the requests asked while the server handles one of Distill's frames are sent together in one
 * {@code decisions} frame once it is handled; called from another thread (say a game's own thread, blocked
 * until its answer comes), a request is sent at once.
 */
public final class Game {
    private final EngineServer server;
    private final GameSettings settings;
    // Guarded by the server's lock:
    final Map<Integer, Set<Action>> open = new HashMap<>();
    int nextRequest;
    boolean over;

    Game(EngineServer server, GameSettings settings) {
        this.server = server;
        this.settings = settings;
    }

    /** @return the game's id (Distill's) */
    public String id() {
        return settings.game();
    }

    /** @return the settings Distill started it with */
    public GameSettings settings() {
        return settings;
    }

    /**
     * @param seat a seat of the pod
     * @return whether Distill plays it (then its decisions are asked for)
     */
    public boolean isDistill(int seat) {
        return settings.isDistill(seat);
    }

    /** @return whether Distill asked for the rows of the engine AI's decisions in this game (and it offers them) */
    public boolean wantsRecords() {
        return settings.records() && server.info().aiRecords();
    }

    /** @return a request builder with the engine's name and this game's id filled in */
    public DecisionRequest.Builder request() {
        return DecisionRequest.builder().engine(server.info().name()).gameId(id());
    }

    /**
     * Asks Distill to decide for one of its seats. Its answer comes to {@link Engine#answer} with the number
     * returned here; until then the request is open.
     *
     * @param request the decision, for a seat Distill plays in this game
     * @return the request's number in this game (0, 1, 2 ...)
     * @throws IllegalArgumentException a row of another game or pod, a seat the engine's AI plays, or a row
     *     too large for a frame
     * @throws IllegalStateException the game is over
     */
    public int ask(DecisionRequest request) {
        return server.ask(this, request);
    }

    /**
     * Reports the end of the game (a result frame echoing its settings); the game is then over and its open
     * requests closed.
     *
     * @param result how it ended
     * @throws IllegalArgumentException placements or a winner that do not fit the pod
     * @throws IllegalStateException the game is already over
     */
    public void finish(GameResult result) {
        server.finish(this, result);
    }

    /**
     * Sends whole contract rows of the engine AI's decisions in this game (teacher data), before
     * {@link #finish}. Does nothing unless {@link #wantsRecords()}.
     *
     * @param rows contract rows (each a JSON object as {@link Json} writes it)
     * @throws IllegalArgumentException a row too large for a frame
     * @throws IllegalStateException the game is over
     */
    public void sendRecords(List<Map<String, Object>> rows) {
        server.records(this, rows);
    }

    /** @return whether the game is over (finished, or abandoned) */
    public boolean isOver() {
        return server.isOver(this);
    }

    @Override
    public String toString() {
        return "Game[" + id() + "]";
    }
}
