package ai.distill.demo;

import ai.distill.engine.Action;
import ai.distill.engine.DecisionRequest;
import ai.distill.engine.Game;
import ai.distill.engine.GameResult;
import ai.distill.engine.GameSettings;
import ai.distill.engine.Phase;
import ai.distill.engine.PlayerState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * The rules and state of one demo game: a tiny commander-like skirmish for 2 to 6 seats.
 *
 * <p>Each seat has 20 life, a shuffled 30-card deck, a hand of 5 and a commander in its command zone. At the
 * start of its turn a seat untaps (its mana is its lands and rocks), draws a card and plays a land from hand if
 * it has one; then it decides, again and again, until it passes or holds: cast a creature, removal, a draw
 * spell, a ramp card or its commander (the most expensive such card it can pay for), attack (once a turn: every
 * creature that was there at the start of the turn hits the opponent with the lowest life, the next in turn order
 * on a tie; a seat that held 2+ mana on its last turn takes 2 less), hold mana (2 or more open: ends the turn, blunting the next attacks) or
 * pass. A seat at 0 life or with 21 commander damage is out; the last seat in wins; after the turn limit the
 * game stops with no winner.
 *
 * <p>Everything random is drawn from generators seeded by the start's seed alone: a game is a function of its
 * start message (determinism {@code replay}).
 */
final class DemoGame {
    private static final int START_LIFE = 20;
    private static final int OPENING_HAND = 5;
    private static final int COMMANDER_LETHAL = 21;
    private static final int HOLD_SHIELD = 2;
    private static final int TAX_STEP = 2;

    /** One seat's cards and counters. */
    private static final class Seat {
        final int index;
        final Card commander;
        final List<Card> library;
        final List<Card> hand = new ArrayList<>();
        final List<Card> lands = new ArrayList<>();
        final List<Card> rocks = new ArrayList<>();
        final List<Card> creatures = new ArrayList<>();
        final List<Boolean> sick = new ArrayList<>(); // per creature: arrived this turn
        final List<Card> graveyard = new ArrayList<>();
        int life = START_LIFE;
        int commanderDamage;
        int tax;
        int mana;
        boolean commanderInZone = true;
        boolean held;
        Integer placement;

        Seat(int index, Card commander, List<Card> library) {
            this.index = index;
            this.commander = commander;
            this.library = library;
        }

        boolean out() {
            return life <= 0 || commanderDamage >= COMMANDER_LETHAL;
        }

        int power(boolean readyOnly) {
            int sum = 0;
            for (int i = 0; i < creatures.size(); i++) {
                sum += readyOnly && sick.get(i) ? 0 : creatures.get(i).power();
            }
            return sum;
        }

        void draw(int n) {
            for (int i = 0; i < n && !library.isEmpty(); i++) {
                hand.add(library.remove(library.size() - 1));
            }
        }

        /** The most expensive card of a kind in hand this seat can pay for (the first of equals), or null. */
        Card best(Card.Kind kind) {
            Card best = null;
            for (Card card : hand) {
                if (card.kind() == kind && card.cost() <= mana && (best == null || card.cost() > best.cost())) {
                    best = card;
                }
            }
            return best;
        }
    }

    private final GameSettings settings;
    private final SplittableRandom aiRandom;
    private final Seat[] seats;
    private int round = 1;
    private int active;
    private boolean attacked;
    private int decisions;
    private int alive;
    private boolean over;
    private boolean truncated;
    private Integer winner;

    DemoGame(GameSettings settings) {
        this.settings = settings;
        SplittableRandom deal = new SplittableRandom(settings.seed());
        this.aiRandom = deal.split();
        seats = new Seat[settings.podSize()];
        for (int s = 0; s < seats.length; s++) {
            List<Card> library = Card.deck();
            shuffle(library, deal);
            seats[s] = new Seat(s, Card.COMMANDERS.get(deal.nextInt(Card.COMMANDERS.size())), library);
            seats[s].draw(OPENING_HAND);
        }
        alive = seats.length;
        beginTurn(0);
    }

    private static void shuffle(List<Card> cards, SplittableRandom random) {
        for (int i = cards.size() - 1; i > 0; i--) {
            Collections.swap(cards, i, random.nextInt(i + 1));
        }
    }

    boolean isOver() {
        return over;
    }

    /** The seat to decide. */
    int active() {
        return active;
    }

    /** The engine AI's generator in this game (its own, seeded from the start's seed). */
    SplittableRandom aiRandom() {
        return aiRandom;
    }

    /** The actions legal for the seat to decide. */
    Set<Action> legal() {
        Seat me = seats[active];
        Set<Action> legal = EnumSet.of(Action.PASS);
        if (me.best(Card.Kind.CREATURE) != null) {
            legal.add(Action.CAST_CREATURE);
        }
        if (me.best(Card.Kind.REMOVAL) != null && removalTarget() != null) {
            legal.add(Action.CAST_REMOVAL);
        }
        if (me.best(Card.Kind.DRAW) != null) {
            legal.add(Action.CAST_DRAW);
        }
        if (me.best(Card.Kind.RAMP) != null) {
            legal.add(Action.CAST_RAMP);
        }
        if (me.commanderInZone && me.commander.cost() + me.tax <= me.mana) {
            legal.add(Action.CAST_COMMANDER);
        }
        if (!attacked && me.power(true) > 0) {
            legal.add(Action.ATTACK_OPPONENT);
        }
        if (me.mana >= 2) {
            legal.add(Action.HOLD_MANA);
        }
        return legal;
    }

    /**
     * Plays an action for the seat to decide.
     *
     * @throws IllegalArgumentException an action not legal now (the server let through only legal ones)
     */
    void apply(Action action) {
        if (over || !legal().contains(action)) {
            throw new IllegalArgumentException(action + " is not legal now");
        }
        decisions++;
        Seat me = seats[active];
        switch (action) {
            case CAST_CREATURE:
                enter(me, cast(me, Card.Kind.CREATURE));
                break;
            case CAST_REMOVAL:
                cast(me, Card.Kind.REMOVAL);
                destroyStrongest(removalTarget());
                break;
            case CAST_DRAW:
                me.draw(cast(me, Card.Kind.DRAW).amount());
                break;
            case CAST_RAMP:
                me.rocks.add(cast(me, Card.Kind.RAMP));
                break;
            case CAST_COMMANDER:
                me.mana -= me.commander.cost() + me.tax;
                me.commanderInZone = false;
                enter(me, me.commander);
                break;
            case ATTACK_OPPONENT:
                attack(me);
                break;
            case HOLD_MANA:
                me.held = true;
                endTurn();
                break;
            default:
                endTurn();
        }
    }

    private Card cast(Seat me, Card.Kind kind) {
        Card card = me.best(kind);
        me.hand.remove(card);
        me.mana -= card.cost();
        if (kind == Card.Kind.REMOVAL || kind == Card.Kind.DRAW) {
            me.graveyard.add(card);
        }
        return card;
    }

    private static void enter(Seat me, Card creature) {
        me.creatures.add(creature);
        me.sick.add(Boolean.TRUE);
    }

    /**
     * The living opponent with the most power on the battlefield, or null: none has any. Ties go to the first in
     * turn order after the acting seat (so that no seat is everyone's target by its number).
     */
    private Seat removalTarget() {
        Seat target = null;
        for (Seat s : opponents()) {
            if (!s.creatures.isEmpty() && (target == null || s.power(false) > target.power(false))) {
                target = s;
            }
        }
        return target;
    }

    /** The living opponents of the acting seat, in turn order after it. */
    private List<Seat> opponents() {
        List<Seat> opponents = new ArrayList<>(seats.length - 1);
        for (int k = 1; k < seats.length; k++) {
            Seat s = seats[(active + k) % seats.length];
            if (!s.out()) {
                opponents.add(s);
            }
        }
        return opponents;
    }

    private void destroyStrongest(Seat target) {
        int strongest = 0;
        for (int i = 1; i < target.creatures.size(); i++) {
            if (target.creatures.get(i).power() > target.creatures.get(strongest).power()) {
                strongest = i;
            }
        }
        Card card = target.creatures.remove(strongest);
        target.sick.remove(strongest);
        if (card == target.commander) {
            target.commanderInZone = true;
            target.tax += TAX_STEP;
        } else {
            target.graveyard.add(card);
        }
    }

    private void attack(Seat me) {
        attacked = true;
        Seat target = null;
        for (Seat s : opponents()) { // the lowest life; ties: the first in turn order
            if (target == null || s.life < target.life) {
                target = s;
            }
        }
        int damage = me.power(true);
        int fromCommander = 0;
        for (int i = 0; i < me.creatures.size(); i++) {
            if (me.creatures.get(i) == me.commander && !me.sick.get(i)) {
                fromCommander = me.commander.power();
            }
        }
        if (target.held) {
            damage = Math.max(0, damage - HOLD_SHIELD);
        }
        target.life = Math.max(-1000, target.life - damage);
        target.commanderDamage += Math.min(fromCommander, damage);
        if (target.out()) {
            target.placement = alive--;
            if (alive == 1) {
                me.placement = 1;
                winner = me.index;
                over = true;
            }
        }
    }

    private void endTurn() {
        int next = active;
        do {
            next = (next + 1) % seats.length;
        } while (seats[next].out());
        if (next <= active) {
            round++;
        }
        if (round > settings.turnLimit()) {
            round = settings.turnLimit();
            truncated = true;
            over = true;
            return;
        }
        beginTurn(next);
    }

    private void beginTurn(int seat) {
        active = seat;
        attacked = false;
        Seat me = seats[seat];
        Collections.fill(me.sick, Boolean.FALSE);
        me.held = false;
        me.draw(1);
        for (Card card : me.hand) {
            if (card.kind() == Card.Kind.LAND) {
                me.hand.remove(card);
                me.lands.add(card);
                break;
            }
        }
        me.mana = me.lands.size();
        for (Card rock : me.rocks) {
            me.mana += rock.amount();
        }
    }

    /** The decision of the seat to decide, as a contract row. */
    DecisionRequest request(Game game) {
        List<PlayerState> players = new ArrayList<>(seats.length);
        for (Seat s : seats) {
            List<String> battlefield = names(s.lands);
            battlefield.addAll(names(s.rocks));
            battlefield.addAll(names(s.creatures));
            players.add(PlayerState.builder(s.index)
                    .life(s.life)
                    .commanderDamageTaken(s.commanderDamage)
                    .manaAvailable(s.mana)
                    .commanderTax(s.tax)
                    .handSize(s.hand.size())
                    .graveyardSize(s.graveyard.size())
                    .creatures(s.creatures.size())
                    .lands(s.lands.size())
                    .permanents(battlefield.size())
                    .totalPower(s.power(false))
                    .eliminated(s.out())
                    .hand(s.index == active ? names(s.hand) : null)
                    .battlefield(battlefield)
                    .graveyard(names(s.graveyard))
                    .commandZone(s.commanderInZone ? List.of(s.commander.name()) : List.of())
                    .build());
        }
        return game.request()
                .decisionIndex(decisions)
                .turn(round)
                .phase(attacked ? Phase.MAIN_2 : Phase.MAIN_1)
                .seat(active)
                .players(players)
                .legal(legal())
                .commander(seats[active].commander.name())
                .archetype("midrange")
                .build();
    }

    private static List<String> names(List<Card> cards) {
        List<String> names = new ArrayList<>(cards.size());
        for (Card card : cards) {
            names.add(card.name());
        }
        return names;
    }

    /** How the game ended (once {@link #isOver()}). */
    GameResult result() {
        Integer[] placements = new Integer[seats.length];
        for (Seat s : seats) {
            placements[s.index] = s.placement;
        }
        List<Integer> places = Arrays.asList(placements);
        return truncated
                ? GameResult.truncated(places, round, decisions)
                : GameResult.won(winner, places, round, decisions);
    }
}
