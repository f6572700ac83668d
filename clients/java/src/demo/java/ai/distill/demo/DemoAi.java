package ai.distill.demo;

import ai.distill.engine.Action;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/** The demo engine's own AI: the profiles a seat can be given. */
final class DemoAi {
    /** The profiles, the default first. */
    static final List<String> PROFILES = List.of("heuristic", "random");

    /** What the heuristic profile prefers, best first: develop, then hit, then keep mana up. */
    private static final List<Action> HEURISTIC_ORDER = List.of(Action.CAST_COMMANDER, Action.CAST_CREATURE,
            Action.CAST_RAMP, Action.CAST_REMOVAL, Action.CAST_DRAW, Action.ATTACK_OPPONENT, Action.HOLD_MANA,
            Action.PASS);

    private DemoAi() {}

    /**
     * @param profile one of {@link #PROFILES}
     * @param legal the legal actions (pass among them)
     * @param random the game's own AI generator (random draws from it only: replayable)
     * @return the action the profile plays
     */
    static Action choose(String profile, Set<Action> legal, SplittableRandom random) {
        if ("random".equals(profile)) {
            int pick = random.nextInt(legal.size());
            for (Action action : legal) {
                if (pick-- == 0) {
                    return action;
                }
            }
        }
        for (Action action : HEURISTIC_ORDER) {
            if (legal.contains(action)) {
                return action;
            }
        }
        throw new IllegalStateException("no legal action: " + legal);
    }
}
