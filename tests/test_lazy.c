/* tests/test_lazy.c — timeouts nobody sees, handled late (docs/run.md, counters). A
 * rule without `on timeout` whose key can only time out need not run at its deadline:
 * its record runs at the latest such deadline, or at the key's next event. Its
 * counters then lag, but must show each timeout exactly once, and be exact at the end.
 * Rules whose partial matches may release a match when time passes (a trailing
 * not_followed_by, a match held back by a skip strategy) must still run on time when
 * their key's record also holds such a lazy rule's slot. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/checkmain.h"
#include "tests/recordrun.h"

/* Two rules without `on timeout` on one key: `short` dies after 10 s, `long` after
 * 30 s; both start on u1's first event, so u1's record holds two lazy slots. */
static const char lazy_rules[] =
    "time ts epoch_ms;\n"
    "rule short { key user; begin a where type == \"a\"; followed_by b where type == \"b\"; "
    "within 10s; on match alert \"m\"; }\n"
    "rule long { key user; begin a where type == \"a\"; followed_by c where type == \"c\"; "
    "within 30s; on match alert \"m\"; }\n";

/* The same rules, alerting on their timeouts: these run at their deadlines. */
static const char eager_rules[] =
    "time ts epoch_ms;\n"
    "rule short { key user; begin a where type == \"a\"; followed_by b where type == \"b\"; "
    "within 10s; on match alert \"m\"; on timeout alert \"t\"; }\n"
    "rule long { key user; begin a where type == \"a\"; followed_by c where type == \"c\"; "
    "within 30s; on match alert \"m\"; on timeout alert \"t\"; }\n";

static void assert_counts(const RecordRun *r, const char *rule, uint64_t timeouts,
                          uint64_t partials_live, const char *when)
{
    EngineRuleStats st = rr_stats(r, rule);
    ck_assert_msg(st.timeouts == timeouts && st.partials_live == partials_live,
                  "%s: rule %s has timeouts %llu, partials_live %llu; expected %llu, %llu", when,
                  rule, (unsigned long long)st.timeouts, (unsigned long long)st.partials_live,
                  (unsigned long long)timeouts, (unsigned long long)partials_live);
}

/* The end of input leaves the lazy set's counters where the eager set's are. */
static void assert_ends_as_eager(RecordRun *lazy, const char *const *script)
{
    RecordRun eager;
    rr_open(&eager, eager_rules, 0);
    rr_feed_script(&eager, script, 0, SIZE_MAX);
    rr_finish(&eager);
    rr_finish(lazy);
    static const char *const rules[] = {"short", "long"};
    for (size_t i = 0; i < 2; i++) {
        EngineRuleStats l = rr_stats(lazy, rules[i]), e = rr_stats(&eager, rules[i]);
        ck_assert_msg(l.matches == e.matches && l.timeouts == e.timeouts &&
                          l.partials_live == e.partials_live && l.keys_live == e.keys_live &&
                          l.partials_dropped == e.partials_dropped,
                      "rule %s: lazy and eager runs end with different counters", rules[i]);
        ck_assert_uint_eq(l.partials_live, 0);
        ck_assert_uint_eq(l.keys_live, 0);
    }
    rr_close(&eager);
}

/* u1's `short` times out at 10 s; u2's events move time on. */
static const char *const key_runs_again[] = {
    "0 u1 a", "11000 u2 z", "12000 u1 b", "31000 u2 z", "40000 u2 z", NULL};

START_TEST(a_lazy_timeout_shows_once_its_key_runs_again)
{
    RecordRun r;
    rr_open(&r, lazy_rules, 0);
    rr_feed_script(&r, key_runs_again, 0, 2);
    /* 10 s passed, but u1's record waits for `long` (30 s): nothing seen yet */
    assert_counts(&r, "short", 0, 1, "at 11 s, before u1 runs");
    rr_feed_script(&r, key_runs_again, 2, 3);
    assert_counts(&r, "short", 1, 0, "at 12 s, u1 ran");
    assert_counts(&r, "long", 0, 1, "at 12 s, u1 ran");
    rr_feed_script(&r, key_runs_again, 3, SIZE_MAX);
    assert_counts(&r, "short", 1, 0, "at 40 s");
    assert_counts(&r, "long", 1, 0, "at 40 s");
    assert_ends_as_eager(&r, key_runs_again);
    assert_counts(&r, "short", 1, 0, "at the end");
    assert_counts(&r, "long", 1, 0, "at the end");
    rr_close(&r);
}
END_TEST

/* No more u1 events: the record runs once the latest of its lazy deadlines passes. */
static const char *const record_time_passes[] = {
    "0 u1 a", "1000 u1 a", "11000 u2 z", "29000 u2 z", "31500 u2 z", "60000 u2 z", NULL};

START_TEST(lazy_timeouts_show_once_the_records_time_passes)
{
    RecordRun r;
    rr_open(&r, lazy_rules, 0);
    rr_feed_script(&r, record_time_passes, 0, 4);
    assert_counts(&r, "short", 0, 2, "at 29 s");
    assert_counts(&r, "long", 0, 2, "at 29 s");
    rr_feed_script(&r, record_time_passes, 4, 5);   /* 31.5 s: past `long`'s first only */
    ck_assert_uint_eq(rr_stats(&r, "short").timeouts, 2);
    ck_assert_uint_eq(rr_stats(&r, "short").partials_live, 0);
    ck_assert_uint_eq(rr_stats(&r, "long").timeouts + rr_stats(&r, "long").partials_live, 2);
    rr_feed_script(&r, record_time_passes, 5, SIZE_MAX);
    assert_counts(&r, "short", 2, 0, "at 60 s");
    assert_counts(&r, "long", 2, 0, "at 60 s");
    assert_ends_as_eager(&r, record_time_passes);
    assert_counts(&r, "long", 2, 0, "at the end");
    rr_close(&r);
}
END_TEST

/* The end of input comes while the timeouts still wait: counted there, once. */
static const char *const ends_waiting[] = {"0 u1 a", "11000 u2 z", RR_RESTART, "12000 u2 z",
                                           NULL};

START_TEST(lazy_timeouts_waiting_at_the_end_count_once)
{
    RecordRun r;
    rr_open(&r, lazy_rules, 0);
    rr_feed_script(&r, ends_waiting, 0, SIZE_MAX);
    assert_counts(&r, "short", 0, 1, "at 12 s, after a restart");
    assert_ends_as_eager(&r, ends_waiting);
    assert_counts(&r, "short", 1, 0, "at the end");
    assert_counts(&r, "long", 1, 0, "at the end");
    rr_close(&r);
}
END_TEST

/* `lazy` starts with every `a` and waits 60 s unseen; `expiry` matches when 5 s pass
 * without a `c`; `held`'s second partial match completes at 3 s but waits for the first
 * (skip past_last_event), which times out at 9.5 s. u2's events move time on. */
#define LAZY_RULE                                                                         \
    "rule lazy { key user; begin a where type == \"a\"; followed_by b where type == \"b\"; " \
    "within 60s; on match alert \"m\"; }\n"
#define EXPIRY_RULE                                                                       \
    "rule expiry { key user; begin a where type == \"a\"; not_followed_by c where type == " \
    "\"c\"; within 5s; on match alert \"m\"; }\n"
#define HELD_RULE                                                                         \
    "rule held { key user; begin s where type == \"s\"; followed_by e where type == \"e\" " \
    "and v == s.v; within 8s; skip past_last_event; on match alert \"m\"; }\n"

static const char *const timely_script[] = {
    "1000 u1 a", "1500 u1 s 1", "2000 u1 s 2", "3000 u1 e 2", "4000 u2 z",
    "7000 u2 z",    /* line 6: `expiry`'s match at 6 s */
    "10000 u2 z",   /* line 7: `held`'s match, released at 9.5 s */
    "20000 u1 a", "20500 u1 s 3", "21000 u1 s 4", "21200 u1 e 4", RR_RESTART,
    "26500 u2 z",   /* line 12: `expiry`'s match at 25 s */
    "29000 u2 z",   /* line 13: `held`'s second */
    "90000 u2 z", NULL};

static const char *const both_keys[] = {"u1", "u2", NULL};

static void assert_timely(const char *rules)
{
    RecordRun r;
    rr_open(&r, rules, 0);
    rr_feed_script(&r, timely_script, 0, SIZE_MAX);
    char *expiry = rr_alerts_of(&r, "expiry", "u1"), *held = rr_alerts_of(&r, "held", "u1");
    ck_assert_str_eq(expiry, "expiry m u1 6000 [ 0:1 ] @6\nexpiry m u1 25000 [ 0:8 ] @12\n");
    ck_assert_str_eq(held, "held m u1 3000 [ 1:4 0:3 ] @7\nheld m u1 21200 [ 1:11 0:10 ] @13\n");
    free(expiry);
    free(held);
    rr_close(&r);
    rr_assert_as_if_alone(rules, timely_script, both_keys, 0);
}

START_TEST(matches_released_by_time_come_on_time_beside_a_lazy_slot)
{
    assert_timely("time ts epoch_ms;\n" LAZY_RULE EXPIRY_RULE HELD_RULE);
    assert_timely("time ts epoch_ms;\n" HELD_RULE EXPIRY_RULE LAZY_RULE);
}
END_TEST

static Suite *lazy_suite(void)
{
    Suite *s = suite_create("lazy");
    TCase *tc = tcase_create("timeouts");
    tcase_add_test(tc, a_lazy_timeout_shows_once_its_key_runs_again);
    tcase_add_test(tc, lazy_timeouts_show_once_the_records_time_passes);
    tcase_add_test(tc, lazy_timeouts_waiting_at_the_end_count_once);
    tcase_add_test(tc, matches_released_by_time_come_on_time_beside_a_lazy_slot);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(lazy_suite());
}
