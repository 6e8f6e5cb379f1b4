/* tests/test_keyhint.c — the shard's key hint (runtime/keyhint.h): a rule's bit is set
 * exactly while it was added and not cleared, records sharing a probe run survive the
 * removal of their neighbours, the table grows and gives its memory back, and under
 * random adds and clears it never answers "no" for a (hash, rule) that holds; plus
 * part_holds_hash, which keeps the hint exact when two keys share a hash; and the
 * engine with enough rules to use the hint gives the alerts of workers, which never
 * read it, across a reload that renumbers the rules. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "runtime/keyhint.h"
#include "runtime/partition.h"
#include "tests/rulesutil.h"

static bool has(const KeyHint *h, uint64_t hash, size_t rule)
{
    return keyhint_has(keyhint_find(h, hash), rule);
}

START_TEST(add_find_clear)
{
    KeyHint h;
    keyhint_init(&h);
    ck_assert_uint_eq(keyhint_find(&h, 42), 0);
    ck_assert_int_eq(keyhint_add(&h, 42, 3), 0);
    ck_assert_int_eq(keyhint_add(&h, 42, 97), 0);
    ck_assert_int_eq(keyhint_add(&h, 42, 97), 0);   /* twice: still one bit */
    ck_assert(has(&h, 42, 3));
    ck_assert(has(&h, 42, 97));
    ck_assert(!has(&h, 42, 4));
    ck_assert(!has(&h, 43, 3));
    ck_assert_uint_eq(h.count, 1);
    keyhint_clear(&h, 42, 3);
    ck_assert(!has(&h, 42, 3));
    ck_assert(has(&h, 42, 97));
    keyhint_clear(&h, 43, 97);   /* an absent hash: nothing happens */
    ck_assert_uint_eq(h.count, 1);
    keyhint_clear(&h, 42, 97);
    ck_assert_uint_eq(keyhint_find(&h, 42), 0);
    ck_assert_uint_eq(h.count, 0);
    ck_assert_ptr_null(h.recs);   /* no record, no memory */
    keyhint_free(&h);
}
END_TEST

/* Rules 64 apart share a bit: a hint of 130 rules answers "maybe" for both. */
START_TEST(hash_zero_and_shared_bits)
{
    KeyHint h;
    keyhint_init(&h);
    ck_assert_int_eq(keyhint_add(&h, 0, 130), 0);
    ck_assert_int_eq(keyhint_add(&h, UINT64_MAX, 64), 0);
    ck_assert(has(&h, 0, 130));
    ck_assert(has(&h, 0, 2));
    ck_assert(has(&h, 0, 66));
    ck_assert(!has(&h, 0, 3));
    ck_assert(has(&h, UINT64_MAX, 0));
    ck_assert(!has(&h, UINT64_MAX, 1));
    keyhint_clear(&h, 0, 2);   /* the caller found no rule of bit 2 holding hash 0 */
    ck_assert_uint_eq(keyhint_find(&h, 0), 0);
    ck_assert(has(&h, UINT64_MAX, 64));
    ck_assert_uint_eq(h.count, 1);
    keyhint_free(&h);
}
END_TEST

/* Hashes below 2^32 have their home at hash & mask: these share one home, so they
 * form one probe run, and removing any of them must leave the others reachable. */
START_TEST(collisions_in_one_run)
{
    for (size_t gone = 0; gone < 5; gone++) {
        KeyHint h;
        keyhint_init(&h);
        for (uint64_t k = 0; k < 5; k++)
            ck_assert_int_eq(keyhint_add(&h, 5 + 16 * k, (size_t)k), 0);
        ck_assert_uint_eq(h.n_slots, 16);
        keyhint_add(&h, 6, 9);   /* the slot after the run's home: displaced too */
        keyhint_clear(&h, 5 + 16 * gone, gone);
        for (uint64_t k = 0; k < 5; k++)
            ck_assert(has(&h, 5 + 16 * k, (size_t)k) == (k != gone));
        ck_assert(has(&h, 6, 9));
        ck_assert_uint_eq(h.count, 5);
        keyhint_free(&h);
    }
}
END_TEST

START_TEST(grows_and_shrinks)
{
    enum { N = 20000 };
    KeyHint h;
    keyhint_init(&h);
    for (uint64_t k = 0; k < N; k++)
        ck_assert_int_eq(keyhint_add(&h, k * UINT64_C(0x9e3779b97f4a7c15), (size_t)(k % 64)), 0);
    ck_assert_uint_eq(h.count, N);
    ck_assert_uint_ge(h.n_slots * 3, (size_t)N * 4);   /* at most 3/4 full */
    size_t big = h.n_slots;
    for (uint64_t k = 0; k < N; k++)
        ck_assert(has(&h, k * UINT64_C(0x9e3779b97f4a7c15), (size_t)(k % 64)));
    for (uint64_t k = 0; k < N - 10; k++)
        keyhint_clear(&h, k * UINT64_C(0x9e3779b97f4a7c15), (size_t)(k % 64));
    ck_assert_uint_eq(h.count, 10);
    ck_assert_uint_lt(h.n_slots, big / 64);   /* memory follows the live records */
    for (uint64_t k = N - 10; k < N; k++)
        ck_assert(has(&h, k * UINT64_C(0x9e3779b97f4a7c15), (size_t)(k % 64)));
    keyhint_free(&h);
}
END_TEST

static uint64_t next_rand(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Random adds and clears over few hashes (long runs, many shared homes) and more
 * rules than bits, against a plain array of (hash, rule) pairs. Clears follow the
 * contract: a bit is cleared only when no rule sharing it still holds the hash. The
 * hint must answer exactly "some rule of this bit holds the hash". */
static bool any_held(const bool held[], size_t rules)
{
    for (size_t r = 0; r < rules; r++)
        if (held[r])
            return true;
    return false;
}

static bool bit_held(const bool held[], size_t rules, size_t bit)
{
    for (size_t r = bit; r < rules; r += 64)
        if (held[r])
            return true;
    return false;
}

START_TEST(random_against_reference)
{
    enum { HASHES = 300, RULES = 130, OPS = 60000 };
    static bool ref[HASHES][RULES];
    memset(ref, 0, sizeof ref);
    uint64_t hashes[HASHES];
    uint64_t rng = 0x1234567;
    for (size_t i = 0; i < HASHES; i++)   /* a third share home 0: one long run */
        hashes[i] = i % 3 ? next_rand(&rng) : (uint64_t)i << 32 | i;
    KeyHint h;
    keyhint_init(&h);
    for (size_t op = 0; op < OPS; op++) {
        size_t hi = next_rand(&rng) % HASHES, r = next_rand(&rng) % RULES;
        /* more clears than adds in the second half: the table shrinks again */
        bool add = next_rand(&rng) % 100 < (op < OPS / 2 ? 60 : 35);
        if (add) {
            ck_assert_int_eq(keyhint_add(&h, hashes[hi], r), 0);
            ref[hi][r] = true;
        } else {
            ref[hi][r] = false;
            if (!bit_held(ref[hi], RULES, keyhint_bit(r)))
                keyhint_clear(&h, hashes[hi], r);
        }
        if (op % 1000 == 0 || op == OPS - 1) {
            /* counted, then asserted once: each Check assertion is a write to a pipe */
            size_t live = 0, wrong = 0;
            for (size_t i = 0; i < HASHES; i++) {
                uint64_t bits = keyhint_find(&h, hashes[i]);
                for (size_t k = 0; k < 64; k++)
                    wrong += keyhint_has(bits, k) != bit_held(ref[i], RULES, k);
                live += bits != 0;
                wrong += (bits != 0) != any_held(ref[i], RULES);
            }
            ck_assert_msg(!wrong, "op %zu: %zu wrong answers", op, wrong);
            ck_assert_uint_eq(h.count, live);
        }
    }
    keyhint_free(&h);
}
END_TEST

START_TEST(partition_holds_hash)
{
    PartTable t;
    part_table_init(&t);
    ck_assert(!part_holds_hash(&t, 77));
    /* two keys under one hash, as a 64-bit collision would put them */
    PartEntry *a = part_add(&t, "\"a\"", 3, 77);
    PartEntry *b = part_add(&t, "\"b\"", 3, 77);
    PartEntry *c = part_add(&t, "\"c\"", 3, 78);
    ck_assert(a && b && c);
    ck_assert(part_holds_hash(&t, 77));
    ck_assert(!part_holds_hash(&t, 79));
    ck_assert(!part_holds_hash(&t, 77 + ((uint64_t)1 << 60)));   /* same home, other tag */
    part_remove(&t, a);
    ck_assert(part_holds_hash(&t, 77));
    part_remove(&t, b);
    ck_assert(!part_holds_hash(&t, 77));
    ck_assert(part_holds_hash(&t, 78));
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* ---- through the engine ------------------------------------------------------ */

/* 12 rules keyed by user (the hint is used from 8), one pair of event types each;
 * the reload reverses their order (every kept rule is renumbered) and adds one. */
enum { PAIR_RULES = 12, USERS = 40, EVENTS = 4000, RELOAD_AT = 2000 };

static char *pair_rules(bool reversed)
{
    Buf b = BUF_INIT;
    buf_puts(&b, "time ts epoch_ms;\n");
    for (int i = 0; i < PAIR_RULES; i++) {
        int k = reversed ? PAIR_RULES - 1 - i : i;
        char rule[256];
        snprintf(rule, sizeof rule,
                 "rule r%d { key user; begin a where type == \"a%d\"; followed_by b where "
                 "type == \"b%d\"; within 2s; on match alert \"m\"; on timeout alert \"t\"; }\n",
                 k, k, k);
        buf_puts(&b, rule);
    }
    if (reversed)
        buf_puts(&b, "rule extra { key user; begin x where type == \"a3\"; "
                     "on match alert \"x\"; }\n");
    ck_assert(!b.failed);
    return b.data;
}

typedef struct Alerts {
    pthread_mutex_t lock;      /* workers deliver from their threads */
    char **lines;              /* "rule kind user time", heap */
    size_t n, cap;
    size_t matches, timeouts;
} Alerts;

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Alerts *a = user;
    char line[96];
    snprintf(line, sizeof line, "%zu %s %.*s %lld", rule,
             r->kind == NFA_MATCH ? "match" : "timeout",
             n_key && key[0].type == V_STR ? (int)key[0].len : 1,
             n_key && key[0].type == V_STR ? key[0].s : "-", (long long)r->time_ms);
    pthread_mutex_lock(&a->lock);
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        a->lines = realloc(a->lines, a->cap * sizeof *a->lines);
        ck_assert_ptr_nonnull(a->lines);
    }
    a->lines[a->n] = strdup(line);
    ck_assert_ptr_nonnull(a->lines[a->n]);
    a->n++;
    if (r->kind == NFA_MATCH)
        a->matches++;
    else
        a->timeouts++;
    pthread_mutex_unlock(&a->lock);
}

static void on_dead(void *user, const char *origin, uint64_t line_no, const char *reason,
                    const char *text, size_t len)
{
    (void)user;
    (void)text;
    (void)len;
    ck_abort_msg("%s:%llu rejected: %s", origin, (unsigned long long)line_no, reason);
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The same stream, reload included, with `workers` threads; sorted alerts. */
static void run_pairs(size_t workers, Alerts *out)
{
    char *t1 = pair_rules(false), *t2 = pair_rules(true);
    CompiledRuleSet *v1 = test_rules_compile(t1, NULL);
    CompiledRuleSet *v2 = test_rules_compile(t2, v1);
    memset(out, 0, sizeof *out);
    pthread_mutex_init(&out->lock, NULL);
    EngineSink sink = {on_alert, on_dead, NULL, out};
    EngineOptions opts = {0, workers};
    char *err = NULL;
    Engine *e = engine_new(v1, &opts, &sink, &err);
    ck_assert_ptr_nonnull(e);
    uint64_t rng = 99;
    for (size_t i = 0; i < EVENTS; i++) {
        if (i == RELOAD_AT) {
            EngineReloadSummary sum;
            ck_assert_int_eq(engine_reload(e, v2, NULL, NULL, &sum), 0);
            ck_assert_uint_eq(sum.kept, PAIR_RULES);
            ck_assert_uint_eq(sum.added, 1);
        }
        char line[128];
        int len = snprintf(line, sizeof line, "{\"ts\":%zu,\"user\":\"u%d\",\"type\":\"%c%d\"}",
                           i * 20, (int)(next_rand(&rng) % USERS),
                           next_rand(&rng) % 2 ? 'a' : 'b', (int)(next_rand(&rng) % PAIR_RULES));
        ck_assert_int_eq(engine_line(e, line, (size_t)len, "in", i + 1, 0), 0);
    }
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
    ruleset_free(v1);
    ruleset_free(v2);
    free(t1);
    free(t2);
    qsort(out->lines, out->n, sizeof *out->lines, cmp_line);
}

static void alerts_free(Alerts *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->lines[i]);
    free(a->lines);
    pthread_mutex_destroy(&a->lock);
}

START_TEST(engine_with_hint_matches_workers_across_reload)
{
    Alerts one, two;
    run_pairs(1, &one);
    run_pairs(2, &two);
    ck_assert_uint_gt(one.matches, 100);
    ck_assert_uint_gt(one.timeouts, 100);
    ck_assert_uint_eq(one.n, two.n);
    for (size_t i = 0; i < one.n; i++)
        ck_assert_str_eq(one.lines[i], two.lines[i]);
    alerts_free(&one);
    alerts_free(&two);
}
END_TEST

static Suite *keyhint_suite(void)
{
    Suite *s = suite_create("keyhint");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, add_find_clear);
    tcase_add_test(tc, hash_zero_and_shared_bits);
    tcase_add_test(tc, collisions_in_one_run);
    tcase_add_test(tc, grows_and_shrinks);
    tcase_add_test(tc, random_against_reference);
    tcase_add_test(tc, partition_holds_hash);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("engine");
    tcase_set_timeout(te, 60);
    tcase_add_test(te, engine_with_hint_matches_workers_across_reload);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(keyhint_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
