/* tests/test_nfa_memory.c — state does not outlive matches: many keys are driven
 * through complete two-step matches (a sliding window of keys in flight), then every
 * key must be NULL, the live counter 0, and every event referenced by the test
 * alone (so no MatchNode survives). VIGIL_TEST_SMALL shrinks the run for valgrind. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/check.h"
#include "dsl/diag.h"
#include "dsl/parse.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "nfa/nfa.h"
#include "runtime/decode.h"

#define WINDOW 1000

typedef struct World {
    RuleSet *rs;
    FieldTable ft;
    Decoder *dec;
    Nfa *nfa;
    EvalScratch *scratch;
    NfaLimits limits;
    NfaCounters counters;
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
    ck_assert(w->dec && w->scratch);
    w->ctx = (NfaRunCtx){.scratch = w->scratch,
                         .limits = &w->limits,
                         .counters = &w->counters,
                         .sink = {.emit = count_match, .user = w}};
}

static void world_free(World *w)
{
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

int main(void)
{
    Suite *s = suite_create("nfa_memory");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_keys_leave_no_state);
    tcase_add_test(tc, test_free_releases_shared_chains);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
