/* The rules' two hot entry points, game by game in C: rules.legal_mask and the state change of rules.apply.

   toolkit/game/rules.py is the definition of the game: these loops do, for each game of ``g``, exactly what its
   numpy functions do for all of them at once (the same integer types and wrap-arounds, the same first-index tie
   breaks, the same order of changes), so a game played either way is the same game bit for bit. The tests hold
   the two equal step by step on random play (tests/game/test_native_rules.py), and the golden games pin both.
   At the small batches evaluation, gates and engines play (tens of games), numpy's fixed cost per call made
   the rules ~2 ms a step whatever the batch; here a step costs microseconds.

   The card tables and the rules' constants come from rules.py once (``init``); the state arrives as the tuple of
   GameState's arrays, each checked for its item size and shape before anything is read. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

/* ----------------------------------------------------------------------------------------------- tables */

enum { N_KINDS = 6, MAX_SLOTS = 16, MAX_SEATS_C = 16 };

static int ready = 0;
static Py_ssize_t n_cards;          /* C: card columns of hand, graveyard and permanents */
static int16_t *COST, *POWER, *TOUGHNESS, *MANA, *DRAWS; /* n_cards + 1 entries: the last is NO_CARD's */
static int8_t *KIND;
static int32_t *ATTACKER_KEY, *BLOCKER_KEY, *THREAT_SCORE;
static Py_ssize_t kind_lo[N_KINDS], kind_hi[N_KINDS]; /* each kind's contiguous card columns [lo, hi) */
static int slots, deck_size, commander_lethal, tax_step, hold_min_mana, slot_shift, main_1, main_2;
static int LAND, CREATURE, REMOVAL, DRAW, RAMP, COMMANDER;
static int A_CREATURE, A_REMOVAL, A_DRAW, A_RAMP, A_COMMANDER, A_ATTACK, A_HOLD, A_PASS;
static double damage_reward, elimination_reward;

/* numpy's view of index -1: a card table's last entry (NO_CARD's), a card column's last column */
#define TAB(card) ((card) < 0 ? (card) + n_cards + 1 : (card))
#define COL(card) ((card) < 0 ? (card) + n_cards : (card))

static void *copy_table(PyObject *obj, Py_ssize_t itemsize, Py_ssize_t length) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (view.itemsize != itemsize || view.len != itemsize * length) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "a card table has the wrong type or length");
        return NULL;
    }
    void *out = PyMem_RawMalloc(view.len);
    if (out == NULL) {
        PyBuffer_Release(&view);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, view.buf, view.len);
    PyBuffer_Release(&view);
    return out;
}

static void free_tables(void) {
    void **tables[] = {(void **)&COST, (void **)&POWER, (void **)&TOUGHNESS, (void **)&MANA, (void **)&DRAWS,
                       (void **)&KIND, (void **)&ATTACKER_KEY, (void **)&BLOCKER_KEY, (void **)&THREAT_SCORE};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        PyMem_RawFree(*tables[i]);
        *tables[i] = NULL;
    }
}

static PyObject *init(PyObject *self, PyObject *args) {
    PyObject *cost, *power, *toughness, *mana, *draws, *kind, *attacker_key, *blocker_key, *threat_score, *ranges;
    ready = 0; /* until every table and constant is in place */
    free_tables();
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOO(iiiiiiii)(iiiiii)(iiiiiiii)(dd)", &n_cards, &cost, &power, &toughness,
                          &mana, &draws, &kind, &attacker_key, &blocker_key, &threat_score, &ranges, &slots,
                          &deck_size, &commander_lethal, &tax_step, &hold_min_mana, &slot_shift, &main_1, &main_2,
                          &LAND, &CREATURE, &REMOVAL, &DRAW, &RAMP, &COMMANDER, &A_CREATURE, &A_REMOVAL, &A_DRAW,
                          &A_RAMP, &A_COMMANDER, &A_ATTACK, &A_HOLD, &A_PASS, &damage_reward, &elimination_reward))
        return NULL;
    int actions[8] = {A_CREATURE, A_REMOVAL, A_DRAW, A_RAMP, A_COMMANDER, A_ATTACK, A_HOLD, A_PASS}, seen = 0;
    int kinds[N_KINDS] = {LAND, CREATURE, REMOVAL, DRAW, RAMP, COMMANDER};
    for (int i = 0; i < 8; i++) seen |= actions[i] >= 0 && actions[i] < 8 ? 1 << actions[i] : 1 << 8;
    for (int k = 0; k < N_KINDS; k++) seen |= kinds[k] == k ? 0 : 1 << 9;
    if (seen != 0xff) {
        PyErr_SetString(PyExc_ValueError, "the action codes must be 0..7 and the card kinds 0..5, each once");
        return NULL;
    }
    if (slots < 1 || slots > MAX_SLOTS || n_cards < 1 || n_cards > 32767 || deck_size < 1 || slot_shift < 0 ||
        slot_shift > 24 || (main_1 != 0 && main_1 != 1) || main_2 != 1 - main_1) {
        PyErr_SetString(PyExc_ValueError, "the rules' sizes do not fit the native rules");
        return NULL;
    }
    Py_ssize_t n = n_cards + 1;
    if (!(COST = copy_table(cost, 2, n)) || !(POWER = copy_table(power, 2, n)) ||
        !(TOUGHNESS = copy_table(toughness, 2, n)) || !(MANA = copy_table(mana, 2, n)) ||
        !(DRAWS = copy_table(draws, 2, n)) || !(KIND = copy_table(kind, 1, n)) ||
        !(ATTACKER_KEY = copy_table(attacker_key, 4, n)) || !(BLOCKER_KEY = copy_table(blocker_key, 4, n)) ||
        !(THREAT_SCORE = copy_table(threat_score, 4, n))) {
        free_tables();
        return NULL;
    }
    if (!PyTuple_Check(ranges) || PyTuple_GET_SIZE(ranges) != N_KINDS) {
        PyErr_SetString(PyExc_ValueError, "kind ranges: one (lo, hi) per card kind");
        return NULL;
    }
    for (int k = 0; k < N_KINDS; k++) {
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(ranges, k), "nn", &kind_lo[k], &kind_hi[k])) return NULL;
        if (kind_lo[k] < 0 || kind_hi[k] > n_cards || kind_lo[k] > kind_hi[k]) {
            PyErr_SetString(PyExc_ValueError, "a kind's card columns lie outside the card table");
            return NULL;
        }
    }
    ready = 1;
    Py_RETURN_NONE;
}

/* ----------------------------------------------------------------------------------------------- state */

enum {
    F_LIFE, F_CMD_DAMAGE, F_SOURCES, F_POOL, F_HOLDING, F_PERMANENTS, F_HAND, F_GRAVEYARD, F_LIBRARY, F_DRAWN,
    F_CREATURES, F_SICK, F_TAPPED, F_COMMANDER, F_IN_COMMAND_ZONE, F_COMMANDER_CASTS, F_ARCHETYPE, F_ELIMINATED,
    F_PLACEMENT, F_SEAT, F_PHASE, F_TURN, F_LAND_PLAYED, F_ALIVE, F_DONE, F_TRUNCATED, F_WINNER, N_FIELDS
};
/* Per field: item size, struct format (h int16, b int8, ? bool) and shape, in units of B (games), N (seats),
   C (cards), K (slots), D (deck). */
static const struct { int itemsize; char format; const char *dims; } FIELDS[N_FIELDS] = {
    {2, 'h', "BN"}, {2, 'h', "BNN"}, {2, 'h', "BN"}, {2, 'h', "BN"}, {1, '?', "BN"}, {1, 'b', "BNC"},
    {1, 'b', "BNC"}, {1, 'b', "BNC"}, {2, 'h', "BND"}, {2, 'h', "BN"}, {2, 'h', "BNK"}, {1, '?', "BNK"},
    {1, '?', "BNK"}, {2, 'h', "BN"}, {1, '?', "BN"}, {2, 'h', "BN"}, {1, 'b', "BN"}, {1, '?', "BN"},
    {1, 'b', "BN"}, {1, 'b', "B"}, {1, 'b', "B"}, {2, 'h', "B"}, {1, '?', "B"}, {1, 'b', "B"}, {1, '?', "B"},
    {1, '?', "B"}, {1, 'b', "B"},
};

/* Whether a buffer's struct format is one of ``accept`` (numpy's native formats: one character, maybe after a
   byte-order mark for native order). */
static int format_is(const Py_buffer *view, const char *accept) {
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || (*f == '<' && f[1])) f++;
    return f[0] && !f[1] && strchr(accept, f[0]) != NULL;
}

typedef struct {
    Py_buffer views[N_FIELDS];
    int held;
    Py_ssize_t B, N;
    int max_turn;
    int fault; /* set by a loop that met a value no game can hold (see the callers) */
    int16_t *life, *cmd_damage, *sources, *pool, *library, *drawn, *creatures, *commander, *commander_casts, *turn;
    int8_t *permanents, *hand, *graveyard, *placement, *seat, *phase, *alive, *winner;
    uint8_t *holding, *sick, *tapped, *in_command_zone, *eliminated, *land_played, *done, *truncated;
} State;

static void release(State *st) {
    for (int i = 0; i < st->held; i++) PyBuffer_Release(&st->views[i]);
    st->held = 0;
}

/* The state's buffers, checked: writable only where the call changes the state. */
static int bind(State *st, PyObject *arrays, int max_turn, int writable) {
    st->held = 0;
    st->fault = 0;
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "the native rules were not initialised");
        return -1;
    }
    if (!PyTuple_Check(arrays) || PyTuple_GET_SIZE(arrays) != N_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "expected the tuple of GameState's arrays");
        return -1;
    }
    for (int i = 0; i < N_FIELDS; i++) {
        int flags = (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(arrays, i), &st->views[i], flags) < 0) {
            release(st);
            return -1;
        }
        st->held++;
    }
    st->B = st->views[F_LIFE].ndim == 2 ? st->views[F_LIFE].shape[0] : -1;
    st->N = st->views[F_LIFE].ndim == 2 ? st->views[F_LIFE].shape[1] : -1;
    for (int i = 0; i < N_FIELDS; i++) {
        Py_buffer *v = &st->views[i];
        const char *dims = FIELDS[i].dims;
        const char format[2] = {FIELDS[i].format, 0};
        int ok = v->itemsize == FIELDS[i].itemsize && format_is(v, format) && v->ndim == (int)strlen(dims);
        for (int d = 0; ok && dims[d]; d++) {
            Py_ssize_t want = dims[d] == 'B' ? st->B : dims[d] == 'N' ? st->N : dims[d] == 'C' ? n_cards
                            : dims[d] == 'K' ? slots : deck_size;
            ok = v->shape[d] == want;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "GameState field %d has the wrong type or shape", i);
            release(st);
            return -1;
        }
    }
    if (st->N < 2 || st->N > MAX_SEATS_C) {
        PyErr_SetString(PyExc_ValueError, "the native rules seat 2 to 16");
        release(st);
        return -1;
    }
#define BUF(f) (st->views[f].buf)
    st->life = BUF(F_LIFE); st->cmd_damage = BUF(F_CMD_DAMAGE); st->sources = BUF(F_SOURCES); st->pool = BUF(F_POOL);
    st->holding = BUF(F_HOLDING); st->permanents = BUF(F_PERMANENTS); st->hand = BUF(F_HAND);
    st->graveyard = BUF(F_GRAVEYARD); st->library = BUF(F_LIBRARY); st->drawn = BUF(F_DRAWN);
    st->creatures = BUF(F_CREATURES); st->sick = BUF(F_SICK); st->tapped = BUF(F_TAPPED);
    st->commander = BUF(F_COMMANDER); st->in_command_zone = BUF(F_IN_COMMAND_ZONE);
    st->commander_casts = BUF(F_COMMANDER_CASTS); st->eliminated = BUF(F_ELIMINATED);
    st->placement = BUF(F_PLACEMENT); st->seat = BUF(F_SEAT); st->phase = BUF(F_PHASE); st->turn = BUF(F_TURN);
    st->land_played = BUF(F_LAND_PLAYED); st->alive = BUF(F_ALIVE); st->done = BUF(F_DONE);
    st->truncated = BUF(F_TRUNCATED); st->winner = BUF(F_WINNER);
#undef BUF
    st->max_turn = max_turn;
    return 0;
}

/* one seat's row of a [B,N,X] array */
#define SEAT_ROW(st, arr, b, s, width) ((st)->arr + ((b) * (st)->N + (s)) * (width))
#define AT(st, arr, b, s) ((st)->arr[(b) * (st)->N + (s)])
#define INTP "lqn" /* numpy intp: long, long long or ssize_t */

/* The games of a call: in the state, each once (a game is changed in place, one decision at a time), each with an
   acting seat of the pod, commanders and creatures that are cards, and a library position within the deck:
   what the loops index by without looking again. */
static int check_games(State *st, const Py_ssize_t *g, Py_ssize_t m) {
    uint8_t *seen = PyMem_Calloc(st->B > 0 ? st->B : 1, 1);
    if (seen == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    const char *why = NULL;
    Py_ssize_t i = 0;
    for (; i < m && why == NULL; i++) {
        Py_ssize_t b = g[i];
        if (b < 0 || b >= st->B) {
            PyErr_Format(PyExc_IndexError, "game slot %zd outside the state's %zd", b, st->B);
            PyMem_Free(seen);
            return -1;
        }
        if (seen[b]++) why = "a game slot is given twice";
        else if (st->seat[b] < 0 || st->seat[b] >= st->N) why = "an acting seat outside the pod";
        for (Py_ssize_t n = 0; n < st->N && why == NULL; n++) {
            int16_t commander = AT(st, commander, b, n), drawn = AT(st, drawn, b, n);
            if (commander < 0 || commander >= n_cards) why = "a commander that is no card";
            else if (drawn < 0 || drawn > deck_size) why = "a library position outside the deck";
            const int16_t *row = SEAT_ROW(st, creatures, b, n, slots);
            for (int k = 0; k < slots && why == NULL; k++)
                if (row[k] < -1 || row[k] >= n_cards) why = "a creature that is no card";
        }
    }
    PyMem_Free(seen);
    if (why != NULL) {
        PyErr_Format(PyExc_IndexError, "%s (game slot %zd)", why, g[i - 1]);
        return -1;
    }
    return 0;
}


/* A buffer of ``count`` items of ``itemsize`` bytes in one of the struct ``formats``, or -1 with an error set. */
static int vector(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *formats, Py_ssize_t count,
                  int writable, const char *what) {
    int flags = (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != itemsize || !format_is(view, formats) || view->len != itemsize * count) {
        PyErr_Format(PyExc_ValueError, "%s has the wrong type or length", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* One buffer a call takes: ``obj`` (NULL: none, its view stays unheld) of ``count`` items of ``itemsize`` bytes
   in one of the struct ``formats``. */
typedef struct {
    PyObject *obj;
    Py_ssize_t itemsize;
    const char *formats;
    Py_ssize_t count;
    int writable;
    const char *what;
} Want;

static void release_views(Py_buffer *views, int n) {
    for (int i = 0; i < n; i++)
        if (views[i].obj != NULL) PyBuffer_Release(&views[i]); /* it clears .obj */
}

/* Every wanted buffer, or none (those taken released) and -1 with an error set. */
static int acquire(const Want *want, int n, Py_buffer *views) {
    for (int i = 0; i < n; i++) views[i].obj = NULL;
    for (int i = 0; i < n; i++) {
        if (want[i].obj == NULL) continue;
        if (vector(want[i].obj, &views[i], want[i].itemsize, want[i].formats, want[i].count, want[i].writable,
                   want[i].what) < 0) {
            views[i].obj = NULL;
            release_views(views, i);
            return -1;
        }
    }
    return 0;
}

/* ----------------------------------------------------------------------------------------------- queries */

/* rules.best_in_hand: the most expensive (or cheapest) affordable card of ``kind``, first id on ties; -1 if none */
static int best_in_hand(State *st, Py_ssize_t b, Py_ssize_t s, int kind, int cheapest) {
    const int8_t *hand = SEAT_ROW(st, hand, b, s, n_cards);
    int pool = AT(st, pool, b, s), best = -1, best_score = 0;
    for (Py_ssize_t c = kind_lo[kind]; c < kind_hi[kind]; c++) {
        if (hand[c] > 0 && COST[c] <= pool) {
            int score = (cheapest ? -COST[c] : COST[c]) + 1000;
            if (score > best_score) best_score = score, best = (int)c;
        }
    }
    return best;
}

static int16_t commander_cost(State *st, Py_ssize_t b, Py_ssize_t s) {
    return (int16_t)(COST[TAB(AT(st, commander, b, s))] + (int16_t)(tax_step * AT(st, commander_casts, b, s)));
}

static int ready_attacker(State *st, Py_ssize_t b, Py_ssize_t s, int k) {
    Py_ssize_t i = (b * st->N + s) * slots + k;
    return st->creatures[i] >= 0 && !st->sick[i] && !st->tapped[i];
}

static int any_of_kind_in_hand(const int8_t *hand, int kind) {
    for (Py_ssize_t c = kind_lo[kind]; c < kind_hi[kind]; c++)
        if (hand[c] > 0) return 1;
    return 0;
}

static int any_affordable(const int8_t *hand, int pool, int kind) {
    for (Py_ssize_t c = kind_lo[kind]; c < kind_hi[kind]; c++)
        if (hand[c] > 0 && COST[c] <= pool) return 1;
    return 0;
}

static Py_ssize_t distance(State *st, Py_ssize_t n, Py_ssize_t s) { return ((n - s) % st->N + st->N) % st->N; }

static void legal_row(State *st, Py_ssize_t b, uint8_t *mask) {
    Py_ssize_t s = st->seat[b], N = st->N; /* a seat of the pod: check_games */
    const int8_t *hand = SEAT_ROW(st, hand, b, s, n_cards);
    int pool = AT(st, pool, b, s);
    int opponent_creature = 0, own = 0;
    for (Py_ssize_t n = 0; n < N; n++) {
        const int16_t *row = SEAT_ROW(st, creatures, b, n, slots);
        int count = 0;
        for (int k = 0; k < slots; k++) count += row[k] >= 0;
        if (n == s) own = count;
        else if (count > 0) opponent_creature = 1;
    }
    int free_slot = own < slots, attack = 0;
    for (int k = 0; k < slots && !attack; k++) attack = ready_attacker(st, b, s, k);
    mask[A_CREATURE] = any_affordable(hand, pool, CREATURE) && free_slot;
    mask[A_REMOVAL] = any_affordable(hand, pool, REMOVAL) && opponent_creature;
    mask[A_DRAW] = any_affordable(hand, pool, DRAW);
    mask[A_RAMP] = (!st->land_played[b] && any_of_kind_in_hand(hand, LAND)) || any_affordable(hand, pool, RAMP);
    mask[A_COMMANDER] = AT(st, in_command_zone, b, s) && commander_cost(st, b, s) <= pool && free_slot;
    mask[A_ATTACK] = st->phase[b] == main_1 && attack;
    mask[A_HOLD] = pool >= hold_min_mana;
    mask[A_PASS] = 1;
}

/* ----------------------------------------------------------------------------------------------- changes */

static void draw_cards(State *st, Py_ssize_t b, Py_ssize_t s, int count) {
    for (int i = 0; i < count; i++) {
        int16_t *drawn = &AT(st, drawn, b, s);
        if (*drawn >= deck_size) break;
        int card = SEAT_ROW(st, library, b, s, deck_size)[*drawn];
        if (card < 0 || card >= n_cards) { /* a library holds cards */
            st->fault = 1;
            return;
        }
        SEAT_ROW(st, hand, b, s, n_cards)[card] += 1;
        *drawn += 1;
    }
}

static void put_creature(State *st, Py_ssize_t b, Py_ssize_t s, int card) {
    int16_t *row = SEAT_ROW(st, creatures, b, s, slots);
    int slot = 0;
    for (int k = 0; k < slots; k++)
        if (row[k] < 0) { slot = k; break; }
    row[slot] = (int16_t)card;
    SEAT_ROW(st, sick, b, s, slots)[slot] = 1;
    SEAT_ROW(st, tapped, b, s, slots)[slot] = 0;
}

/* rules._destroy: the ``dead`` slots of seat s to the graveyard (commanders to the command zone), emptied */
static void destroy(State *st, Py_ssize_t b, Py_ssize_t s, const uint8_t *dead) {
    if (s < 0) s += st->N;
    int16_t *row = SEAT_ROW(st, creatures, b, s, slots);
    for (int k = 0; k < slots; k++) {
        if (!dead[k]) continue;
        int card = row[k];
        if (KIND[TAB(card)] == COMMANDER) AT(st, in_command_zone, b, s) = 1;
        else SEAT_ROW(st, graveyard, b, s, n_cards)[COL(card)] += 1;
        row[k] = -1;
    }
}

static void cast(State *st, Py_ssize_t b, Py_ssize_t s, int card) {
    SEAT_ROW(st, hand, b, s, n_cards)[COL(card)] -= 1;
    AT(st, pool, b, s) -= COST[TAB(card)];
}

static void eliminate(State *st, Py_ssize_t b, Py_ssize_t s) {
    AT(st, placement, b, s) = st->alive[b];
    st->alive[b] -= 1;
    AT(st, eliminated, b, s) = 1;
    int16_t *row = SEAT_ROW(st, creatures, b, s, slots);
    for (int k = 0; k < slots; k++) row[k] = -1;
    memset(SEAT_ROW(st, permanents, b, s, n_cards), 0, n_cards);
    AT(st, sources, b, s) = 0;
    AT(st, pool, b, s) = 0;
    AT(st, holding, b, s) = 0;
    if (st->alive[b] == 1) {
        Py_ssize_t winner = 0;
        for (Py_ssize_t n = 0; n < st->N; n++)
            if (!AT(st, eliminated, b, n)) { winner = n; break; }
        st->done[b] = 1;
        st->winner[b] = (int8_t)winner;
        AT(st, placement, b, winner) = 1;
    }
}

typedef struct {
    int32_t damage, commander_damage, power_lost, power_killed;
    int eliminates;
    uint8_t a_dead[MAX_SLOTS], b_dead[MAX_SLOTS]; /* by slot */
} Combat;

/* rules._line: the ranked keys of a seat's creatures, ``skip`` slots emptied */
static void line(const int32_t *keys, const int16_t *cards, const uint8_t *skip, int32_t *out) {
    for (int k = 0; k < slots; k++) {
        int card = skip[k] ? -1 : cards[k];
        out[k] = keys[TAB(card)] + ((int32_t)k << slot_shift);
    }
    for (int i = 1; i < slots; i++) { /* the keys are distinct: any sort gives np.sort's order */
        int32_t key = out[i];
        int j = i - 1;
        for (; j >= 0 && out[j] > key; j--) out[j + 1] = out[j];
        out[j + 1] = key;
    }
}

/* rules.resolve_combat + rules._block: ``attacking`` slots of seat a against seat d, nothing changed */
static void resolve_combat(State *st, Py_ssize_t b, Py_ssize_t a, Py_ssize_t d, const uint8_t *attacking, Combat *out) {
    int32_t a_line[MAX_SLOTS], b_line[MAX_SLOTS];
    uint8_t not_attacking[MAX_SLOTS];
    for (int k = 0; k < slots; k++) not_attacking[k] = !attacking[k];
    line(ATTACKER_KEY, SEAT_ROW(st, creatures, b, a, slots), not_attacking, a_line);
    line(BLOCKER_KEY, SEAT_ROW(st, creatures, b, d, slots), SEAT_ROW(st, tapped, b, d, slots), b_line);
    const int16_t *cmd = SEAT_ROW(st, cmd_damage, b, d, st->N);
    int32_t others = 0; /* max over seats of the damage taken from each other commander (the attacker's as 0) */
    for (Py_ssize_t n = 0; n < st->N; n++) {
        int32_t v = n == a ? 0 : cmd[n];
        if (n == 0 || v > others) others = v;
    }
    int32_t life = AT(st, life, b, d), taken = cmd[a];
    int32_t a_pow[MAX_SLOTS], a_tough[MAX_SLOTS], b_pow[MAX_SLOTS], b_tough[MAX_SLOTS];
    uint8_t a_cmd[MAX_SLOTS], a_on[MAX_SLOTS], b_on[MAX_SLOTS], pair[MAX_SLOTS], good[MAX_SLOTS];
    int32_t open_dmg = 0, open_cmd = 0;
    for (int k = 0; k < slots; k++) {
        a_pow[k] = a_line[k] & 15, a_tough[k] = (a_line[k] >> 4) & 15;
        a_cmd[k] = (a_line[k] & 1 << 8) != 0, a_on[k] = (a_line[k] & 1 << 9) != 0;
        b_pow[k] = b_line[k] & 15, b_tough[k] = (b_line[k] >> 4) & 15, b_on[k] = (b_line[k] & 1 << 9) != 0;
        pair[k] = a_on[k] && b_on[k];
        good[k] = pair[k] && (b_tough[k] > a_pow[k] || b_pow[k] >= a_tough[k]);
        int open = a_on[k] && !good[k];
        open_dmg += a_pow[k] * open;
        open_cmd += a_pow[k] * (open && a_cmd[k]);
    }
    int lethal = open_dmg >= life || taken + open_cmd >= commander_lethal;
    int32_t damage = 0, commander_damage = taken, power_lost = 0, power_killed = 0;
    memset(out->a_dead, 0, sizeof out->a_dead);
    memset(out->b_dead, 0, sizeof out->b_dead);
    for (int k = 0; k < slots; k++) {
        int block = good[k] || (lethal && pair[k]);
        int unblocked = a_on[k] && !block;
        int a_dies = block && b_pow[k] >= a_tough[k], b_dies = block && a_pow[k] >= b_tough[k];
        damage += a_pow[k] * unblocked;
        commander_damage += a_pow[k] * (unblocked && a_cmd[k]);
        power_lost += a_pow[k] * a_dies;
        power_killed += b_pow[k] * b_dies;
        out->a_dead[(a_line[k] >> slot_shift) & 15] = (uint8_t)a_dies;
        out->b_dead[(b_line[k] >> slot_shift) & 15] = (uint8_t)b_dies;
    }
    out->damage = damage;
    out->commander_damage = commander_damage;
    out->power_lost = power_lost;
    out->power_killed = power_killed;
    int32_t most = commander_damage > others ? commander_damage : others;
    out->eliminates = life - damage <= 0 || most >= commander_lethal;
}

/* rules._react_with_removal: a defender holding mana and removal destroys the strongest attacker */
static void react_with_removal(State *st, Py_ssize_t b, Py_ssize_t d, Py_ssize_t a, uint8_t *attacking) {
    int any = 0;
    for (int k = 0; k < slots; k++) any |= attacking[k];
    if (!AT(st, holding, b, d) || !any) return;
    int card = best_in_hand(st, b, d, REMOVAL, 1);
    if (card < 0) return;
    cast(st, b, d, card);
    SEAT_ROW(st, graveyard, b, d, n_cards)[card] += 1;
    const int16_t *cards = SEAT_ROW(st, creatures, b, a, slots);
    int best = 0, best_score = 0;
    for (int k = 0; k < slots; k++) {
        int score = attacking[k] ? (int16_t)(POWER[TAB(cards[k])] * 64 + TOUGHNESS[TAB(cards[k])]) : -1;
        if (k == 0 || score > best_score) best_score = score, best = k;
    }
    uint8_t dead[MAX_SLOTS] = {0};
    dead[best] = 1;
    destroy(st, b, a, dead);
    attacking[best] = 0;
}

static int32_t attack(State *st, Py_ssize_t b, Py_ssize_t a, Py_ssize_t d, int *out) {
    uint8_t attacking[MAX_SLOTS];
    uint8_t *tapped = SEAT_ROW(st, tapped, b, a, slots);
    for (int k = 0; k < slots; k++) {
        attacking[k] = (uint8_t)ready_attacker(st, b, a, k);
        tapped[k] |= attacking[k];
    }
    react_with_removal(st, b, d, a, attacking);
    Combat combat;
    resolve_combat(st, b, a, d, attacking, &combat);
    AT(st, life, b, d) -= combat.damage;
    SEAT_ROW(st, cmd_damage, b, d, st->N)[a] = (int16_t)combat.commander_damage;
    destroy(st, b, a, combat.a_dead);
    destroy(st, b, d, combat.b_dead);
    if (combat.eliminates) eliminate(st, b, d);
    st->phase[b] = (int8_t)main_2;
    *out = combat.eliminates;
    return combat.damage;
}

static Py_ssize_t weakest_opponent(State *st, Py_ssize_t b, Py_ssize_t s) {
    Py_ssize_t best = 0;
    int32_t best_score = 0;
    for (Py_ssize_t n = 0; n < st->N; n++) {
        Py_ssize_t dist = distance(st, n, s);
        int32_t score = AT(st, eliminated, b, n) || dist == 0 ? (int32_t)1 << 30
                                                               : (int32_t)AT(st, life, b, n) * 16 + (int32_t)dist;
        if (n == 0 || score < best_score) best_score = score, best = n;
    }
    return best;
}

/* rules.strongest_threat: (seat, slot) of the opponents' strongest creature; seat -1 when there is none */
static void strongest_threat(State *st, Py_ssize_t b, Py_ssize_t s, Py_ssize_t *seat, int *slot) {
    int32_t best_score = 0;
    Py_ssize_t best = 0;
    int found = 0;
    for (Py_ssize_t n = 0; n < st->N; n++) {
        const int16_t *row = SEAT_ROW(st, creatures, b, n, slots);
        int32_t later = (int32_t)(st->N - distance(st, n, s));
        for (int k = 0; k < slots; k++) {
            int valid = row[k] >= 0 && n != s;
            int32_t score = valid ? THREAT_SCORE[TAB(row[k])] + later : -1;
            Py_ssize_t flat = n * slots + k;
            if (flat == 0 || score > best_score) best_score = score, best = flat;
            found |= valid;
        }
    }
    *seat = found ? best / slots : -1;
    *slot = (int)(best % slots);
}

static void end_turn(State *st, Py_ssize_t b, int hold) {
    Py_ssize_t N = st->N, s = st->seat[b]; /* a seat of the pod: check_games */
    AT(st, holding, b, s) = (uint8_t)hold;
    if (!hold) AT(st, pool, b, s) = 0;
    Py_ssize_t nxt = (s + 1) % N;
    for (Py_ssize_t j = 0; j < N - 1; j++) {
        Py_ssize_t n = (s + 1 + j) % N;
        if (!AT(st, eliminated, b, n)) { nxt = n; break; }
    }
    st->turn[b] += 1;
    if (st->turn[b] > st->max_turn) {
        st->done[b] = 1;
        st->truncated[b] = 1;
        return;
    }
    st->seat[b] = (int8_t)nxt;
    st->phase[b] = (int8_t)main_1;
    st->land_played[b] = 0;
    memset(SEAT_ROW(st, tapped, b, nxt, slots), 0, slots);
    memset(SEAT_ROW(st, sick, b, nxt, slots), 0, slots);
    AT(st, holding, b, nxt) = 0;
    AT(st, pool, b, nxt) = AT(st, sources, b, nxt);
    draw_cards(st, b, nxt, 1);
}

static int cast_ramp(State *st, Py_ssize_t b, Py_ssize_t s) {
    const int8_t *hand = SEAT_ROW(st, hand, b, s, n_cards);
    int card = (int)kind_lo[LAND], most = 0, any = 0;
    for (Py_ssize_t c = kind_lo[LAND]; c < kind_hi[LAND]; c++) {
        any |= hand[c] > 0;
        if (c == kind_lo[LAND] || hand[c] > most) most = hand[c], card = (int)c;
    }
    int play_land = !st->land_played[b] && any;
    if (!play_land) card = best_in_hand(st, b, s, RAMP, 0);
    SEAT_ROW(st, hand, b, s, n_cards)[COL(card)] -= 1;
    AT(st, pool, b, s) += (int16_t)(MANA[TAB(card)] - (play_land ? 0 : COST[TAB(card)]));
    AT(st, sources, b, s) += MANA[TAB(card)];
    SEAT_ROW(st, permanents, b, s, n_cards)[COL(card)] += 1;
    st->land_played[b] |= (uint8_t)play_land;
    return card;
}

/* One decision of game b (already checked legal); what rules.apply records for it. */
static void apply_one(State *st, Py_ssize_t b, Py_ssize_t action, Py_ssize_t target, float *reward, int16_t *card,
                      int8_t *tgt) {
    Py_ssize_t s = st->seat[b]; /* a seat of the pod: check_games */
    *reward = 0.0f, *card = -1, *tgt = -1;
    if (action == A_CREATURE) {
        int c = best_in_hand(st, b, s, CREATURE, 0);
        cast(st, b, s, c);
        put_creature(st, b, s, c);
        *card = (int16_t)c;
    } else if (action == A_DRAW) {
        int c = best_in_hand(st, b, s, DRAW, 0);
        cast(st, b, s, c);
        SEAT_ROW(st, graveyard, b, s, n_cards)[COL(c)] += 1;
        draw_cards(st, b, s, DRAWS[TAB(c)]);
        *card = (int16_t)c;
    } else if (action == A_RAMP) {
        *card = (int16_t)cast_ramp(st, b, s);
    } else if (action == A_COMMANDER) {
        AT(st, pool, b, s) -= commander_cost(st, b, s);
        AT(st, commander_casts, b, s) += 1;
        AT(st, in_command_zone, b, s) = 0;
        int c = AT(st, commander, b, s);
        put_creature(st, b, s, c);
        *card = (int16_t)c;
    } else if (action == A_REMOVAL) {
        int c = best_in_hand(st, b, s, REMOVAL, 1);
        cast(st, b, s, c);
        SEAT_ROW(st, graveyard, b, s, n_cards)[COL(c)] += 1;
        Py_ssize_t seat;
        int slot;
        strongest_threat(st, b, s, &seat, &slot);
        uint8_t dead[MAX_SLOTS] = {0};
        dead[slot] = 1;
        destroy(st, b, seat, dead);
        *card = (int16_t)c;
        *tgt = (int8_t)seat;
    } else if (action == A_ATTACK) {
        Py_ssize_t rule = weakest_opponent(st, b, s);
        if (target >= 0 && target < st->N && target != s && !AT(st, eliminated, b, target)) rule = target;
        int out;
        int32_t damage = attack(st, b, s, rule, &out);
        *tgt = (int8_t)rule;
        *reward = (float)(damage_reward * (double)damage + elimination_reward * (double)out);
    } else if (action == A_HOLD || action == A_PASS) {
        end_turn(st, b, action == A_HOLD);
    }
}

/* ----------------------------------------------------------------------------------------------- the heuristic */

/* players.HeuristicPlayer.act with target="value", one decision: what numpy computes for a batch, game by game.
   Per decision (the vectorised env asks several parameter sets at once): ramp_until, removal_min_power,
   draw_below, hold_when_behind, commander_first; for all: attack_min_value and the action of each of the eight
   conditions, in priority order. */
typedef struct {
    int32_t ramp_until, removal_min_power, draw_below, hold_when_behind, commander_first;
    double attack_min_value;
    int choices[8];
} Heuristic;

static const double KILL_VALUE = 1000.0, TRADE_WEIGHT = 1.0;

/* players.attack_target: the live opponent worth attacking most and that worth (first seat on ties) */
static Py_ssize_t attack_target(State *st, Py_ssize_t b, Py_ssize_t s, double *worth) {
    uint8_t ready_slots[MAX_SLOTS];
    for (int k = 0; k < slots; k++) ready_slots[k] = (uint8_t)ready_attacker(st, b, s, k);
    Py_ssize_t best = 0;
    double best_value = 0.0;
    for (Py_ssize_t n = 0; n < st->N; n++) {
        double value = -HUGE_VAL;
        if (n != s && !AT(st, eliminated, b, n)) {
            Combat combat;
            resolve_combat(st, b, s, n, ready_slots, &combat);
            value = KILL_VALUE * combat.eliminates;
            value += combat.damage;
            value += TRADE_WEIGHT * ((double)combat.power_killed - combat.power_lost);
            value -= 1e-3 * (double)distance(st, n, s);
        }
        if (n == 0 || value > best_value) best_value = value, best = n;
    }
    *worth = best_value;
    return best;
}

static void heuristic_one(State *st, const Heuristic *h, Py_ssize_t b, Py_ssize_t s, const uint8_t *mask,
                          Py_ssize_t *action, Py_ssize_t *target) {
    Py_ssize_t N = st->N;
    int16_t power[MAX_SEATS_C];
    int16_t threat = 0, mine = 0, others_max = 0;
    for (Py_ssize_t n = 0; n < N; n++) {
        const int16_t *row = SEAT_ROW(st, creatures, b, n, slots);
        int16_t sum = 0, strongest = 0;
        for (int k = 0; k < slots; k++) {
            int16_t p = POWER[TAB(row[k])];
            sum += p;
            if (k == 0 || p > strongest) strongest = p;
        }
        power[n] = sum;
        int16_t seat_threat = n == s ? 0 : strongest, other = n == s ? -1 : sum;
        if (n == 0 || seat_threat > threat) threat = seat_threat;
        if (n == 0 || other > others_max) others_max = other;
    }
    mine = power[s];
    int attack_ok = 0;
    *target = -1;
    if (mask[A_ATTACK]) {
        double worth;
        *target = attack_target(st, b, s, &worth);
        attack_ok = worth >= h->attack_min_value;
    }
    const int8_t *hand = SEAT_ROW(st, hand, b, s, n_cards);
    int land_drop = !st->land_played[b] && any_of_kind_in_hand(hand, LAND);
    int hold = mask[A_HOLD] && h->hold_when_behind && others_max > mine;
    if (hold) hold = best_in_hand(st, b, s, REMOVAL, 1) >= 0;
    int16_t in_hand = 0;
    for (Py_ssize_t c = 0; c < n_cards; c++) in_hand += hand[c];
    const int conditions[8] = {
        mask[A_RAMP] && (land_drop || AT(st, sources, b, s) < h->ramp_until),
        mask[A_REMOVAL] && threat >= h->removal_min_power,
        mask[A_COMMANDER] && h->commander_first,
        mask[A_CREATURE],
        mask[A_COMMANDER],
        mask[A_DRAW] && in_hand <= h->draw_below,
        mask[A_ATTACK] && attack_ok,
        hold,
    };
    *action = A_PASS;
    for (int i = 0; i < 8; i++)
        if (conditions[i]) { *action = h->choices[i]; break; }
}

static PyObject *heuristic_act(PyObject *self, PyObject *args) {
    enum { N_VIEWS = 10 };
    PyObject *arrays, *objs[N_VIEWS];
    int max_turn;
    Heuristic h;
    if (!PyArg_ParseTuple(args, "OiOOO(OOOOOd)(iiiiiiii)OO", &arrays, &max_turn, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &h.attack_min_value, &h.choices[0],
                          &h.choices[1], &h.choices[2], &h.choices[3], &h.choices[4], &h.choices[5], &h.choices[6],
                          &h.choices[7], &objs[8], &objs[9]))
        return NULL;
    State st;
    if (bind(&st, arrays, max_turn, 0) < 0) return NULL;
    Py_ssize_t m = PyObject_Length(objs[0]);
    if (m < 0) {
        release(&st);
        return NULL;
    }
    /* a per-row parameter is a Python int (or bool: the same for every row, no buffer), or one int32 per row
       (numpy's scalars too: a buffer of the wrong format or length is refused, never misread) */
    const char *params[5] = {"ramp_until", "removal_min_power", "draw_below", "hold_when_behind", "commander_first"};
    int32_t scalar[5] = {0};
    Want want[N_VIEWS] = {
        {objs[0], sizeof(Py_ssize_t), INTP, m, 0, "g"},
        {objs[1], sizeof(Py_ssize_t), INTP, m, 0, "the seats"},
        {objs[2], 1, "?", m * 8, 0, "the mask"},
        [8] = {objs[8], sizeof(Py_ssize_t), INTP, m, 1, "the actions"},
        [9] = {objs[9], sizeof(Py_ssize_t), INTP, m, 1, "the targets"},
    };
    for (int j = 0; j < 5; j++) {
        want[3 + j] = (Want){objs[3 + j], 4, "i", m, 0, params[j]};
        if (!PyLong_Check(objs[3 + j])) continue;
        Py_ssize_t value = PyNumber_AsSsize_t(objs[3 + j], PyExc_OverflowError);
        if ((value == -1 && PyErr_Occurred()) || value < INT32_MIN || value > INT32_MAX) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_OverflowError, "%s out of range", params[j]);
            release(&st);
            return NULL;
        }
        scalar[j] = (int32_t)value, want[3 + j].obj = NULL;
    }
    Py_buffer views[N_VIEWS];
    if (acquire(want, N_VIEWS, views) == 0) {
        if (check_games(&st, views[0].buf, m) == 0) {
            const Py_ssize_t *games = views[0].buf, *seats = views[1].buf;
#define PARAM(j) (views[3 + (j)].obj ? ((const int32_t *)views[3 + (j)].buf)[i] : scalar[j])
            for (Py_ssize_t i = 0; i < m; i++) {
                if (seats[i] < 0 || seats[i] >= st.N) {
                    PyErr_Format(PyExc_IndexError, "seat %zd outside the pod", seats[i]);
                    break;
                }
                h.ramp_until = PARAM(0), h.removal_min_power = PARAM(1), h.draw_below = PARAM(2);
                h.hold_when_behind = PARAM(3), h.commander_first = PARAM(4);
                heuristic_one(&st, &h, games[i], seats[i], (const uint8_t *)views[2].buf + 8 * i,
                              (Py_ssize_t *)views[8].buf + i, (Py_ssize_t *)views[9].buf + i);
            }
#undef PARAM
        }
        release_views(views, N_VIEWS);
    }
    release(&st);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ----------------------------------------------------------------------------------------------- observation */

/* observation.seat_features and observation.observe (features.encode of the live state), game by game. The
   encoder's layout and scales come from toolkit.features once (``init_features``): float32 products of the
   same float32 factors, so the vectors are the numpy encoder's bit for bit. */
enum { N_SEAT_FIELDS = 11, N_HAND_KINDS = 5 };
static int features_ready = 0;
static float inv_seat_scale[N_SEAT_FIELDS], hand_factor, turn_factor, pod_factor;
static Py_ssize_t f_hand, f_zone, f_turn, f_pod, f_phase, f_legal, f_known, feature_size, slot_size, max_seats;
static int phase_code[2], hand_kinds[N_HAND_KINDS];

static PyObject *init_features(PyObject *self, PyObject *args) {
    PyObject *inv;
    features_ready = 0; /* until the whole layout is in place and checked */
    if (!PyArg_ParseTuple(args, "O(nnnnnnnnnn)(fff)(ii)(iiiii)", &inv, &f_hand, &f_zone, &f_turn, &f_pod, &f_phase,
                          &f_legal, &f_known, &feature_size, &slot_size, &max_seats, &hand_factor, &turn_factor,
                          &pod_factor, &phase_code[0], &phase_code[1], &hand_kinds[0], &hand_kinds[1],
                          &hand_kinds[2], &hand_kinds[3], &hand_kinds[4]))
        return NULL;
    float *table = copy_table(inv, 4, N_SEAT_FIELDS);
    if (table == NULL) return NULL;
    memcpy(inv_seat_scale, table, sizeof inv_seat_scale);
    PyMem_RawFree(table);
    Py_ssize_t single[] = {f_zone, f_turn, f_pod, f_phase + phase_code[0], f_phase + phase_code[1]};
    int inside = phase_code[0] >= 0 && phase_code[1] >= 0;
    for (size_t i = 0; i < sizeof single / sizeof *single; i++) inside &= single[i] >= 0 && single[i] < feature_size;
    if (!inside || slot_size != 1 + N_SEAT_FIELDS || max_seats < 1 || f_known + 1 != feature_size || f_hand < 0 ||
        f_legal < 0 || f_hand + N_HAND_KINDS > feature_size || max_seats * slot_size > f_hand ||
        f_legal + 8 > feature_size) {
        PyErr_SetString(PyExc_ValueError, "the encoder's layout does not fit the native observation");
        return NULL;
    }
    for (int k = 0; k < N_HAND_KINDS; k++)
        if (hand_kinds[k] < 0 || hand_kinds[k] >= N_KINDS) {
            PyErr_SetString(PyExc_ValueError, "a hand role names no card kind");
            return NULL;
        }
    features_ready = 1;
    Py_RETURN_NONE;
}

/* the record's counts of seat n (SEAT_FIELDS order), int16 as numpy sums them */
static void seat_row(State *st, Py_ssize_t b, Py_ssize_t n, int16_t *out) {
    const int16_t *cmd = SEAT_ROW(st, cmd_damage, b, n, st->N), *row = SEAT_ROW(st, creatures, b, n, slots);
    const int8_t *hand = SEAT_ROW(st, hand, b, n, n_cards), *grave = SEAT_ROW(st, graveyard, b, n, n_cards);
    const int8_t *perms = SEAT_ROW(st, permanents, b, n, n_cards);
    int16_t damage = 0, in_hand = 0, in_grave = 0, permanents = 0, lands = 0, on_board = 0, power = 0;
    for (Py_ssize_t j = 0; j < st->N; j++) damage += cmd[j];
    for (Py_ssize_t c = 0; c < n_cards; c++) in_hand += hand[c], in_grave += grave[c], permanents += perms[c];
    for (Py_ssize_t c = kind_lo[LAND]; c < kind_hi[LAND]; c++) lands += perms[c];
    for (int k = 0; k < slots; k++) on_board += row[k] >= 0, power += POWER[TAB(row[k])];
    out[0] = AT(st, life, b, n);
    out[1] = damage;
    out[2] = AT(st, pool, b, n);
    out[3] = (int16_t)(tax_step * AT(st, commander_casts, b, n));
    out[4] = in_hand;
    out[5] = in_grave;
    out[6] = on_board;
    out[7] = lands;
    out[8] = (int16_t)(permanents + on_board);
    out[9] = power;
    out[10] = AT(st, eliminated, b, n);
}

static void observe_one(State *st, Py_ssize_t b, const uint8_t *mask, float *out) {
    Py_ssize_t N = st->N, s = st->seat[b]; /* a seat of the pod: check_games */
    memset(out, 0, feature_size * sizeof(float));
    int16_t counts[N_SEAT_FIELDS];
    for (Py_ssize_t k = 0; k < N && k < max_seats; k++) { /* slot k: the seat k places after the acting one */
        seat_row(st, b, (s + k) % N, counts);
        float *slot = out + k * slot_size;
        slot[0] = 1.0f;
        for (int f = 0; f < N_SEAT_FIELDS; f++) slot[1 + f] = (float)counts[f] * inv_seat_scale[f];
    }
    const int8_t *hand = SEAT_ROW(st, hand, b, s, n_cards);
    for (int r = 0; r < N_HAND_KINDS; r++) {
        int16_t held = 0;
        for (Py_ssize_t c = kind_lo[hand_kinds[r]]; c < kind_hi[hand_kinds[r]]; c++) held += hand[c];
        out[f_hand + r] = (float)held * hand_factor;
    }
    out[f_zone] = AT(st, in_command_zone, b, s) ? 1.0f : 0.0f;
    out[f_turn] = (float)st->turn[b] * turn_factor;
    out[f_pod] = (float)N * pod_factor;
    out[f_phase + phase_code[st->phase[b] & 1]] = 1.0f; /* phase is MAIN_1 (0) or MAIN_2 (1) */
    for (int a = 0; a < 8; a++) out[f_legal + a] = mask[a] ? 1.0f : 0.0f;
    out[f_known] = 1.0f;
}

static PyObject *observe(PyObject *self, PyObject *args) {
    PyObject *arrays, *g_obj, *mask_obj, *out_obj;
    int max_turn;
    if (!PyArg_ParseTuple(args, "OiOOO", &arrays, &max_turn, &g_obj, &mask_obj, &out_obj)) return NULL;
    if (!features_ready) {
        PyErr_SetString(PyExc_RuntimeError, "the native observation was not initialised");
        return NULL;
    }
    State st;
    if (bind(&st, arrays, max_turn, 0) < 0) return NULL;
    Py_ssize_t m = PyObject_Length(g_obj);
    Py_buffer views[3];
    const Want want[3] = {
        {g_obj, sizeof(Py_ssize_t), INTP, m, 0, "g"},
        {mask_obj, 1, "?", m * 8, 0, "the mask"},
        {out_obj, 4, "f", m * feature_size, 1, "the observations"},
    };
    if (m >= 0 && acquire(want, 3, views) == 0) {
        const Py_ssize_t *games = views[0].buf;
        if (check_games(&st, games, m) == 0)
            for (Py_ssize_t i = 0; i < m; i++)
                observe_one(&st, games[i], (uint8_t *)views[1].buf + 8 * i, (float *)views[2].buf + feature_size * i);
        release_views(views, 3);
    }
    release(&st);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *seat_features(PyObject *self, PyObject *args) {
    PyObject *arrays, *g_obj, *out_obj;
    int max_turn;
    if (!PyArg_ParseTuple(args, "OiOO", &arrays, &max_turn, &g_obj, &out_obj)) return NULL;
    State st;
    if (bind(&st, arrays, max_turn, 0) < 0) return NULL;
    Py_ssize_t m = PyObject_Length(g_obj);
    Py_buffer views[2];
    const Want want[2] = {
        {g_obj, sizeof(Py_ssize_t), INTP, m, 0, "g"},
        {out_obj, 2, "h", m * st.N * N_SEAT_FIELDS, 1, "the seat features"},
    };
    if (m >= 0 && acquire(want, 2, views) == 0) {
        const Py_ssize_t *games = views[0].buf;
        int16_t *out = views[1].buf;
        if (check_games(&st, games, m) == 0)
            for (Py_ssize_t i = 0; i < m; i++)
                for (Py_ssize_t n = 0; n < st.N; n++) seat_row(&st, games[i], n, out + (i * st.N + n) * N_SEAT_FIELDS);
        release_views(views, 2);
    }
    release(&st);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ----------------------------------------------------------------------------------------------- module */

static PyObject *legal_mask(PyObject *self, PyObject *args) {
    PyObject *arrays, *g_obj, *out_obj;
    int max_turn;
    if (!PyArg_ParseTuple(args, "OiOO", &arrays, &max_turn, &g_obj, &out_obj)) return NULL;
    State st;
    if (bind(&st, arrays, max_turn, 0) < 0) return NULL;
    Py_ssize_t m = PyObject_Length(g_obj);
    Py_buffer views[2];
    const Want want[2] = {
        {g_obj, sizeof(Py_ssize_t), INTP, m, 0, "g"},
        {out_obj, 1, "?", m * 8, 1, "the mask"},
    };
    if (m >= 0 && acquire(want, 2, views) == 0) {
        const Py_ssize_t *games = views[0].buf;
        if (check_games(&st, games, m) == 0)
            for (Py_ssize_t i = 0; i < m; i++) legal_row(&st, games[i], (uint8_t *)views[1].buf + 8 * i);
        release_views(views, 2);
    }
    release(&st);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *apply(PyObject *self, PyObject *args) {
    PyObject *arrays, *g_obj, *action_obj, *target_obj, *reward_obj, *card_obj, *tgt_obj;
    int max_turn;
    if (!PyArg_ParseTuple(args, "OiOOOOOO", &arrays, &max_turn, &g_obj, &action_obj, &target_obj, &reward_obj,
                          &card_obj, &tgt_obj))
        return NULL;
    State st;
    if (bind(&st, arrays, max_turn, 1) < 0) return NULL;
    Py_ssize_t m = PyObject_Length(g_obj);
    Py_buffer views[6];
    const Want want[6] = {
        {g_obj, sizeof(Py_ssize_t), INTP, m, 0, "g"},
        {action_obj, sizeof(Py_ssize_t), INTP, m, 0, "the actions"},
        {target_obj == Py_None ? NULL : target_obj, sizeof(Py_ssize_t), INTP, m, 0, "the targets"}, /* none: the rule */
        {reward_obj, 4, "f", m, 1, "the rewards"},
        {card_obj, 2, "h", m, 1, "the cards"},
        {tgt_obj, 1, "b", m, 1, "the target seats"},
    };
    if (m >= 0 && acquire(want, 6, views) == 0) {
        const Py_ssize_t *games = views[0].buf, *actions = views[1].buf;
        const Py_ssize_t *targets = views[2].obj != NULL ? views[2].buf : NULL;
        if (check_games(&st, games, m) == 0) {
            for (Py_ssize_t i = 0; i < m; i++)
                apply_one(&st, games[i], actions[i], targets ? targets[i] : -1, (float *)views[3].buf + i,
                          (int16_t *)views[4].buf + i, (int8_t *)views[5].buf + i);
            if (st.fault) PyErr_SetString(PyExc_IndexError, "a library holds a value that is no card");
        }
        release_views(views, 6);
    }
    release(&st);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", init, METH_VARARGS, "Take the card tables and the rules' constants (once, from rules.py)."},
    {"legal_mask", legal_mask, METH_VARARGS, "legal_mask(arrays, max_turn, g, out[M,8] bool)"},
    {"heuristic_act", heuristic_act, METH_VARARGS,
     "heuristic_act(arrays, max_turn, g, seats, mask, params, choices, actions out, targets out): target=value"},
    {"init_features", init_features, METH_VARARGS, "Take the encoder's layout and scales (once, from observation)."},
    {"observe", observe, METH_VARARGS, "observe(arrays, max_turn, g, mask[M,8] bool, out[M,F] float32)"},
    {"seat_features", seat_features, METH_VARARGS, "seat_features(arrays, max_turn, g, out[M,N,11] int16)"},
    {"apply", apply, METH_VARARGS,
     "apply(arrays, max_turn, g, action, target|None, reward f32, card i16, tgt i8): the decisions, checked legal"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rules", "The rules' hot loops in C.", -1, methods};

PyMODINIT_FUNC PyInit__rules(void) { return PyModule_Create(&module); }
