/* nfa/match.c — the per-key matcher: partial matches, timeouts, skip strategies.
 *
 * Owns NfaKey: the live partial matches of one key (each a state plus a reference
 * to the newest MatchNode of its chain; branches share prefixes) and the completed
 * matches held back by a skip strategy. Owns NfaWork: the per-event scratch every
 * key of a thread shares, so the common path does not allocate and a key holds only
 * what persists. Semantics follow Flink's NFA (computeNextStates, advanceTime, the
 * after-match skip strategies); see SEMANTICS.md. */
#include "nfa/nfa.h"

#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "nfa/nfa_internal.h"

/* Idle keys a work keeps for reuse: enough to absorb a burst of keys that start and
 * die together (a timer firing for many keys), little memory (48 bytes each). */
#define SPARE_KEYS 256

/* ---- small helpers -------------------------------------------------------------- */

/* A run's start against the event (t, id): its first event's time, then input id. */
static int cmp_start_event(const Run *a, int64_t t, uint64_t id)
{
    const Event *e = a->start;
    if (e->time_ms != t)
        return e->time_ms < t ? -1 : 1;
    return e->id != id ? (e->id < id ? -1 : 1) : 0;
}

static int cmp_start(const Run *a, const Run *b)
{
    if (a->start == b->start)   /* branches of one start */
        return 0;
    return cmp_start_event(a, nfa_run_start_time(b), nfa_run_start_id(b));
}

static bool list_reserve(RunList *l, size_t extra)
{
    if (l->n + extra <= l->cap)
        return true;
    size_t nc = l->cap ? l->cap * 2 : 4;
    while (nc < l->n + extra)
        nc *= 2;
    Run *v = realloc(l->v, nc * sizeof *v);
    if (!v)
        return false;
    l->v = v;
    l->cap = nc;
    return true;
}

/* n runs (partial or held-back matches) lost because an allocation failed. */
static void drop_for_memory(NfaCounters *c, uint64_t n)
{
    c->partials_dropped += n;
    c->out_of_memory += n;
}

/* Appends r, taking over its reference; on allocation failure the run is dropped.
 * The work's lists keep their room, so growing is rare: only then is list_reserve
 * called. */
static inline void list_push(RunList *l, Run r, NfaCounters *c)
{
    if (l->n == l->cap && !list_reserve(l, 1)) {
        match_node_release(r.last);
        drop_for_memory(c, 1);
        return;
    }
    l->v[l->n++] = r;
}

static void list_remove_at(RunList *l, size_t i)
{
    memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof *l->v);
    l->n--;
}

static void list_release_from(RunList *l, size_t from)
{
    for (size_t i = from; i < l->n; i++)
        match_node_release(l->v[i].last);
    l->n = from;
}

static size_t earliest(const Run *v, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (cmp_start(&v[i], &v[best]) < 0)
            best = i;
    return best;
}

/* The live runs as a list that may shrink in place (never grow): write its n back
 * with set_live_count. */
static RunList live_view(NfaKey *k)
{
    return (RunList){nfa_key_live(k), k->n_live, k->n_live};
}

static void set_live_count(NfaKey *k, size_t n)
{
    k->n_live = (uint32_t)n;
}

static NfaKey *key_new(NfaWork *w)
{
    NfaKey *k = w && w->n_spare ? w->spare[--w->n_spare] : malloc(sizeof *k);
    if (k)
        nfa_key_init(k);
    return k;
}

/* Releases a key's runs and its heap part, leaving it idle (its counts are the
 * caller's). */
static void key_release(NfaKey *k)
{
    if (k->cap_live == 1) {   /* the usual key: its one inline run, or none */
        if (k->n_live)
            match_node_release(k->live.one.last);
        k->n_live = 0;
        return;
    }
    RunList live = live_view(k);
    list_release_from(&live, 0);
    if (k->cap_live > 1) {
        NfaKeyMore *more = k->live.more;
        list_release_from(&more->done, 0);
        free(more->done.v);
        free(more);
    }
    nfa_key_init(k);
}

/* Releases a key's runs and frees it, or keeps it in w for reuse (w may be NULL). */
static void key_destroy(NfaKey *k, NfaWork *w)
{
    key_release(k);
    if (w && w->n_spare < SPARE_KEYS)
        w->spare[w->n_spare++] = k;
    else
        free(k);
}

/* Gives the key a heap part with room for cap (>= 2) live runs, moving its inline
 * run there and keeping what it holds back; false on allocation failure (the key is
 * then unchanged). */
static bool key_grow(NfaKey *k, size_t cap)
{
    bool had = k->cap_live > 1;
    NfaKeyMore *more = realloc(had ? k->live.more : NULL, sizeof *more + cap * sizeof(Run));
    if (!more)
        return false;
    if (!had) {
        more->done = (RunList){0};
        if (k->n_live)
            more->v[0] = k->live.one;   /* before live.more overwrites it */
    }
    k->live.more = more;
    k->cap_live = (uint32_t)cap;
    return true;
}

/* Back to the inline run once the heap part is not needed: a key shrinks with its
 * matches. */
static void key_compact(NfaKey *k)
{
    if (k->cap_live == 1 || k->n_live > 1 || k->live.more->done.n)
        return;
    NfaKeyMore *more = k->live.more;
    if (k->n_live)
        k->live.one = more->v[0];
    free(more->done.v);
    free(more);
    k->cap_live = 1;
}

/* Makes `from` the key's live runs (their references move to the key; from is left
 * empty). Runs beyond what the key can hold after an allocation failure are dropped. */
static void install_live(NfaKey *k, RunList *from, NfaCounters *c)
{
    size_t n = from->n;
    if (n > 1 && n > k->cap_live) {
        size_t cap = k->cap_live > 1 ? k->cap_live : 2;
        while (cap < n)
            cap *= 2;
        if (!key_grow(k, cap)) {
            size_t keep = k->cap_live;
            drop_for_memory(c, n - keep);
            list_release_from(from, keep);
            n = keep;
        }
    }
    if (n == 1)
        *nfa_key_live(k) = from->v[0];   /* the common case, without a call */
    else if (n)
        memcpy(nfa_key_live(k), from->v, n * sizeof *from->v);
    k->n_live = (uint32_t)n;
    from->n = 0;
}

/* ---- the work ---------------------------------------------------------------------- */

/* Forgets the memo's results: a new (event, key) begins. Stamping instead of clearing
 * costs nothing per slot; the slots are cleared once every 2^32 stamps. */
static void next_memo(NfaWork *w)
{
    if (++w->memo_now == 0) {
        memset(w->memo_seen, 0, w->memo_len * sizeof *w->memo_seen);
        w->memo_now = 1;
    }
}

NfaWork *nfa_work_new(const Nfa *const *nfas, size_t n)
{
    NfaWork *w = lines_calloc(sizeof *w);
    if (!w)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (nfas[i]->max_collect > w->max_collect)
            w->max_collect = nfas[i]->max_collect;
        if (2 * nfas[i]->n_steps > w->memo_len)
            w->memo_len = 2 * nfas[i]->n_steps;
    }
    w->edges = lines_calloc_n(w->max_collect ? w->max_collect : 1, sizeof *w->edges);
    w->memo = lines_calloc(w->memo_len ? w->memo_len : 1);
    w->memo_seen = lines_calloc_n(w->memo_len ? w->memo_len : 1, sizeof *w->memo_seen);
    w->memo_now = 1;   /* 0 in memo_seen: never */
    w->spare = lines_calloc_n(SPARE_KEYS, sizeof *w->spare);
    w->nodes = node_pool_new();
    if (!w->edges || !w->memo || !w->memo_seen || !w->spare || !w->nodes) {
        nfa_work_free(w);
        return NULL;
    }
    return w;
}

void nfa_work_free(NfaWork *w)
{
    if (!w)
        return;
    list_release_from(&w->next, 0);
    list_release_from(&w->fresh, 0);
    list_release_from(&w->held, 0);
    free(w->next.v);
    free(w->fresh.v);
    free(w->held.v);
    free(w->edges);
    free(w->memo);
    free(w->memo_seen);
    for (size_t i = 0; i < w->n_spare; i++)
        free(w->spare[i]);
    free(w->spare);
    node_pool_free(w->nodes);   /* after the lists: their nodes went back to it */
    free(w);
}

/* ---- conditions ------------------------------------------------------------------ */

/* A ladder: groups whose conditions read `OPERAND OP NUMBER` with the same operand
 * text and operator (one of > >= < <=) and different numbers, such as `amount > 500`
 * and `amount > 600` in two rules. For one event the results are monotone in the
 * number, so a binary search over the rungs (sorted by number) evaluates about log2(n)
 * of them and knows them all. */
typedef struct Rung {
    double number;
    uint32_t group;
    const CExpr *ce;       /* one of the group's conditions (borrowed from its Nfa) */
} Rung;

typedef struct Ladder {
    uint32_t first, n;     /* rungs[first .. first + n), by number ascending */
    bool rising;           /* < <=: true from some number up; > >=: true up to one */
} Ladder;


struct NfaCondShare {
    size_t n_rules;
    size_t n_groups;
    uint32_t **ids;        /* per rule: 2 per step (where, until): a group or NFA_NONE */
    NfaWakeGate *gates;    /* per rule */
    uint32_t *ladder_of;   /* per group: its ladder, or NFA_NONE */
    Rung *rungs;
    Ladder *ladders;
    size_t n_ladders;
};


typedef struct Decide {
    const Nfa *nfa;
    EvalCtx ec;
    EvalScratch *scratch;
    NfaCondCache *cache;   /* NULL: no sharing across rules */
    const uint32_t *cache_ids;
    NfaWork *w;            /* memo and edges */
    size_t n_edges;
    bool stopped;          /* a stop state was reached: the branch dies */
    bool blank;            /* every `where` and `until` is false for this event, which
                              the caller knows (nfa_key_blank_in): none is evaluated */
} Decide;

static void cache_put(NfaCondCache *c, uint32_t g, bool holds)
{
    c->seen[g] = c->event;
    c->vals[g] = holds;
}

/* Every rung of a ladder for this event, by binary search: the rungs below `lo` have
 * the result of the lowest number, the others the opposite. */
static void climb(Decide *d, NfaCondCache *c, const Ladder *l)
{
    const Rung *r = &c->share->rungs[l->first];
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        bool holds = expr_test(r[mid].ce, &d->ec, d->scratch);
        if (holds != l->rising)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* a ladder's groups are consecutive in rung order (ladder_groups_adjacent): its
     * results are two runs of adjacent entries, not one scattered entry per rung */
    uint32_t g0 = r[0].group;
    for (size_t i = 0; i < l->n; i++)
        c->seen[g0 + i] = c->event;
    memset(&c->vals[g0], !l->rising, lo);
    memset(&c->vals[g0 + lo], l->rising, l->n - lo);
}

/* A non-iterative condition: from another rule's evaluation of the same text for
 * this event when the cache has it, or from its ladder. */
static bool test_shared(Decide *d, const CExpr *ce, size_t slot)
{
    uint32_t g = d->cache ? d->cache_ids[slot] : NFA_NONE;
    if (g == NFA_NONE)
        return expr_test(ce, &d->ec, d->scratch);
    NfaCondCache *c = d->cache;
    if (c->seen[g] == c->event) {
        c->hits++;
        return c->vals[g] == 1;
    }
    uint32_t l = c->share->ladder_of[g];
    if (l != NFA_NONE) {
        climb(d, c, &c->share->ladders[l]);
        return c->vals[g] == 1;
    }
    bool holds = expr_test(ce, &d->ec, d->scratch);
    cache_put(c, g, holds);
    return holds;
}

/* Inline, with the cache's hit first: most conditions the matcher tests were decided
 * for this event already (nfa_key_wakes, ladders, other rules), and then a test is a
 * few loads, not three calls. */
static inline bool test_expr(Decide *d, const CExpr *ce, bool iterative, size_t slot)
{
    if (!ce)
        return true;
    if (d->blank)
        return false;
    if (iterative)
        return expr_test(ce, &d->ec, d->scratch);
    if (d->cache && d->cache_ids[slot] != NFA_NONE) {
        NfaCondCache *c = d->cache;   /* the cache is this event's memo already */
        uint32_t g = d->cache_ids[slot];
        if (c->seen[g] == c->event) {
            c->hits++;
            return c->vals[g] == 1;
        }
        return test_shared(d, ce, slot);
    }
    NfaWork *w = d->w;
    if (w->memo_seen[slot] != w->memo_now) {
        w->memo[slot] = test_shared(d, ce, slot);
        w->memo_seen[slot] = w->memo_now;
    }
    return w->memo[slot];
}

static bool cond_holds(Decide *d, uint32_t c)
{
    const NfaCond *cd = &d->nfa->conds[c];
    switch ((NfaCondKind)cd->kind) {
    case NFA_C_TRUE:
        return true;
    case NFA_C_NOT:
        return !cond_holds(d, cd->a);
    case NFA_C_AND:
        return cond_holds(d, cd->a) && cond_holds(d, cd->b);
    case NFA_C_WHERE:
    case NFA_C_UNTIL:
        break;
    }
    /* one call site, so that test_expr inlines here once */
    const NfaStep *s = &d->nfa->steps[cd->step];
    bool until = cd->kind == NFA_C_UNTIL;
    return test_expr(d, until ? s->until : s->where, until ? s->until_iter : s->where_iter,
                     2 * (size_t)cd->step + until);
}

/* A `where` the cache decided for this event: 1 or 0; -1 when it has no result (the
 * condition is not shared, or not yet tested). A slot in a group is a compiled
 * `where` that reads only the event, so the cached result is the condition's. */
static inline int cached_where(const Decide *d, const NfaCond *cd)
{
    NfaCondCache *c = d->cache;
    if (!c || d->w->general_only)
        return -1;
    uint32_t g = d->cache_ids[2 * (size_t)cd->step];
    if (g == NFA_NONE || c->seen[g] != c->event)
        return -1;
    c->hits++;
    return c->vals[g] == 1;
}

/* cond_holds without a call for the edges most states have: `true`, and a `where` or
 * `not where` the cache already decided (a take and its ignore edge). */
static inline bool edge_holds(Decide *d, uint32_t c)
{
    const NfaCond *cd = &d->nfa->conds[c];
    if (cd->kind == NFA_C_TRUE)
        return true;
    bool negated = cd->kind == NFA_C_NOT;
    const NfaCond *of = negated ? &d->nfa->conds[cd->a] : cd;
    int holds = of->kind == NFA_C_WHERE ? cached_where(d, of) : -1;
    if (holds < 0)
        return cond_holds(d, c);
    return negated ? !holds : holds;
}

/* Flink's decision graph: the take and ignore edges of `state` and of every state
 * reachable through proceed edges whose condition holds for this event, in Flink's
 * order (NFA.createDecisionGraph): a state's own edges first, then the states its
 * proceed edges reach, each with all it reaches in turn, the last proceed edge's
 * first (Flink pushes them on a stack). The order is the order in which the new
 * partial matches are made, which decides among matches that start on the same
 * event: `a one_or_more; followed_by b` on a1 a2 b1 releases [a1, a2] b1 first,
 * and with the default skip strategy only that one. */
static void collect(Decide *d, uint32_t state)
{
    const NfaState *s = &d->nfa->states[state];
    bool proceeds = false;
    for (uint32_t i = 0; i < s->n_edges; i++) {
        uint32_t ei = s->first_edge + i;
        const NfaEdge *e = &d->nfa->edges[ei];
        if (e->action != NFA_PROCEED) {
            if (edge_holds(d, e->cond))
                d->w->edges[d->n_edges++] = ei;
        } else if (d->nfa->states[e->target].kind != NFA_ST_STOP) {
            proceeds = true;
        } else if (edge_holds(d, e->cond)) {
            d->stopped = true;
        }
    }
    for (uint32_t i = proceeds ? s->n_edges : 0; i-- > 0;) {
        const NfaEdge *e = &d->nfa->edges[s->first_edge + i];
        if (e->action == NFA_PROCEED && d->nfa->states[e->target].kind != NFA_ST_STOP &&
            edge_holds(d, e->cond))
            collect(d, e->target);
    }
}

/* Is e, an edge of the start state, a take whose partial match waits: into a state
 * that neither completes nor proceeds (so nothing more is tested for it)? */
static bool start_take_plain(const Nfa *nfa, const NfaEdge *e)
{
    const NfaState *to = &nfa->states[e->target];
    return e->action == NFA_TAKE && to->kind != NFA_ST_FINAL && !to->proceeds_to_final;
}

/* After a take into `state`: does a proceed path whose conditions hold reach the end?
 * (Flink's findFinalStateAfterProceed; an optional tail completes at once.) */
static bool final_after_proceed(Decide *d, uint32_t state)
{
    const NfaState *s = &d->nfa->states[state];
    if (!s->proceeds_to_final)
        return false;
    for (uint32_t i = 0; i < s->n_edges; i++) {
        const NfaEdge *e = &d->nfa->edges[s->first_edge + i];
        if (e->action != NFA_PROCEED || !cond_holds(d, e->cond))
            continue;
        if (d->nfa->states[e->target].kind == NFA_ST_FINAL || final_after_proceed(d, e->target))
            return true;
    }
    return false;
}

/* ---- one event ----------------------------------------------------------------- */

/* An ignore edge: the same partial match moves on (into the final state: a match). */
static void follow_ignore(NfaWork *w, const Run *from, const NfaEdge *e, const Event *ev,
                          const Nfa *nfa, NfaCounters *c)
{
    match_node_retain(from->last);
    Run r = *from;
    if (nfa->states[e->target].kind == NFA_ST_FINAL) {
        r.time = ev->time_ms;
        list_push(&w->fresh, r, c);
    } else {
        r.state = e->target;
        list_push(&w->next, r, c);
    }
}

static void fold_node(const Nfa *nfa, MatchNode *node, const MatchNode *of)
{
    for (size_t i = 0; i < nfa->n_aggs; i++)
        if (nfa->aggs[i].step == (int32_t)of->step)
            expr_agg_fold(&node->acc[i], &nfa->aggs[i], of->event);
}

/* Accumulators for a node whose predecessor carries none (built elsewhere, e.g. by a
 * restore): the whole chain is folded, oldest first. False on allocation failure. */
static bool fold_chain(const Nfa *nfa, MatchNode *node)
{
    size_t n = 0;
    for (const MatchNode *m = node; m; m = m->prev)
        n++;
    const MatchNode **chain = malloc(n * sizeof *chain);
    if (!chain)
        return false;
    n = 0;
    for (const MatchNode *m = node; m; m = m->prev)
        chain[n++] = m;
    memset(node->acc, 0, nfa->n_aggs * sizeof *node->acc);
    while (n-- > 0)
        fold_node(nfa, node, chain[n]);
    free(chain);
    return true;
}

MatchNode *nfa_node_new(const Nfa *nfa, MatchNode *prev, Event *ev, uint32_t step)
{
    MatchNode *node = match_node_new_acc(prev, ev, (uint16_t)step, (uint16_t)nfa->n_aggs);
    if (!node || nfa->n_aggs == 0)
        return node;
    if (prev && prev->n_acc != nfa->n_aggs) {
        if (!fold_chain(nfa, node)) {
            match_node_release(node);
            return NULL;
        }
        return node;
    }
    fold_node(nfa, node, node);
    return node;
}

/* The work's pool makes plain nodes; nodes with accumulators come from malloc. */
static MatchNode *work_node_new(const Nfa *nfa, NfaWork *w, MatchNode *prev, Event *ev,
                                uint32_t step)
{
    if (nfa->n_aggs == 0)
        return node_pool_take(w->nodes, prev, ev, (uint16_t)step);
    return nfa_node_new(nfa, prev, ev, step);
}

/* A take edge: a new node (source state's step, event) extends the partial match. */
static void follow_take(Decide *d, NfaWork *w, const Run *from, const NfaEdge *e, Event *ev,
                        NfaCounters *c)
{
    const Nfa *nfa = d->nfa;
    uint32_t step = nfa->states[e->source].step;
    MatchNode *node = work_node_new(nfa, w, from ? from->last : NULL, ev, step);
    if (!node) {
        drop_for_memory(c, 1);
        return;
    }
    c->takes++;
    Run r = {.last = node, .start = from ? from->start : ev};
    bool final = nfa->states[e->target].kind == NFA_ST_FINAL;
    if (final || (nfa->states[e->target].proceeds_to_final &&   /* most states: no call */
                  final_after_proceed(d, e->target))) {
        Run m = r;
        m.time = ev->time_ms;
        if (!final)
            match_node_retain(node);
        list_push(&w->fresh, m, c);
        if (final)
            return;
    }
    r.state = e->target;
    list_push(&w->next, r, c);
}

/* The successors of one partial match (from == NULL: the start state) along the
 * edges d collected for it, appended to w->next and w->fresh. */
static void follow_edges(Decide *d, NfaWork *w, const Run *from, Event *ev, NfaCounters *c)
{
    size_t mark = w->next.n;
    for (size_t i = 0; i < d->n_edges; i++) {
        const NfaEdge *e = &d->nfa->edges[d->w->edges[i]];
        if (e->action == NFA_TAKE)
            follow_take(d, w, from, e, ev, c);
        else if (from)   /* the start state never waits without an event */
            follow_ignore(w, from, e, ev, d->nfa, c);
    }
    if (d->stopped)
        list_release_from(&w->next, mark);   /* completed matches survive, as in Flink */
}

/* The successors of one partial match (from == NULL: the start state) for `ev`. */
static void advance_run(Decide *d, NfaWork *w, const Run *from, Event *ev, NfaCounters *c)
{
    d->ec.match = from ? from->last : NULL;
    d->n_edges = 0;
    d->stopped = false;
    collect(d, from ? from->state : d->nfa->start);
    follow_edges(d, w, from, ev, c);
}

/* ---- timeouts and deadlines ------------------------------------------------------ */

/* When a partial match's rule within ends (from its first event) and its step within
 * (from its newest event); INT64_MAX: none. */
static inline int64_t first_due(const Nfa *nfa, const Run *r)
{
    return nfa_due_after(nfa_run_start_time(r), nfa->within_ms);
}

static inline int64_t step_due(const Nfa *nfa, const Run *r)
{
    return nfa_due_after(nfa_run_time(r), nfa->states[r->state].within_ms);
}

/* Deadline of a partial match: the earlier of the two; *expiry receives the one that
 * has passed at `now`. */
static int64_t run_deadline(const Nfa *nfa, const Run *r, int64_t now, int64_t *expiry)
{
    int64_t d_first = first_due(nfa, r), d_step = step_due(nfa, r);
    /* Flink reports the step-within expiry when both have passed */
    *expiry = nfa->states[r->state].within_ms > 0 && now >= d_step ? d_step : d_first;
    return d_first < d_step ? d_first : d_step;
}

/* run_deadline's deadline alone (the runtime asks for a key's after every run). */
static inline int64_t run_due(const Nfa *nfa, const Run *r)
{
    int64_t d_first = first_due(nfa, r), d_step = step_due(nfa, r);
    return d_first < d_step ? d_first : d_step;
}

/* INT64_MAX means "no within": such a partial match never times out. */
static bool timed_out(const Nfa *nfa, const Run *r, int64_t now, int64_t *expiry)
{
    int64_t d = run_deadline(nfa, r, now, expiry);
    return d != INT64_MAX && now >= d;
}


/* Computed when asked, not stored: 8 bytes less in every key (the runtime keeps a
 * million), for a loop over the live runs that reads the state table and, with a step
 * within, the newest node's event, which the matcher reads anyway. */
static int64_t key_deadline(const Nfa *nfa, const NfaKey *k)
{
    if (k->cap_live == 1)   /* the usual key: its one inline run, or none */
        return k->n_live ? run_due(nfa, &k->live.one) : INT64_MAX;
    int64_t best = INT64_MAX;
    const Run *live = nfa_key_live_c(k);
    for (size_t i = 0; i < k->n_live; i++) {
        int64_t d = run_due(nfa, &live[i]);
        if (d < best)
            best = d;
    }
    return best;
}

/* ---- releasing matches ---------------------------------------------------------- */

static void emit(NfaRunCtx *ctx, NfaResultKind kind, int64_t time, const MatchNode *last)
{
    NfaResult r = {.kind = kind, .time_ms = time, .last = last};
    ctx->sink.emit(ctx->sink.user, &r);
}

/* The event a skip strategy prunes up to; false when it prunes nothing. */
static bool pruning_event(const Nfa *nfa, const MatchNode *last, int64_t *t, uint64_t *id)
{
    const MatchNode *hit = NULL;
    for (const MatchNode *n = last; n; n = n->prev) {
        switch (nfa->skip) {
        case SKIP_TO_NEXT:
            hit = n;                       /* the oldest event overall */
            break;
        case SKIP_PAST_LAST_EVENT:
            if (!hit)
                hit = n;                   /* the newest event */
            break;
        case SKIP_TO_FIRST:
            if (n->step == (unsigned)nfa->skip_step)
                hit = n;                   /* the oldest event of the step */
            break;
        case SKIP_TO_LAST:
            if (!hit && n->step == (unsigned)nfa->skip_step)
                hit = n;                   /* the newest event of the step */
            break;
        case SKIP_NO_SKIP:
            return false;
        }
    }
    if (!hit)
        return false;   /* to_first / to_last with no event of the step: no_skip */
    *t = hit->event->time_ms;
    *id = hit->event->id;
    return true;
}

static void prune(const Nfa *nfa, RunList *l, int64_t t, uint64_t id, NfaCounters *c, bool live)
{
    bool inclusive = nfa->skip == SKIP_TO_NEXT || nfa->skip == SKIP_PAST_LAST_EVENT;
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        int cmp = cmp_start_event(&l->v[i], t, id);
        if (cmp < 0 || (inclusive && cmp == 0)) {
            match_node_release(l->v[i].last);
            if (live)
                c->partials_live--;
        } else {
            l->v[w++] = l->v[i];
        }
    }
    l->n = w;
}

static void insert_sorted(RunList *l, Run r, NfaCounters *c)
{
    if (!list_reserve(l, 1)) {
        match_node_release(r.last);
        drop_for_memory(c, 1);
        return;
    }
    size_t i = l->n;
    while (i > 0 && cmp_start(&l->v[i - 1], &r) > 0)
        i--;
    memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof *l->v);
    l->v[i] = r;
    l->n++;
}

/* The key keeps the matches left in w->held (its heap part adopts the array). */
static void hold_back(NfaKey *k, NfaWork *w, NfaCounters *c)
{
    if (!key_grow(k, 2)) {
        drop_for_memory(c, w->held.n);
        list_release_from(&w->held, 0);
        return;
    }
    k->live.more->done = w->held;
    w->held = (RunList){0};
}

/* Emits completed matches (w->fresh). With no_skip at once; otherwise a match waits
 * while a partial match that started earlier is pending (all are released when
 * flushing), and each released match prunes partial and waiting matches. */
static void release_matches(const Nfa *nfa, NfaKey *k, NfaWork *w, NfaRunCtx *ctx, bool flush)
{
    if (nfa->skip == SKIP_NO_SKIP) {
        for (size_t i = 0; i < w->fresh.n; i++) {
            emit(ctx, NFA_MATCH, w->fresh.v[i].time, w->fresh.v[i].last);
            match_node_release(w->fresh.v[i].last);
        }
        w->fresh.n = 0;
        return;
    }
    RunList *done = k->cap_live > 1 ? &k->live.more->done : &w->held;
    if (w->fresh.n == 0 && done->n == 0)
        return;
    for (size_t i = 0; i < w->fresh.n; i++)
        insert_sorted(done, w->fresh.v[i], ctx->counters);
    w->fresh.n = 0;
    while (done->n > 0) {
        if (!flush && k->n_live > 0 &&
            cmp_start(&done->v[0], &nfa_key_live(k)[earliest(nfa_key_live(k), k->n_live)]) > 0)
            break;
        Run m = done->v[0];
        list_remove_at(done, 0);
        int64_t t;
        uint64_t id;
        if (pruning_event(nfa, m.last, &t, &id)) {
            RunList live = live_view(k);
            prune(nfa, &live, t, id, ctx->counters, true);
            set_live_count(k, live.n);
            prune(nfa, done, t, id, ctx->counters, false);
        }
        emit(ctx, NFA_MATCH, m.time, m.last);
        match_node_release(m.last);
    }
    if (done == &w->held && done->n > 0)
        hold_back(k, w, ctx->counters);
}

/* release_matches when there is anything to release: most events and timeouts
 * complete nothing, and then the call is not made. */
static inline void release_any(const Nfa *nfa, NfaKey *k, NfaWork *w, NfaRunCtx *ctx,
                               bool flush)
{
    if (w->fresh.n || nfa_key_n_done(k))
        release_matches(nfa, k, w, ctx, flush);
}

/* Frees what a key holds once it holds nothing, so that an idle key owns no memory
 * (nfa_key_idle is then exact), or else gives back room it no longer needs. */
static void settle(NfaKey *k)
{
    if (k->n_live == 0 && nfa_key_n_done(k) == 0) {
        key_release(k);
        return;
    }
    key_compact(k);
}

/* A heap key that went idle is freed (kept in w for reuse). */
static void settle_heap(NfaKey **key, NfaWork *w)
{
    if (*key && nfa_key_idle(*key)) {
        key_destroy(*key, w);
        *key = NULL;
    }
}

/* ---- public API ------------------------------------------------------------------- */

void nfa_key_advance(const Nfa *nfa, NfaKey **key, int64_t time_ms, NfaRunCtx *ctx)
{
    if (!*key)
        return;
    nfa_key_advance_in(nfa, *key, time_ms, ctx);
    settle_heap(key, ctx->work);
}

/* nfa_key_advance_in for the usual key: one partial match, inline, nothing held back,
 * and not at the end of input. Its deadline is computed once, and when it has passed
 * the timeout is the only result: nothing completes (a pending state, which completes
 * on timeout, goes the general way), so nothing is released and the key is idle.
 * False when the key is not of this kind. */
static bool advance_single(const Nfa *nfa, NfaKey *k, int64_t time_ms, NfaRunCtx *ctx)
{
    if (k->cap_live != 1 || k->n_live != 1 || time_ms == INT64_MAX)
        return false;
    const Run *r = &k->live.one;
    int64_t expiry;
    if (!timed_out(nfa, r, time_ms, &expiry))
        return true;
    if (nfa->states[r->state].kind == NFA_ST_PENDING)
        return false;
    MatchNode *last = r->last;
    ctx->counters->partials_live--;
    emit(ctx, NFA_TIMEOUT, expiry, last);
    match_node_release(last);
    k->n_live = 0;
    return true;
}

void nfa_key_advance_in(const Nfa *nfa, NfaKey *k, int64_t time_ms, NfaRunCtx *ctx)
{
    if (advance_single(nfa, k, time_ms, ctx))
        return;
    bool flush = time_ms == INT64_MAX;
    if (!flush && time_ms < key_deadline(nfa, k))
        return;
    NfaWork *work = ctx->work;
    work->fresh.n = 0;
    RunList live = live_view(k);
    size_t w = 0;
    for (size_t i = 0; i < live.n; i++) {
        Run r = live.v[i];
        int64_t expiry;
        if (!timed_out(nfa, &r, time_ms, &expiry)) {
            live.v[w++] = r;
            continue;
        }
        ctx->counters->partials_live--;
        if (nfa->states[r.state].kind == NFA_ST_PENDING) {
            r.time = expiry;   /* a trailing not_followed_by completes when within elapses */
            list_push(&work->fresh, r, ctx->counters);
        } else {
            emit(ctx, NFA_TIMEOUT, expiry, r.last);
            match_node_release(r.last);
        }
    }
    live.n = w;
    if (flush) {
        /* end of input: partial matches without any within can never complete */
        ctx->counters->partials_live -= live.n;
        list_release_from(&live, 0);
    }
    set_live_count(k, live.n);
    release_any(nfa, k, work, ctx, flush);
    settle(k);
}

/* The per-key cap on the next generation: drops the oldest partial matches; true if
 * it dropped any. */
static bool enforce_key_cap(RunList *next, NfaRunCtx *ctx)
{
    size_t max = ctx->limits ? ctx->limits->max_partials : 0;
    if (max == 0 || next->n <= max)
        return false;
    while (next->n > max) {
        size_t i = earliest(next->v, next->n);
        match_node_release(next->v[i].last);
        list_remove_at(next, i);
        ctx->counters->partials_dropped++;
    }
    return true;
}

static uint64_t rule_cap(const NfaRunCtx *ctx)
{
    size_t max = ctx->limits ? ctx->limits->max_partials_per_rule : 0;
    return max ? max : NFA_DEFAULT_MAX_PARTIALS_PER_RULE;
}

/* The per-rule cap. Dropping the rule's oldest partial match would mean finding it
 * among every key, so the cap refuses instead: of the partial matches the start state
 * created for this event (next from `mark`), those beyond the room left are
 * released. `live_elsewhere` is the rule's live count without them. True if it
 * refused any. */
static bool enforce_rule_cap(RunList *next, size_t mark, uint64_t live_elsewhere,
                             NfaRunCtx *ctx)
{
    uint64_t max = rule_cap(ctx);
    uint64_t room = live_elsewhere < max ? max - live_elsewhere : 0;
    size_t started = next->n - mark;
    if (started <= room)
        return false;
    size_t refused = started - (size_t)room;
    list_release_from(next, mark + (size_t)room);
    ctx->counters->partials_refused += refused;
    ctx->counters->partials_dropped += refused;
    return true;
}

/* Does the start state act on this event at all? Lets an idle key skip allocation.
 * Results of non-iterative conditions land in the memo, for the real run. */
static bool start_reacts(const Nfa *nfa, Decide *d)
{
    d->ec.match = NULL;
    d->n_edges = 0;
    d->stopped = false;
    collect(d, nfa->start);
    return d->n_edges > 0;
}

/* The rest of key_step once the live runs' successors are in w->next and w->fresh
 * (`before` runs went in, released; the key holds none): the start state's
 * successors, already collected in d when `start_collected`, then the caps, the key's
 * new runs and the release of completed matches. */
static void key_step_finish(const Nfa *nfa, NfaKey *k, Decide *d, Event *ev, NfaRunCtx *ctx,
                            size_t before, bool start_collected)
{
    NfaWork *w = ctx->work;
    size_t mark = w->next.n;
    if (start_collected)
        follow_edges(d, w, NULL, ev, ctx->counters);
    else
        advance_run(d, w, NULL, ev, ctx->counters);
    /* The usual start of an idle key: one partial match, nothing completed, room under
     * the rule's cap (the key's cap keeps at least one). It goes inline, where the
     * general way below (caps, install_live, release, settle) would put it too. */
    if (start_collected && before == 0 && w->next.n == 1 && !w->fresh.n &&
        ctx->counters->partials_live < rule_cap(ctx)) {
        k->live.one = w->next.v[0];
        k->n_live = 1;
        w->next.n = 0;
        ctx->counters->partials_live++;
        return;
    }
    bool hit = enforce_rule_cap(&w->next, mark, ctx->counters->partials_live - before + mark,
                                ctx);
    hit |= enforce_key_cap(&w->next, ctx);
    ctx->counters->cap_hits += hit;
    install_live(k, &w->next, ctx->counters);
    ctx->counters->partials_live += k->n_live;
    ctx->counters->partials_live -= before;
    release_any(nfa, k, w, ctx, false);
    settle(k);
}

/* A decision edge of a waiting run that can be followed later, with another decision
 * in d, to the same effect (it tests nothing more): an ignore into a waiting state, or
 * a take into the final state or into a state that does not proceed to it. */
static bool plain_successor(const Nfa *nfa, const NfaEdge *e)
{
    const NfaState *to = &nfa->states[e->target];
    if (e->action == NFA_IGNORE)
        return to->kind != NFA_ST_FINAL;
    return to->kind == NFA_ST_FINAL || !to->proceeds_to_final;
}

/* The one run of a key follows its plain edge e (NULL: it has none and dies) in place,
 * the start state acting on nothing: what key_step's lists, caps and release give. A
 * take into the final state completes the run; with no partial match left and none
 * held back, every skip strategy releases it at once and prunes nothing. */
static void single_follow(const Nfa *nfa, NfaKey *k, const NfaEdge *e, Event *ev,
                          NfaRunCtx *ctx)
{
    Run *r = &k->live.one;
    if (e && e->action == NFA_IGNORE) {
        r->state = e->target;
        return;
    }
    MatchNode *node = e ? work_node_new(nfa, ctx->work, r->last, ev,
                                        nfa->states[e->source].step)
                        : NULL;
    match_node_release(r->last);   /* the new node, if any, holds it */
    if (e && !node)
        drop_for_memory(ctx->counters, 1);
    if (node)
        ctx->counters->takes++;
    if (node && nfa->states[e->target].kind != NFA_ST_FINAL) {
        r->last = node;
        r->state = e->target;
        return;
    }
    k->n_live = 0;
    ctx->counters->partials_live--;
    if (node) {
        emit(ctx, NFA_MATCH, ev->time_ms, node);
        match_node_release(node);
    }
}

/* key_step for a key with one partial match, inline and nothing held back (not idle:
 * the start is decided here). The decisions come in key_step's order, the run's then
 * the start's; when the run has at most one edge, a plain one, and the start acts on
 * nothing, the run moves on (or completes, or dies) in place. Otherwise the work's
 * lists take over from where key_step would be, deciding nothing twice (the cache
 * counts its hits). */
static void step_single(const Nfa *nfa, NfaKey *k, Decide *d, Event *ev, NfaRunCtx *ctx)
{
    NfaWork *w = ctx->work;
    Run *r = &k->live.one;
    d->ec.match = r->last;
    d->n_edges = 0;
    d->stopped = false;
    collect(d, r->state);
    const NfaEdge *e = d->n_edges == 1 ? &nfa->edges[w->edges[0]] : NULL;
    w->next.n = 0;
    w->fresh.n = 0;
    if (d->stopped || d->n_edges > 1 || (e && !plain_successor(nfa, e))) {
        follow_edges(d, w, r, ev, ctx->counters);
        match_node_release(r->last);
        k->n_live = 0;
        key_step_finish(nfa, k, d, ev, ctx, 1, false);
        return;
    }
    if (!start_reacts(nfa, d)) {
        single_follow(nfa, k, e, ev, ctx);
        return;
    }
    if (e && e->action == NFA_TAKE)
        follow_take(d, w, r, e, ev, ctx->counters);
    else if (e)
        follow_ignore(w, r, e, ev, nfa, ctx->counters);
    match_node_release(r->last);
    k->n_live = 0;
    key_step_finish(nfa, k, d, ev, ctx, 1, true);
}

/* The matching of one event after advance, for a key that exists or that the start
 * state acts for (d's memo is this event's and key's). `started`: the key is idle
 * and start_reacts left the start state's edges in d. */
static void key_step(const Nfa *nfa, NfaKey *k, Decide *d, Event *ev, NfaRunCtx *ctx,
                     bool started)
{
    NfaWork *w = ctx->work;
    if (!started && k->n_live == 1 && k->cap_live == 1 && !w->general_only) {
        step_single(nfa, k, d, ev, ctx);
        return;
    }
    w->next.n = 0;
    w->fresh.n = 0;
    size_t before = k->n_live;
    Run *live = nfa_key_live(k);
    for (size_t i = 0; i < before; i++) {
        advance_run(d, w, &live[i], ev, ctx->counters);
        match_node_release(live[i].last);
    }
    k->n_live = 0;
    key_step_finish(nfa, k, d, ev, ctx, before, started);
}

static Decide decide_for(const Nfa *nfa, Event *ev, NfaRunCtx *ctx)
{
    return (Decide){.nfa = nfa,
                    .ec = {.event = ev, .time_ms = ev->time_ms},
                    .scratch = ctx->scratch,
                    .cache = ctx->cond_ids ? ctx->cond_cache : NULL,
                    .cache_ids = ctx->cond_ids,
                    .w = ctx->work};
}

/* An idle key's start as one partial match, straight into the key: the start state's
 * take into `target`, a node for (`step`, ev), under the rule's cap: where key_step
 * would put it after its lists. `plain`: the rule has no aggregates (the Nfa need
 * not be read to know). */
static inline void start_in_key(const Nfa *nfa, NfaKey *k, uint32_t target, uint32_t step,
                                bool plain, Event *ev, NfaRunCtx *ctx)
{
    NfaWork *w = ctx->work;
    MatchNode *node = plain ? node_pool_take(w->nodes, NULL, ev, (uint16_t)step)
                            : work_node_new(nfa, w, NULL, ev, step);
    if (!node) {
        drop_for_memory(ctx->counters, 1);
        return;
    }
    ctx->counters->takes++;
    k->live.one = (Run){.last = node, .start = ev};
    k->live.one.state = target;
    k->n_live = 1;
    ctx->counters->partials_live++;
}

/* May an idle key start in place (start_in_key) now? Not past the rule's cap, nor when
 * the work is told to take the general way (for tests). */
static inline bool start_room(const NfaRunCtx *ctx)
{
    return ctx->counters->partials_live < rule_cap(ctx) && !ctx->work->general_only;
}

/* An idle key's event told from the gate and the cache alone (NfaWakeGate.start_take):
 * what start_quick gives, without reading the Nfa, whose lines a rule's first event
 * for a key finds cold. False, having changed nothing, when the gate cannot tell. */
static inline bool start_by_gate(NfaKey *k, Event *ev, NfaRunCtx *ctx)
{
    const NfaWakeGate *gate = ctx->gate;
    NfaCondCache *c = ctx->cond_cache;
    if (!gate || !c || !ctx->cond_ids || !gate->start_take)
        return false;
    uint32_t g = gate->group[0];
    if (c->seen[g] != c->event || !start_room(ctx))
        return false;
    c->hits++;   /* as collect's test of the condition would count */
    if (c->vals[g] == 1)
        start_in_key(NULL, k, gate->take_target, gate->take_step, true, ev, ctx);
    return true;
}

/* An idle key's event told from the Nfa and the cache alone, for the usual start
 * state: one plain take (start_take_plain) under `true` or a `where` the cache already
 * decided for this event (nfa_key_wakes has mostly asked it). What the general way
 * gives, without its Decide, memo and lists; false, having changed nothing (not even
 * the cache's hits), when the start is not of that kind. */
static bool start_quick(const Nfa *nfa, NfaKey *k, Event *ev, NfaRunCtx *ctx)
{
    if (start_by_gate(k, ev, ctx))
        return true;
    const NfaState *s = &nfa->states[nfa->start];
    if (s->n_edges != 1)
        return false;
    const NfaEdge *e = &nfa->edges[s->first_edge];
    const NfaCond *cd = &nfa->conds[e->cond];
    NfaCondCache *c = ctx->cond_ids ? ctx->cond_cache : NULL;
    uint32_t g = NFA_NONE;
    if (cd->kind == NFA_C_WHERE) {
        g = c ? ctx->cond_ids[2 * (size_t)cd->step] : NFA_NONE;
        if (g == NFA_NONE || c->seen[g] != c->event)
            return false;
    } else if (cd->kind != NFA_C_TRUE) {
        return false;
    }
    if (!start_take_plain(nfa, e) || !start_room(ctx))
        return false;
    if (g != NFA_NONE) {
        c->hits++;   /* as collect's test of the condition would count */
        if (c->vals[g] != 1)
            return true;
    }
    start_in_key(nfa, k, e->target, nfa->states[e->source].step, false, ev, ctx);
    return true;
}

/* key_step for an idle key whose start state's one decision (d, from start_reacts) is
 * a plain take: the usual start when its condition was not in the cache. False,
 * having done nothing, when the start is not of that kind. */
static bool start_single(const Nfa *nfa, NfaKey *k, const Decide *d, Event *ev,
                         NfaRunCtx *ctx)
{
    if (d->n_edges != 1 || d->stopped)
        return false;
    const NfaEdge *e = &nfa->edges[ctx->work->edges[0]];
    if (!start_take_plain(nfa, e) || !start_room(ctx))
        return false;
    start_in_key(nfa, k, e->target, nfa->states[e->source].step, false, ev, ctx);
    return true;
}

/* nfa_key_event_in_undue past start_quick: the Decide, its memo and key_step. Out of
 * line, so that an idle key's quick start saves no registers for it. */
static __attribute__((noinline)) void event_decided(const Nfa *nfa, NfaKey *k, Event *ev,
                                                    NfaRunCtx *ctx, bool idle)
{
    Decide d = decide_for(nfa, ev, ctx);
    next_memo(ctx->work);   /* the start's conditions are then tested once */
    if (idle && (!start_reacts(nfa, &d) || start_single(nfa, k, &d, ev, ctx)))
        return;
    key_step(nfa, k, &d, ev, ctx, idle);
}

void nfa_key_event_in_undue(const Nfa *nfa, NfaKey *k, Event *ev, NfaRunCtx *ctx)
{
    bool idle = nfa_key_idle(k);
    if (idle && start_quick(nfa, k, ev, ctx))
        return;
    event_decided(nfa, k, ev, ctx, idle);
}

void nfa_key_event_in(const Nfa *nfa, NfaKey *k, Event *ev, NfaRunCtx *ctx)
{
    if (!nfa_key_idle(k))   /* an idle key has nothing to time out */
        nfa_key_advance_in(nfa, k, ev->time_ms, ctx);
    nfa_key_event_in_undue(nfa, k, ev, ctx);
}

bool nfa_takes_no_blank(const Nfa *nfa)
{
    Decide blank = {.nfa = nfa, .blank = true};   /* tests nothing: reads no event */
    for (uint32_t i = 0; i < nfa->n_edges; i++)
        if (nfa->edges[i].action == NFA_TAKE && cond_holds(&blank, nfa->edges[i].cond))
            return false;
    return true;
}

void nfa_key_blank_in(const Nfa *nfa, NfaKey *k, int64_t time_ms, NfaRunCtx *ctx)
{
    if (nfa_key_idle(k))
        return;   /* the start takes no blank, and an idle key has nothing to time out */
    nfa_key_advance_in(nfa, k, time_ms, ctx);
    if (nfa_key_idle(k))
        return;
    /* Stands in for the event: the matcher reads an event's values only through its
     * conditions, which a blank skips, and takes no blank into a partial match
     * (nfa_takes_no_blank), so only the time is ever read. */
    Event stand_in = {.id = 0, .time_ms = time_ms, .line = "", .refs = 1};
    Decide d = decide_for(nfa, &stand_in, ctx);
    d.cache = NULL;
    d.blank = true;
    key_step(nfa, k, &d, &stand_in, ctx, false);
}

void nfa_key_event(const Nfa *nfa, NfaKey **key, Event *ev, NfaRunCtx *ctx)
{
    nfa_key_advance(nfa, key, ev->time_ms, ctx);
    NfaWork *w = ctx->work;
    Decide d = decide_for(nfa, ev, ctx);
    next_memo(w);   /* the start's conditions are then tested once */
    bool idle = !*key;
    if (idle) {
        if (!start_reacts(nfa, &d))
            return;
        *key = key_new(w);
        if (!*key) {
            drop_for_memory(ctx->counters, 1);
            return;
        }
    }
    key_step(nfa, *key, &d, ev, ctx, idle);
    settle_heap(key, w);
}

/* The cache's result for a group this event: 1, 0, or -1 if it has none. */
static int cached_group(NfaCondCache *c, uint32_t g)
{
    if (c->seen[g] != c->event)
        return -1;
    c->hits++;
    return c->vals[g] == 1;
}

/* The same for a condition slot of a rule (c may be NULL). */
static int cached_result(NfaCondCache *c, const uint32_t *ids, size_t slot)
{
    uint32_t g = c ? ids[slot] : NFA_NONE;
    return g == NFA_NONE ? -1 : cached_group(c, g);
}

static bool wake_test(const Nfa *nfa, Event *ev, NfaRunCtx *ctx, const CExpr *ce, size_t slot)
{
    Decide d = {.nfa = nfa,
                .ec = {.event = ev, .time_ms = ev->time_ms},
                .scratch = ctx->scratch,
                .cache = ctx->cond_ids ? ctx->cond_cache : NULL,
                .cache_ids = ctx->cond_ids,
                .w = ctx->work};
    return test_shared(&d, ce, slot);
}

/* The condition slots whose `where` decides whether the start state acts on an event
 * (it does iff one holds), or -1 when its edges are not that simple. */
static int start_slots(const Nfa *nfa, uint32_t slots[NFA_GATE_MAX])
{
    const NfaState *start = &nfa->states[nfa->start];
    if (start->n_edges > NFA_GATE_MAX)
        return -1;
    for (uint32_t i = 0; i < start->n_edges; i++) {
        const NfaEdge *e = &nfa->edges[start->first_edge + i];
        const NfaCond *c = &nfa->conds[e->cond];
        if (e->action == NFA_PROCEED || c->kind != NFA_C_WHERE)
            return -1;
        const NfaStep *st = &nfa->steps[c->step];
        if (!st->where || st->where_iter)
            return -1;
        slots[i] = 2 * c->step;
    }
    return (int)start->n_edges;
}

/* nfa_key_wakes without a gate: the start state's shape read from the Nfa. */
static bool wakes_by_nfa(const Nfa *nfa, Event *ev, NfaRunCtx *ctx)
{
    NfaCondCache *cache = ctx->cond_ids ? ctx->cond_cache : NULL;
    uint32_t slots[NFA_GATE_MAX];
    int n = start_slots(nfa, slots);
    for (int i = 0; i < n; i++) {
        int holds = cached_result(cache, ctx->cond_ids, slots[i]);
        if (holds < 0)
            holds = wake_test(nfa, ev, ctx, nfa->steps[slots[i] / 2].where, slots[i]);
        if (holds)
            return true;
    }
    return n < 0;   /* not the simple shape: the matcher decides */
}

bool nfa_key_wakes_from(const Nfa *nfa, Event *ev, NfaRunCtx *ctx, size_t i)
{
    const NfaWakeGate *gate = ctx->gate;
    if (!gate || !ctx->cond_cache)
        return wakes_by_nfa(nfa, ev, ctx);
    if (!gate->simple)
        return true;
    for (; i < gate->n; i++) {
        int holds = cached_group(ctx->cond_cache, gate->group[i]);
        if (holds < 0)
            holds = wake_test(nfa, ev, ctx, nfa->steps[gate->slot[i] / 2].where, gate->slot[i]);
        if (holds)
            return true;
    }
    return false;
}

int64_t nfa_key_deadline(const Nfa *nfa, const NfaKey *key)
{
    return key ? key_deadline(nfa, key) : INT64_MAX;
}

/* Advancing emits a match only from w->fresh (a pending state's run) or the held-back
 * list (release_matches); timed-out runs of other states only emit their timeout. */
bool nfa_key_end_only_timeouts(const Nfa *nfa, const NfaKey *key)
{
    if (!key)
        return true;
    if (nfa_key_n_done(key))
        return false;
    const Run *live = nfa_key_live_c(key);
    for (size_t i = 0; i < key->n_live; i++)
        if (nfa->states[live[i].state].kind == NFA_ST_PENDING)
            return false;
    return true;
}

/* timed_out's test at INT64_MAX: a run whose deadline is INT64_MAX never times out. */
size_t nfa_key_end_timeouts(const Nfa *nfa, const NfaKey *key)
{
    if (!key)
        return 0;
    if (nfa->within_ms > 0)
        return key->n_live;   /* the pattern's within bounds every run: no event to read */
    size_t n = 0;
    const Run *live = nfa_key_live_c(key);
    for (size_t i = 0; i < key->n_live; i++)
        n += run_due(nfa, &live[i]) != INT64_MAX;
    return n;
}

void nfa_key_free(NfaKey *key, NfaCounters *counters)
{
    if (!key)
        return;
    nfa_key_clear(key, counters);
    free(key);
}

void nfa_key_clear(NfaKey *key, NfaCounters *counters)
{
    if (counters)
        counters->partials_live -= key->n_live;
    key_release(key);
}

void nfa_key_move_in(NfaKey *into, NfaKey *from)
{
    if (!from)
        return;
    *into = *from;   /* the inline run moves with it; arrays change owner */
    free(from);
}

void nfa_key_prefetch(const NfaKey *key, bool deep)
{
    if (!key || !key->n_live)
        return;
    const Run *r = &nfa_key_live_c(key)[0];
    const MatchNode *node = r->last;
    if (!deep) {
        __builtin_prefetch(node, 1);   /* its count changes whatever happens */
        __builtin_prefetch(r->start);  /* the rule's within counts from its time */
        return;
    }
    __builtin_prefetch(node->event, 1);
    if (node->prev)
        __builtin_prefetch(node->prev, 1);
}

NfaKey *nfa_key_new_empty(const Nfa *nfa)
{
    (void)nfa;
    return key_new(NULL);
}

bool nfa_key_adopt(NfaKey *key, RunList *live, RunList *done)
{
    if (live->n > 1 || done->n) {
        if (!key_grow(key, live->n > 2 ? live->n : 2))
            return false;
        memcpy(key->live.more->v, live->v, live->n * sizeof *live->v);
        key->live.more->done = *done;
        *done = (RunList){0};
    } else if (live->n == 1) {
        key->live.one = live->v[0];
    }
    key->n_live = (uint32_t)live->n;
    free(live->v);
    *live = (RunList){0};
    return true;
}

/* ---- conditions shared across rules ------------------------------------------- */

typedef struct CondRef {
    const char *text;
    const CExpr *ce;
    size_t rule, slot;
    bool gate;             /* decides whether the rule's start state acts */
} CondRef;

static bool in_gate(const Nfa *nfa, size_t slot)
{
    uint32_t slots[NFA_GATE_MAX];
    int n = start_slots(nfa, slots);
    for (int i = 0; i < n; i++)
        if (slots[i] == slot)
            return true;
    return false;
}

static int cmp_cond_text(const void *a, const void *b)
{
    const CondRef *x = a, *y = b;
    int c = strcmp(x->text, y->text);
    if (c)
        return c;
    return x->rule != y->rule ? (x->rule < y->rule ? -1 : 1) : (x->slot > y->slot) - (x->slot < y->slot);
}

/* Every shareable condition: compiled, with text, reading only the event. */
static size_t shareable(const Nfa *const *nfas, size_t n, CondRef *out)
{
    size_t count = 0;
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < nfas[r]->n_steps; i++) {
            const NfaStep *st = &nfas[r]->steps[i];
            if (st->where && !st->where_iter && st->where_text) {
                if (out)
                    out[count] = (CondRef){st->where_text, st->where, r, 2 * i,
                                           in_gate(nfas[r], 2 * i)};
                count++;
            }
            if (st->until && !st->until_iter && st->until_text) {
                if (out)
                    out[count] = (CondRef){st->until_text, st->until, r, 2 * i + 1, false};
                count++;
            }
        }
    return count;
}

/* ---- ladders ---- */

typedef struct RangeCond {
    size_t operand_len;    /* the operand is text[0 .. operand_len) */
    int op;                /* index in range_ops */
    double number;
} RangeCond;

static const char *const range_ops[] = {" >= ", " > ", " <= ", " < "};

static bool is_path_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.';
}

/* Is the canonical text `PATH OP NUMBER`? Only a plain field path: with anything
 * else around the comparison (`not`, `or`) the result need not be monotone. */
static bool range_cond(const char *text, RangeCond *rc)
{
    size_t i = 0;
    if (!is_path_char(text[0]) || (text[0] >= '0' && text[0] <= '9') || text[0] == '.')
        return false;
    while (is_path_char(text[i]))
        i++;
    for (int op = 0; op < 4; op++) {
        size_t len = strlen(range_ops[op]);
        if (strncmp(text + i, range_ops[op], len) != 0)
            continue;
        const char *num = text + i + len, *digits = num + (*num == '-');
        if (*digits < '0' || *digits > '9')
            return false;
        char *end;
        double v = strtod(num, &end);
        if (*end || v != v || v - v != 0)   /* trailing text, NaN or infinite */
            return false;
        *rc = (RangeCond){i, op, v};
        return true;
    }
    return false;
}

typedef struct Candidate {
    const char *text;
    RangeCond rc;
    uint32_t group;
    const CExpr *ce;
} Candidate;

static int cmp_candidate(const void *a, const void *b)
{
    const Candidate *x = a, *y = b;
    size_t n = x->rc.operand_len < y->rc.operand_len ? x->rc.operand_len : y->rc.operand_len;
    int c = memcmp(x->text, y->text, n);
    if (c)
        return c;
    if (x->rc.operand_len != y->rc.operand_len)
        return x->rc.operand_len < y->rc.operand_len ? -1 : 1;
    if (x->rc.op != y->rc.op)
        return x->rc.op < y->rc.op ? -1 : 1;
    if (x->rc.number != y->rc.number)
        return x->rc.number < y->rc.number ? -1 : 1;
    return (x->group > y->group) - (x->group < y->group);
}

static bool same_ladder(const Candidate *x, const Candidate *y)
{
    return x->rc.operand_len == y->rc.operand_len && x->rc.op == y->rc.op &&
           memcmp(x->text, y->text, x->rc.operand_len) == 0;
}

/* Fewer rungs gain nothing over evaluating each. */
#define LADDER_MIN 3

/* Turns runs of candidates (sorted) into ladders. False on allocation failure. */
static bool build_ladders(NfaCondShare *sh, const Candidate *cand, size_t n)
{
    sh->rungs = malloc((n ? n : 1) * sizeof *sh->rungs);
    sh->ladders = malloc((n / LADDER_MIN + 1) * sizeof *sh->ladders);
    if (!sh->rungs || !sh->ladders)
        return false;
    size_t n_rungs = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same_ladder(&cand[i], &cand[j]))
            j++;
        if (j - i >= LADDER_MIN) {
            Ladder *l = &sh->ladders[sh->n_ladders];
            *l = (Ladder){(uint32_t)n_rungs, (uint32_t)(j - i), cand[i].rc.op >= 2};
            for (size_t k = i; k < j; k++) {
                sh->ladder_of[cand[k].group] = (uint32_t)sh->n_ladders;
                sh->rungs[n_rungs++] = (Rung){cand[k].rc.number, cand[k].group, cand[k].ce};
            }
            sh->n_ladders++;
        }
        i = j;
    }
    return true;
}

/* Runs of equal text that span two places or more become groups, and so does every
 * text that may join a ladder or that a wake gate reads; the ladders are then built
 * over those groups. False on allocation failure. */
static bool assign_groups(NfaCondShare *sh, const CondRef *refs, size_t n)
{
    Candidate *cand = malloc((n ? n : 1) * sizeof *cand);
    if (!cand)
        return false;
    size_t n_cand = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(refs[j].text, refs[i].text) == 0)
            j++;
        RangeCond rc;
        bool range = range_cond(refs[i].text, &rc), gate = false;
        for (size_t k = i; k < j; k++)
            gate |= refs[k].gate;
        if (j - i > 1 || range || gate) {
            for (size_t k = i; k < j; k++)
                sh->ids[refs[k].rule][refs[k].slot] = (uint32_t)sh->n_groups;
            if (range)
                cand[n_cand++] = (Candidate){refs[i].text, rc, (uint32_t)sh->n_groups, refs[i].ce};
            sh->n_groups++;
        }
        i = j;
    }
    qsort(cand, n_cand, sizeof *cand, cmp_candidate);
    sh->ladder_of = malloc((sh->n_groups ? sh->n_groups : 1) * sizeof *sh->ladder_of);
    bool ok = sh->ladder_of != NULL;
    for (size_t g = 0; ok && g < sh->n_groups; g++)
        sh->ladder_of[g] = NFA_NONE;
    ok = ok && build_ladders(sh, cand, n_cand);
    free(cand);
    return ok;
}

/* Renumbers the groups so that each ladder's rungs have consecutive numbers in rung
 * order, the other groups after them (climb relies on it). False on allocation
 * failure. */
static bool ladder_groups_adjacent(NfaCondShare *sh, const Nfa *const *nfas)
{
    size_t n = sh->n_groups ? sh->n_groups : 1;
    uint32_t *to = malloc(n * sizeof *to);
    uint32_t *ladder_of = malloc(n * sizeof *ladder_of);
    if (!to || !ladder_of) {
        free(to);
        free(ladder_of);
        return false;
    }
    for (size_t g = 0; g < sh->n_groups; g++)
        to[g] = NFA_NONE;
    uint32_t next = 0;
    for (size_t l = 0; l < sh->n_ladders; l++)
        for (uint32_t i = 0; i < sh->ladders[l].n; i++)
            to[sh->rungs[sh->ladders[l].first + i].group] = next++;
    for (size_t g = 0; g < sh->n_groups; g++)
        if (to[g] == NFA_NONE)
            to[g] = next++;
    for (size_t g = 0; g < sh->n_groups; g++)
        ladder_of[to[g]] = sh->ladder_of[g];
    for (size_t l = 0; l < sh->n_ladders; l++)
        for (uint32_t i = 0; i < sh->ladders[l].n; i++) {
            Rung *r = &sh->rungs[sh->ladders[l].first + i];
            r->group = to[r->group];
        }
    for (size_t r = 0; r < sh->n_rules; r++)
        for (size_t i = 0; i < 2 * nfas[r]->n_steps; i++)
            if (sh->ids[r][i] != NFA_NONE)
                sh->ids[r][i] = to[sh->ids[r][i]];
    free(sh->ladder_of);
    sh->ladder_of = ladder_of;
    free(to);
    return true;
}

/* A rule's gate: simple when every condition of its start state is in a group. */
static void build_gate(const Nfa *nfa, const uint32_t *ids, NfaWakeGate *g)
{
    int n = start_slots(nfa, g->slot);
    g->simple = n >= 0;
    g->n = (uint8_t)(n > 0 ? n : 0);
    for (int i = 0; i < n; i++) {
        g->group[i] = ids[g->slot[i]];
        g->simple &= g->group[i] != NFA_NONE;
    }
    const NfaEdge *e = &nfa->edges[nfa->states[nfa->start].first_edge];
    g->start_take = g->simple && g->n == 1 && nfa->n_aggs == 0 && start_take_plain(nfa, e) &&
                    nfa->states[e->source].step <= UINT16_MAX;
    g->take_step = g->start_take ? (uint16_t)nfa->states[e->source].step : 0;
    g->take_target = g->start_take ? e->target : 0;
    const NfaState *to = &nfa->states[g->take_target];
    g->take_pending = g->start_take && to->kind == NFA_ST_PENDING;
    g->times_known = g->start_take && nfa->within_ms <= INT32_MAX && to->within_ms <= INT32_MAX &&
                     nfa->within_ms >= INT32_MIN && to->within_ms >= INT32_MIN;
    g->within_ms = g->times_known ? (int32_t)nfa->within_ms : 0;
    g->take_within_ms = g->times_known ? (int32_t)to->within_ms : 0;
}

NfaCondShare *nfa_cond_share_new(const Nfa *const *nfas, size_t n)
{
    NfaCondShare *sh = calloc(1, sizeof *sh);
    if (!sh)
        return NULL;
    sh->n_rules = n;
    sh->ids = calloc(n ? n : 1, sizeof *sh->ids);
    size_t n_refs = shareable(nfas, n, NULL);
    CondRef *refs = malloc((n_refs ? n_refs : 1) * sizeof *refs);
    bool ok = sh->ids && refs;
    for (size_t r = 0; ok && r < n; r++) {
        size_t slots = 2 * nfas[r]->n_steps;
        sh->ids[r] = malloc((slots ? slots : 1) * sizeof *sh->ids[r]);
        ok = sh->ids[r] != NULL;
        for (size_t i = 0; ok && i < slots; i++)
            sh->ids[r][i] = NFA_NONE;
    }
    if (ok) {
        shareable(nfas, n, refs);
        qsort(refs, n_refs, sizeof *refs, cmp_cond_text);
        ok = assign_groups(sh, refs, n_refs) && ladder_groups_adjacent(sh, nfas);
    }
    if (ok)
        ok = (sh->gates = calloc(n ? n : 1, sizeof *sh->gates)) != NULL;
    for (size_t r = 0; ok && r < n; r++)
        build_gate(nfas[r], sh->ids[r], &sh->gates[r]);
    free(refs);
    if (!ok) {
        nfa_cond_share_free(sh);
        return NULL;
    }
    return sh;
}

void nfa_cond_share_free(NfaCondShare *share)
{
    if (!share)
        return;
    if (share->ids)
        for (size_t r = 0; r < share->n_rules; r++)
            free(share->ids[r]);
    free(share->ids);
    free(share->ladder_of);
    free(share->gates);
    free(share->rungs);
    free(share->ladders);
    free(share);
}

size_t nfa_cond_share_groups(const NfaCondShare *share)
{
    return share->n_groups;
}

size_t nfa_cond_share_ladders(const NfaCondShare *share)
{
    return share->n_ladders;
}

const NfaWakeGate *nfa_cond_share_gate(const NfaCondShare *share, size_t rule)
{
    return rule < share->n_rules ? &share->gates[rule] : NULL;
}

const uint32_t *nfa_cond_share_ids(const NfaCondShare *share, size_t rule)
{
    return rule < share->n_rules ? share->ids[rule] : NULL;
}

NfaCondCache *nfa_cond_cache_new(const NfaCondShare *share)
{
    NfaCondCache *c = lines_calloc(sizeof *c);
    if (!c)
        return NULL;
    c->share = share;
    size_t n = share->n_groups ? share->n_groups : 1;
    c->seen = lines_calloc_n(n, sizeof *c->seen);   /* 0: never; events count from 1 */
    c->vals = lines_calloc_n(n, sizeof *c->vals);
    if (!c->seen || !c->vals) {
        nfa_cond_cache_free(c);
        return NULL;
    }
    c->event = 1;
    return c;
}

void nfa_cond_cache_free(NfaCondCache *cache)
{
    if (!cache)
        return;
    free(cache->seen);
    free(cache->vals);
    free(cache);
}

void nfa_cond_cache_next_event(NfaCondCache *cache)
{
    cache->event++;
}

uint64_t nfa_cond_cache_hits(const NfaCondCache *cache)
{
    return cache->hits;
}
