/* nfa/match.c — the per-key matcher: partial matches, timeouts, skip strategies.
 *
 * Owns NfaKey: the live partial matches of one key (each a state plus a reference
 * to the newest MatchNode of its chain; branches share prefixes), the completed
 * matches held back by a skip strategy, and scratch reused across events so the
 * common path does not allocate. Semantics follow Flink's NFA (computeNextStates,
 * advanceTime, the after-match skip strategies); see SEMANTICS.md. */
#include "nfa/nfa.h"

#include <stdlib.h>
#include <string.h>

#include "nfa/nfa_internal.h"

#define LOCAL_EDGES 64
#define LOCAL_MEMO 64   /* memo bytes on the stack for an idle key: 32 steps */

/* ---- small helpers -------------------------------------------------------------- */

static int64_t add_sat(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    return a + b;
}

static int cmp_start(const Run *a, const Run *b)
{
    if (a->start_time != b->start_time)
        return a->start_time < b->start_time ? -1 : 1;
    if (a->start_id != b->start_id)
        return a->start_id < b->start_id ? -1 : 1;
    return 0;
}

static bool list_reserve(RunList *l, size_t extra)
{
    if (l->n + extra <= l->cap)
        return true;
    size_t nc = l->cap ? l->cap * 2 : 1;   /* most keys hold one partial match */
    while (nc < l->n + extra)
        nc *= 2;
    Run *v = realloc(l->v, nc * sizeof *v);
    if (!v)
        return false;
    l->v = v;
    l->cap = nc;
    return true;
}

/* Appends r, taking over its reference; on allocation failure the run is dropped. */
static void list_push(RunList *l, Run r, NfaCounters *c)
{
    if (!list_reserve(l, 1)) {
        match_node_release(r.last);
        c->partials_dropped++;
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

static size_t earliest(const RunList *l)
{
    size_t best = 0;
    for (size_t i = 1; i < l->n; i++)
        if (cmp_start(&l->v[i], &l->v[best]) < 0)
            best = i;
    return best;
}

static NfaKey *key_new(const Nfa *nfa)
{
    size_t memo = 2 * nfa->n_steps;
    NfaKey *k = calloc(1, sizeof *k + nfa->max_collect * sizeof(uint32_t) + memo);
    if (!k)
        return NULL;
    k->edges = (uint32_t *)(k + 1);
    k->memo = (int8_t *)(k->edges + nfa->max_collect);
    k->deadline = INT64_MAX;
    return k;
}

static void key_destroy(NfaKey *k)
{
    list_release_from(&k->live, 0);
    list_release_from(&k->next, 0);
    list_release_from(&k->done, 0);
    list_release_from(&k->fresh, 0);
    free(k->live.v);
    free(k->next.v);
    free(k->done.v);
    free(k->fresh.v);
    free(k);
}

/* ---- conditions ------------------------------------------------------------------ */

struct NfaCondShare {
    size_t n_rules;
    size_t n_groups;
    uint32_t **ids;        /* per rule: 2 per step (where, until): a group or NFA_NONE */
};

struct NfaCondCache {
    uint64_t event;        /* the current event's number; seen[g] == event: vals[g] holds */
    uint64_t *seen;
    int8_t *vals;
    uint64_t hits;
};

typedef struct Decide {
    const Nfa *nfa;
    EvalCtx ec;
    EvalScratch *scratch;
    NfaCondCache *cache;   /* NULL: no sharing across rules */
    const uint32_t *cache_ids;
    int8_t *memo;          /* NULL: no caching */
    uint32_t *edges;
    size_t n_edges;
    bool stopped;          /* a stop state was reached: the branch dies */
} Decide;

/* A non-iterative condition: from another rule's evaluation of the same text for
 * this event when the cache has it. */
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
    bool holds = expr_test(ce, &d->ec, d->scratch);
    c->seen[g] = c->event;
    c->vals[g] = holds;
    return holds;
}

static bool test_expr(Decide *d, const CExpr *ce, bool iterative, size_t slot)
{
    if (!ce)
        return true;
    if (iterative)
        return expr_test(ce, &d->ec, d->scratch);
    if (!d->memo)
        return test_shared(d, ce, slot);
    if (d->memo[slot] < 0)
        d->memo[slot] = test_shared(d, ce, slot) ? 1 : 0;
    return d->memo[slot] == 1;
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
    case NFA_C_WHERE: {
        const NfaStep *s = &d->nfa->steps[cd->step];
        return test_expr(d, s->where, s->where_iter, 2 * (size_t)cd->step);
    }
    case NFA_C_UNTIL: {
        const NfaStep *s = &d->nfa->steps[cd->step];
        return test_expr(d, s->until, s->until_iter, 2 * (size_t)cd->step + 1);
    }
    }
    return false;
}

/* Flink's decision graph: the take and ignore edges of `state` and of every state
 * reachable through proceed edges whose condition holds for this event. */
static void collect(Decide *d, uint32_t state)
{
    const NfaState *s = &d->nfa->states[state];
    for (uint32_t i = 0; i < s->n_edges; i++) {
        uint32_t ei = s->first_edge + i;
        const NfaEdge *e = &d->nfa->edges[ei];
        if (!cond_holds(d, e->cond))
            continue;
        if (e->action != NFA_PROCEED) {
            d->edges[d->n_edges++] = ei;
        } else if (d->nfa->states[e->target].kind == NFA_ST_STOP) {
            d->stopped = true;
        } else {
            collect(d, e->target);
        }
    }
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
static void follow_ignore(NfaKey *k, const Run *from, const NfaEdge *e, const Event *ev,
                          const Nfa *nfa, NfaCounters *c)
{
    match_node_retain(from->last);
    Run r = *from;
    if (nfa->states[e->target].kind == NFA_ST_FINAL) {
        r.time = ev->time_ms;
        list_push(&k->fresh, r, c);
    } else {
        r.state = e->target;
        list_push(&k->next, r, c);
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

/* A take edge: a new node (source state's step, event) extends the partial match. */
static void follow_take(Decide *d, NfaKey *k, const Run *from, const NfaEdge *e, Event *ev,
                        NfaCounters *c)
{
    const Nfa *nfa = d->nfa;
    uint32_t step = nfa->states[e->source].step;
    MatchNode *node = nfa_node_new(nfa, from ? from->last : NULL, ev, step);
    if (!node) {
        c->partials_dropped++;
        return;
    }
    Run r = {.last = node,
             .start_time = from ? from->start_time : ev->time_ms,
             .start_id = from ? from->start_id : ev->id,
             .time = ev->time_ms,
             .state = e->target};
    if (nfa->states[e->target].kind == NFA_ST_FINAL) {
        list_push(&k->fresh, r, c);
        return;
    }
    if (final_after_proceed(d, e->target)) {
        match_node_retain(node);
        list_push(&k->fresh, r, c);
    }
    list_push(&k->next, r, c);
}

/* The successors of one partial match (from == NULL: the start state) for `ev`,
 * appended to k->next and k->fresh. */
static void advance_run(Decide *d, NfaKey *k, const Run *from, Event *ev, NfaCounters *c)
{
    d->ec.match = from ? from->last : NULL;
    d->n_edges = 0;
    d->stopped = false;
    collect(d, from ? from->state : d->nfa->start);
    size_t mark = k->next.n;
    for (size_t i = 0; i < d->n_edges; i++) {
        const NfaEdge *e = &d->nfa->edges[d->edges[i]];
        if (e->action == NFA_TAKE)
            follow_take(d, k, from, e, ev, c);
        else if (from)   /* the start state never waits without an event */
            follow_ignore(k, from, e, ev, d->nfa, c);
    }
    if (d->stopped)
        list_release_from(&k->next, mark);   /* completed matches survive, as in Flink */
}

/* ---- timeouts and deadlines ------------------------------------------------------ */

/* Deadline of a partial match: rule within from its first event, step within from
 * its newest event; *expiry receives the one that has passed at `now`. */
static int64_t run_deadline(const Nfa *nfa, const Run *r, int64_t now, int64_t *expiry)
{
    int64_t d_first = nfa->within_ms > 0 ? add_sat(r->start_time, nfa->within_ms) : INT64_MAX;
    int64_t w = nfa->states[r->state].within_ms;
    int64_t d_step = w > 0 ? add_sat(r->time, w) : INT64_MAX;
    /* Flink reports the step-within expiry when both have passed */
    *expiry = w > 0 && now >= d_step ? d_step : d_first;
    return d_first < d_step ? d_first : d_step;
}

/* INT64_MAX means "no within": such a partial match never times out. */
static bool timed_out(const Nfa *nfa, const Run *r, int64_t now, int64_t *expiry)
{
    int64_t d = run_deadline(nfa, r, now, expiry);
    return d != INT64_MAX && now >= d;
}

static void update_deadline(const Nfa *nfa, NfaKey *k)
{
    int64_t best = INT64_MAX, unused;
    for (size_t i = 0; i < k->live.n; i++) {
        int64_t d = run_deadline(nfa, &k->live.v[i], INT64_MIN, &unused);
        if (d < best)
            best = d;
    }
    k->deadline = best;
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
    Run p = {.start_time = t, .start_id = id};
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        int cmp = cmp_start(&l->v[i], &p);
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
        c->partials_dropped++;
        return;
    }
    size_t i = l->n;
    while (i > 0 && cmp_start(&l->v[i - 1], &r) > 0)
        i--;
    memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof *l->v);
    l->v[i] = r;
    l->n++;
}

/* Emits completed matches. With no_skip at once; otherwise a match waits while a
 * partial match that started earlier is pending (all are released when flushing),
 * and each released match prunes partial and waiting matches. */
static void release_matches(const Nfa *nfa, NfaKey *k, NfaRunCtx *ctx, bool flush)
{
    if (nfa->skip == SKIP_NO_SKIP) {
        for (size_t i = 0; i < k->fresh.n; i++) {
            emit(ctx, NFA_MATCH, k->fresh.v[i].time, k->fresh.v[i].last);
            match_node_release(k->fresh.v[i].last);
        }
        k->fresh.n = 0;
        return;
    }
    for (size_t i = 0; i < k->fresh.n; i++)
        insert_sorted(&k->done, k->fresh.v[i], ctx->counters);
    k->fresh.n = 0;
    while (k->done.n > 0) {
        if (!flush && k->live.n > 0 &&
            cmp_start(&k->done.v[0], &k->live.v[earliest(&k->live)]) > 0)
            break;
        Run m = k->done.v[0];
        list_remove_at(&k->done, 0);
        int64_t t;
        uint64_t id;
        if (pruning_event(nfa, m.last, &t, &id)) {
            prune(nfa, &k->live, t, id, ctx->counters, true);
            prune(nfa, &k->done, t, id, ctx->counters, false);
        }
        emit(ctx, NFA_MATCH, m.time, m.last);
        match_node_release(m.last);
    }
}

/* Frees the key when it holds nothing: an idle key costs no memory. */
static void settle(const Nfa *nfa, NfaKey **key)
{
    NfaKey *k = *key;
    if (k->live.n == 0 && k->done.n == 0) {
        key_destroy(k);
        *key = NULL;
        return;
    }
    update_deadline(nfa, k);
}

/* ---- public API ------------------------------------------------------------------- */

void nfa_key_advance(const Nfa *nfa, NfaKey **key, int64_t time_ms, NfaRunCtx *ctx)
{
    NfaKey *k = *key;
    bool flush = time_ms == INT64_MAX;
    if (!k || (time_ms < k->deadline && !flush))
        return;
    k->fresh.n = 0;
    size_t w = 0;
    for (size_t i = 0; i < k->live.n; i++) {
        Run r = k->live.v[i];
        int64_t expiry;
        if (!timed_out(nfa, &r, time_ms, &expiry)) {
            k->live.v[w++] = r;
            continue;
        }
        ctx->counters->partials_live--;
        if (nfa->states[r.state].kind == NFA_ST_PENDING) {
            r.time = expiry;   /* a trailing not_followed_by completes when within elapses */
            list_push(&k->fresh, r, ctx->counters);
        } else {
            emit(ctx, NFA_TIMEOUT, expiry, r.last);
            match_node_release(r.last);
        }
    }
    k->live.n = w;
    if (flush) {
        /* end of input: partial matches without any within can never complete */
        ctx->counters->partials_live -= k->live.n;
        list_release_from(&k->live, 0);
    }
    release_matches(nfa, k, ctx, flush);
    settle(nfa, key);
}

/* The per-key cap: drops the oldest partial matches; true if it dropped any. */
static bool enforce_key_cap(NfaKey *k, NfaRunCtx *ctx)
{
    size_t max = ctx->limits ? ctx->limits->max_partials : 0;
    if (max == 0 || k->live.n <= max)
        return false;
    while (k->live.n > max) {
        size_t i = earliest(&k->live);
        match_node_release(k->live.v[i].last);
        list_remove_at(&k->live, i);
        ctx->counters->partials_dropped++;
        ctx->counters->partials_live--;
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
 * created for this event (k->next from `mark`), those beyond the room left are
 * released. `live_elsewhere` is the rule's live count without them. True if it
 * refused any. */
static bool enforce_rule_cap(NfaKey *k, size_t mark, uint64_t live_elsewhere, NfaRunCtx *ctx)
{
    uint64_t max = rule_cap(ctx);
    uint64_t room = live_elsewhere < max ? max - live_elsewhere : 0;
    size_t started = k->next.n - mark;
    if (started <= room)
        return false;
    size_t refused = started - (size_t)room;
    list_release_from(&k->next, mark + (size_t)room);
    ctx->counters->partials_refused += refused;
    ctx->counters->partials_dropped += refused;
    return true;
}

/* Does the start state act on this event at all? Lets an idle key skip allocation.
 * Results of non-iterative conditions land in d->memo (if any), for the real run. */
static bool start_reacts(const Nfa *nfa, Decide *d)
{
    uint32_t local[LOCAL_EDGES];
    if (nfa->max_collect > LOCAL_EDGES)
        return true;
    d->edges = local;
    d->ec.match = NULL;
    d->n_edges = 0;
    d->stopped = false;
    collect(d, nfa->start);
    d->edges = NULL;
    return d->n_edges > 0;
}

void nfa_key_event(const Nfa *nfa, NfaKey **key, Event *ev, NfaRunCtx *ctx)
{
    nfa_key_advance(nfa, key, ev->time_ms, ctx);
    Decide d = {.nfa = nfa,
                .ec = {.event = ev, .time_ms = ev->time_ms},
                .scratch = ctx->scratch,
                .cache = ctx->cond_ids ? ctx->cond_cache : NULL,
                .cache_ids = ctx->cond_ids};
    size_t memo_len = 2 * nfa->n_steps;
    int8_t first_memo[LOCAL_MEMO];
    bool memo_filled = false;
    if (!*key) {
        if (memo_len <= LOCAL_MEMO) {
            memset(first_memo, -1, memo_len);
            d.memo = first_memo;     /* the start's conditions are then tested once */
            memo_filled = true;
        }
        if (!start_reacts(nfa, &d))
            return;
        *key = key_new(nfa);
        if (!*key) {
            ctx->counters->partials_dropped++;
            return;
        }
    }
    NfaKey *k = *key;
    d.edges = k->edges;
    if (memo_filled)
        memcpy(k->memo, first_memo, memo_len);
    else
        memset(k->memo, -1, memo_len);
    d.memo = k->memo;
    k->next.n = 0;
    k->fresh.n = 0;
    size_t before = k->live.n;
    for (size_t i = 0; i < k->live.n; i++) {
        advance_run(&d, k, &k->live.v[i], ev, ctx->counters);
        match_node_release(k->live.v[i].last);
    }
    k->live.n = 0;
    size_t mark = k->next.n;
    advance_run(&d, k, NULL, ev, ctx->counters);
    bool hit = enforce_rule_cap(k, mark, ctx->counters->partials_live - before + mark, ctx);
    RunList tmp = k->live;
    k->live = k->next;
    k->next = tmp;
    ctx->counters->partials_live += k->live.n;
    ctx->counters->partials_live -= before;
    hit |= enforce_key_cap(k, ctx);
    ctx->counters->cap_hits += hit;
    release_matches(nfa, k, ctx, false);
    settle(nfa, key);
}

int64_t nfa_key_deadline(const NfaKey *key)
{
    return key ? key->deadline : INT64_MAX;
}

void nfa_key_free(NfaKey *key, NfaCounters *counters)
{
    if (!key)
        return;
    if (counters)
        counters->partials_live -= key->live.n;
    key_destroy(key);
}

size_t nfa_key_partials(const NfaKey *key)
{
    return key ? key->live.n : 0;
}

NfaKey *nfa_key_new_empty(const Nfa *nfa)
{
    return key_new(nfa);
}

void nfa_key_refresh_deadline(const Nfa *nfa, NfaKey *key)
{
    update_deadline(nfa, key);
}

/* ---- conditions shared across rules ------------------------------------------- */

typedef struct CondRef {
    const char *text;
    size_t rule, slot;
} CondRef;

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
                    out[count] = (CondRef){st->where_text, r, 2 * i};
                count++;
            }
            if (st->until && !st->until_iter && st->until_text) {
                if (out)
                    out[count] = (CondRef){st->until_text, r, 2 * i + 1};
                count++;
            }
        }
    return count;
}

/* Runs of equal text that span two places or more become groups. */
static void assign_groups(NfaCondShare *sh, const CondRef *refs, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(refs[j].text, refs[i].text) == 0)
            j++;
        if (j - i > 1) {
            for (size_t k = i; k < j; k++)
                sh->ids[refs[k].rule][refs[k].slot] = (uint32_t)sh->n_groups;
            sh->n_groups++;
        }
        i = j;
    }
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
    if (!ok) {
        free(refs);
        nfa_cond_share_free(sh);
        return NULL;
    }
    shareable(nfas, n, refs);
    qsort(refs, n_refs, sizeof *refs, cmp_cond_text);
    assign_groups(sh, refs, n_refs);
    free(refs);
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
    free(share);
}

size_t nfa_cond_share_groups(const NfaCondShare *share)
{
    return share->n_groups;
}

const uint32_t *nfa_cond_share_ids(const NfaCondShare *share, size_t rule)
{
    return rule < share->n_rules ? share->ids[rule] : NULL;
}

NfaCondCache *nfa_cond_cache_new(const NfaCondShare *share)
{
    NfaCondCache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    size_t n = share->n_groups ? share->n_groups : 1;
    c->seen = calloc(n, sizeof *c->seen);   /* 0: never; events count from 1 */
    c->vals = calloc(n, sizeof *c->vals);
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
