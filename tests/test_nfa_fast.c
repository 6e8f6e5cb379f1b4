/* tests/test_nfa_fast.c — the matcher's fast paths against its general path.
 *
 * The matcher (nfa/match.c) takes shortcuts for the common shapes: a start whose one
 * decision is a take into a plain state goes straight into the key (from the wake
 * gate, or from the Nfa), an edge whose condition (`where` or `not where`) the shared
 * cache already decided is read without the general evaluation, and a key with one
 * partial match whose one decision is plain (an ignore, a take, a take that completes)
 * while the start acts on nothing moves on in place. Each shortcut must give exactly
 * what the general path gives, which a work told nfa_work_set_general_only always
 * takes.
 *
 * Generated cases (a seeded xorshift, so a failure reproduces): rule sets of three
 * rules whose steps draw their conditions from a small pool (shared texts, a ladder
 * `v > 0`, `v > 1`, `v > 2`, conditions reading the partial match), over step kinds
 * that reach each shortcut and each way around it (one step, next, followed_by,
 * followed_by_any, loops, optional starts and tails, not_next, a trailing
 * not_followed_by), every skip strategy, per-key and per-rule caps, a few keys per
 * rule, the wake test asked or not before an idle key runs, undue events and timers.
 * Two sides run the same calls, one with the fast paths and one without; after every
 * call the results (in order), each key's partial matches and deadline, each rule's
 * counters and the cache's hits must agree, and so at the end of input. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "nfa/nfa.h"
#include "nfa/nfa_internal.h"
#include "runtime/decode.h"
#include "tests/checkmain.h"
#include "tests/nfadiff.h"
#include "tests/testutil.h"

#define RULES 3
#define KEYS 3

static unsigned pick(uint64_t *x, unsigned n)
{
    return nfadiff_pick(x, n);
}

/* ---- the rule generator ------------------------------------------------------------ */

/* Conditions: equal texts across rules share a cache group, the `v >` ones form a
 * ladder, and `v == a.v` reads the partial match (never cached). */
static const char *const conds[] = {
    "type == \"a\"", "type == \"b\"", "type != \"c\"", "v > 0", "v > 1", "v > 2",
    "type == \"a\" and v > 0", "v == a.v",
};

static const char *cond(uint64_t *x, bool first)
{
    return conds[pick(x, first ? 7 : 8)];   /* a first step reads no earlier step */
}

static const char *const skips[] = {"", "skip no_skip; ", "skip to_next; ",
                                    "skip past_last_event; ", "skip to_first a; ",
                                    "skip to_last a; "};

#define N_KINDS 16

static void put_pattern(Buf *b, uint64_t *x)
{
    const char *a = cond(x, true);
    const char *c1 = cond(x, false), *c2 = cond(x, false);
    unsigned w = 1 + pick(x, 3);
    switch (pick(x, N_KINDS)) {
    case 0:   /* one step: the start's take completes at once */
        buf_printf(b, "begin a where %s; ", a);
        break;
    case 1:   /* a take and an ignore edge in the second state */
        buf_printf(b, "begin a where %s; followed_by b where %s; within %us; ", a, c1, w);
        break;
    case 2:
        buf_printf(b, "begin a where %s; next b where %s; within %us; ", a, c1, w);
        break;
    case 3:
        buf_printf(b, "begin a where %s; followed_by_any b where %s; followed_by c where %s; "
                   "within %us; ", a, c1, c2, w);
        break;
    case 4:   /* a start that takes and proceeds */
        buf_printf(b, "begin a where %s times 1..2; followed_by b where %s; within %us; ", a,
                   c1, w);
        break;
    case 5:   /* an optional tail: a take that completes through a proceed */
        buf_printf(b, "begin a where %s; followed_by b where %s optional; within %us; ", a, c1,
                   w);
        break;
    case 6:
        buf_printf(b, "begin a where %s; not_next c where %s; followed_by b where %s; "
                   "within %us; ", a, c1, c2, w);
        break;
    case 7:   /* a pending state */
        buf_printf(b, "begin a where %s; not_followed_by c where %s; within %us; ", a, c1, w);
        break;
    case 8:
        buf_printf(b, "begin a where %s times 2%s; followed_by b where %s; within %us; ", a,
                   pick(x, 2) ? " consecutive" : "", c1, w);
        break;
    case 10:   /* an optional start: a take and, through a proceed, another */
        buf_printf(b, "begin a where %s optional; followed_by b where %s; within %us; ", a, c1,
                   w);
        break;
    case 11:
        buf_printf(b, "begin a where %s times 0..2; next b where %s; within %us; ", a, c1, w);
        break;
    case 12:   /* the start's take under `not until and where` */
        buf_printf(b, "begin a where %s one_or_more until %s; followed_by b where %s; "
                   "within %us; ", a, cond(x, true), c1, w);
        break;
    case 13:   /* a live run's take into a state that proceeds to the end */
        buf_printf(b, "begin a where %s; followed_by b where %s; "
                   "followed_by c where %s optional; within %us; ", a, c1, c2, w);
        break;
    case 14:   /* a start into a state with its own within, and no rule within */
        buf_printf(b, "begin a where %s; followed_by b within %us where %s; ", a, w, c1);
        break;
    default:   /* a step without where: `true` edges; within per step */
        buf_printf(b, "begin a; followed_by b within 1s where %s; ", c1);
        break;
    }
}

static char *rules_text(uint64_t *x)
{
    Buf b = BUF_INIT;
    buf_puts(&b, "time ts epoch_ms;\n");
    for (int r = 0; r < RULES; r++) {
        buf_printf(&b, "rule r%d { ", r);
        put_pattern(&b, x);
        buf_puts(&b, skips[pick(x, sizeof skips / sizeof skips[0])]);
        buf_puts(&b, "on match alert \"m\"; }\n");
    }
    ck_assert(!b.failed);
    return buf_steal(&b);
}

/* ---- the rules, compiled once per case and shared by both sides -------------------- */

typedef struct Rig {
    RuleSet *rs;
    FieldTable ft;
    Decoder *dec;
    Nfa *nfas[RULES];
    NfaCondShare *share;
    NfaLimits limits;
} Rig;

static void rig_open(Rig *g, const char *text)
{
    memset(g, 0, sizeof *g);
    field_table_init(&g->ft);
    g->rs = test_parse_checked(text);   /* fails the test on a diagnostic */
    ck_assert_uint_eq(g->rs->n_rules, RULES);
    for (int r = 0; r < RULES; r++) {
        ExprEnv env = {.fields = &g->ft, .rule = &g->rs->rules[r]};
        char *err = NULL;
        g->nfas[r] = nfa_compile(&g->rs->rules[r], &env, &err);
        ck_assert_msg(g->nfas[r] != NULL, "%s: %s", text, err ? err : "?");
    }
    g->share = nfa_cond_share_new((const Nfa *const *)g->nfas, RULES);
    g->dec = decoder_new(&g->ft, DECODE_MAX_DEPTH);
    ck_assert(g->share && g->dec);
}

static void rig_close(Rig *g)
{
    for (int r = 0; r < RULES; r++)
        nfa_free(g->nfas[r]);
    nfa_cond_share_free(g->share);
    decoder_free(g->dec);
    field_table_free(&g->ft);
    ast_ruleset_free(g->rs);
}

/* ---- one side: its work, cache, keys, counters and what it emitted ------------------ */

typedef struct Side {
    const Rig *rig;
    NfaWork *work;
    NfaCondCache *cache;
    EvalScratch *scratch;
    NfaKey keys[RULES][KEYS];
    NfaCounters counters[RULES];
    Buf log;               /* every result so far, in order, one per line */
} Side;

static void log_result(void *user, const NfaResult *r)
{
    Side *s = user;
    nfadiff_log_result(&s->log, r);
}

static void side_open(Side *s, const Rig *g, bool general)
{
    memset(s, 0, sizeof *s);
    s->rig = g;
    s->log = (Buf)BUF_INIT;
    s->work = nfa_work_new((const Nfa *const *)g->nfas, RULES);
    s->cache = nfa_cond_cache_new(g->share);
    s->scratch = expr_scratch_new();
    ck_assert(s->work && s->cache && s->scratch);
    nfa_work_set_general_only(s->work, general);
    for (int r = 0; r < RULES; r++)
        for (int k = 0; k < KEYS; k++)
            nfa_key_init(&s->keys[r][k]);
}

static void side_close(Side *s)
{
    for (int r = 0; r < RULES; r++)
        for (int k = 0; k < KEYS; k++)
            nfa_key_clear(&s->keys[r][k], &s->counters[r]);
    nfa_work_free(s->work);
    nfa_cond_cache_free(s->cache);
    expr_scratch_free(s->scratch);
    buf_free(&s->log);
}

static NfaRunCtx side_ctx(Side *s, int r, bool shared)
{
    NfaRunCtx c = {.work = s->work, .scratch = s->scratch, .limits = &s->rig->limits,
                   .counters = &s->counters[r], .sink = {log_result, s}};
    if (shared) {
        c.cond_cache = s->cache;
        c.cond_ids = nfa_cond_share_ids(s->rig->share, (size_t)r);
        c.gate = nfa_cond_share_gate(s->rig->share, (size_t)r);
    }
    return c;
}

/* ---- what both sides are asked, decided once ---------------------------------------- */

typedef struct Call {
    int rule, key;
    bool shared;           /* the rule reads the cache */
    bool ask_wakes;        /* an idle key runs only if nfa_key_wakes says so */
    bool undue;            /* a key whose deadline is later takes the undue call */
    bool fire;             /* the key's timer fires first, if due */
} Call;

typedef struct Tally {
    uint64_t starts;       /* idle keys that came out holding one partial match */
    uint64_t single_steps; /* events into a key holding one partial match */
    uint64_t results;
    uint64_t gate_times;   /* starts whose time and wait the gate told */
    uint64_t gate_pending; /* of those, into a pending state */
    uint64_t gate_step_within;   /* of those, into a state with its own within */
} Tally;

static void side_call(Side *s, const Call *c, Event *ev)
{
    const Nfa *nfa = s->rig->nfas[c->rule];
    NfaKey *k = &s->keys[c->rule][c->key];
    NfaRunCtx ctx = side_ctx(s, c->rule, c->shared);
    int64_t due = nfa_key_deadline(nfa, k);
    if (c->fire && due <= ev->time_ms) {
        nfa_key_advance_in(nfa, k, due, &ctx);
        due = nfa_key_deadline(nfa, k);
    }
    if (nfa_key_idle(k) && c->ask_wakes && !nfa_key_wakes(nfa, ev, &ctx))
        return;
    if (c->undue && due > ev->time_ms)
        nfa_key_event_in_undue(nfa, k, ev, &ctx);
    else
        nfa_key_event_in(nfa, k, ev, &ctx);
}

static void assert_same(const char *text, size_t at, const Side *fast, const Side *gen)
{
    nfadiff_assert_same_log(text, at, &fast->log, "fast", &gen->log, "general");
    for (int r = 0; r < RULES; r++) {
        const Nfa *nfa = fast->rig->nfas[r];
        for (int k = 0; k < KEYS; k++) {
            const NfaKey *a = &fast->keys[r][k], *b = &gen->keys[r][k];
            ck_assert_msg(nfa_key_partials(a) == nfa_key_partials(b) &&
                              nfa_key_idle(a) == nfa_key_idle(b) &&
                              nfa_key_deadline(nfa, a) == nfa_key_deadline(nfa, b),
                          "%s\nafter call %zu: rule %d key %d differs (partials %zu vs %zu)",
                          text, at, r, k, nfa_key_partials(a), nfa_key_partials(b));
        }
        ck_assert_msg(nfadiff_same_counters(&fast->counters[r], &gen->counters[r]),
                      "%s\nafter call %zu: rule %d's counters differ", text, at, r);
    }
    ck_assert_msg(nfa_cond_cache_hits(fast->cache) == nfa_cond_cache_hits(gen->cache),
                  "%s\nafter call %zu: cache hits %" PRIu64 " vs %" PRIu64, text, at,
                  nfa_cond_cache_hits(fast->cache), nfa_cond_cache_hits(gen->cache));
}

static Event *make_event(Rig *g, uint64_t *x, int64_t t, uint64_t id)
{
    return nfadiff_event(g->dec, x, t, id, 4);
}

static void count_reach(const Side *s, const Call *c, bool was_idle, size_t was_live,
                        Tally *tally)
{
    const NfaKey *k = &s->keys[c->rule][c->key];
    tally->starts += was_idle && nfa_key_partials(k) == 1;
    tally->single_steps += was_live == 1;
}

/* A key idle before ev that the gate says it can tell (nfa_key_started_by_gate): its
 * deadline and end must be what the Nfa gives. A key that holds one
 * partial match must be told when its gate knows the times (the runtime then never
 * reads the Nfa for it). */
static void check_started_by_gate(const Side *s, const Call *c, bool was_idle, const Event *ev,
                                  Tally *tally)
{
    const Nfa *nfa = s->rig->nfas[c->rule];
    const NfaKey *k = &s->keys[c->rule][c->key];
    const NfaWakeGate *gate = nfa_cond_share_gate(s->rig->share, (size_t)c->rule);
    if (!was_idle)
        return;
    int64_t due = 0;
    bool only_timeouts = false;
    bool told = nfa_key_started_by_gate(gate, k, ev->time_ms, &due, &only_timeouts);
    ck_assert(told == (gate->times_known && k->cap_live == 1 && k->n_live == 1));
    if (!told)
        return;
    ck_assert_int_eq(due, nfa_key_deadline(nfa, k));
    ck_assert(only_timeouts == nfa_key_end_only_timeouts(nfa, k));
    tally->gate_times++;
    tally->gate_pending += !only_timeouts;
    tally->gate_step_within += gate->take_within_ms > 0;
}

static void run_case(uint64_t seed, Tally *tally)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;
    char *text = rules_text(&x);
    Rig g;
    rig_open(&g, text);
    static const size_t key_caps[] = {0, 0, 1, 2}, rule_caps[] = {0, 0, 2, 4};
    g.limits.max_partials = key_caps[pick(&x, 4)];
    g.limits.max_partials_per_rule = rule_caps[pick(&x, 4)];
    Side fast, gen;
    side_open(&fast, &g, false);
    side_open(&gen, &g, true);
    int64_t t = 1767225600000;
    size_t n_events = 40 + pick(&x, 40), calls = 0;
    for (size_t i = 0; i < n_events; i++) {
        static const int64_t gaps[] = {0, 0, 100, 300, 700, 1000, 1500, 2500, 4000};
        t += gaps[pick(&x, sizeof gaps / sizeof gaps[0])];
        Event *ev = make_event(&g, &x, t, i + 1);
        nfa_cond_cache_next_event(fast.cache);
        nfa_cond_cache_next_event(gen.cache);
        int key = (int)pick(&x, KEYS);
        for (int r = 0; r < RULES; r++) {
            Call c = {.rule = r, .key = key, .shared = pick(&x, 4) != 0,
                      .ask_wakes = pick(&x, 3) != 0, .undue = pick(&x, 2) != 0,
                      .fire = pick(&x, 2) != 0};
            const NfaKey *k = &fast.keys[r][key];
            bool was_idle = nfa_key_idle(k);
            size_t was_live = nfa_key_partials(k);
            side_call(&fast, &c, ev);
            side_call(&gen, &c, ev);
            count_reach(&fast, &c, was_idle, was_live, tally);
            check_started_by_gate(&fast, &c, was_idle, ev, tally);
            check_started_by_gate(&gen, &c, was_idle, ev, tally);
            expr_scratch_reset(fast.scratch);
            expr_scratch_reset(gen.scratch);
            assert_same(text, ++calls, &fast, &gen);
        }
        event_release(ev);
    }
    for (int r = 0; r < RULES; r++)
        for (int k = 0; k < KEYS; k++) {
            NfaRunCtx fc = side_ctx(&fast, r, true), gc = side_ctx(&gen, r, true);
            nfa_key_advance_in(g.nfas[r], &fast.keys[r][k], INT64_MAX, &fc);
            nfa_key_advance_in(g.nfas[r], &gen.keys[r][k], INT64_MAX, &gc);
        }
    assert_same(text, ++calls, &fast, &gen);
    for (size_t i = 0; i < fast.log.len; i++)
        tally->results += fast.log.data[i] == '\n';
    side_close(&fast);
    side_close(&gen);
    rig_close(&g);
    free(text);
}

START_TEST(fast_paths_give_what_the_general_path_gives)
{
    Tally tally = {0};
    size_t cases = getenv("VIGIL_TEST_SMALL") ? 150 : 500;
    for (uint64_t seed = 1; seed <= cases; seed++)
        run_case(seed, &tally);
    /* the cases reach the shortcuts: starts, and steps of a key with one partial match */
    ck_assert_uint_gt(tally.starts, 20 * cases);
    ck_assert_uint_gt(tally.single_steps, 20 * cases);
    ck_assert_uint_gt(tally.results, 10 * cases);
    ck_assert_uint_gt(tally.gate_times, 10 * cases);
    ck_assert_uint_gt(tally.gate_pending, cases / 10);
    ck_assert_uint_gt(tally.gate_step_within, cases / 10);
}
END_TEST

/* The work's switch is what the differential test relies on: without it the general
 * side would take the fast paths too and the comparison could not fail. A start made
 * by each way holds the same partial match; the general way leaves the work's list
 * of next partial matches used (its room grown), the fast way does not touch it. */
START_TEST(the_switch_selects_the_general_path)
{
    uint64_t x = 7;
    Rig g;
    rig_open(&g, "time ts epoch_ms;\n"
                 "rule r0 { begin a where type == \"a\"; followed_by b where type == \"b\"; "
                 "within 5s; on match alert \"m\"; }\n"
                 "rule r1 { begin a; on match alert \"m\"; }\n"
                 "rule r2 { begin a where v > 0; on match alert \"m\"; }\n");
    Side fast, gen;
    side_open(&fast, &g, false);
    side_open(&gen, &g, true);
    Event *ev = NULL;
    for (uint64_t id = 1; !ev; id++) {   /* an event of type "a" */
        ev = make_event(&g, &x, 1767225600000, id);
        if (strstr(ev->line, "\"a\"") == NULL) {
            event_release(ev);
            ev = NULL;
        }
    }
    Call c = {.rule = 0, .key = 0, .shared = true};
    side_call(&fast, &c, ev);
    side_call(&gen, &c, ev);
    ck_assert_uint_eq(nfa_key_partials(&fast.keys[0][0]), 1);
    ck_assert_uint_eq(nfa_key_partials(&gen.keys[0][0]), 1);
    ck_assert_uint_eq(fast.work->next.cap, 0);
    ck_assert_uint_gt(gen.work->next.cap, 0);
    event_release(ev);
    side_close(&fast);
    side_close(&gen);
    rig_close(&g);
}
END_TEST

/* A gate knows a start's times only when both withins fit its 32-bit fields: a within
 * of 30 days does not (the runtime then asks the Nfa). */
START_TEST(a_gate_knows_the_times_of_short_withins_only)
{
    Rig g;
    rig_open(&g, "time ts epoch_ms;\n"
                 "rule r0 { begin a where type == \"a\"; followed_by b where type == \"b\"; "
                 "within 5s; on match alert \"m\"; }\n"
                 "rule r1 { begin a where type == \"a\"; followed_by b where type == \"b\"; "
                 "within 30d; on match alert \"m\"; }\n"
                 "rule r2 { begin a where type == \"a\"; "
                 "followed_by b within 30d where type == \"b\"; on match alert \"m\"; }\n");
    const NfaWakeGate *g0 = nfa_cond_share_gate(g.share, 0);
    ck_assert(g0->start_take && g0->times_known);
    ck_assert_int_eq(g0->within_ms, 5000);
    for (size_t r = 1; r < RULES; r++) {
        const NfaWakeGate *gate = nfa_cond_share_gate(g.share, r);
        ck_assert(gate->start_take && !gate->times_known);
    }
    rig_close(&g);
}
END_TEST

static Suite *fast_suite(void)
{
    Suite *s = suite_create("nfa_fast");
    TCase *tc = tcase_create("differential");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fast_paths_give_what_the_general_path_gives);
    tcase_add_test(tc, the_switch_selects_the_general_path);
    tcase_add_test(tc, a_gate_knows_the_times_of_short_withins_only);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(fast_suite());
}
