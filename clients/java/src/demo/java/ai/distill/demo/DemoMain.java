package ai.distill.demo;

import ai.distill.engine.Determinism;
import ai.distill.engine.EngineInfo;
import ai.distill.engine.EngineServer;

/**
 * The demo engine's entry point: {@code bin/demo-engine}, started by Distill, speaks the engine protocol on
 * its standard input and output (logs on standard error).
 */
public final class DemoMain {
    /** The demo's version, in its hello. */
    static final String VERSION = "1.0.0";

    private DemoMain() {}

    /**
     * Serves the demo game until Distill says shutdown or closes the input.
     *
     * @param args {@code --games-per-process N} (default 256)
     */
    public static void main(String[] args) {
        int gamesPerProcess = 256;
        for (int i = 0; i < args.length; i++) {
            if ("--games-per-process".equals(args[i]) && i + 1 < args.length) {
                gamesPerProcess = Integer.parseInt(args[++i]);
            } else {
                System.err.println("usage: demo-engine [--games-per-process N]");
                System.exit(2);
            }
        }
        EngineInfo info = EngineInfo.builder("distill-java-demo")
                .version(VERSION)
                .maxPodSize(DemoEngine.MAX_POD)
                .gamesPerProcess(gamesPerProcess)
                .engineAi(DemoAi.PROFILES.toArray(new String[0]))
                .determinism(Determinism.REPLAY)
                .build();
        System.exit(new EngineServer(info, new DemoEngine()).run());
    }
}
