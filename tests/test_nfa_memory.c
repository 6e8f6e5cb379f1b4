/* tests/test_nfa_memory.c — state does not outlive matches: many keys are driven
 * through complete two-step matches (a sliding window of keys in flight), then every
 * key must be NULL, the live counter 0, and every event referenced by the test
 * alone (so no MatchNode survives). VIGIL_TEST_SMALL shrinks the run for valgrind.
 * Also the matcher's memory layout (keys, their reuse, the stamped memo), the heap
 * cost per key, and the shared-condition ladders that save evaluations. */
#include <check.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/diag.h"
#include "dsl/parse.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "nfa/nfa.h"
#include "nfa/nfa_internal.h"
#include "nfa/snapshot.h"
#include "runtime/decode.h"
#include "tests/test_nfa_harness.h"
#include "tests/checkmain.h"

#define WINDOW 1000

typedef struct World {
    RuleSet *rs;
    FieldTable ft;
    Decoder *dec;
    Nfa *nfa;
    EvalScratch *scratch;
    NfaLimits limits;
    NfaCounters counters;
    NfaWork *work;
    NfaRunCtx ctx;
    uint64_t matches;
    uint64_t next_id;
} World;

static void count_match(void *user, const NfaResult *r)
{
    World *w = user;
    if (r->kind == NFA_MATCH && r->last && r->last->prev)
        w->matches++;
}

static void world_init(World *w, const char *rule)
{
    memset(w, 0, sizeof *w);
    Diags d;
    diags_init(&d);
    w->rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(w->rs);
    dsl_parse_text(w->rs, "mem.cep", rule, strlen(rule), &d);
    dsl_check(w->rs, &d);
    ck_assert_uint_eq(d.errors, 0);
    diags_free(&d);
    field_table_init(&w->ft);
    ExprEnv env = {.fields = &w->ft, .rule = &w->rs->rules[0]};
    char *err = NULL;
    w->nfa = nfa_compile(&w->rs->rules[0], &env, &err);
    ck_assert_msg(w->nfa != NULL, "%s", err ? err : "?");
    w->dec = decoder_new(&w->ft, DECODE_MAX_DEPTH);
    w->scratch = expr_scratch_new();
    const Nfa *nfas[] = {w->nfa};
    w->work = nfa_work_new(nfas, 1);
    ck_assert(w->dec && w->scratch && w->work);
    w->ctx = (NfaRunCtx){.work = w->work,
                         .scratch = w->scratch,
                         .limits = &w->limits,
                         .counters = &w->counters,
                         .sink = {.emit = count_match, .user = w}};
}

static void world_free(World *w)
{
    nfa_work_free(w->work);
    nfa_free(w->nfa);
    decoder_free(w->dec);
    expr_scratch_free(w->scratch);
    field_table_free(&w->ft);
    ast_ruleset_free(w->rs);
}

static Event *make_event(World *w, const char *n, int64_t ms)
{
    char line[64];
    int len = snprintf(line, sizeof line, "{\"n\":\"%s\",\"k\":%lld}", n, (long long)ms);
    DecodeError de;
    Event *ev = decoder_decode(w->dec, line, (size_t)len, &de);
    if (!ev)
        ck_abort_msg("decode failed: %s", de.reason);
    ev->id = w->next_id++;
    ev->time_ms = ms;
    return ev;
}

static size_t n_keys(void)
{
    return getenv("VIGIL_TEST_SMALL") ? 20000 : 1000000;
}

START_TEST(test_keys_leave_no_state)
{
    World w;
    world_init(&w, "rule r { begin a where n == \"a\"; followed_by b where n == \"b\"; "
                   "on match alert \"m\"; }");
    size_t n = n_keys();
    NfaKey **keys = calloc(n, sizeof *keys);
    Event **firsts = calloc(WINDOW, sizeof *firsts);
    ck_assert(keys && firsts);
    size_t bad_key = 0, bad_refs = 0;
    for (size_t i = 0; i < n + WINDOW; i++) {
        if (i >= WINDOW) {
            size_t j = i - WINDOW;
            Event *b = make_event(&w, "b", (int64_t)i);
            nfa_key_event(w.nfa, &keys[j], b, &w.ctx);
            /* matched: the key is freed and only we hold the events (counted, not
             * asserted per key: every Check assertion costs a write to its pipe) */
            bad_key += keys[j] != NULL;
            bad_refs += b->refs != 1 || firsts[j % WINDOW]->refs != 1;
            event_release(b);
            event_release(firsts[j % WINDOW]);
        }
        if (i < n) {
            Event *a = make_event(&w, "a", (int64_t)i);
            nfa_key_event(w.nfa, &keys[i], a, &w.ctx);
            bad_key += keys[i] == NULL;
            bad_refs += a->refs != 2;                /* ours and one match node */
            firsts[i % WINDOW] = a;
        }
        expr_scratch_reset(w.scratch);
    }
    ck_assert_uint_eq(bad_key, 0);
    ck_assert_uint_eq(bad_refs, 0);
    ck_assert_uint_eq(w.matches, n);
    ck_assert_uint_eq(w.counters.partials_live, 0);
    ck_assert_uint_eq(w.counters.partials_dropped, 0);
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        left += keys[i] != NULL;
    ck_assert_uint_eq(left, 0);
    free(keys);
    free(firsts);
    world_free(&w);
}
END_TEST

/* Branching partial matches share prefixes: freeing the key releases them all. */
START_TEST(test_free_releases_shared_chains)
{
    World w;
    world_init(&w, "rule r { begin a where n == \"a\"; followed_by_any b where n == \"b\"; "
                   "followed_by_any c where n == \"c\"; on match alert \"m\"; }");
    NfaKey *key = NULL;
    Event *evs[6];
    const char *names[6] = {"a", "b", "b", "b", "x", "b"};
    for (int i = 0; i < 6; i++) {
        evs[i] = make_event(&w, names[i], i);
        nfa_key_event(w.nfa, &key, evs[i], &w.ctx);
    }
    ck_assert_uint_eq(nfa_key_partials(key), 5);   /* a, and a+b for four b's */
    ck_assert_uint_eq(w.counters.partials_live, 5);
    ck_assert_uint_eq(evs[0]->refs, 2);            /* one node for `a`, shared by all */
    nfa_key_free(key, &w.counters);
    ck_assert_uint_eq(w.counters.partials_live, 0);
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(evs[i]->refs, 1);
        event_release(evs[i]);
    }
    world_free(&w);
}
END_TEST

/* A key holds only what persists: one cache line with its first partial match inline;
 * an array only while it has more, and back inline when they are gone. A dead key goes
 * to the work's spares, and the next new key is that one. */
START_TEST(test_key_is_one_line_and_inline_until_it_branches)
{
    ck_assert_uint_le(sizeof(NfaKey), 48);
    World w;
    world_init(&w, "rule r { begin a where n == \"a\"; followed_by_any b where n == \"b\"; "
                   "followed_by c where n == \"c\"; on match alert \"m\"; }");
    NfaKey *key = NULL;
    const char *names[] = {"a", "b", "b", "c"};
    size_t partials[] = {1, 2, 3, 0}, caps[] = {1, 2, 4, 0};
    Event *evs[4];
    for (int i = 0; i < 4; i++) {
        evs[i] = make_event(&w, names[i], i);
        nfa_key_event(w.nfa, &key, evs[i], &w.ctx);
        ck_assert_uint_eq(nfa_key_partials(key), partials[i]);
        if (key)
            ck_assert_uint_eq(key->cap_live, caps[i]);
    }
    /* a+b+c, which (skip past_last_event, the default) prunes the rest: the key died */
    ck_assert_ptr_null(key);
    ck_assert_uint_eq(w.matches, 1);
    ck_assert_uint_eq(w.work->n_spare, 1);
    NfaKey *spare = w.work->spare[0];
    Event *a = make_event(&w, "a", 10);
    nfa_key_event(w.nfa, &key, a, &w.ctx);
    ck_assert_ptr_eq(key, spare);
    ck_assert_uint_eq(w.work->n_spare, 0);
    ck_assert_uint_eq(key->cap_live, 1);
    nfa_key_free(key, &w.counters);
    ck_assert_uint_eq(w.counters.partials_live, 0);
    event_release(a);
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(evs[i]->refs, 1);
        event_release(evs[i]);
    }
    world_free(&w);
}
END_TEST

/* The condition memo is stamped, not cleared: when the stamp wraps, old results must
 * not pass for new ones (a stale `true` for b would match every event). */
/* A pool hands out 24-byte nodes from slabs, reuses released ones, mixes with
 * malloc'd nodes in one chain, and outlives its owner while nodes are held (a
 * rule-set swap frees the work before the keys that moved over release theirs). */
START_TEST(test_node_pool_reuses_and_outlives_owner)
{
    ck_assert_uint_eq(sizeof(MatchNode), 24);
    NodePool *pool = node_pool_new();
    ck_assert_ptr_nonnull(pool);
    Event *ev = event_new("{}", 2, 0);
    ck_assert_ptr_nonnull(ev);
    /* more nodes than one slab holds, in one chain behind a malloc'd root */
    MatchNode *root = match_node_new(NULL, ev, 0);
    ck_assert_ptr_nonnull(root);
    MatchNode *tip = root;
    enum { CHAIN = 6000 };
    for (int i = 0; i < CHAIN; i++) {
        MatchNode *n = node_pool_take(pool, tip, ev, 1);
        ck_assert_ptr_nonnull(n);
        ck_assert(n->pooled && n->refs == 1 && n->n_acc == 0 && n->step == 1);
        match_node_release(tip);   /* the chain holds it now */
        tip = n;
    }
    ck_assert_uint_eq(node_pool_live(pool), CHAIN);
    ck_assert_uint_eq(ev->refs, CHAIN + 2);
    ck_assert(!root->pooled);
    /* first nodes of one (event, step) are one node while it is held */
    MatchNode *first = node_pool_take(pool, NULL, ev, 2);
    ck_assert_ptr_eq(node_pool_take(pool, NULL, ev, 2), first);
    ck_assert_uint_eq(first->refs, 2);
    MatchNode *other = node_pool_take(pool, NULL, ev, 4);   /* another step: another node */
    ck_assert_ptr_ne(other, first);
    match_node_release(other);
    MatchNode *again = node_pool_take(pool, NULL, ev, 2);
    ck_assert_ptr_ne(again, first);   /* first is no longer the newest */
    match_node_release(again);
    match_node_release(first);
    match_node_release(first);
    ck_assert_uint_eq(node_pool_live(pool), CHAIN);
    /* the newest node released comes back first */
    MatchNode *extra = node_pool_take(pool, NULL, ev, 2);
    match_node_release(extra);
    ck_assert_ptr_eq(node_pool_take(pool, NULL, ev, 3), extra);
    ck_assert_uint_eq(extra->step, 3);
    match_node_release(extra);
    /* the owner lets go; the chain still works and frees the pool with its end */
    node_pool_free(pool);
    ck_assert_uint_eq(tip->prev->refs, 1);
    match_node_release(tip);
    ck_assert_uint_eq(ev->refs, 1);
    event_release(ev);
    node_pool_free(NULL);
}
END_TEST

/* Nodes per 16 KiB slab, about: the test takes many slabs' worth. */
#define NODES_PER_SLAB ((16384 - 64) / 24)

/* A pool gives back slabs that empty (a burst of partial matches must not pin its
 * peak for the life of the thread), keeping a bounded reserve; a slab that still
 * holds one node stays; and the pool keeps working on the slabs it kept. */
START_TEST(test_node_pool_gives_back_empty_slabs)
{
    NodePool *pool = node_pool_new();
    ck_assert_ptr_nonnull(pool);
    Event *ev = event_new("{}", 2, 0);
    ck_assert_ptr_nonnull(ev);
    enum { SLABS = 12, N = SLABS * NODES_PER_SLAB };
    MatchNode **nodes = calloc(N, sizeof *nodes);
    ck_assert_ptr_nonnull(nodes);
    for (size_t i = 0; i < N; i++) {
        nodes[i] = node_pool_take(pool, NULL, ev, (uint16_t)(i & 1));
        ck_assert_ptr_nonnull(nodes[i]);
    }
    ck_assert_uint_ge(node_pool_slabs(pool), SLABS);
    /* one node left in every slab: nothing can go */
    size_t peak = node_pool_slabs(pool);
    for (size_t i = 0; i < N; i++)
        if (i % NODES_PER_SLAB != 7) {
            match_node_release(nodes[i]);
            nodes[i] = NULL;
        }
    ck_assert_uint_eq(node_pool_slabs(pool), peak);
    /* the freed room is reused before any new slab */
    for (size_t i = 0; i < N; i++)
        if (!nodes[i])
            ck_assert_ptr_nonnull(nodes[i] = node_pool_take(pool, NULL, ev, (uint16_t)(i & 1)));
    ck_assert_uint_eq(node_pool_slabs(pool), peak);
    for (size_t i = 0; i < N; i++)
        match_node_release(nodes[i]);
    ck_assert_uint_eq(node_pool_live(pool), 0);
    ck_assert_uint_le(node_pool_slabs(pool), 2);
    /* a second burst, released newest first, leaves the same reserve */
    for (size_t i = 0; i < N; i++)
        ck_assert_ptr_nonnull(nodes[i] = node_pool_take(pool, NULL, ev, (uint16_t)(i & 1)));
    for (size_t i = N; i-- > 0;)
        match_node_release(nodes[i]);
    ck_assert_uint_le(node_pool_slabs(pool), 2);
    ck_assert_uint_eq(ev->refs, 1);
    free(nodes);
    node_pool_free(pool);
    event_release(ev);
}
END_TEST

/* A pool let go of by its owner (a reload's old work) keeps no spare room: each
 * slab goes as it empties, the current one too, so a long partial match left over
 * from the old rule set pins its own slab only. */
START_TEST(test_orphaned_pool_keeps_only_held_slabs)
{
    NodePool *pool = node_pool_new();
    ck_assert_ptr_nonnull(pool);
    Event *ev = event_new("{}", 2, 0);
    ck_assert_ptr_nonnull(ev);
    enum { N = 4 * NODES_PER_SLAB };
    MatchNode **nodes = calloc(N, sizeof *nodes);
    ck_assert_ptr_nonnull(nodes);
    for (size_t i = 0; i < N; i++)
        ck_assert_ptr_nonnull(nodes[i] = node_pool_take(pool, NULL, ev, (uint16_t)(i & 1)));
    ck_assert_uint_ge(node_pool_slabs(pool), 4);
    node_pool_free(pool);   /* nodes held: it lives on, and still answers */
    for (size_t i = 1; i < N; i++)
        match_node_release(nodes[i]);
    ck_assert_uint_eq(node_pool_live(pool), 1);
    ck_assert_uint_eq(node_pool_slabs(pool), 1);
    match_node_release(nodes[0]);   /* the pool goes with it (leak checkers see) */
    ck_assert_uint_eq(ev->refs, 1);
    free(nodes);
    event_release(ev);
}
END_TEST

/* Checkpoint stand-ins: an event's number is its id, looked up in a table. */
static uint64_t index_by_id(void *user, const Event *ev)
{
    (void)user;
    return ev->id;
}

static Event *lookup_by_id(void *user, uint64_t index)
{
    Event **evs = user;
    return index < 3 ? evs[index] : NULL;
}

/* A match held back by past_last_event while an earlier-started partial match is
 * pending moves a one-run key to its heap part (NfaKeyMore); a checkpoint of that
 * key restores the same runs (the live run's time comes from its node again); when
 * the earlier run times out both keys release the held match and end idle. */
START_TEST(test_held_back_match_survives_snapshot)
{
    World w;
    world_init(&w, "rule r { begin a where n == \"a\"; "
                   "followed_by b where n == \"b\" and k < a.k + 5; within 1s; "
                   "skip past_last_event; on match alert \"m\"; }");
    const char *names[] = {"a", "a", "b"};
    int64_t times[] = {0, 10, 12};
    Event *evs[3];
    NfaKey *key = NULL;
    for (int i = 0; i < 3; i++) {
        evs[i] = make_event(&w, names[i], times[i]);
        nfa_key_event(w.nfa, &key, evs[i], &w.ctx);
    }
    /* a@10 + b@12 completed, held while a@0 (12 < 0 + 5 fails) still waits */
    ck_assert_ptr_nonnull(key);
    ck_assert_uint_eq(w.matches, 0);
    ck_assert_uint_eq(key->n_live, 1);
    ck_assert_uint_gt(key->cap_live, 1);
    ck_assert_uint_eq(nfa_key_n_done(key), 1);
    ck_assert_int_eq(nfa_key_deadline(w.nfa, key), 1000);

    Buf b = BUF_INIT;
    ck_assert_int_eq(nfa_key_snapshot(w.nfa, key, &b, index_by_id, NULL), 0);
    SnapReader r;
    snap_reader_init(&r, b.data, b.len);
    NfaKey *copy = NULL;
    const char *err = NULL;
    ck_assert_int_eq(nfa_key_restore(w.nfa, &r, &copy, &w.counters, lookup_by_id, evs, &err), 0);
    ck_assert(snap_at_end(&r));
    buf_free(&b);
    ck_assert_ptr_nonnull(copy);
    ck_assert_uint_eq(copy->n_live, 1);
    ck_assert_uint_eq(nfa_key_n_done(copy), 1);
    ck_assert_int_eq(nfa_key_deadline(w.nfa, copy), 1000);
    ck_assert_int_eq(nfa_run_start_time(&nfa_key_live(copy)[0]), 0);
    ck_assert_int_eq(nfa_run_time(&nfa_key_live(copy)[0]), 0);
    ck_assert_int_eq(nfa_key_done_c(copy)[0].time, 12);
    ck_assert_int_eq(nfa_run_start_time(&nfa_key_done_c(copy)[0]), 10);

    nfa_key_advance(w.nfa, &key, 1000, &w.ctx);
    ck_assert_ptr_null(key);
    ck_assert_uint_eq(w.matches, 1);
    nfa_key_advance(w.nfa, &copy, 1000, &w.ctx);
    ck_assert_ptr_null(copy);
    ck_assert_uint_eq(w.matches, 2);
    ck_assert_uint_eq(w.counters.partials_live, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(evs[i]->refs, 1);
        event_release(evs[i]);
    }
    world_free(&w);
}
END_TEST

START_TEST(test_memo_stamp_wraps_cleanly)
{
    World w;
    world_init(&w, "rule r { begin a where n == \"a\"; followed_by b where n == \"b\"; "
                   "on match alert \"m\"; }");
    w.work->memo_now = UINT32_MAX - 2;
    NfaKey *key = NULL;
    const char *names[] = {"a", "b", "a", "x", "x", "x", "b"};
    for (int i = 0; i < 7; i++) {
        Event *ev = make_event(&w, names[i], i);
        nfa_key_event(w.nfa, &key, ev, &w.ctx);
        event_release(ev);
        expr_scratch_reset(w.scratch);
    }
    ck_assert_uint_lt(w.work->memo_now, 10);   /* it wrapped */
    ck_assert_uint_eq(w.matches, 2);
    ck_assert_ptr_null(key);
    world_free(&w);
}
END_TEST

/* Threshold ladders (rules that differ only in the number of `v > N`) answer from a
 * few evaluations by binary search: every result must be the one each rule gets on
 * its own, whatever v is (numbers on and between the thresholds, a string, null,
 * missing, a boolean). */
START_TEST(test_threshold_ladders_match_plain_evaluation)
{
    static const char *const conds[] = {
        "v > 1", "v > 2.5", "v > -3", "v > 10", "v > 2.5", "v > 0",
        "v >= 2", "v >= 3", "v >= 4", "v < 0", "v < 5", "v < 100",
        "v <= 5", "v <= -1", "v <= 7", "v > 1 or v < -100", "w > 1"};
    size_t n_conds = sizeof conds / sizeof *conds;
    char text[4096];
    size_t len = 0;
    for (size_t i = 0; i < n_conds; i++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "rule g%zu { begin a where %s; skip no_skip; "
                                "on match alert \"m\"; }\n", i, conds[i]);
    snprintf(text + len, sizeof text - len,
             "rule two { begin a where v > 1; followed_by b where v >= 3; skip no_skip; "
             "on match alert \"m\"; }\n");
    static const char *const events =
        "e1:x@1,v=5 e2:x@2,v=2.5 e3:x@3,v=3 e4:x@4,v=-3 e5:x@5,v=10 e6:x@6,v=100 "
        "e7:x@7,v=0 e8:x@8,v=-1 e9:x@9,v=7 e10:x@10,v=1e9 e11:x@11,v=\"3\" "
        "e12:x@12,v=null e13:x@13 e14:x@14,v=true e15:x@15,v=2.4999 e16:x@16,v=4 "
        "e17:x@17,v=-1000,w=2";
    char *err = NULL;
    NfaHarness *plain = nh_new(text, NH_WITH_RULE, 0, &err);
    ck_assert_msg(plain != NULL, "%s", err ? err : "?");
    NfaHarness *shared = nh_new(text, NH_WITH_RULE | NH_SHARE_CONDS, 0, &err);
    ck_assert_msg(shared != NULL, "%s", err ? err : "?");
    /* >: six numbers (2.5 twice: one group), >=, < and <= three each; `w > 1` and
     * the `or` are no rungs */
    ck_assert_uint_eq(nfa_cond_share_ladders(nh_share(shared)), 4);
    ck_assert(nh_feed_compact(plain, events, &err));
    ck_assert(nh_feed_compact(shared, events, &err));
    size_t n_results;
    char *diff = nh_same_results(plain, shared, &n_results);
    ck_assert_msg(diff == NULL, "shared conditions changed the results: %s", diff);
    ck_assert_uint_gt(n_results, 60);
    ck_assert_uint_gt(nfa_cond_cache_hits(nh_cache(shared)), 0);
    nh_free(plain);
    nh_free(shared);
}
END_TEST

/* ---- heap cost (the figures in nfa/SEMANTICS.md, section 10) -------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_PROBE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_PROBE 0
#endif
#endif
#ifndef HEAP_PROBE
#define HEAP_PROBE 1
#endif

/* A key in the caller's storage (as a partition entry holds it) goes through the same
 * lifecycle without any allocation of its own: idle when made, holding its first
 * partial match inline, arrays while it branches, idle and owning nothing after its
 * match; nfa_key_clear drops what it holds; nfa_key_move_in takes a heap key's
 * state (as a restore makes it). */
START_TEST(test_key_in_caller_storage)
{
    World w;
    world_init(&w, "rule r { begin a where n == \"a\"; followed_by_any b where n == \"b\"; "
                   "followed_by c where n == \"c\"; on match alert \"m\"; }");
    NfaKey key;
    nfa_key_init(&key);
    ck_assert(nfa_key_idle(&key));
    ck_assert_int_eq(nfa_key_deadline(w.nfa, &key), INT64_MAX);
    Event *x = make_event(&w, "x", 0);
    nfa_key_event_in(w.nfa, &key, x, &w.ctx);   /* starts nothing */
    ck_assert(nfa_key_idle(&key));
    const char *names[] = {"a", "b", "b", "c"};
    size_t partials[] = {1, 2, 3, 0}, caps[] = {1, 2, 4, 1};
    Event *evs[4];
    for (int i = 0; i < 4; i++) {
        evs[i] = make_event(&w, names[i], i + 1);
        nfa_key_event_in(w.nfa, &key, evs[i], &w.ctx);
        ck_assert_uint_eq(nfa_key_partials(&key), partials[i]);
        ck_assert_uint_eq(key.cap_live, caps[i]);
        ck_assert(nfa_key_idle(&key) == (partials[i] == 0));
    }
    ck_assert_uint_eq(w.matches, 1);
    ck_assert_uint_eq(nfa_key_n_done(&key), 0);
    ck_assert_int_eq(nfa_key_deadline(w.nfa, &key), INT64_MAX);
    ck_assert_uint_eq(w.work->n_spare, 0);          /* no heap key was ever made */
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(evs[i]->refs, 1);

    /* a branching key cleared: its array and nodes go, the counters follow */
    for (int i = 0; i < 3; i++)
        nfa_key_event_in(w.nfa, &key, evs[i], &w.ctx);
    ck_assert_uint_eq(nfa_key_partials(&key), 3);
    ck_assert_uint_eq(w.counters.partials_live, 3);
    nfa_key_clear(&key, &w.counters);
    ck_assert(nfa_key_idle(&key));
    ck_assert_uint_eq(key.cap_live, 1);
    ck_assert_uint_eq(w.counters.partials_live, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(evs[i]->refs, 1);

    /* a heap key's state moved in, then completed in place */
    NfaKey *heap = NULL;
    nfa_key_event(w.nfa, &heap, evs[0], &w.ctx);
    nfa_key_event(w.nfa, &heap, evs[1], &w.ctx);
    ck_assert_uint_eq(nfa_key_partials(heap), 2);
    nfa_key_move_in(&key, heap);
    nfa_key_move_in(&key, NULL);                     /* an idle heap key: nothing */
    ck_assert_uint_eq(nfa_key_partials(&key), 2);
    nfa_key_event_in(w.nfa, &key, evs[3], &w.ctx);
    ck_assert_uint_eq(w.matches, 2);
    ck_assert(nfa_key_idle(&key));
    ck_assert_uint_eq(w.counters.partials_live, 0);
    event_release(x);
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(evs[i]->refs, 1);
        event_release(evs[i]);
    }
    world_free(&w);
}
END_TEST

#define PROBE_N 20000

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Bytes per decoded event held (what a reorder buffer or a MatchNode keeps), per key
 * holding one partial match of a two-step rule, and per further partial match of a
 * key (events excluded from both), measured with glibc's mallinfo2 (allocator
 * overhead included). The bounds catch regressions. */
START_TEST(test_heap_per_partial_and_event)
{
    if (!HEAP_PROBE || getenv("VIGIL_TEST_SMALL")) {
        printf("heap probe skipped (sanitizer or valgrind run)\n");
        return;
    }
    World w;
    world_init(&w, "rule r { begin a where n == \"a\"; followed_by b where n == \"b\"; "
                   "on match alert \"m\"; }");
    NfaKey **keys = calloc(PROBE_N, sizeof *keys);
    Event **evs = calloc(2 * PROBE_N, sizeof *evs);
    ck_assert(keys && evs);
    size_t h0 = heap_in_use();
    for (size_t i = 0; i < 2 * PROBE_N; i++)
        evs[i] = make_event(&w, "a", (int64_t)i);
    size_t h1 = heap_in_use();
    for (size_t round = 0; round < 2; round++)
        for (size_t i = 0; i < PROBE_N; i++) {
            nfa_key_event(w.nfa, &keys[i], evs[round * PROBE_N + i], &w.ctx);
            expr_scratch_reset(w.scratch);
        }
    size_t h2 = heap_in_use();
    ck_assert_uint_eq(w.counters.partials_live, 2 * PROBE_N);
    for (size_t i = 0; i < PROBE_N; i++)
        nfa_key_free(keys[i], &w.counters);
    size_t h3 = heap_in_use();
    for (size_t i = 0; i < PROBE_N; i++) {
        keys[i] = NULL;
        nfa_key_event(w.nfa, &keys[i], evs[i], &w.ctx);
        expr_scratch_reset(w.scratch);
    }
    size_t h4 = heap_in_use();
    /* the same keys in caller storage: only the node is on the heap, from the pool
     * of a new work (the first one's holds the nodes freed above for reuse) */
    const Nfa *nfas[] = {w.nfa};
    NfaRunCtx fresh_ctx = w.ctx;
    fresh_ctx.work = nfa_work_new(nfas, 1);
    ck_assert_ptr_nonnull(fresh_ctx.work);
    NfaKey *inplace = calloc(PROBE_N, sizeof *inplace);
    ck_assert_ptr_nonnull(inplace);
    for (size_t i = 0; i < PROBE_N; i++)
        nfa_key_init(&inplace[i]);
    size_t h5 = heap_in_use();
    for (size_t i = 0; i < PROBE_N; i++) {
        nfa_key_event_in(w.nfa, &inplace[i], evs[PROBE_N + i], &fresh_ctx);
        expr_scratch_reset(w.scratch);
    }
    size_t h6 = heap_in_use();
    double per_inplace = ((double)h6 - (double)h5) / PROBE_N;
    double per_event = (double)(h1 - h0) / (2 * PROBE_N);
    double per_key1 = ((double)h4 - (double)h3) / PROBE_N;
    double per_more = ((double)(h2 - h1) - ((double)h4 - (double)h3)) / PROBE_N;
    printf("heap: %.1f B per event (line of %zu B, %u slots of %zu B, Event %zu B); "
           "%.1f B per key with one partial match, %.1f B per further partial match "
           "(MatchNode %zu B)\n",
           per_event, evs[0]->line_len, evs[0]->n_slots, sizeof(Value), sizeof(Event),
           per_key1, per_more, sizeof(MatchNode));
    printf("heap: %.1f B per key with one partial match in caller storage (NfaKey %zu B "
           "there)\n", per_inplace, sizeof(NfaKey));
    /* a pooled node has no malloc header: 24 B, plus a 16 KiB slab's rounding */
    ck_assert_msg(per_inplace <= 28, "%.1f B per key in caller storage", per_inplace);
    /* the key (one cache line) and its node, with malloc's headers */
    ck_assert_msg(per_key1 <= 128, "%.1f B per key with one partial match", per_key1);
    ck_assert_msg(per_more <= 160, "%.1f B per further partial match", per_more);
    ck_assert_msg(per_event <= 96 + 2 * evs[0]->line_len + evs[0]->n_slots * sizeof(Value),
                  "%.1f B per event", per_event);
    for (size_t i = 0; i < PROBE_N; i++) {
        nfa_key_free(keys[i], &w.counters);
        nfa_key_clear(&inplace[i], &w.counters);
    }
    nfa_work_free(fresh_ctx.work);
    free(inplace);
    for (size_t i = 0; i < 2 * PROBE_N; i++)
        event_release(evs[i]);
    free(keys);
    free(evs);
    world_free(&w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nfa_memory");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_keys_leave_no_state);
    tcase_add_test(tc, test_free_releases_shared_chains);
    tcase_add_test(tc, test_key_is_one_line_and_inline_until_it_branches);
    tcase_add_test(tc, test_memo_stamp_wraps_cleanly);
    tcase_add_test(tc, test_node_pool_reuses_and_outlives_owner);
    tcase_add_test(tc, test_node_pool_gives_back_empty_slabs);
    tcase_add_test(tc, test_orphaned_pool_keeps_only_held_slabs);
    tcase_add_test(tc, test_held_back_match_survives_snapshot);
    tcase_add_test(tc, test_key_in_caller_storage);
    tcase_add_test(tc, test_threshold_ladders_match_plain_evaluation);
    tcase_add_test(tc, test_heap_per_partial_and_event);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
