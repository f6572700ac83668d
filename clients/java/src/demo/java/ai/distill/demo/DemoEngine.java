package ai.distill.demo;

import ai.distill.engine.Action;
import ai.distill.engine.BadStartException;
import ai.distill.engine.Engine;
import ai.distill.engine.Game;
import java.util.HashMap;
import java.util.Map;

/**
 * The demo engine: plays {@link DemoGame}s, its own AI at the engine's seats, and asks Distill for every
 * decision of Distill's seats. Many games at once, each run forward until its next Distill decision.
 */
final class DemoEngine implements Engine {
    /** The longest game it plays, in rounds. */
    static final int MAX_TURN_LIMIT = 1000;
    /** The largest pod its rules seat. */
    static final int MAX_POD = 6;

    private final Map<Game, DemoGame> games = new HashMap<>();

    @Override
    public void start(Game game) throws BadStartException {
        if (game.settings().turnLimit() > MAX_TURN_LIMIT) {
            throw new BadStartException("a turn limit of " + game.settings().turnLimit() + ": this engine plays "
                    + MAX_TURN_LIMIT + " at most");
        }
        DemoGame state = new DemoGame(game.settings());
        games.put(game, state);
        playOn(game, state);
    }

    @Override
    public void answer(Game game, int request, Action action) {
        DemoGame state = games.get(game);
        state.apply(action);
        playOn(game, state);
    }

    @Override
    public void abandon(Game game) {
        games.remove(game);
    }

    /** Plays the engine's seats until a Distill seat is to decide (asked) or the game ends (finished). */
    private void playOn(Game game, DemoGame state) {
        while (!state.isOver()) {
            int seat = state.active();
            if (game.isDistill(seat)) {
                game.ask(state.request(game));
                return;
            }
            String profile = game.settings().seats().get(seat).profile();
            state.apply(DemoAi.choose(profile, state.legal(), state.aiRandom()));
        }
        games.remove(game);
        game.finish(state.result());
    }
}
