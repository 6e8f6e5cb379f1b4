/* tests/test_nfa_undue.c — nfa_key_event_in_undue against nfa_key_event_in. The shard
 * runs an event into a slot whose time is later than the event without the matcher's
 * advance (runtime/shard.c, feed_slot); that is sound only if, whenever a key's
 * nfa_key_deadline is later than the event's time, the two calls give the same results
 * (kind, time, events) and leave the key in the same state.
 *
 * Generated cases (a seeded xorshift, so a failure reproduces) over the pattern kinds
 * of LANGUAGE.md: next, followed_by, followed_by_any, times N (consecutive or not),
 * times N..M, one_or_more, a middle and a trailing not_followed_by, not_next, within per
 * step and per pattern, every skip strategy, with and without a per-key cap. Each
 * case drives two keys of one rule with the same events: the reference always through
 * nfa_key_event_in, the other through nfa_key_event_in_undue whenever its deadline is
 * later than the event (as the shard does), and both are sometimes advanced to their
 * deadline between events (a timer that fired) and sometimes not (a lazy one). After
 * every event the results so far, nfa_key_partials, nfa_key_deadline and the counters
 * must agree; and so at the end of input. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "nfa/nfa.h"
#include "runtime/decode.h"
#include "tests/checkmain.h"
#include "tests/nfadiff.h"
#include "tests/testutil.h"

static unsigned pick(uint64_t *x, unsigned n)
{
    return nfadiff_pick(x, n);
}

/* ---- one side: a key, its counters and what it emitted ---------------------------- */

typedef struct Side {
    NfaKey key;
    NfaCounters counters;
    Buf log;             /* every result so far, one per line */
    const Nfa *nfa;
} Side;

static void log_result(void *user, const NfaResult *r)
{
    Side *s = user;
    nfadiff_log_result(&s->log, r);
}

/* ---- a case: one compiled rule and what runs it ------------------------------------ */

typedef struct Rig {
    RuleSet *rs;
    FieldTable ft;
    Decoder *dec;
    Nfa *nfa;
    NfaWork *work;
    EvalScratch *scratch;
    NfaLimits limits;
} Rig;

static void rig_open(Rig *g, const char *text, size_t cap)
{
    memset(g, 0, sizeof *g);
    field_table_init(&g->ft);
    g->rs = test_parse_checked(text);   /* fails the test on a diagnostic */
    ExprEnv env = {.fields = &g->ft, .rule = &g->rs->rules[0]};
    char *err = NULL;
    g->nfa = nfa_compile(&g->rs->rules[0], &env, &err);
    ck_assert_msg(g->nfa != NULL, "%s: %s", text, err ? err : "?");
    const Nfa *nfas[1] = {g->nfa};
    g->work = nfa_work_new(nfas, 1);
    g->scratch = expr_scratch_new();
    g->dec = decoder_new(&g->ft, DECODE_MAX_DEPTH);
    ck_assert(g->work && g->scratch && g->dec);
    g->limits.max_partials = cap;
}

static void rig_close(Rig *g)
{
    nfa_free(g->nfa);
    nfa_work_free(g->work);
    decoder_free(g->dec);
    expr_scratch_free(g->scratch);
    field_table_free(&g->ft);
    ast_ruleset_free(g->rs);
}

static NfaRunCtx side_ctx(Rig *g, Side *s)
{
    return (NfaRunCtx){.work = g->work, .scratch = g->scratch, .limits = &g->limits,
                       .counters = &s->counters, .sink = {log_result, s}};
}

/* ---- the generator --------------------------------------------------------------- */

static const char *const skips[] = {"", "skip no_skip; ", "skip to_next; ",
                                    "skip past_last_event; ", "skip to_first a; ",
                                    "skip to_last a; "};

#define N_KINDS 10

static void put_pattern(Buf *b, uint64_t *x, unsigned kind)
{
    static const char *const same_v[] = {"", " and v == a.v"};
    unsigned w = 1 + pick(x, 3);
    switch (kind) {
    case 0:
        buf_printf(b, "begin a where type == \"a\"; next b where type == \"b\"; within %us; ", w);
        break;
    case 1:
        buf_printf(b, "begin a where type == \"a\"; followed_by b%s where type == \"b\"%s; "
                   "within %us; ", pick(x, 2) ? " within 1s" : "", same_v[pick(x, 2)], w);
        break;
    case 2:
        buf_printf(b, "begin a where type == \"a\" times %u%s; followed_by b where type == \"b\"; "
                   "within %us; ", 2 + pick(x, 2), pick(x, 2) ? " consecutive" : "", w);
        break;
    case 3:   /* a match at expiry */
        buf_printf(b, "begin a where type == \"a\"%s; not_followed_by c where type == \"c\"; "
                   "within %us; ", pick(x, 2) ? " and v > 0" : "", w);
        break;
    case 4:
        buf_printf(b, "begin a where type == \"a\"; not_followed_by c where type == \"c\"; "
                   "followed_by b where type == \"b\"; within %us; ", w);
        break;
    case 5:
        buf_printf(b, "begin a where type == \"a\"; followed_by_any b where type == \"b\"; "
                   "followed_by c where type == \"c\"%s; within %us; ", same_v[pick(x, 2)], w);
        break;
    case 6:
        buf_printf(b, "begin a where type == \"a\" times 1..3; followed_by b where type == \"b\"; "
                   "within %us; ", w);
        break;
    case 7:   /* within per step only */
        buf_printf(b, "begin a where type == \"a\"; followed_by b within 1s where type == \"b\"; "
                   "followed_by c within %us where type == \"c\"; ", w);
        break;
    case 8:
        buf_printf(b, "begin a where type == \"a\"; not_next c where type == \"c\"; "
                   "followed_by b where type == \"b\"; within %us; ", w);
        break;
    default:
        buf_printf(b, "begin a where type == \"a\" one_or_more; followed_by b where type == \"b\"; "
                   "within %us; ", w);
        break;
    }
}

static char *rule_text(uint64_t *x, unsigned kind)
{
    Buf b = BUF_INIT;
    buf_puts(&b, "time ts epoch_ms;\nrule r { ");
    put_pattern(&b, x, kind);
    buf_puts(&b, skips[pick(x, sizeof skips / sizeof skips[0])]);
    buf_puts(&b, "on match alert \"m\"; }\n");
    ck_assert(!b.failed);
    return buf_steal(&b);
}

/* ---- running a case ------------------------------------------------------------- */

typedef struct Tally {
    uint64_t undue;          /* events the other side took through nfa_key_event_in_undue */
    uint64_t undue_live;     /* of which into a key with partial matches */
    uint64_t results;
} Tally;

/* The two sides agree; else the message names where (caller frees nothing). */
static void assert_same(const char *text, size_t at, const Side *ref, const Side *un)
{
    nfadiff_assert_same_log(text, at, &ref->log, "in", &un->log, "undue");
    ck_assert_msg(nfa_key_partials(&ref->key) == nfa_key_partials(&un->key),
                  "%s\nafter event %zu: partials %zu vs %zu", text, at,
                  nfa_key_partials(&ref->key), nfa_key_partials(&un->key));
    ck_assert_msg(nfa_key_deadline(ref->nfa, &ref->key) == nfa_key_deadline(un->nfa, &un->key),
                  "%s\nafter event %zu: deadline %lld vs %lld", text, at,
                  (long long)nfa_key_deadline(ref->nfa, &ref->key),
                  (long long)nfa_key_deadline(un->nfa, &un->key));
    ck_assert_msg(nfadiff_same_counters(&ref->counters, &un->counters),
                  "%s\nafter event %zu: counters differ", text, at);
}

static Event *make_event(Rig *g, uint64_t *x, int64_t t, uint64_t id)
{
    return nfadiff_event(g->dec, x, t, id, 3);
}

static void run_case(uint64_t seed, Tally *tally)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;
    unsigned kind = (unsigned)(seed % N_KINDS);
    char *text = rule_text(&x, kind);
    Rig g;
    rig_open(&g, text, pick(&x, 3) == 0 ? 2 : 0);
    Side ref = {.log = BUF_INIT, .nfa = g.nfa}, un = {.log = BUF_INIT, .nfa = g.nfa};
    nfa_key_init(&ref.key);
    nfa_key_init(&un.key);
    NfaRunCtx rc = side_ctx(&g, &ref), uc = side_ctx(&g, &un);
    int64_t t = 1767225600000;
    size_t n_events = 40 + pick(&x, 40);
    for (size_t i = 0; i < n_events; i++) {
        static const int64_t gaps[] = {0, 0, 100, 300, 700, 1000, 1500, 2500, 4000};
        t += gaps[pick(&x, sizeof gaps / sizeof gaps[0])];
        int64_t due = nfa_key_deadline(g.nfa, &un.key);
        if (due <= t && pick(&x, 2)) {   /* the record's timer fired before the event */
            nfa_key_advance_in(g.nfa, &ref.key, due, &rc);
            nfa_key_advance_in(g.nfa, &un.key, due, &uc);
            assert_same(text, i, &ref, &un);
            due = nfa_key_deadline(g.nfa, &un.key);
        }
        Event *ev = make_event(&g, &x, t, i + 1);
        nfa_key_event_in(g.nfa, &ref.key, ev, &rc);
        if (due > t) {
            tally->undue++;
            tally->undue_live += !nfa_key_idle(&un.key);
            nfa_key_event_in_undue(g.nfa, &un.key, ev, &uc);
        } else {
            nfa_key_event_in(g.nfa, &un.key, ev, &uc);
        }
        event_release(ev);
        expr_scratch_reset(g.scratch);
        assert_same(text, i, &ref, &un);
    }
    nfa_key_advance_in(g.nfa, &ref.key, INT64_MAX, &rc);
    nfa_key_advance_in(g.nfa, &un.key, INT64_MAX, &uc);
    assert_same(text, n_events, &ref, &un);
    for (size_t i = 0; i < ref.log.len; i++)
        tally->results += ref.log.data[i] == '\n';
    nfa_key_clear(&ref.key, &ref.counters);
    nfa_key_clear(&un.key, &un.counters);
    buf_free(&ref.log);
    buf_free(&un.log);
    rig_close(&g);
    free(text);
}

START_TEST(undue_events_give_what_due_ones_give)
{
    Tally tally = {0};
    size_t cases = getenv("VIGIL_TEST_SMALL") ? 200 : 600;
    for (uint64_t seed = 1; seed <= cases; seed++)
        run_case(seed, &tally);
    /* the cases reach what the test is about: keys holding partial matches, taken undue */
    ck_assert_uint_gt(tally.undue_live, 10 * cases);
    ck_assert_uint_gt(tally.results, 5 * cases);
}
END_TEST

static Suite *undue_suite(void)
{
    Suite *s = suite_create("nfa_undue");
    TCase *tc = tcase_create("differential");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, undue_events_give_what_due_ones_give);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(undue_suite());
}
