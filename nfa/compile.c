/* nfa/compile.c — a rule's pattern to an Nfa (see nfa.h, nfa_internal.h).
 *
 * Owns the construction. It follows the shape of Flink's NFACompiler (read to learn
 * the semantics; this is an independent implementation): the pattern is converted
 * from the last step to the first, each step becoming one or more states with
 * take / ignore / proceed edges in front of the states built so far. The graph is
 * built in a growable Builder and frozen into the flat Nfa at the end.
 * SEMANTICS.md explains every construction rule. */
#include "nfa/nfa.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/fmt.h"
#include "nfa/nfa_internal.h"

/* ---- builder ---------------------------------------------------------------- */

typedef struct BEdge {
    uint8_t action;
    uint32_t target;
    uint32_t cond;
} BEdge;

typedef struct BState {
    uint8_t kind;
    uint32_t step;
    uint32_t orig;        /* Flink's originalStateMap: greedy-free copy of this state, or NFA_NONE */
    bool no_step_window;  /* the step's `within` does not bound it (an optional step's
                             ignore copy, which Flink makes as a state that takes nothing) */
    BEdge *edges;
    size_t n, cap;
} BState;

typedef struct Builder {
    const Rule *rule;
    BState *st;
    size_t n_st, cap_st;
    NfaCond *conds;
    size_t n_conds, cap_conds;
    uint32_t *stop_of_step;   /* stop state per `not_` step, or NFA_NONE */
    uint32_t *nots;           /* scratch for current_nots */
    int cur;                  /* step being converted */
    int following;            /* the step after it, or -1 */
    bool oom;
    char *err;                /* first semantic error (heap) */
} Builder;

static void *grow(void *p, size_t *cap, size_t need, size_t size, bool *oom)
{
    if (need <= *cap)
        return p;
    size_t nc = *cap ? *cap * 2 : 8;
    while (nc < need)
        nc *= 2;
    void *np = realloc(p, nc * size);
    if (!np) {
        *oom = true;
        return NULL;
    }
    *cap = nc;
    return np;
}

static uint32_t cond_new(Builder *b, NfaCondKind kind, uint32_t step, uint32_t x, uint32_t y)
{
    NfaCond *c = grow(b->conds, &b->cap_conds, b->n_conds + 1, sizeof *c, &b->oom);
    if (!c)
        return 0;   /* index 0 is always `true`; the build fails anyway */
    b->conds = c;
    c[b->n_conds] = (NfaCond){.kind = (uint8_t)kind, .step = step, .a = x, .b = y};
    return (uint32_t)b->n_conds++;
}

static uint32_t c_true(void) { return 0; }

static uint32_t c_not(Builder *b, uint32_t x) { return cond_new(b, NFA_C_NOT, NFA_NONE, x, 0); }

static uint32_t c_and(Builder *b, uint32_t x, uint32_t y)
{
    return cond_new(b, NFA_C_AND, NFA_NONE, x, y);
}

/* The step's `where` (Flink's take condition); true when it has none. */
static uint32_t c_where(Builder *b, int step)
{
    if (!b->rule->steps[step].where)
        return c_true();
    return cond_new(b, NFA_C_WHERE, (uint32_t)step, 0, 0);
}

static bool has_until(const Builder *b) { return b->rule->steps[b->cur].quant.until != NULL; }

static uint32_t c_until(Builder *b) { return cond_new(b, NFA_C_UNTIL, (uint32_t)b->cur, 0, 0); }

static uint32_t state_new(Builder *b, NfaStateKind kind, uint32_t step)
{
    BState *s = grow(b->st, &b->cap_st, b->n_st + 1, sizeof *s, &b->oom);
    if (!s)
        return 0;
    b->st = s;
    s[b->n_st] = (BState){.kind = (uint8_t)kind, .step = step, .orig = NFA_NONE};
    return (uint32_t)b->n_st++;
}

static uint32_t cur_state(Builder *b) { return state_new(b, NFA_ST_NORMAL, (uint32_t)b->cur); }

static void edge_add(Builder *b, uint32_t from, NfaAction action, uint32_t to, uint32_t cond)
{
    if (b->oom)
        return;
    BState *s = &b->st[from];
    BEdge *e = grow(s->edges, &s->cap, s->n + 1, sizeof *e, &b->oom);
    if (!e)
        return;
    s->edges = e;
    e[s->n++] = (BEdge){.action = (uint8_t)action, .target = to, .cond = cond};
}

/* ---- step properties ------------------------------------------------------- */

static const Quantifier *quant(const Builder *b, int step) { return &b->rule->steps[step].quant; }

static bool is_unbounded(const Quantifier *q) { return q->max == QUANT_UNBOUNDED; }

/* `times 0..M` is Flink's times(1, M) made optional. */
static bool is_optional(const Builder *b, int step)
{
    const Quantifier *q = quant(b, step);
    return q->optional || (q->looping && q->min == 0);
}

static int min_times(const Quantifier *q) { return q->min < 1 ? 1 : q->min; }

/* Ignore condition of the step's first state, from its contiguity. NFA_NONE: strict. */
static uint32_t c_ignore(Builder *b, int step)
{
    switch (b->rule->steps[step].kind) {
    case STEP_FOLLOWED_BY:
        return c_not(b, c_where(b, step));
    case STEP_FOLLOWED_BY_ANY:
        return c_true();
    default:
        return NFA_NONE;
    }
}

/* Ignore condition inside a loop: relaxed unless consecutive or allow_combinations. */
static uint32_t c_inner_ignore(Builder *b, int step)
{
    const Quantifier *q = quant(b, step);
    if (q->consecutive)
        return NFA_NONE;
    if (q->allow_combinations)
        return c_true();
    return c_not(b, c_where(b, step));
}

/* Flink's extendWithUntilCondition. */
static uint32_t with_until(Builder *b, uint32_t cond, bool is_take)
{
    if (!has_until(b))
        return cond;
    if (cond != NFA_NONE)
        return c_and(b, c_not(b, c_until(b)), cond);
    return is_take ? c_not(b, c_until(b)) : cond;
}

/* ---- negations -------------------------------------------------------------- */

static uint32_t stop_state(Builder *b, int step)
{
    if (b->stop_of_step[step] == NFA_NONE)
        b->stop_of_step[step] = state_new(b, NFA_ST_STOP, (uint32_t)step);
    return b->stop_of_step[step];
}

/* The not_followed_by steps that still forbid events while in the current step:
 * those before it reachable backwards through optional or not_followed_by steps. */
static size_t current_nots(Builder *b)
{
    size_t n = 0;
    for (int j = b->cur - 1; j >= 1; j--) {
        const Step *s = &b->rule->steps[j];
        bool nf = s->kind == STEP_NOT_FOLLOWED_BY;
        if (!nf && !is_optional(b, j))
            break;
        if (nf)
            b->nots[n++] = (uint32_t)j;
    }
    return n;
}

static void add_stop_states(Builder *b, uint32_t state)
{
    size_t n = current_nots(b);
    for (size_t i = 0; i < n; i++) {
        int step = (int)b->nots[i];
        edge_add(b, state, NFA_PROCEED, stop_state(b, step), c_where(b, step));
    }
}

/* Inside a loop (or times) followed by not_followed_by, a forbidden event kills it. */
static void add_stop_to_looping(Builder *b, uint32_t state)
{
    if (b->following < 0 || b->rule->steps[b->following].kind != STEP_NOT_FOLLOWED_BY)
        return;
    edge_add(b, state, NFA_PROCEED, stop_state(b, b->following), c_where(b, b->following));
}

static bool is_not_of_current(Builder *b, uint32_t stop, size_t n_nots)
{
    for (size_t i = 0; i < n_nots; i++)
        if (b->stop_of_step[b->nots[i]] == stop)
            return true;
    return false;
}

/* Taking an event in an optional step ends the not_followed_by steps before it:
 * the take goes to a copy of the sink without their stop edges. */
static uint32_t copy_without_nots(Builder *b, uint32_t sink)
{
    size_t n_nots = current_nots(b);
    if (n_nots == 0 || !is_optional(b, b->cur) || b->oom)
        return sink;
    uint32_t copy = state_new(b, (NfaStateKind)b->st[sink].kind, b->st[sink].step);
    for (size_t i = 0; !b->oom && i < b->st[sink].n; i++) {
        BEdge e = b->st[sink].edges[i];
        if (e.action == NFA_PROCEED) {
            if (b->st[e.target].kind == NFA_ST_STOP) {
                n_nots = current_nots(b);
                if (is_not_of_current(b, e.target, n_nots))
                    continue;
            } else {
                e.target = copy_without_nots(b, e.target);
            }
        } else if (e.target == sink) {
            e.target = copy;
        }
        edge_add(b, copy, (NfaAction)e.action, e.target, e.cond);
    }
    return copy;
}

static uint32_t state_copy(Builder *b, uint32_t s)
{
    uint32_t copy = state_new(b, (NfaStateKind)b->st[s].kind, b->st[s].step);
    for (size_t i = 0; !b->oom && i < b->st[s].n; i++) {
        BEdge e = b->st[s].edges[i];
        edge_add(b, copy, (NfaAction)e.action, e.target == s ? copy : e.target, e.cond);
    }
    return copy;
}

/* Greedy: the state after a loop may act only on events the loop would not take. */
static void greedy_update(Builder *b, uint32_t s, uint32_t loop_take)
{
    for (size_t i = 0; !b->oom && i < b->st[s].n; i++) {
        uint32_t c = c_and(b, b->st[s].edges[i].cond, c_not(b, loop_take));
        b->st[s].edges[i].cond = c;
    }
}

static uint32_t original_of(const Builder *b, uint32_t s)
{
    return b->st[s].orig == NFA_NONE ? s : b->st[s].orig;
}

/* ---- step conversion (Flink's createSingletonState / createLooping / createTimesState) */

static uint32_t singleton(Builder *b, uint32_t sink, uint32_t proceed, uint32_t take,
                          uint32_t ignore, bool optional)
{
    uint32_t s = cur_state(b);
    uint32_t snk = copy_without_nots(b, sink);
    edge_add(b, s, NFA_TAKE, snk, take);
    if (optional) {
        if (quant(b, b->cur)->greedy && has_until(b)) {
            edge_add(b, s, NFA_PROCEED, original_of(b, proceed), c_until(b));
            edge_add(b, s, NFA_PROCEED, proceed, c_not(b, c_until(b)));
        } else {
            edge_add(b, s, NFA_PROCEED, proceed, c_true());
        }
    }
    if (ignore != NFA_NONE) {
        uint32_t is = s;
        if (optional) {
            is = cur_state(b);
            if (!b->oom && !quant(b, b->cur)->looping)
                b->st[is].no_step_window = true;   /* a loop's states keep it (SEMANTICS.md) */
            edge_add(b, is, NFA_TAKE, snk, take);
            edge_add(b, is, NFA_IGNORE, is, ignore);
            add_stop_states(b, is);
        }
        edge_add(b, s, NFA_IGNORE, is, ignore);
    }
    return s;
}

static uint32_t looping(Builder *b, uint32_t sink)
{
    uint32_t ignore = with_until(b, c_inner_ignore(b, b->cur), false);
    uint32_t take = with_until(b, c_where(b, b->cur), true);
    uint32_t loop = cur_state(b);
    if (quant(b, b->cur)->greedy) {
        if (has_until(b)) {
            uint32_t copy = state_copy(b, sink);
            edge_add(b, loop, NFA_PROCEED, copy, c_until(b));
            if (!b->oom)
                b->st[sink].orig = copy;
        }
        edge_add(b, loop, NFA_PROCEED, sink, has_until(b) ? c_not(b, c_until(b)) : c_true());
        greedy_update(b, sink, c_where(b, b->cur));
    } else {
        edge_add(b, loop, NFA_PROCEED, sink, c_true());
    }
    edge_add(b, loop, NFA_TAKE, loop, take);
    add_stop_to_looping(b, loop);
    if (ignore != NFA_NONE) {
        uint32_t is = cur_state(b);
        edge_add(b, is, NFA_TAKE, loop, take);
        edge_add(b, is, NFA_IGNORE, is, ignore);
        edge_add(b, loop, NFA_IGNORE, is, ignore);
        add_stop_to_looping(b, is);
    }
    return loop;
}

static uint32_t times(Builder *b, uint32_t sink, uint32_t proceed, int from, int to)
{
    uint32_t ignore = with_until(b, c_inner_ignore(b, b->cur), false);
    uint32_t take = with_until(b, c_where(b, b->cur), true);
    if (quant(b, b->cur)->greedy && from != to) {
        if (has_until(b)) {
            uint32_t copy = state_copy(b, sink);
            if (!b->oom)
                b->st[sink].orig = copy;
        }
        greedy_update(b, sink, take);
    }
    uint32_t last = sink;
    for (int i = from; i < to; i++) {
        last = singleton(b, last, proceed, take, ignore, true);
        add_stop_to_looping(b, last);
    }
    for (int i = 0; i < from - 1; i++) {
        last = singleton(b, last, NFA_NONE, take, ignore, false);
        add_stop_to_looping(b, last);
    }
    return singleton(b, last, proceed, take, c_ignore(b, b->cur), is_optional(b, b->cur));
}

static uint32_t convert_step(Builder *b, uint32_t sink)
{
    const Quantifier *q = quant(b, b->cur);
    uint32_t first;
    if (q->looping && is_unbounded(q)) {
        uint32_t loop = looping(b, copy_without_nots(b, sink));
        first = times(b, loop, sink, min_times(q), min_times(q));
    } else if (q->looping) {
        first = times(b, sink, sink, min_times(q), q->max);
    } else {
        first = singleton(b, sink, sink, c_where(b, b->cur), c_ignore(b, b->cur),
                          is_optional(b, b->cur));
    }
    add_stop_states(b, first);
    return first;
}

/* Trailing not_followed_by: wait in a pending state until within elapses. */
static uint32_t pending_state(Builder *b)
{
    uint32_t p = state_new(b, NFA_ST_PENDING, (uint32_t)b->cur);
    uint32_t nc = c_where(b, b->cur);
    edge_add(b, p, NFA_PROCEED, stop_state(b, b->cur), nc);
    edge_add(b, p, NFA_IGNORE, p, c_not(b, nc));
    return p;
}

static uint32_t not_next_state(Builder *b, uint32_t sink)
{
    uint32_t s = cur_state(b);
    uint32_t nc = c_where(b, b->cur);
    /* as the last step, ignoring (not proceeding) keeps the final state from firing
     * before the next event has shown that it is not forbidden */
    if (b->st[sink].kind == NFA_ST_FINAL)
        edge_add(b, s, NFA_IGNORE, sink, c_not(b, nc));
    else
        edge_add(b, s, NFA_PROCEED, sink, c_not(b, nc));
    edge_add(b, s, NFA_PROCEED, stop_state(b, b->cur), nc);
    return s;
}

static void set_err(Builder *b, const char *fmt, ...)
{
    if (b->err)
        return;
    va_list ap;
    va_start(ap, fmt);
    b->err = buf_vformat(fmt, ap);
    va_end(ap);
    if (!b->err)
        b->oom = true;
}

/* Patterns Flink rejects and that have no sensible meaning here either. */
static void validate(Builder *b)
{
    const Rule *r = b->rule;
    if (r->n_steps == 0 || r->n_steps > UINT16_MAX) {
        set_err(b, "a pattern needs 1 to %d steps", UINT16_MAX);
        return;
    }
    for (size_t i = 1; i < r->n_steps; i++) {
        const Step *s = &r->steps[i];
        bool neg = s->kind == STEP_NOT_NEXT || s->kind == STEP_NOT_FOLLOWED_BY;
        if (neg && is_optional(b, (int)i - 1))
            set_err(b, "step '%s' (%s) follows the optional step '%s': "
                       "a negation after an optional step is not supported",
                    s->name, s->kind == STEP_NOT_NEXT ? "not_next" : "not_followed_by",
                    r->steps[i - 1].name);
    }
    const Step *last = &r->steps[r->n_steps - 1];
    if (last->kind == STEP_NOT_FOLLOWED_BY && r->within_ms <= 0 && last->within_ms <= 0)
        set_err(b, "'not_followed_by' as the last step needs 'within'");
    if (r->skip.kind == SKIP_TO_FIRST || r->skip.kind == SKIP_TO_LAST) {
        if (r->skip.step_index < 0 || (size_t)r->skip.step_index >= r->n_steps)
            set_err(b, "the skip strategy names an unknown step");
    }
}

static void build_graph(Builder *b, uint32_t *start)
{
    const Rule *r = b->rule;
    int n = (int)r->n_steps;
    uint32_t sink = state_new(b, NFA_ST_FINAL, NFA_NONE);
    for (b->cur = n - 1; b->cur >= 1 && !b->oom; b->cur--) {
        b->following = b->cur + 1 < n ? b->cur + 1 : -1;
        const Step *s = &r->steps[b->cur];
        if (s->kind == STEP_NOT_FOLLOWED_BY) {
            /* in the middle it only adds stop edges to the states around it */
            if (b->st[sink].kind == NFA_ST_FINAL)
                sink = pending_state(b);
        } else if (s->kind == STEP_NOT_NEXT) {
            sink = not_next_state(b, sink);
        } else {
            sink = convert_step(b, sink);
        }
    }
    b->cur = 0;
    b->following = n > 1 ? 1 : -1;
    *start = convert_step(b, sink);
}

/* ---- freezing ---------------------------------------------------------------- */

static void builder_free(Builder *b)
{
    for (size_t i = 0; i < b->n_st; i++)
        free(b->st[i].edges);
    free(b->st);
    free(b->conds);
    free(b->stop_of_step);
    free(b->nots);
    free(b->err);
}

static char *label_for(const Nfa *nfa, const NfaState *s, size_t *seen)
{
    Buf m = BUF_INIT;
    if (s->kind == NFA_ST_FINAL) {
        buf_puts(&m, "$end");
    } else {
        buf_puts(&m, nfa->steps[s->step].name);
        if (s->kind == NFA_ST_STOP)
            buf_puts(&m, "$stop");
        else if (seen[s->step]++ > 0)
            buf_printf(&m, "#%zu", seen[s->step]);
    }
    if (m.failed) {
        buf_free(&m);
        return NULL;
    }
    return buf_steal(&m);
}

/* Longest list of take/ignore edges one decision can collect from state s: its own
 * plus those reached through proceed edges (which only lead forward). */
static size_t collect_bound(const Nfa *nfa, uint32_t s, size_t *memo, unsigned depth)
{
    if (memo[s] != SIZE_MAX)
        return memo[s];
    if (depth > nfa->n_states)
        return SIZE_MAX / 4;   /* a proceed cycle: rejected by the caller */
    const NfaState *st = &nfa->states[s];
    size_t n = 0;
    for (uint32_t i = 0; i < st->n_edges; i++) {
        const NfaEdge *e = &nfa->edges[st->first_edge + i];
        if (e->action != NFA_PROCEED)
            n++;
        else if (nfa->states[e->target].kind != NFA_ST_STOP)
            n += collect_bound(nfa, e->target, memo, depth + 1);
        if (n > SIZE_MAX / 8)
            n = SIZE_MAX / 8;
    }
    memo[s] = n;
    return n;
}

static bool reaches_final(const Nfa *nfa, uint32_t s, unsigned depth)
{
    if (depth > nfa->n_states)
        return false;
    const NfaState *st = &nfa->states[s];
    for (uint32_t i = 0; i < st->n_edges; i++) {
        const NfaEdge *e = &nfa->edges[st->first_edge + i];
        if (e->action != NFA_PROCEED)
            continue;
        if (nfa->states[e->target].kind == NFA_ST_FINAL || reaches_final(nfa, e->target, depth + 1))
            return true;
    }
    return false;
}

/* Fills in what the matcher sizes its scratch by; a pattern whose decisions could
 * collect too many edges (or that proceeds in a cycle) is an error of the rule. */
static void finish_analysis(Builder *b, Nfa *nfa)
{
    size_t *memo = malloc(nfa->n_states * sizeof *memo);
    if (!memo) {
        b->oom = true;
        return;
    }
    for (size_t i = 0; i < nfa->n_states; i++)
        memo[i] = SIZE_MAX;
    nfa->max_collect = 1;
    for (uint32_t i = 0; i < nfa->n_states; i++) {
        size_t n = collect_bound(nfa, i, memo, 0);
        if (n > nfa->max_collect)
            nfa->max_collect = n;
        nfa->states[i].proceeds_to_final = reaches_final(nfa, i, 0);
    }
    free(memo);
    if (nfa->max_collect >= (1u << 20))
        set_err(b, "pattern too complex");
}

/* Copies the builder's graph into nfa; false (with b->oom set) when out of memory. */
static bool freeze(Builder *b, Nfa *nfa, uint32_t start)
{
    size_t n_edges = 0;
    for (size_t i = 0; i < b->n_st; i++)
        n_edges += b->st[i].n;
    nfa->states = calloc(b->n_st, sizeof *nfa->states);
    nfa->edges = calloc(n_edges ? n_edges : 1, sizeof *nfa->edges);
    size_t *seen = calloc(nfa->n_steps, sizeof *seen);
    if (!nfa->states || !nfa->edges || !seen) {
        free(seen);
        b->oom = true;
        return false;
    }
    nfa->n_states = b->n_st;
    nfa->start = start;
    for (size_t i = 0; i < b->n_st; i++) {
        const BState *bs = &b->st[i];
        NfaState *s = &nfa->states[i];
        s->kind = bs->kind;
        s->step = bs->step;
        s->within_ms = bs->step == NFA_NONE || bs->no_step_window
                           ? DURATION_NONE : b->rule->steps[bs->step].within_ms;
        s->first_edge = (uint32_t)nfa->n_edges;
        s->n_edges = (uint32_t)bs->n;
        for (size_t j = 0; j < bs->n; j++)
            nfa->edges[nfa->n_edges++] = (NfaEdge){.action = bs->edges[j].action,
                                                   .source = (uint32_t)i,
                                                   .target = bs->edges[j].target,
                                                   .cond = bs->edges[j].cond};
    }
    /* number states from the start outwards: each step's entry state gets the plain name */
    uint32_t *order = malloc(b->n_st * sizeof *order);
    bool ok = order != NULL;
    if (ok)
        nfa_state_order(nfa, order);
    for (size_t k = 0; ok && k < b->n_st; k++) {
        NfaState *s = &nfa->states[order[k]];
        s->label = label_for(nfa, s, seen);
        ok = s->label != NULL;
    }
    free(order);
    free(seen);
    if (!ok) {
        b->oom = true;
        return false;
    }
    nfa->conds = b->conds;
    nfa->n_conds = b->n_conds;
    b->conds = NULL;
    return true;
}

/* Whether state t is in order[0, tail): seen[t], or without seen (no memory for it)
 * a search of the queue, slower but giving the same order (labels and explain's
 * listing must not change because memory ran out). */
static bool queued(const bool *seen, const uint32_t *order, size_t tail, uint32_t t)
{
    if (seen)
        return seen[t];
    for (size_t i = 0; i < tail; i++)
        if (order[i] == t)
            return true;
    return false;
}

static void enqueue(bool *seen, uint32_t *order, size_t *tail, uint32_t t)
{
    if (seen)
        seen[t] = true;
    order[(*tail)++] = t;
}

void nfa_state_order(const Nfa *nfa, uint32_t *order)
{
    size_t n = nfa->n_states, head = 0, tail = 0;
    bool *seen = calloc(n ? n : 1, sizeof *seen);
    enqueue(seen, order, &tail, nfa->start);
    for (;;) {
        while (head < tail) {
            const NfaState *s = &nfa->states[order[head++]];
            for (uint32_t i = 0; i < s->n_edges; i++) {
                uint32_t t = nfa->edges[s->first_edge + i].target;
                if (!queued(seen, order, tail, t))
                    enqueue(seen, order, &tail, t);
            }
        }
        if (tail == n)
            break;
        for (size_t i = n; i-- > 0;)   /* unreachable states (unused copies) last */
            if (!queued(seen, order, tail, (uint32_t)i)) {
                enqueue(seen, order, &tail, (uint32_t)i);
                break;
            }
    }
    free(seen);
}

/* ---- steps: names and compiled conditions ------------------------------------ */

static bool compile_steps(Nfa *nfa, const Rule *rule, const ExprEnv *env, char **err)
{
    nfa->steps = calloc(rule->n_steps, sizeof *nfa->steps);
    if (!nfa->steps)
        return false;
    nfa->n_steps = rule->n_steps;
    for (size_t i = 0; i < rule->n_steps; i++) {
        const Step *s = &rule->steps[i];
        NfaStep *ns = &nfa->steps[i];
        ns->name = strdup(s->name ? s->name : "?");
        if (!ns->name)
            return false;
        if (s->where) {
            ns->where = expr_compile(s->where, env, err);
            if (!ns->where)
                return false;
            ns->where_iter = expr_is_iterative(ns->where);
            /* NULL only when memory ran out: explain would print "?" and the matcher
             * would share the condition with no other rule */
            if (!(ns->where_text = dsl_fmt_expr(s->where)))
                return false;
        }
        if (s->quant.until) {
            ns->until = expr_compile(s->quant.until, env, err);
            if (!ns->until)
                return false;
            ns->until_iter = expr_is_iterative(ns->until);
            if (!(ns->until_text = dsl_fmt_expr(s->quant.until)))
                return false;
        }
        if ((ns->where && !expr_bind_aggregates(ns->where, &nfa->aggs, &nfa->n_aggs)) ||
            (ns->until && !expr_bind_aggregates(ns->until, &nfa->aggs, &nfa->n_aggs)))
            return false;
    }
    return true;
}

Nfa *nfa_compile(const Rule *rule, const ExprEnv *env, char **err)
{
    *err = NULL;   /* stays NULL when memory runs out (nfa.h) */
    Nfa *nfa = calloc(1, sizeof *nfa);
    if (!nfa)
        return NULL;
    nfa->within_ms = rule->within_ms > 0 ? rule->within_ms : DURATION_NONE;
    nfa->skip = rule->skip.kind;
    nfa->skip_step = rule->skip.step_index;
    nfa->rule_name = strdup(rule->name ? rule->name : "?");
    if (!nfa->rule_name || !compile_steps(nfa, rule, env, err)) {
        nfa_free(nfa);
        return NULL;
    }

    Builder b = {.rule = rule};
    b.stop_of_step = malloc(rule->n_steps * sizeof *b.stop_of_step);
    b.nots = malloc(rule->n_steps * sizeof *b.nots);
    if (!b.stop_of_step || !b.nots)
        b.oom = true;
    for (size_t i = 0; !b.oom && i < rule->n_steps; i++)
        b.stop_of_step[i] = NFA_NONE;
    if (!b.oom)
        validate(&b);
    uint32_t start = 0;
    if (!b.oom && !b.err) {
        cond_new(&b, NFA_C_TRUE, NFA_NONE, 0, 0);   /* index 0: true */
        build_graph(&b, &start);
    }
    if (!b.oom && !b.err && freeze(&b, nfa, start))
        finish_analysis(&b, nfa);
    if (b.oom || b.err) {
        if (!b.oom) {   /* an error of the rule; out of memory says nothing */
            *err = b.err;
            b.err = NULL;
        }
        builder_free(&b);
        nfa_free(nfa);
        return NULL;
    }
    builder_free(&b);
    return nfa;
}

void nfa_free(Nfa *nfa)
{
    if (!nfa)
        return;
    for (size_t i = 0; i < nfa->n_steps; i++) {
        NfaStep *s = &nfa->steps[i];
        free(s->name);
        expr_free(s->where);
        expr_free(s->until);
        free(s->where_text);
        free(s->until_text);
    }
    free(nfa->steps);
    if (nfa->states)
        for (size_t i = 0; i < nfa->n_states; i++)
            free(nfa->states[i].label);
    free(nfa->states);
    free(nfa->edges);
    free(nfa->conds);
    free(nfa->aggs);
    free(nfa->rule_name);
    free(nfa);
}

size_t nfa_step_count(const Nfa *nfa) { return nfa->n_steps; }

const char *nfa_step_name(const Nfa *nfa, size_t step)
{
    return step < nfa->n_steps ? nfa->steps[step].name : NULL;
}

const char *nfa_state_kind_name(NfaStateKind k)
{
    static const char *const names[] = {"normal", "final", "stop", "pending"};
    return (unsigned)k < 4 ? names[k] : "?";
}

const char *nfa_action_name(NfaAction a)
{
    static const char *const names[] = {"take", "ignore", "proceed"};
    return (unsigned)a < 3 ? names[a] : "?";
}
