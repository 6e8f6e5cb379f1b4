/* tests/test_end_flush.c — the end of input (shard_advance_all) drops the keys whose
 * end shows nothing in bulk, and lets its tables empty without shrinking: it must give
 * exactly what firing every timer in order gives. The reference is the same stream
 * followed by one event far in the future that no rule takes: its time fires every
 * timer through the ordinary path, one key at a time, before the end of input.
 * The rules mix keys whose end is silent with keys whose end is not: timeouts that
 * alert, a trailing not_followed_by and held-back matches in rules without `on
 * timeout`, and keys that outlive their timers with a held-back match, which leave in
 * the order of their table's slots. Also: the partition table's bulk walk and its
 * slots kept from shrinking. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "runtime/partition.h"
#include "tests/rulesutil.h"
#include "tests/checkmain.h"

/* ---- the engine -------------------------------------------------------------- */

static const char rules[] =
    "time ts epoch_ms;\n"
    /* silent: no `on timeout` and nothing held back (no_skip) */
    "rule silent { filter type == \"x\"; key k; begin a where n == \"a\";\n"
    "  followed_by b where n == \"b\"; within 10s; skip no_skip; on match alert \"m\"; }\n"
    /* not silent: alerts on timeout */
    "rule loud { filter type == \"x\"; key k; begin a where n == \"a\";\n"
    "  followed_by b where n == \"b\"; within 20s; on timeout alert \"t\"; }\n"
    /* no `on timeout`, yet its ends are matches */
    "rule absence { filter type == \"x\"; key k; begin a where n == \"a\";\n"
    "  not_followed_by c where n == \"c\"; within 15s; on match alert \"m\"; }\n"
    /* no `on timeout`; a match waits behind a partial match that started earlier */
    "rule held { filter type == \"x\"; key k; begin a where n == \"a\";\n"
    "  followed_by b where n == \"b\" and v == a.v; within 12s; on match alert \"m\"; }\n"
    /* keys waiting for b time out silently; keys waiting for c never do, and those
     * holding a match back release it at the very end, in slot order */
    "rule linger { filter type == \"x\"; key k; begin a where n == \"a\";\n"
    "  followed_by b within 2s where n == \"b\" and v == a.v;\n"
    "  followed_by c where n == \"c\" and v == a.v; on match alert \"m\"; }\n"
    /* idle keys kept for their suppression */
    "rule quiet { filter type == \"x\"; key k; begin a where n == \"a\"; suppress 30s;\n"
    "  on match alert \"s\"; }\n"
    /* silent partial matches without any within */
    "rule endless { filter type == \"x\"; key k; begin a where n == \"a\";\n"
    "  followed_by b where n == \"b\"; skip no_skip; on match alert \"m\"; }\n";

#define N_RULES 7
#define MAX_ALERTS 20000

typedef struct Seen {
    pthread_mutex_t lock;      /* workers deliver from their threads */
    char (*lines)[48];         /* "rule kind key time" per alert; heap */
    size_t n;
    size_t beyond;             /* alerts past MAX_ALERTS, not recorded */
    size_t not_one_key;        /* alerts whose key is not one value, not recorded */
} Seen;

/* Runs on the workers' threads, where a failed Check assertion has no test to fail:
 * what is wrong is counted here and asserted once the run is over (seen_assert_sound). */
static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Seen *s = user;
    pthread_mutex_lock(&s->lock);
    if (s->n == MAX_ALERTS)
        s->beyond++;
    else if (n_key != 1)
        s->not_one_key++;
    else
        snprintf(s->lines[s->n++], 48, "%zu %c %.*s %lld", rule,
                 r->kind == NFA_MATCH ? 'm' : 't', (int)key[0].len, key[0].s,
                 (long long)r->time_ms);
    pthread_mutex_unlock(&s->lock);
}

static void seen_assert_sound(const Seen *s)
{
    ck_assert_uint_le(s->n + s->beyond, MAX_ALERTS);
    ck_assert_uint_eq(s->not_one_key, 0);
}

/* A fixed pseudo-random stream (xorshift), so that every run sees the same events. */
static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

#define STREAM_EVENTS 4000
#define STREAM_KEYS 400
#define LINGER_KEYS 12

static void push_line(Buf *lines, long long ts, const char *type, const char *key, char n,
                      int v)
{
    buf_printf(lines, "{\"ts\":%lld,\"type\":\"%s\",\"k\":\"%s\",\"n\":\"%c\",\"v\":%d}\n",
               ts, type, key, n, v);
}

/* The stream: random events over many keys, 20 ms apart, then keys that each leave a
 * `linger` partial match waiting for c with a match held back behind it. Returns the
 * last time. */
static long long make_stream(Buf *lines)
{
    static const char kinds[] = "aaabbcx";
    uint64_t x = 88172645463325252ull;
    long long ts = 1000;
    char key[16];
    for (int i = 0; i < STREAM_EVENTS; i++, ts += 20) {
        snprintf(key, sizeof key, "k%d", (int)(next_rand(&x) % STREAM_KEYS));
        char n = kinds[next_rand(&x) % (sizeof kinds - 1)];
        push_line(lines, ts, "x", key, n, (int)(next_rand(&x) % 3));
    }
    for (int i = 0; i < LINGER_KEYS; i++, ts += 100) {
        snprintf(key, sizeof key, "L%d", i);
        push_line(lines, ts, "x", key, 'a', 1);
        push_line(lines, ts + 10, "x", key, 'a', 2);
        push_line(lines, ts + 20, "x", key, 'b', 1);
        push_line(lines, ts + 30, "x", key, 'b', 2);
        push_line(lines, ts + 40, "x", key, 'c', 2);
    }
    return ts + 40;
}

typedef struct Outcome {
    Seen seen;
    EngineRuleStats before[N_RULES];   /* just before the end of input */
    EngineRuleStats rule[N_RULES];
    uint64_t memory_bytes;
} Outcome;

/* Runs the stream (and, with `far`, one more event a day later that no rule takes)
 * to the end of input. */
static void run(const CompiledRuleSet *rs, size_t workers, bool far, Outcome *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_init(&out->seen.lock, NULL);
    out->seen.lines = calloc(MAX_ALERTS, sizeof *out->seen.lines);
    ck_assert_ptr_nonnull(out->seen.lines);
    Engine *e = test_engine_new(rs, (EngineSink){on_alert, NULL, NULL, &out->seen}, 0, workers);
    engine_set_limits(e, &(EngineLimits){.max_memory = (size_t)1 << 40});   /* counted */
    Buf lines = BUF_INIT;
    long long last = make_stream(&lines);
    if (far)
        push_line(&lines, last + 86400000, "other", "z", 'x', 0);
    ck_assert(!lines.failed);
    uint64_t no = 0;
    for (char *p = lines.data, *nl; (nl = strchr(p, '\n')); p = nl + 1)
        ck_assert_int_eq(engine_line(e, p, (size_t)(nl - p), "t", ++no, 0), 0);
    for (size_t r = 0; r < N_RULES; r++)
        engine_rule_stats(e, r, &out->before[r]);
    ck_assert_int_eq(engine_finish(e), 0);
    for (size_t r = 0; r < N_RULES; r++)
        engine_rule_stats(e, r, &out->rule[r]);
    EngineStats st;
    engine_stats(e, &st);
    out->memory_bytes = st.memory_bytes;
    engine_free(e);
    buf_free(&lines);
    seen_assert_sound(&out->seen);
}

static void outcome_free(Outcome *o)
{
    free(o->seen.lines);
    pthread_mutex_destroy(&o->seen.lock);
}

static void expect_same_alerts(const Seen *a, const Seen *b)
{
    ck_assert_uint_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        ck_assert_msg(!strcmp(a->lines[i], b->lines[i]), "alert %zu: '%s' against '%s'", i,
                      a->lines[i], b->lines[i]);
}

static void expect_same_stats(const EngineRuleStats *a, const EngineRuleStats *b, size_t r)
{
    ck_assert_msg(!memcmp(a, b, sizeof *a),
                  "rule %zu: matches %llu/%llu timeouts %llu/%llu alerts %llu/%llu keys %llu/%llu "
                  "partials %llu/%llu", r, (unsigned long long)a->matches,
                  (unsigned long long)b->matches, (unsigned long long)a->timeouts,
                  (unsigned long long)b->timeouts, (unsigned long long)a->alerts,
                  (unsigned long long)b->alerts, (unsigned long long)a->keys_live,
                  (unsigned long long)b->keys_live, (unsigned long long)a->partials_live,
                  (unsigned long long)b->partials_live);
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The end of input gives what firing each timer in turn gives: the same alerts in the
 * same order, the same counters, and every byte of the estimate given back. */
START_TEST(end_matches_timers_fired_one_by_one)
{
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    Outcome end, timers;
    run(rs, 1, false, &end);
    run(rs, 1, true, &timers);
    expect_same_alerts(&end.seen, &timers.seen);
    for (size_t r = 0; r < N_RULES; r++)
        expect_same_stats(&end.rule[r], &timers.rule[r], r);
    /* said outright too: the reference's end also drops the keys left after its far
     * event (partial matches without a deadline) in bulk */
    for (size_t r = 0; r < N_RULES; r++) {
        ck_assert_uint_eq(end.rule[r].keys_live, 0);
        ck_assert_uint_eq(end.rule[r].partials_live, 0);
    }
    ck_assert_uint_eq(end.memory_bytes, 0);
    ck_assert_uint_eq(timers.memory_bytes, 0);
    /* the stream reaches every kind of end it is meant to */
    size_t linger_end = 0, absence_end = 0, loud_end = 0;
    long long last = STREAM_EVENTS * 20 + 1000;
    for (size_t i = 0; i < end.seen.n; i++) {
        size_t rule;
        char kind;
        char key[16];
        long long t;
        ck_assert_int_eq(sscanf(end.seen.lines[i], "%zu %c %15s %lld", &rule, &kind, key, &t), 4);
        linger_end += rule == 4 && key[0] == 'L';
        absence_end += rule == 2 && t > last;
        loud_end += rule == 1 && kind == 't' && t > last;
    }
    ck_assert_uint_eq(linger_end, LINGER_KEYS);
    ck_assert_uint_gt(absence_end, 10);
    ck_assert_uint_gt(loud_end, 10);
    ck_assert_uint_gt(end.rule[0].timeouts, 10);
    ck_assert_uint_gt(end.rule[5].suppressed, 0);
    /* partial matches without any within are dropped, not timed out: the reference
     * drops them at its end of input too, so this is said outright */
    ck_assert_uint_gt(end.before[6].partials_live, 10);
    ck_assert_uint_eq(end.rule[6].timeouts, end.before[6].timeouts);
    outcome_free(&end);
    outcome_free(&timers);
    ruleset_free(rs);
}
END_TEST

/* Each worker ends its own keys the same way: the same alerts (in another order) and
 * counters as one worker. */
START_TEST(workers_end_the_same)
{
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    Outcome one, two;
    run(rs, 1, false, &one);
    run(rs, 2, false, &two);
    ck_assert_uint_eq(one.seen.n, two.seen.n);
    qsort(one.seen.lines, one.seen.n, sizeof *one.seen.lines, cmp_line);
    qsort(two.seen.lines, two.seen.n, sizeof *two.seen.lines, cmp_line);
    expect_same_alerts(&one.seen, &two.seen);
    for (size_t r = 0; r < N_RULES; r++)
        expect_same_stats(&one.rule[r], &two.rule[r], r);
    ck_assert_uint_eq(two.memory_bytes, 0);
    outcome_free(&one);
    outcome_free(&two);
    ruleset_free(rs);
}
END_TEST

/* ---- the table --------------------------------------------------------------- */

static PartEntry *add_key(PartTable *t, int i)
{
    char k[16];
    int len = snprintf(k, sizeof k, "key%d", i);
    PartEntry *e = part_add(t, k, (size_t)len, part_hash(k, (size_t)len), 1);
    ck_assert_ptr_nonnull(e);
    return e;
}

/* part_entries lists what part_next walks, in the same order, kept slots or not. */
static void expect_walks_agree(const PartTable *t)
{
    PartEntry **all = calloc(t->count + 1, sizeof *all);
    ck_assert_ptr_nonnull(all);
    ck_assert_uint_eq(part_entries(t, all), t->count);
    size_t i = 0, pos = 0;
    for (PartEntry *e = part_next(t, &pos, NULL); e; e = part_next(t, &pos, e))
        ck_assert_ptr_eq(e, all[i++]);
    ck_assert_uint_eq(i, t->count);
    free(all);
}

START_TEST(kept_slots_do_not_shrink)
{
    PartTable t;
    part_table_init(&t);
    PartEntry *e[1000];
    for (int i = 0; i < 1000; i++)
        e[i] = add_key(&t, i);
    size_t slots = t.n_slots;
    expect_walks_agree(&t);
    part_table_keep_size(&t, true);
    for (int i = 0; i < 990; i++)
        part_remove(&t, e[i]);
    ck_assert_uint_eq(t.n_slots, slots);
    ck_assert_uint_eq(t.count, 10);
    expect_walks_agree(&t);
    for (int i = 990; i < 1000; i++)
        ck_assert_ptr_eq(part_lookup(&t, e[i]->tail, e[i]->klen, part_entry_hash(e[i])), e[i]);
    part_table_keep_size(&t, false);
    part_remove(&t, e[990]);
    ck_assert_uint_lt(t.n_slots, slots);   /* shrinks again */
    expect_walks_agree(&t);
    part_table_free(&t, NULL, NULL);
    ck_assert_uint_eq(t.count, 0);
    ck_assert_uint_eq(t.n_slots, 0);
}
END_TEST

static void count_drop(PartEntry *e, void *user)
{
    (void)e;
    (*(size_t *)user)++;
}

START_TEST(free_visits_every_entry_once)
{
    PartTable t;
    part_table_init(&t);
    for (int i = 0; i < 300; i++)
        add_key(&t, i);
    size_t dropped = 0;
    part_table_free(&t, count_drop, &dropped);
    ck_assert_uint_eq(dropped, 300);
    part_table_free(&t, count_drop, &dropped);   /* an empty table: nothing */
    ck_assert_uint_eq(dropped, 300);
    PartEntry *none[1];
    ck_assert_uint_eq(part_entries(&t, none), 0);
}
END_TEST

static Suite *end_flush_suite(void)
{
    Suite *s = suite_create("end_flush");
    TCase *tc = tcase_create("engine");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, end_matches_timers_fired_one_by_one);
    tcase_add_test(tc, workers_end_the_same);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("table");
    tcase_add_test(tt, kept_slots_do_not_shrink);
    tcase_add_test(tt, free_visits_every_entry_once);
    suite_add_tcase(s, tt);
    return s;
}

int main(void)
{
    return check_run_suite(end_flush_suite());
}
