/* tests/test_nfa_end.c — what the matcher says, without running a key, about that key's
 * end of input (nfa_key_end_only_timeouts, nfa_key_end_timeouts): checked against what
 * the end then gives, both at once (advance to INT64_MAX) and through the key's
 * deadlines one by one, as the runtime's timers fire them. The runtime drops keys in
 * bulk on these answers (runtime/shard.c), so a wrong one loses or invents results. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfa/nfa.h"
#include "tests/test_nfa_harness.h"
#include "tests/checkmain.h"

#define A "where n == \"a\""
#define B "where n == \"b\""
#define C "where n == \"c\""

typedef struct EndCase {
    const char *name;
    const char *body;       /* rule body without `on` */
    const char *events;     /* compact events (tests/test_nfa_harness.h) */
    bool only_timeouts;     /* the expected answers */
    int timeouts;           /* partial matches with a deadline; -1: whatever the end
                               gives (checked against it) */
} EndCase;

static const EndCase cases[] = {
    {"two_partials_time_out", "begin a " A "; followed_by b " B "; within 10s; skip no_skip;",
     "a1:a@1 a2:a@2", true, 2},
    {"default_skip_nothing_held", "begin a " A "; followed_by b " B "; within 10s;",
     "a1:a@1 a2:a@2 x:x@3", true, 2},
    /* a2's match waits behind a1, which started earlier: a1's timeout releases it */
    {"held_back_match", "begin a " A "; followed_by b where n == \"b\" and v == a.v; within 10s;",
     "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2", false, 1},
    /* a trailing not_followed_by completes when its within elapses (a partial match
     * with a deadline all the same) */
    {"trailing_absence", "begin a " A "; not_followed_by c " C "; within 5s;", "a1:a@1", false, 1},
    /* without any within, partial matches are dropped silently */
    {"no_within", "begin a " A "; followed_by b " B "; skip no_skip;", "a1:a@1 a2:a@2", true, 0},
    /* a1 waits for c (no within there), a2 for b (a step within) */
    {"step_within_one_of_two",
     "begin a " A "; followed_by b within 2s where n == \"b\" and v == a.v; followed_by c " C ";"
     " skip no_skip;",
     "a1:a@1,v=1 a2:a@2,v=2 b1:b@2.5,v=1", true, 1},
    {"idle_key", "begin a " A "; followed_by b " B "; within 10s;", "x:x@1", true, 0},
    {"loop_with_matches_out", "begin a " A "; followed_by b " B " one_or_more; within 10s;"
     " skip no_skip;", "a1:a@1 b1:b@2 b2:b@3", true, -1},
    {"greedy_loop", "begin a " A "; followed_by b " B " times 1+ greedy; followed_by c " C ";"
     " within 10s;", "a1:a@1 b1:b@2 b2:b@3 a2:a@4", true, -1},
    /* held back behind a loop that started earlier */
    {"held_behind_loop", "begin a " A "; followed_by b where n == \"b\" and v == a.v one_or_more;"
     " within 10s;", "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2", false, -1},
};

static NfaHarness *harness(const EndCase *c)
{
    char text[1024];
    snprintf(text, sizeof text, "time ts;\nrule r { %s on match alert \"m\"; }\n", c->body);
    char *err = NULL;
    NfaHarness *h = nh_new(text, NH_WITH_TIME, 0, &err);
    ck_assert_msg(h != NULL, "%s: %s", c->name, err ? err : "?");
    ck_assert_msg(nh_feed_compact(h, c->events, &err), "%s: %s", c->name, err ? err : "?");
    return h;
}

/* The results from `from` on: how many are timeouts, and whether any is a match. */
static size_t timeouts_from(NfaHarness *h, size_t from, bool *any_match)
{
    size_t n, timeouts = 0;
    char **r = nh_results(h, &n);
    *any_match = false;
    for (size_t i = from; i < n; i++) {
        if (!strncmp(r[i], "timeout", 7))
            timeouts++;
        else
            *any_match = true;
    }
    return timeouts;
}

static size_t count_results(NfaHarness *h)
{
    size_t n;
    nh_results(h, &n);
    return n;
}

/* Time moves through the key's deadlines, then to the end. */
static void advance_by_deadlines(NfaHarness *h)
{
    for (int guard = 0; guard < 100 && nh_deadline(h, 0) != INT64_MAX; guard++)
        nh_advance(h, nh_deadline(h, 0));
    nh_advance(h, INT64_MAX);
}

static void check_end(const EndCase *c, bool by_deadlines)
{
    NfaHarness *h = harness(c);
    const Nfa *nfa = nh_nfa(h, 0);
    bool only = nfa_key_end_only_timeouts(nfa, nh_key(h, 0));
    size_t told = nfa_key_end_timeouts(nfa, nh_key(h, 0));
    ck_assert_msg(only == c->only_timeouts, "%s: only timeouts %d", c->name, only);
    if (c->timeouts >= 0)
        ck_assert_msg(told == (size_t)c->timeouts, "%s: %zu timeouts told", c->name, told);
    size_t before = count_results(h);
    if (by_deadlines)
        advance_by_deadlines(h);
    else
        nh_advance(h, INT64_MAX);
    bool any_match;
    size_t timeouts = timeouts_from(h, before, &any_match);
    ck_assert_msg(!only || !any_match, "%s: a match came out", c->name);
    ck_assert_msg(any_match || only, "%s: no match came out", c->name);
    if (only)
        ck_assert_msg(timeouts == told, "%s: %zu timeouts, %zu told", c->name, timeouts, told);
    ck_assert(nh_idle(h));
    nh_free(h);
}

START_TEST(end_at_once)
{
    check_end(&cases[_i], false);
}
END_TEST

START_TEST(end_through_deadlines)
{
    check_end(&cases[_i], true);
}
END_TEST

START_TEST(idle_and_null_keys)
{
    EndCase c = {"idle", "begin a " A "; followed_by b " B "; within 10s;", "", true, 0};
    NfaHarness *h = harness(&c);
    ck_assert(nfa_key_end_only_timeouts(nh_nfa(h, 0), NULL));
    ck_assert_uint_eq(nfa_key_end_timeouts(nh_nfa(h, 0), NULL), 0);
    ck_assert(nfa_key_end_only_timeouts(nh_nfa(h, 0), nh_key(h, 0)));
    ck_assert_uint_eq(nfa_key_end_timeouts(nh_nfa(h, 0), nh_key(h, 0)), 0);
    nh_free(h);
}
END_TEST

static Suite *end_suite(void)
{
    Suite *s = suite_create("nfa_end");
    TCase *tc = tcase_create("end");
    int n = (int)(sizeof cases / sizeof cases[0]);
    tcase_add_loop_test(tc, end_at_once, 0, n);
    tcase_add_loop_test(tc, end_through_deadlines, 0, n);
    tcase_add_test(tc, idle_and_null_keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(end_suite());
}
