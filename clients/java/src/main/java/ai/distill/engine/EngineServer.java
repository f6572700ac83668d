package ai.distill.engine;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The engine side of the protocol: says hello, waits for Distill's welcome, then reads Distill's frames and
 * drives an {@link Engine} until shutdown or the end of its input.
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     EngineInfo info = EngineInfo.builder("my-engine").version("1.0")
 *             .maxPodSize(4).gamesPerProcess(64).engineAi("default")
 *             .determinism(Determinism.REPLAY).build();
 *     System.exit(new EngineServer(info, new MyEngine()).run());
 * }
 * }</pre>
 *
 * <p>What it does for the engine: frames (one compact JSON object per line, at most
 * {@link Protocol#MAX_FRAME_BYTES}), standard output kept for frames only (all logging on standard error),
 * the start message read and held to the protocol and to the hello ({@code bad_start} otherwise), every answer
 * checked before the engine sees it ({@code unknown_game} for a game or request not open,
 * {@code illegal_action} for an action not legal: the request stays open), {@code bad_frame} for a line it
 * cannot read, requests batched into one frame per frame handled, results echoing the settings, {@code bye}.
 */
public final class EngineServer {
    /** Exit code: Distill said shutdown, or its input ended. */
    public static final int EXIT_OK = 0;
    /** Exit code: the engine failed (an exception of its own), or Distill's pipes broke. */
    public static final int EXIT_FAILED = 1;
    /** Exit code: Distill refused the hello, or the handshake went wrong. */
    public static final int EXIT_REFUSED = 2;

    private static final String DECISIONS_HEAD = "{\"type\":\"decisions\",\"requests\":[";
    private static final String DECISIONS_TAIL = "]}";

    private final EngineInfo info;
    private final Engine engine;
    private final PrintStream log = System.err;
    private final Object lock = new Object();
    // Guarded by lock:
    private final Map<String, Game> games = new LinkedHashMap<>();
    private final List<Pending> outbox = new ArrayList<>();
    private int played;
    // Set once by run():
    private FrameWriter out;
    private Thread loopThread;
    private volatile boolean batching; // only ever true while the loop thread handles a frame

    /** A request asked while a frame is handled, sent when it is done. */
    private record Pending(Game game, int request, String json, int bytes) {}

    /** The engine failed: Distill is told ({@code internal}) and the process ends. */
    private static final class EngineFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        EngineFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * @param info what the hello says
     * @param engine the engine to drive
     */
    public EngineServer(EngineInfo info, Engine engine) {
        this.info = info;
        this.engine = engine;
    }

    /** @return what the hello says */
    public EngineInfo info() {
        return info;
    }

    /**
     * Serves on the process's standard input and output. {@link System#out} is pointed at standard error first,
     * so that a stray {@code println} (the engine's, a library's) cannot break the frames.
     *
     * @return the exit code: {@link #EXIT_OK}, {@link #EXIT_FAILED} or {@link #EXIT_REFUSED}
     */
    public int run() {
        OutputStream stdout = new FileOutputStream(FileDescriptor.out);
        System.setOut(System.err);
        return run(new FileInputStream(FileDescriptor.in), stdout);
    }

    /**
     * Serves on the given streams (a test's pipes); returns when Distill says shutdown or the input ends.
     *
     * @param in Distill's frames
     * @param stdout where the engine's frames go
     * @return the exit code: {@link #EXIT_OK}, {@link #EXIT_FAILED} or {@link #EXIT_REFUSED}
     */
    public int run(InputStream in, OutputStream stdout) {
        if (out != null) {
            throw new IllegalStateException("an EngineServer runs once");
        }
        out = new FrameWriter(new BufferedOutputStream(stdout, 1 << 16), Protocol.MAX_FRAME_BYTES);
        loopThread = Thread.currentThread();
        FrameReader reader = new FrameReader(in, Protocol.MAX_FRAME_BYTES);
        try {
            out.send(info.hello());
            int handshake = handshake(reader);
            if (handshake >= 0) {
                return handshake;
            }
            while (true) {
                FrameReader.Frame frame = reader.next();
                if (frame == null) {
                    abandonAll();
                    return EXIT_OK;
                }
                boolean shutdown;
                batching = true;
                try {
                    shutdown = handle(frame);
                } finally {
                    batching = false;
                    flushOutbox();
                }
                if (shutdown) {
                    abandonAll();
                    out.send(message("bye", "games", played()));
                    return EXIT_OK;
                }
            }
        } catch (EngineFailure failure) {
            log("the engine failed: " + failure.getMessage());
            failure.getCause().printStackTrace(log);
            return EXIT_FAILED;
        } catch (IOException | UncheckedIOException e) {
            log("lost the pipes to Distill: " + e.getMessage());
            return EXIT_FAILED;
        }
    }

    // -- the handshake and Distill's frames ------------------------------------------------------------------

    /** Waits for the welcome: -1 when it came, else the exit code. */
    private int handshake(FrameReader reader) throws IOException {
        while (true) {
            FrameReader.Frame frame = reader.next();
            if (frame == null) {
                log("Distill closed the input before its welcome");
                return EXIT_OK;
            }
            Map<String, Object> message = decode(frame);
            if (message == null) {
                continue;
            }
            Object type = message.get("type");
            if ("welcome".equals(type)) {
                if (!Protocol.NAME.equals(message.get("protocol"))
                        || !Long.valueOf(Protocol.MAJOR).equals(message.get("major"))) {
                    log("a welcome of another protocol or major version: " + Json.write(message));
                    return EXIT_REFUSED;
                }
                return -1;
            }
            if ("refuse".equals(type)) {
                log("Distill refused this engine: " + message.get("reason"));
                return EXIT_REFUSED;
            }
            log("expected Distill's welcome, got a " + type + " message");
            return EXIT_REFUSED;
        }
    }

    /** Handles one of Distill's frames; true for a shutdown. */
    private boolean handle(FrameReader.Frame frame) {
        Map<String, Object> message = decode(frame);
        if (message == null) {
            return false;
        }
        String type = (String) message.get("type");
        switch (type) {
            case "start":
                start(message);
                return false;
            case "actions":
                actions(message);
                return false;
            case "shutdown":
                return true;
            default:
                error("bad_frame", "a message this engine does not take here: " + type, null, null);
                return false;
        }
    }

    /** The message of a frame, or null (a bad_frame error sent). */
    private Map<String, Object> decode(FrameReader.Frame frame) {
        if (frame.problem != null) {
            error("bad_frame", frame.problem, null, null);
            return null;
        }
        Object value;
        try {
            value = Json.parse(frame.text);
        } catch (JsonException e) {
            error("bad_frame", "not JSON (" + e.getMessage() + "): " + shown(frame.text), null, null);
            return null;
        }
        if (!(value instanceof Map) || !(((Map<?, ?>) value).get("type") instanceof String)) {
            error("bad_frame", "not a message (a JSON object with a type): " + shown(frame.text), null, null);
            return null;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> message = (Map<String, Object>) value;
        return message;
    }

    private void start(Map<String, Object> message) {
        Object id = message.get("game");
        String gameId = id instanceof String ? (String) id : null;
        GameSettings settings;
        try {
            settings = GameSettings.parse(message, info);
        } catch (BadStartException e) {
            error("bad_start", e.getMessage(), gameId, null);
            return;
        }
        Game game;
        synchronized (lock) {
            if (games.containsKey(gameId)) {
                error("bad_start", "a game " + gameId + " is already in play", gameId, null);
                return;
            }
            if (games.size() >= info.gamesPerProcess()) {
                error("bad_start", games.size() + " games in play: this engine plays " + info.gamesPerProcess()
                        + " at once (games_per_process)", gameId, null);
                return;
            }
            game = new Game(this, settings);
            games.put(gameId, game);
        }
        try {
            engine.start(game);
        } catch (BadStartException e) {
            close(game);
            error("bad_start", e.getMessage(), gameId, null);
        } catch (RuntimeException e) {
            throw fail(e, gameId, null);
        }
    }

    private void actions(Map<String, Object> message) {
        Object answers = message.get("answers");
        if (!(answers instanceof List) || ((List<?>) answers).isEmpty()) {
            error("bad_frame", "an actions message without answers", null, null);
            return;
        }
        for (Object answer : (List<?>) answers) {
            if (!(answer instanceof Map)) {
                error("bad_frame", "an answer that is not an object: " + answer, null, null);
                continue;
            }
            answer((Map<?, ?>) answer);
        }
    }

    private void answer(Map<?, ?> answer) {
        Object id = answer.get("game");
        Object number = answer.get("request");
        Object choice = answer.get("action");
        String gameId = id instanceof String ? (String) id : null;
        Integer request = number instanceof Long && (Long) number >= 0 && (Long) number <= Integer.MAX_VALUE
                ? Integer.valueOf(((Long) number).intValue()) : null;
        Game game;
        Action action;
        synchronized (lock) {
            game = games.get(gameId);
            if (game == null) {
                error("unknown_game", "no game " + id + " in play", gameId, request);
                return;
            }
            Set<Action> legal = request == null ? null : game.open.get(request);
            if (legal == null) {
                error("unknown_game", "game " + gameId + " has no open request " + number, gameId, request);
                return;
            }
            action = choice instanceof Long && (Long) choice >= 0 && (Long) choice < Action.values().length
                    ? Action.ofIndex(((Long) choice).intValue()) : null;
            if (action == null || !legal.contains(action)) {
                List<String> names = new ArrayList<>();
                for (Action a : legal) {
                    names.add(a.wireName());
                }
                error("illegal_action", "action " + choice + " is not legal: " + names, gameId, request);
                return;
            }
            game.open.remove(request);
        }
        try {
            engine.answer(game, request, action);
        } catch (RuntimeException e) {
            throw fail(e, gameId, request);
        }
    }

    private void abandonAll() {
        List<Game> abandoned;
        synchronized (lock) {
            abandoned = new ArrayList<>(games.values());
            for (Game game : abandoned) {
                game.over = true;
                game.open.clear();
            }
            games.clear();
            outbox.clear();
        }
        for (Game game : abandoned) {
            try {
                engine.abandon(game);
            } catch (RuntimeException e) {
                log("abandoning " + game + " failed: " + e);
            }
        }
    }

    // -- what the engine calls (through Game) ----------------------------------------------------------------

    int ask(Game game, DecisionRequest request) {
        GameSettings settings = game.settings();
        if (!game.id().equals(request.gameId()) || request.podSize() != settings.podSize()) {
            throw new IllegalArgumentException("a row of game " + request.gameId() + " with a pod of "
                    + request.podSize() + " asked in game " + game.id() + " of " + settings.podSize());
        }
        if (!settings.isDistill(request.seat())) {
            throw new IllegalArgumentException("seat " + request.seat() + " of game " + game.id()
                    + " is the engine's AI's: only Distill's seats are asked");
        }
        synchronized (lock) {
            if (game.over) {
                throw new IllegalStateException(game + " is over");
            }
            int number = game.nextRequest;
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("game", game.id());
            entry.put("request", number);
            entry.put("row", request.toRow());
            String json = Json.write(entry);
            int bytes = FrameWriter.utf8Length(json);
            if (DECISIONS_HEAD.length() + bytes + DECISIONS_TAIL.length() > Protocol.MAX_FRAME_BYTES) {
                throw new IllegalArgumentException("a request of " + bytes + " bytes: too large for a frame");
            }
            game.nextRequest++;
            game.open.put(number, request.legal());
            if (batching && Thread.currentThread() == loopThread) {
                outbox.add(new Pending(game, number, json, bytes));
            } else {
                out.sendRaw(DECISIONS_HEAD + json + DECISIONS_TAIL);
            }
            return number;
        }
    }

    void finish(Game game, GameResult result) {
        int pod = game.settings().podSize();
        if (result.placements().size() != pod) {
            throw new IllegalArgumentException(result.placements().size() + " placements for a pod of " + pod);
        }
        if (result.winnerSeat() != null && result.winnerSeat() >= pod) {
            throw new IllegalArgumentException("winner seat " + result.winnerSeat() + " in a pod of " + pod);
        }
        Map<String, Object> message = new LinkedHashMap<>();
        message.put("type", "result");
        message.put("game", game.id());
        message.put("winner_seat", result.winnerSeat());
        message.put("placements", result.placements());
        message.put("truncated", result.truncated());
        message.put("turns", result.turns());
        message.put("decisions", result.decisions());
        message.put("settings", game.settings().toJson());
        synchronized (lock) {
            if (game.over) {
                throw new IllegalStateException(game + " is already over");
            }
            close(game);
            played++;
            out.send(message);
        }
    }

    void records(Game game, List<Map<String, Object>> rows) {
        if (!game.wantsRecords() || rows.isEmpty()) {
            return;
        }
        String head = "{\"type\":\"records\",\"game\":" + Json.write(game.id()) + ",\"rows\":[";
        synchronized (lock) {
            if (game.over) {
                throw new IllegalStateException(game + " is over: records go before its result");
            }
            StringBuilder frame = new StringBuilder(head);
            int size = FrameWriter.utf8Length(head);
            int inFrame = 0;
            for (Map<String, Object> row : rows) {
                String json = Json.write(row);
                int bytes = FrameWriter.utf8Length(json);
                if (FrameWriter.utf8Length(head) + bytes + 2 > Protocol.MAX_FRAME_BYTES) {
                    throw new IllegalArgumentException("a record of " + bytes + " bytes: too large for a frame");
                }
                if (inFrame > 0 && size + 1 + bytes + 2 > Protocol.MAX_FRAME_BYTES) {
                    out.sendRaw(frame.append("]}").toString());
                    frame.setLength(0);
                    frame.append(head);
                    size = FrameWriter.utf8Length(head);
                    inFrame = 0;
                }
                frame.append(inFrame > 0 ? "," : "").append(json);
                size += bytes + (inFrame > 0 ? 1 : 0);
                inFrame++;
            }
            out.sendRaw(frame.append("]}").toString());
        }
    }

    boolean isOver(Game game) {
        synchronized (lock) {
            return game.over;
        }
    }

    // -- output ------------------------------------------------------------------------------------------------

    /** Marks a game over and forgets it (its open requests closed, its unsent ones dropped at the flush). */
    private void close(Game game) {
        synchronized (lock) {
            game.over = true;
            game.open.clear();
            games.remove(game.id());
        }
    }

    private int played() {
        synchronized (lock) {
            return played;
        }
    }

    /** Sends the requests asked while a frame was handled: as few decisions frames as the size cap allows. */
    private void flushOutbox() {
        synchronized (lock) {
            StringBuilder frame = null;
            int size = 0;
            for (Pending p : outbox) {
                if (p.game().over || !p.game().open.containsKey(p.request())) {
                    continue;
                }
                if (frame != null && size + 1 + p.bytes() + DECISIONS_TAIL.length() > Protocol.MAX_FRAME_BYTES) {
                    out.sendRaw(frame.append(DECISIONS_TAIL).toString());
                    frame = null;
                }
                if (frame == null) {
                    frame = new StringBuilder(DECISIONS_HEAD);
                    size = DECISIONS_HEAD.length();
                } else {
                    frame.append(',');
                    size++;
                }
                frame.append(p.json());
                size += p.bytes();
            }
            outbox.clear();
            if (frame != null) {
                out.sendRaw(frame.append(DECISIONS_TAIL).toString());
            }
        }
    }

    private void error(String code, String text, String game, Integer request) {
        Map<String, Object> message = message("error", "code", code);
        message.put("message", text.length() > 2000 ? text.substring(0, 1997) + "..." : text);
        if (game != null) {
            message.put("game", game);
        }
        if (request != null) {
            message.put("request", request);
        }
        log("error " + code + ": " + text);
        out.send(message);
    }

    private EngineFailure fail(RuntimeException cause, String game, Integer request) {
        String text = cause.toString();
        try {
            error("internal", text, game, request);
        } catch (UncheckedIOException ignored) {
            // Distill is gone too: the log says what happened.
        }
        return new EngineFailure("in game " + game + ": " + text, cause);
    }

    private static Map<String, Object> message(String type, String key, Object value) {
        Map<String, Object> message = new LinkedHashMap<>();
        message.put("type", type);
        message.put(key, value);
        return message;
    }

    private static String shown(String text) {
        return text.length() > 120 ? text.substring(0, 120) + "..." : text;
    }

    private void log(String line) {
        log.println(info.name() + ": " + line);
    }
}
