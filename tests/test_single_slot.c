/* tests/test_single_slot.c — records with room for one slot (runtime/partition.h).
 * Such an entry keeps no `due` for its slot: the shard reads the slot's time from its
 * matcher, or from the rule's suppression while the matcher is idle. So a key that
 * alerted under `suppress` and holds no partial match must keep its suppression (and
 * through a checkpoint), end it at its time, and free everything then; and when a
 * second rule starts on the key, the record grows to room for four and the first
 * slot's time must come along, so that its timeout still fires at its time. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/checkmain.h"
#include "tests/recordrun.h"

#define MAX_MEMORY (1u << 20)

static const char *const both_keys[] = {"u1", "u2", NULL};

/* `once` alerts on each `a` and then keeps quiet for 10 s; `pair` (a second rule on
 * the same key) starts with `b` and alerts when it times out after 3 s. */
#define ONCE_RULE                                                                   \
    "rule once { key user; begin a where type == \"a\"; suppress 10s; on match alert " \
    "\"m\"; }\n"
#define PAIR_RULE                                                                    \
    "rule pair { key user; begin b where type == \"b\"; followed_by c where type == " \
    "\"c\"; within 3s; on match alert \"m\"; on timeout alert \"t\"; }\n"
#define LATER_RULE                                                                   \
    "rule later { key user; begin x where type == \"x\"; followed_by y where type == " \
    "\"y\"; within 20s; on match alert \"m\"; }\n"

static const char *const suppressed_script[] = {
    "0 u1 a",      /* alerts; u1's record: one slot, no partial match, suppressed to 10 s */
    "2000 u1 a",   /* suppressed */
    RR_RESTART,
    "4000 u1 a",   /* still suppressed after the restore */
    "5000 u1 b",   /* `pair` starts: the record grows, `once`'s end (10 s) must come along */
    "8500 u2 z",   /* line 5: `pair`'s timeout at 8 s */
    "10500 u2 z",  /* `once`'s suppression is over: u1's record goes */
    "11000 u1 a",  /* alerts again */
    "12000 u1 a",  /* suppressed */
    "30000 u2 z",  /* everything ended */
    NULL};

START_TEST(a_suppression_without_partial_matches_lives_in_a_one_slot_record)
{
    static const char rules[] = "time ts epoch_ms;\n" ONCE_RULE PAIR_RULE;
    RecordRun r;
    rr_open(&r, rules, MAX_MEMORY);
    rr_feed_script(&r, suppressed_script, 0, 4);
    EngineRuleStats once = rr_stats(&r, "once");
    ck_assert_uint_eq(once.alerts, 1);
    ck_assert_uint_eq(once.suppressed, 2);
    ck_assert_uint_eq(once.keys_live, 1);
    rr_feed_script(&r, suppressed_script, 4, 7);
    char *pair = rr_alerts_of(&r, "pair", "u1");
    ck_assert_str_eq(pair, "pair t u1 8000 [ 0:4 ] @5\n");
    free(pair);
    /* at 10.5 s neither rule holds anything for u1 any more */
    ck_assert_uint_eq(rr_stats(&r, "once").keys_live, 0);
    ck_assert_uint_eq(rr_stats(&r, "pair").keys_live, 0);
    ck_assert_uint_eq(rr_memory(&r), 0);
    rr_feed_script(&r, suppressed_script, 7, SIZE_MAX);
    once = rr_stats(&r, "once");
    ck_assert_uint_eq(once.alerts, 2);
    ck_assert_uint_eq(once.suppressed, 3);
    ck_assert_uint_eq(once.keys_live, 0);
    ck_assert_uint_eq(rr_memory(&r), 0);
    char *alerts = rr_alerts_of(&r, "once", "u1");
    ck_assert_str_eq(alerts, "once m u1 0 [ 0:1 ] @1\nonce m u1 11000 [ 0:7 ] @7\n");
    free(alerts);
    rr_close(&r);
    rr_assert_as_if_alone(rules, suppressed_script, both_keys, MAX_MEMORY);
}
END_TEST

/* An entry with room for one keeps no `due`, so the grown entry's first slot has none
 * to copy: its time must be set. w1's record, grown and freed first, leaves its entry
 * to be reused with a stale time (`later`'s, 20.2 s) where u1's `pair` must find 3 s. */
static const char *const grown_script[] = {
    "0 u1 b",      /* `pair` starts: one slot, its time (3 s) only in its matcher */
    "100 w1 b", "200 w1 x", "300 w1 c", "400 w1 y",   /* w1's grown record comes and goes */
    "1000 u1 x",   /* `later` starts: u1's record grows to room for four */
    "2000 u1 z",   /* u1 runs, before `pair`'s time */
    "3500 u2 z",   /* line 8: `pair`'s timeout at 3 s */
    "4000 u1 c",   /* too late for `pair` */
    "5000 u1 b", RR_RESTART, "5500 u1 x",
    "9000 u2 z",   /* line 12: `pair`'s second timeout at 8 s */
    "30000 u2 z", NULL};

static const char *const grown_keys[] = {"u1", "u2", "w1", NULL};

START_TEST(a_grown_record_keeps_its_first_slots_time)
{
    static const char rules[] = "time ts epoch_ms;\n" PAIR_RULE LATER_RULE;
    RecordRun r;
    rr_open(&r, rules, MAX_MEMORY);
    rr_feed_script(&r, grown_script, 0, SIZE_MAX);
    char *pair = rr_alerts_of(&r, "pair", "u1");
    ck_assert_str_eq(pair, "pair t u1 3000 [ 0:1 ] @8\npair t u1 8000 [ 0:10 ] @12\n");
    free(pair);
    ck_assert_uint_eq(rr_stats(&r, "later").partials_live, 0);
    ck_assert_uint_eq(rr_memory(&r), 0);
    rr_close(&r);
    rr_assert_as_if_alone(rules, grown_script, grown_keys, MAX_MEMORY);
    /* the other order of rules: the grown slot is then the second */
    static const char swapped[] = "time ts epoch_ms;\n" LATER_RULE PAIR_RULE;
    rr_assert_as_if_alone(swapped, grown_script, grown_keys, 0);
}
END_TEST

/* Many keys, each a one-slot record of `once` (no partial match, a suppression), then
 * half of them grown by `pair`: enough state that the budget publishes it (it does so
 * in steps of BUDGET_BATCH), and once all of it ended, every byte given back. */
static void feed_keys(RecordRun *r, long long t, const char *type, unsigned n, unsigned step)
{
    for (unsigned i = 0; i < n; i += step) {
        char line[64];
        snprintf(line, sizeof line, "%lld k%u %s", t, i, type);
        rr_feed(r, line);
    }
}

START_TEST(one_slot_records_give_their_memory_back)
{
    enum { KEYS = 2000 };
    RecordRun r;
    rr_open(&r, "time ts epoch_ms;\n" ONCE_RULE PAIR_RULE, MAX_MEMORY * 64);
    feed_keys(&r, 0, "a", KEYS, 1);
    ck_assert_uint_eq(rr_stats(&r, "once").keys_live, KEYS);
    ck_assert_uint_gt(rr_memory(&r), 0);
    rr_feed(&r, RR_RESTART);
    ck_assert_uint_eq(rr_stats(&r, "once").keys_live, KEYS);
    ck_assert_uint_gt(rr_memory(&r), 0);
    feed_keys(&r, 2000, "a", KEYS, 1);
    feed_keys(&r, 3000, "b", KEYS, 2);   /* grows half the records */
    ck_assert_uint_eq(rr_stats(&r, "pair").keys_live, KEYS / 2);
    rr_feed(&r, "7000 u1 z");            /* `pair` timed out at 6 s */
    ck_assert_uint_eq(rr_stats(&r, "pair").timeouts, KEYS / 2);
    ck_assert_uint_eq(rr_stats(&r, "pair").keys_live, 0);
    ck_assert_uint_eq(rr_stats(&r, "once").keys_live, KEYS);
    rr_feed(&r, "10500 u1 z");           /* every suppression is over */
    EngineRuleStats once = rr_stats(&r, "once");
    ck_assert_uint_eq(once.alerts, KEYS);
    ck_assert_uint_eq(once.suppressed, KEYS);
    ck_assert_uint_eq(once.keys_live, 0);
    ck_assert_uint_eq(rr_memory(&r), 0);
    rr_finish(&r);
    ck_assert_uint_eq(rr_memory(&r), 0);
    rr_close(&r);
}
END_TEST

static Suite *single_slot_suite(void)
{
    Suite *s = suite_create("single_slot");
    TCase *tc = tcase_create("records");
    tcase_add_test(tc, a_suppression_without_partial_matches_lives_in_a_one_slot_record);
    tcase_add_test(tc, a_grown_record_keeps_its_first_slots_time);
    tcase_add_test(tc, one_slot_records_give_their_memory_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(single_slot_suite());
}
