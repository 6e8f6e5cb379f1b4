/* nfa/snapshot.c — checkpoint encoding primitives and one key's matcher state;
 * see snapshot.h. The layout of a key:
 *   nodes: count, then per node (prev number + 1 or 0, event number, step), every
 *          node after its predecessor;
 *   live:  count, then per run (node, start_time, start_id, time, state); the time
 *          is that of the run's newest node, start_time and start_id those of its
 *          first node's event (written for older readers, not read);
 *   done:  the same for completed matches held back by a skip strategy (state 0:
 *          a completed match has none). */
#include "nfa/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "nfa/nfa_internal.h"

/* ---- primitives ------------------------------------------------------------------ */

void snap_put_u64(Buf *b, uint64_t v)
{
    char tmp[10];
    size_t n = 0;
    do {
        unsigned char byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = (char)(byte | (v ? 0x80 : 0));
    } while (v);
    buf_append(b, tmp, n);
}

void snap_put_i64(Buf *b, int64_t v)
{
    /* zigzag: small magnitudes of either sign stay short */
    uint64_t u = v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;
    snap_put_u64(b, u);
}

void snap_put_bytes(Buf *b, const void *data, size_t len)
{
    snap_put_u64(b, len);
    if (len)
        buf_append(b, data, len);
}

void snap_put_str(Buf *b, const char *s)
{
    snap_put_bytes(b, s ? s : "", s ? strlen(s) : 0);
}

void snap_reader_init(SnapReader *r, const void *data, size_t len)
{
    r->p = data;
    r->end = r->p + len;
    r->bad = false;
}

uint64_t snap_get_u64(SnapReader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; !r->bad; shift += 7) {
        if (r->p == r->end || shift > 63) {
            r->bad = true;
            break;
        }
        unsigned char byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    return 0;
}

int64_t snap_get_i64(SnapReader *r)
{
    uint64_t u = snap_get_u64(r);
    return (u & 1) ? (int64_t)~(u >> 1) : (int64_t)(u >> 1);
}

const char *snap_get_bytes(SnapReader *r, size_t *len)
{
    uint64_t n = snap_get_u64(r);
    if (r->bad || n > (uint64_t)(r->end - r->p)) {
        r->bad = true;
        *len = 0;
        return NULL;
    }
    const char *s = (const char *)r->p;
    r->p += n;
    *len = (size_t)n;
    return s;
}

size_t snap_get_count(SnapReader *r, size_t min_bytes)
{
    uint64_t n = snap_get_u64(r);
    if (min_bytes == 0)
        min_bytes = 1;
    if (r->bad || n > (uint64_t)(r->end - r->p) / min_bytes) {
        r->bad = true;
        return 0;
    }
    return (size_t)n;
}

/* ---- node numbering ---------------------------------------------------------------- */

/* Most keys hold a few nodes: their map lives on the stack, no allocation per key. */
#define NODE_SMALL 16

/* Node pointer -> number, open addressing; `order` lists the nodes by number. Each
 * array starts as the inline one and moves to the heap when it outgrows it. */
typedef struct NodeMap {
    const MatchNode **slots;
    uint32_t *nums;
    size_t cap;                  /* power of two, at most half full */
    const MatchNode **order;
    size_t n, order_cap;
    const MatchNode **stack;     /* scratch of number_chain */
    size_t stack_cap;
    const MatchNode *small_slots[2 * NODE_SMALL];
    uint32_t small_nums[2 * NODE_SMALL];
    const MatchNode *small_order[NODE_SMALL];
    const MatchNode *small_stack[NODE_SMALL];
} NodeMap;

static void node_map_init(NodeMap *m)
{
    memset(m->small_slots, 0, sizeof m->small_slots);
    m->slots = m->small_slots;
    m->nums = m->small_nums;
    m->cap = 2 * NODE_SMALL;
    m->order = m->small_order;
    m->order_cap = NODE_SMALL;
    m->n = 0;
    m->stack = m->small_stack;
    m->stack_cap = NODE_SMALL;
}

/* Doubles an array of `used` items that may still be the inline one; NULL on failure
 * (the old array is left as it was). */
static void *grow_array(void *v, const void *small, size_t used, size_t *cap, size_t size)
{
    size_t nc = *cap * 2;
    void *g = v == small ? malloc(nc * size) : realloc(v, nc * size);
    if (!g)
        return NULL;
    if (v == small)
        memcpy(g, small, used * size);
    *cap = nc;
    return g;
}

static size_t node_slot(const NodeMap *m, const MatchNode *n)
{
    uint64_t h = (uint64_t)(uintptr_t)n * UINT64_C(0x9E3779B97F4A7C15);
    size_t i = (size_t)(h >> 32) & (m->cap - 1);
    while (m->slots[i] && m->slots[i] != n)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static bool node_map_grow(NodeMap *m)
{
    size_t cap = m->cap * 2;
    const MatchNode **slots = calloc(cap, sizeof *slots);
    uint32_t *nums = calloc(cap, sizeof *nums);
    if (!slots || !nums) {
        free(slots);
        free(nums);
        return false;
    }
    const MatchNode **old_slots = m->slots;
    uint32_t *old_nums = m->nums;
    size_t old_cap = m->cap;
    m->slots = slots;
    m->nums = nums;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old_slots[i])
            continue;
        size_t j = node_slot(m, old_slots[i]);
        slots[j] = old_slots[i];
        nums[j] = old_nums[i];
    }
    if (old_slots != m->small_slots) {
        free(old_slots);
        free(old_nums);
    }
    return true;
}

static bool node_known(const NodeMap *m, const MatchNode *n)
{
    return m->slots[node_slot(m, n)] == n;
}

static uint32_t node_number(const NodeMap *m, const MatchNode *n)
{
    return m->nums[node_slot(m, n)];
}

static bool node_add(NodeMap *m, const MatchNode *n)
{
    if ((m->n + 1) * 2 > m->cap && !node_map_grow(m))
        return false;
    if (m->n == m->order_cap) {
        const MatchNode **o = grow_array(m->order, m->small_order, m->n, &m->order_cap,
                                         sizeof *o);
        if (!o)
            return false;
        m->order = o;
    }
    size_t i = node_slot(m, n);
    m->slots[i] = n;
    m->nums[i] = (uint32_t)m->n;
    m->order[m->n++] = n;
    return true;
}

static void node_map_free(NodeMap *m)
{
    if (m->slots != m->small_slots) {
        free(m->slots);
        free(m->nums);
    }
    if (m->order != m->small_order)
        free(m->order);
    if (m->stack != m->small_stack)
        free(m->stack);
}

/* Numbers the chain of `last` that is not numbered yet, oldest node first, so that a
 * node's predecessor always has the smaller number. */
static bool number_chain(NodeMap *m, const MatchNode *last)
{
    size_t depth = 0;
    for (const MatchNode *n = last; n && !node_known(m, n); n = n->prev) {
        if (depth == m->stack_cap) {
            const MatchNode **st = grow_array(m->stack, m->small_stack, depth, &m->stack_cap,
                                              sizeof *st);
            if (!st)
                return false;
            m->stack = st;
        }
        m->stack[depth++] = n;
    }
    while (depth > 0)
        if (!node_add(m, m->stack[--depth]))
            return false;
    return true;
}

/* ---- one key ------------------------------------------------------------------------ */

/* A partial match stores its state and derives its time; a completed one stores its
 * time and has no state (0 is written, any valid state is accepted). */
static void put_runs(Buf *out, const NodeMap *m, const Run *runs, size_t n, bool live)
{
    snap_put_u64(out, n);
    for (size_t i = 0; i < n; i++) {
        const Run *r = &runs[i];
        snap_put_u64(out, node_number(m, r->last));
        snap_put_i64(out, nfa_run_start_time(r));
        snap_put_u64(out, nfa_run_start_id(r));
        snap_put_i64(out, live ? nfa_run_time(r) : r->time);
        snap_put_u64(out, live ? r->state : 0);
    }
}

int nfa_key_snapshot(const Nfa *nfa, const NfaKey *key, Buf *out, SnapEventIndex index,
                     void *user)
{
    (void)nfa;
    if (!key) {
        snap_put_u64(out, 0);   /* nodes */
        snap_put_u64(out, 0);   /* live */
        snap_put_u64(out, 0);   /* done */
        return out->failed ? -1 : 0;
    }
    NodeMap m;
    node_map_init(&m);
    int rc = -1;
    const Run *live = nfa_key_live_c(key);
    const Run *done = nfa_key_done_c(key);
    size_t n_done = nfa_key_n_done(key);
    for (size_t i = 0; i < key->n_live; i++)
        if (!number_chain(&m, live[i].last))
            goto out;
    for (size_t i = 0; i < n_done; i++)
        if (!number_chain(&m, done[i].last))
            goto out;
    snap_put_u64(out, m.n);
    for (size_t i = 0; i < m.n; i++) {
        const MatchNode *n = m.order[i];
        uint64_t ev = index(user, n->event);
        if (ev == UINT64_MAX)
            goto out;
        snap_put_u64(out, n->prev ? (uint64_t)node_number(&m, n->prev) + 1 : 0);
        snap_put_u64(out, ev);
        snap_put_u64(out, n->step);
    }
    put_runs(out, &m, live, key->n_live, true);
    put_runs(out, &m, done, n_done, false);
    rc = out->failed ? -1 : 0;
out:
    node_map_free(&m);
    return rc;
}

/* Reads the nodes into nodes[] (each holding one reference). */
static const char *get_nodes(const Nfa *nfa, SnapReader *r, MatchNode **nodes, size_t n,
                             SnapEventLookup lookup, void *user)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t prev = snap_get_u64(r), ev_no = snap_get_u64(r), step = snap_get_u64(r);
        if (r->bad || prev > i || step >= nfa->n_steps)
            return "malformed match chain";
        Event *ev = lookup(user, ev_no);
        if (!ev)
            return "a match chain names an unknown event";
        /* nfa_node_new: the running aggregates are folded again as the chain grows */
        nodes[i] = nfa_node_new(nfa, prev ? nodes[prev - 1] : NULL, ev, (uint32_t)step);
        if (!nodes[i])
            return "out of memory";
    }
    return NULL;
}

static const char *get_runs(const Nfa *nfa, SnapReader *r, MatchNode **nodes, size_t n_nodes,
                            RunList *l, bool live)
{
    size_t n = snap_get_count(r, 5);
    if (r->bad)
        return "malformed run list";
    if (n == 0)
        return NULL;
    if (!(l->v = malloc(n * sizeof *l->v)))
        return "out of memory";
    l->cap = n;
    for (size_t i = 0; i < n; i++) {
        uint64_t node = snap_get_u64(r);
        Run run = {0};
        (void)snap_get_i64(r);              /* start_time and start_id: those of the */
        (void)snap_get_u64(r);              /* first node's event (one each: in order) */
        run.time = snap_get_i64(r);         /* a partial match's is its node's */
        uint64_t state = snap_get_u64(r);
        if (r->bad || node >= n_nodes || state >= nfa->n_states)
            return "malformed run";
        uint8_t kind = nfa->states[state].kind;
        if (live && kind != NFA_ST_NORMAL && kind != NFA_ST_PENDING)
            return "a partial match waits in a state where none can wait";
        if (live)
            run.state = (uint32_t)state;
        run.last = nodes[node];
        run.start = nfa_chain_first(run.last)->event;
        match_node_retain(run.last);
        l->v[l->n++] = run;
    }
    return NULL;
}

static void release_runs(RunList *l)
{
    for (size_t i = 0; i < l->n; i++)
        match_node_release(l->v[i].last);
    free(l->v);
}

/* A key holding live and done (either may be empty), which it takes; NULL if both
 * are empty. False on allocation failure (the lists are then still the caller's). */
static bool make_key(const Nfa *nfa, RunList *live, RunList *done, NfaKey **key)
{
    *key = NULL;
    if (!live->n && !done->n)
        return true;
    NfaKey *k = nfa_key_new_empty(nfa);
    if (!k || !nfa_key_adopt(k, live, done)) {
        nfa_key_free(k, NULL);
        return false;
    }
    *key = k;
    return true;
}

int nfa_key_restore(const Nfa *nfa, SnapReader *r, NfaKey **key, NfaCounters *counters,
                    SnapEventLookup lookup, void *user, const char **err)
{
    *key = NULL;
    size_t n_nodes = snap_get_count(r, 3);
    MatchNode **nodes = calloc(n_nodes ? n_nodes : 1, sizeof *nodes);
    RunList live = {0}, done = {0};
    const char *why = r->bad ? "malformed node count" : !nodes ? "out of memory" : NULL;
    if (!why)
        why = get_nodes(nfa, r, nodes, n_nodes, lookup, user);
    if (!why)
        why = get_runs(nfa, r, nodes, n_nodes, &live, true);
    if (!why)
        why = get_runs(nfa, r, nodes, n_nodes, &done, false);
    /* a completed match is held back only while a partial match started before it */
    if (!why && done.n && !live.n)
        why = "held-back matches with no partial match to wait for";
    if (!why && !make_key(nfa, &live, &done, key))
        why = "out of memory";
    if (*key)
        counters->partials_live += nfa_key_partials(*key);
    release_runs(&live);
    release_runs(&done);
    for (size_t i = 0; nodes && i < n_nodes && nodes[i]; i++)
        match_node_release(nodes[i]);
    free(nodes);
    if (why && err)
        *err = why;
    return why ? -1 : 0;
}
