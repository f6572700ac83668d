package ai.distill.engine;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.Pipe;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The library's self-tests, without a test framework: {@code clients/java/build.sh test}. The protocol as a
 * whole is checked by Distill's own suite ({@code distill engine check -- clients/java/bin/demo-engine}); these
 * pin the pieces: JSON, frames, the row builder, the server's replies, and game threads that ask and block.
 */
public final class SelfTest {
    private static int passed;

    private SelfTest() {}

    /**
     * Runs every test; exits non-zero on the first failure.
     *
     * @param args none
     * @throws Exception a test's failure
     */
    public static void main(String[] args) throws Exception {
        jsonRoundTrip();
        jsonRefusesWhatIsNotJson();
        framesAreCutAndCapped();
        requestsHoldTheContract();
        serverRepliesAndBatches();
        serverSendsRecordsInFrames();
        gameThreadsMayAskAndBlock();
        System.out.println("SelfTest: " + passed + " checks passed");
    }

    private static void jsonRoundTrip() throws JsonException {
        String text = "{\"a\":[1,-2,3.5,1e3,true,false,null],\"s\":\"q\\\"\\\\\\n\\t\\u0001\\u00e9\\ud83d\\ude00/\","
                + "\"big\":9223372036854775807,\"bigger\":9223372036854775808,\"o\":{}}";
        Map<?, ?> value = (Map<?, ?>) Json.parse(" \n" + text + "\r\n");
        check(value.get("big").equals(Long.MAX_VALUE), "a long stays a long");
        check(value.get("bigger") instanceof java.math.BigInteger, "past a long: a BigInteger");
        check("q\"\\\n\t\u0001\u00e9\ud83d\ude00/".equals(value.get("s")), "escapes read");
        check(Json.write(value.get("s")).equals("\"q\\\"\\\\\\n\\t\\u0001\u00e9\ud83d\ude00/\""), "escapes written");
        check(Json.write(Json.parse(Json.write(value))).equals(Json.write(value)), "a round trip is stable");
        check(Json.write("\ud800x").equals("\"\ufffdx\""), "a lone surrogate is written as U+FFFD");
        check(Json.write(new boolean[] {true, false}).equals("[true,false]"), "a boolean[] is an array");
        Map<?, ?> repeated = (Map<?, ?>) Json.parse("{\"k\":1,\"k\":2}");
        check(repeated.get("k").equals(2L), "a repeated key keeps its last value");
        checkThrows(IllegalArgumentException.class, () -> Json.write(Double.NaN), "NaN is refused");
    }

    private static void jsonRefusesWhatIsNotJson() {
        String[] bad = {"", "{", "{\"a\":1,}", "[1,]", "01", "1.", "-", "+1", "\"a", "\"\\x\"", "\"\u0001\"",
            "tru", "{a:1}", "[1] [2]", "'a'", "\"\\u12\"", "NaN"};
        for (String text : bad) {
            checkThrows(JsonException.class, () -> Json.parse(text), "refuses " + text);
        }
        checkThrows(JsonException.class, () -> Json.parse("[".repeat(Json.MAX_DEPTH + 2)), "refuses deep nesting");
    }

    private static void framesAreCutAndCapped() throws IOException {
        byte[] input = ("{\"a\":1}\n\n  \n" + "x".repeat(40) + "\n{\"b\":\"\u00e9\"}\n{\"partial\"")
                .getBytes(StandardCharsets.UTF_8);
        FrameReader reader = new FrameReader(new ByteArrayInputStream(input), 32);
        check("{\"a\":1}".equals(reader.next().text), "a frame");
        check(reader.next().problem != null, "a line over the cap is a problem, blank lines skipped");
        check("{\"b\":\"\u00e9\"}".equals(reader.next().text), "the next frame after it, UTF-8 decoded");
        check(reader.next() == null, "the end (a partial last line dropped)");
        FrameReader bytes = new FrameReader(new ByteArrayInputStream(new byte[] {'{', (byte) 0xff, '}', '\n'}), 32);
        check(bytes.next().problem != null, "a line that is not UTF-8 is a problem");
    }

    private static List<PlayerState> players(int n) {
        List<PlayerState> players = new ArrayList<>();
        for (int s = 0; s < n; s++) {
            players.add(PlayerState.builder(s).life(40).commanderDamageTaken(0).manaAvailable(2).commanderTax(0)
                    .handSize(1).graveyardSize(0).hand(s == 0 ? List.of("Forest") : null).build());
        }
        return players;
    }

    private static void requestsHoldTheContract() {
        DecisionRequest.Builder ok = DecisionRequest.builder().engine("e").gameId("g").phase(Phase.MAIN_1)
                .seat(1).players(players(3)).legal(Action.PASS);
        Map<String, Object> row = ok.build().toRow();
        check(row.get("pod_size").equals(3) && row.get("schema_version").equals(2), "pod and version filled in");
        check(Json.write(row.get("legal_actions")).equals("[false,false,false,false,false,false,false,true]"),
                "the mask is the vocabulary's 8 booleans");
        checkThrows(IllegalStateException.class, () -> DecisionRequest.builder().engine("e").gameId("g")
                .phase(Phase.END).players(players(2)).build(), "no legal action is refused");
        checkThrows(IllegalArgumentException.class, () -> ok.seat(3).build(), "a seat outside the pod");
        checkThrows(IllegalArgumentException.class, () -> ok.seat(0).players(List.of(players(2).get(1),
                players(2).get(0))).build(), "players out of order");
        checkThrows(IllegalStateException.class, () -> PlayerState.builder(0).life(1).build(),
                "a required count not set");
        checkThrows(IllegalArgumentException.class, () -> PlayerState.builder(0).life(1).commanderDamageTaken(0)
                .manaAvailable(-1).commanderTax(0).handSize(0).graveyardSize(0).build(), "a negative count");
        checkThrows(IllegalArgumentException.class, () -> PlayerState.builder(0).life(1).commanderDamageTaken(0)
                .manaAvailable(0).commanderTax(0).handSize(0).graveyardSize(0).hand(List.of("")).build(),
                "an empty card name");
    }

    /** An engine whose games ask seat 0 once (two legal actions), then end with it winning. */
    private static final class OneDecision implements Engine {
        final List<String> seen = new ArrayList<>();

        @Override
        public void start(Game game) throws BadStartException {
            if (game.id().startsWith("refuse")) {
                throw new BadStartException("not this one");
            }
            game.ask(game.request().phase(Phase.MAIN_1).seat(0)
                    .players(players(game.settings().podSize())).legal(Action.CAST_RAMP, Action.PASS).build());
        }

        @Override
        public void answer(Game game, int request, Action action) {
            seen.add(game.id() + ":" + request + ":" + action.wireName());
            List<Map<String, Object>> rows = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                rows.add(Map.of("pad", "y".repeat(400_000)));
            }
            game.sendRecords(rows);
            List<Integer> places = new ArrayList<>();
            for (int s = 0; s < game.settings().podSize(); s++) {
                places.add(s == 0 ? 1 : null);
            }
            game.finish(GameResult.won(0, places, 1, 1));
        }
    }

    private static List<Map<?, ?>> serve(EngineInfo info, Engine engine, String... frames)
            throws JsonException {
        String welcome = "{\"type\":\"welcome\",\"protocol\":\"distill-engine\",\"major\":1,\"minor\":7}\n";
        byte[] input = (welcome + String.join("\n", frames) + "\n").getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        int code = new EngineServer(info, engine).run(new ByteArrayInputStream(input), output);
        check(code == EngineServer.EXIT_OK, "exit 0");
        List<Map<?, ?>> messages = new ArrayList<>();
        for (String line : output.toString(StandardCharsets.UTF_8).split("\n")) {
            check(line.getBytes(StandardCharsets.UTF_8).length <= Protocol.MAX_FRAME_BYTES, "a frame within the cap");
            messages.add((Map<?, ?>) Json.parse(line));
        }
        check("hello".equals(messages.get(0).get("type")), "hello first");
        return messages;
    }

    private static String start(String game) {
        return "{\"type\":\"start\",\"game\":\"" + game + "\",\"seed\":1,\"pod_size\":2,\"turn_limit\":9,"
                + "\"seats\":[{\"player\":\"distill\"},{\"player\":\"distill\"}],\"records\":true}";
    }

    private static String answer(String game, int request, int action) {
        return "{\"game\":\"" + game + "\",\"request\":" + request + ",\"action\":" + action + "}";
    }

    private static void serverRepliesAndBatches() throws JsonException {
        OneDecision engine = new OneDecision();
        EngineInfo info = EngineInfo.builder("test").gamesPerProcess(8).build();
        List<Map<?, ?>> out = serve(info, engine, start("g1"), start("g2"), start("refuse-me"),
                "{\"type\":\"actions\",\"answers\":[" + answer("g1", 0, 0) + "," + answer("nope", 0, 7) + ","
                        + answer("g2", 0, 3) + "," + answer("g1", 0, 7) + "]}",
                "{\"type\":\"shutdown\"}");
        List<Object> types = new ArrayList<>();
        for (Map<?, ?> m : out) {
            types.add(m.get("type") + (m.containsKey("code") ? "/" + m.get("code") : ""));
        }
        check(types.equals(List.of("hello", "decisions", "decisions", "error/bad_start", "error/illegal_action",
                "error/unknown_game", "result", "result", "bye")), "the replies, in order: " + types);
        check(engine.seen.equals(List.of("g2:0:cast_ramp", "g1:0:pass")), "only legal answers reach the engine");
        check(out.get(8).get("games").equals(2L), "bye counts the games played");
    }

    private static void serverSendsRecordsInFrames() throws JsonException {
        EngineInfo info = EngineInfo.builder("test").aiRecords(true).build();
        List<Map<?, ?>> out = serve(info, new OneDecision(), start("g"),
                "{\"type\":\"actions\",\"answers\":[" + answer("g", 0, 7) + "]}");
        int records = 0;
        int rows = 0;
        for (Map<?, ?> m : out) {
            if ("records".equals(m.get("type"))) {
                records++;
                rows += ((List<?>) m.get("rows")).size();
            }
        }
        check(records == 2 && rows == 3, "3 rows of 400 KB in 2 frames, not one over the cap");
        check("result".equals(out.get(out.size() - 1).get("type")), "records before the result");
    }

    /**
     * The shape of a Forge adapter: each game on a thread of its own, which asks and blocks until the answer
     * comes (the server's thread completes it), then finishes the game from that thread.
     */
    private static final class BlockingGames implements Engine {
        final Map<String, CompletableFuture<Action>> waiting = new ConcurrentHashMap<>();

        @Override
        public void start(Game game) {
            Thread thread = new Thread(() -> {
                CompletableFuture<Action> answer = new CompletableFuture<>();
                waiting.put(game.id(), answer);
                game.ask(game.request().phase(Phase.MAIN_1).seat(0).players(players(2))
                        .legal(Action.ATTACK_OPPONENT, Action.PASS).build());
                Action action = answer.join(); // the game's thread waits, as Forge's AI would
                int winner = action == Action.ATTACK_OPPONENT ? 0 : 1;
                game.finish(GameResult.won(winner, winner == 0 ? List.of(1, 2) : List.of(2, 1), 1, 1));
            }, "game-" + game.id());
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void answer(Game game, int request, Action action) {
            waiting.remove(game.id()).complete(action);
        }
    }

    private static void gameThreadsMayAskAndBlock() throws Exception {
        // Real pipes (java.io's Piped streams fail once a writing thread has ended: game threads do end).
        Pipe in = Pipe.open();
        Pipe out = Pipe.open();
        OutputStream toEngine = Channels.newOutputStream(in.sink());
        InputStream engineIn = Channels.newInputStream(in.source());
        OutputStream engineOut = Channels.newOutputStream(out.sink());
        BufferedReader fromEngine = new BufferedReader(new InputStreamReader(
                Channels.newInputStream(out.source()), StandardCharsets.UTF_8));
        EngineServer server = new EngineServer(EngineInfo.builder("threads").gamesPerProcess(4).build(),
                new BlockingGames());
        CompletableFuture<Integer> code = CompletableFuture.supplyAsync(() -> server.run(engineIn, engineOut));
        write(toEngine, "{\"type\":\"welcome\",\"protocol\":\"distill-engine\",\"major\":1,\"minor\":0}");
        check("hello".equals(((Map<?, ?>) Json.parse(fromEngine.readLine())).get("type")), "hello over a pipe");
        for (String id : List.of("t1", "t2", "t3")) {
            write(toEngine, start(id));
        }
        List<String> results = new ArrayList<>();
        int asked = 0;
        while (results.size() < 3) {
            Map<?, ?> message = (Map<?, ?>) Json.parse(fromEngine.readLine());
            if ("decisions".equals(message.get("type"))) {
                for (Object r : (List<?>) message.get("requests")) {
                    String game = (String) ((Map<?, ?>) r).get("game");
                    write(toEngine, "{\"type\":\"actions\",\"answers\":[" + answer(game, 0, 5) + "]}");
                    asked++;
                }
            } else {
                check("result".equals(message.get("type")), "a result, not " + message);
                check(message.get("winner_seat").equals(0L), "the answer reached the blocked game thread");
                results.add((String) message.get("game"));
            }
        }
        check(asked == 3, "each game thread asked once");
        write(toEngine, "{\"type\":\"shutdown\"}");
        check("bye".equals(((Map<?, ?>) Json.parse(fromEngine.readLine())).get("type")), "bye");
        check(code.get(10, TimeUnit.SECONDS) == EngineServer.EXIT_OK, "exit 0");
    }

    private static void write(OutputStream out, String frame) throws IOException {
        out.write((frame + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError("FAILED: " + what);
        }
        passed++;
    }

    /** Code that should throw. */
    private interface Thrower {
        void run() throws Exception;
    }

    private static void checkThrows(Class<? extends Throwable> expected, Thrower code, String what) {
        try {
            code.run();
        } catch (Throwable thrown) {
            check(expected.isInstance(thrown), what + " (threw " + thrown + ")");
            return;
        }
        check(false, what + " (threw nothing)");
    }
}
