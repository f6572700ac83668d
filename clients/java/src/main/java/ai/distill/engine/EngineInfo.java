package ai.distill.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What an engine says about itself in its hello: its name, its limits, its own AI's profiles and how
 * reproducible its games are. Built with {@link #builder(String)}:
 *
 * <pre>{@code
 * EngineInfo info = EngineInfo.builder("my-engine").version("1.2")
 *         .maxPodSize(4).gamesPerProcess(64)
 *         .engineAi("default", "aggro").determinism(Determinism.REPLAY)
 *         .build();
 * }</pre>
 */
public final class EngineInfo {
    private final String name;
    private final String version;
    private final int maxPodSize;
    private final int gamesPerProcess;
    private final List<String> engineAi;
    private final boolean aiRecords;
    private final Determinism determinism;

    private EngineInfo(Builder b) {
        name = Require.text("engine name", b.name, 1, 64);
        version = Require.text("engine version", b.version, 0, 64);
        maxPodSize = Require.range("max_pod_size", b.maxPodSize, Protocol.MIN_POD_SIZE, Protocol.MAX_POD_SIZE);
        gamesPerProcess = Require.range("games_per_process", b.gamesPerProcess, 1, 65_536);
        if (b.engineAi.size() > 64) {
            throw new IllegalArgumentException(b.engineAi.size() + " engine AI profiles, at most 64");
        }
        for (String profile : b.engineAi) {
            Require.text("engine AI profile", profile, 1, 64);
        }
        engineAi = List.copyOf(b.engineAi);
        aiRecords = b.aiRecords;
        determinism = b.determinism;
    }

    /**
     * @param name the engine's name (1 to 64 characters; its rows' {@code engine})
     * @return a builder with the defaults: version "", pods of 2 to 4, one game per process, no AI of its own,
     *     no records, determinism {@link Determinism#NONE}
     */
    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** @return the engine's name */
    public String name() {
        return name;
    }

    /** @return the engine's version */
    public String version() {
        return version;
    }

    /** @return the largest pod it seats */
    public int maxPodSize() {
        return maxPodSize;
    }

    /** @return the games it plays at once */
    public int gamesPerProcess() {
        return gamesPerProcess;
    }

    /** @return the profiles of its own AI a seat can be given (the first is the default) */
    public List<String> engineAi() {
        return engineAi;
    }

    /** @return whether it can send the rows of its own AI's decisions */
    public boolean aiRecords() {
        return aiRecords;
    }

    /** @return how reproducible its games are */
    public Determinism determinism() {
        return determinism;
    }

    /** The hello message. */
    Map<String, Object> hello() {
        Map<String, Object> capabilities = new LinkedHashMap<>();
        capabilities.put("engine_ai", engineAi);
        capabilities.put("ai_records", aiRecords);
        capabilities.put("determinism", determinism.wireName());
        Map<String, Object> engine = new LinkedHashMap<>();
        engine.put("name", name);
        engine.put("version", version);
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("type", "hello");
        hello.put("protocol", Protocol.NAME);
        hello.put("major", Protocol.MAJOR);
        hello.put("minor", Protocol.MINOR);
        hello.put("contract_version", Protocol.CONTRACT_VERSION);
        hello.put("actions", Protocol.ACTIONS);
        hello.put("max_pod_size", maxPodSize);
        hello.put("games_per_process", gamesPerProcess);
        hello.put("capabilities", capabilities);
        hello.put("engine", engine);
        return hello;
    }

    /** Builds an {@link EngineInfo}. */
    public static final class Builder {
        private final String name;
        private String version = "";
        private int maxPodSize = 4;
        private int gamesPerProcess = 1;
        private final List<String> engineAi = new ArrayList<>();
        private boolean aiRecords;
        private Determinism determinism = Determinism.NONE;

        private Builder(String name) {
            this.name = name;
        }

        /**
         * @param version the engine's version (up to 64 characters)
         * @return this builder
         */
        public Builder version(String version) {
            this.version = version;
            return this;
        }

        /**
         * @param maxPodSize the largest pod it seats (2 to 8)
         * @return this builder
         */
        public Builder maxPodSize(int maxPodSize) {
            this.maxPodSize = maxPodSize;
            return this;
        }

        /**
         * @param gamesPerProcess the games it plays at once (1 to 65,536)
         * @return this builder
         */
        public Builder gamesPerProcess(int gamesPerProcess) {
            this.gamesPerProcess = gamesPerProcess;
            return this;
        }

        /**
         * @param profiles the profiles of its own AI, the default first (a start's engine seat without a
         *     profile gets it)
         * @return this builder
         */
        public Builder engineAi(String... profiles) {
            engineAi.addAll(Arrays.asList(profiles));
            return this;
        }

        /**
         * @param aiRecords whether it can send its AI's rows (Records)
         * @return this builder
         */
        public Builder aiRecords(boolean aiRecords) {
            this.aiRecords = aiRecords;
            return this;
        }

        /**
         * @param determinism how reproducible its games are
         * @return this builder
         */
        public Builder determinism(Determinism determinism) {
            if (determinism == null) {
                throw new IllegalArgumentException("determinism is missing");
            }
            this.determinism = determinism;
            return this;
        }

        /**
         * @return the engine's description
         * @throws IllegalArgumentException a field out of the protocol's bounds
         */
        public EngineInfo build() {
            return new EngineInfo(this);
        }
    }
}
