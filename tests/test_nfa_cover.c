/* tests/test_nfa_cover.c — matcher and expression cases that measuring branch
 * coverage found untested: a greedy loop with `until`, a tail of optional steps, `in` lists and count_distinct
 * over booleans, objects and arrays, and conditions shared between rules whose field
 * names are prefixes of each other. Table-driven like test_nfa_semantics: a rule body,
 * compact events ("ID:N@TS[,FIELD=JSON]", see tests/test_nfa_harness.h) and the exact
 * multiset of results. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfa/nfa.h"
#include "tests/checkmain.h"
#include "tests/test_nfa_harness.h"

typedef struct CoverCase {
    const char *name;
    const char *body;     /* rule body without actions (`on match` is appended) */
    const char *events;
    const char *expect;   /* results separated by ';' */
} CoverCase;

#define A "where n == \"a\""
#define B "where n == \"b\""
#define C "where n == \"c\""

static const CoverCase cases[] = {
    /* ---- greedy loops with until -------------------------------------------- */
    /* until stops the loop at c1, which the next step then takes; greedy leaves no
     * match that proceeds while the loop could still take an event */
    {"greedy_until", "begin a " A "; next b where n == \"b\" or n == \"c\" one_or_more greedy"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4", "match a:[a1] b:[b1,b2] c:[c1]"},
    {"not_greedy_until", "begin a " A "; next b where n == \"b\" or n == \"c\" one_or_more"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4",
     "match a:[a1] b:[b1,b2] c:[c1]; match a:[a1] b:[b1] c:[c1]"},
    {"greedy_times_until", "begin a " A "; next b where n == \"b\" or n == \"c\" times 2+ greedy"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4 c1:c@5", "match a:[a1] b:[b1,b2,b3] c:[c1]"},
    {"times_until", "begin a " A "; next b where n == \"b\" or n == \"c\" times 2+"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4 c1:c@5",
     "match a:[a1] b:[b1,b2,b3] c:[c1]; match a:[a1] b:[b1,b2] c:[c1]"},

    /* ---- a tail of several optional steps completes at once ------------------ */
    {"optional_tail_relaxed", "begin a " A "; followed_by b " B " optional;"
     " followed_by c " C " optional; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3",
     "match a:[a1]; match a:[a1] b:[b1]; match a:[a1] b:[b1] c:[c1]; match a:[a1] c:[c1]"},
    {"optional_tail_strict", "begin a " A "; next b " B " optional; next c " C " optional;"
     " skip no_skip;",
     "a1:a@1 c1:c@2 a2:a@3 b2:b@4 c2:c@5",
     "match a:[a1]; match a:[a1] c:[c1]; match a:[a2]; match a:[a2] b:[b2];"
     "match a:[a2] b:[b2] c:[c2]"},

    /* ---- `in` lists and count_distinct over non-numbers ------------------------ */
    {"in_with_booleans", "begin a where f in [true, 2]; skip no_skip;",
     "a1:a@1,f=true a2:a@2,f=false a3:a@3,f=2 a4:a@4 a5:a@5,f=\"true\" a6:a@6,f=null",
     "match a:[a1]; match a:[a3]"},
    {"in_with_null_never_holds", "begin a where f in [null, 1, false]; skip no_skip;",
     "a1:a@1,f=null a2:a@2 a3:a@3,f=1 a4:a@4,f=false a5:a@5,f=0",
     "match a:[a3]; match a:[a4]"},
    {"not_in_with_booleans", "begin a where not (f in [true]); skip no_skip;",
     "a1:a@1,f=true a2:a@2,f=false a3:a@3,f=\"x\"", "match a:[a2]; match a:[a3]"},
    {"count_distinct_booleans", "begin a " A " times 3 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 2; skip no_skip;",
     "a1:a@1,f=true a2:a@2,f=false a3:a@3,f=true c1:c@4 "
     "a4:a@5,f=true a5:a@6,f=true a6:a@7,f=true c2:c@8",
     "match a:[a1,a2,a3] c:[c1]"},
    {"count_distinct_objects", "begin a " A " times 3 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 2; skip no_skip;",
     "a1:a@1,f={\"x\":1} a2:a@2,f={\"x\":2} a3:a@3,f={\"x\":1} c1:c@4 "
     "a4:a@5,f={\"x\":1} a5:a@6,f={\"x\":1} a6:a@7,f={\"x\":1} c2:c@8",
     "match a:[a1,a2,a3] c:[c1]"},
    {"count_distinct_arrays", "begin a " A " times 3 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 3; skip no_skip;",
     "a1:a@1,f=[1] a2:a@2,f=[2] a3:a@3,f=[] c1:c@4 "
     "a4:a@5,f=[1] a5:a@6,f=[2] a6:a@7,f=[2] c2:c@8",
     "match a:[a1,a2,a3] c:[c1]"},
    /* null and missing values are not counted; a string "1" is not the number 1 */
    {"count_distinct_skips_nulls", "begin a " A " times 4 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 2; skip no_skip;",
     "a1:a@1,f=null a2:a@2 a3:a@3,f=1 a4:a@4,f=\"1\" c1:c@5", "match a:[a1,a2,a3,a4] c:[c1]"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static char *rule_text(const char *body)
{
    size_t n = strlen(body) + 64;
    char *text = malloc(n);
    ck_assert_ptr_nonnull(text);
    snprintf(text, n, "rule r { %s on match alert \"m\"; }\n", body);
    return text;
}

static NfaHarness *harness(const char *text, int flags)
{
    char *err = NULL;
    NfaHarness *h = nh_new(text, flags, 0, &err);
    ck_assert_msg(h != NULL, "%s", err ? err : "?");
    return h;
}

static void feed(NfaHarness *h, const char *events)
{
    char *err = NULL;
    ck_assert_msg(nh_feed_compact(h, events, &err), "%s", err ? err : "?");
}

START_TEST(test_case)
{
    const CoverCase *c = &cases[_i];
    char *text = rule_text(c->body);
    NfaHarness *h = harness(text, 0);
    free(text);
    feed(h, c->events);
    nh_advance(h, INT64_MAX);
    char *diff = nh_diff(h, c->expect);
    ck_assert_msg(diff == NULL, "%s: %s", c->name, diff);
    nh_free(h);
}
END_TEST

/* Range conditions on fields whose names are prefixes of each other (`amount`,
 * `amount2`) and identical conditions in different rules are grouped by the shared
 * condition cache; results are the same as each rule testing its own. */
START_TEST(test_shared_prefix_fields)
{
    static const char *const text =
        "rule r1 { begin a where amount > 5; followed_by b where amount2 > 5; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r2 { begin a where amount2 > 5; next b where amount > 7; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r3 { begin a where amount > 7; followed_by b where amount2 >= 9; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r4 { begin a where amount > 5 and amount2 > 5; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r5 { begin a where amount2 > 5; skip no_skip; on match alert \"m\"; }\n";
    static const char *const events =
        "e1:x@1,amount=6 e2:x@2,amount2=6 e3:x@3,amount=8 e4:x@4,amount2=9,amount=9 "
        "e5:x@5,amount=5,amount2=5 e6:x@6,amount2=10 e7:x@7,amount=\"8\"";
    char *err = NULL;
    NfaHarness *plain = nh_new(text, NH_WITH_RULE | NH_WITH_TIME, 0, &err);
    ck_assert_msg(plain != NULL, "%s", err ? err : "?");
    NfaHarness *shared = nh_new(text, NH_WITH_RULE | NH_WITH_TIME | NH_SHARE_CONDS, 0, &err);
    ck_assert_msg(shared != NULL, "%s", err ? err : "?");
    feed(plain, events);
    feed(shared, events);
    nh_advance(plain, INT64_MAX);
    nh_advance(shared, INT64_MAX);
    size_t n_results;
    char *diff = nh_same_results(plain, shared, &n_results);
    ck_assert_msg(diff == NULL, "shared conditions changed the results: %s", diff);
    /* r2's strict second step fails on e5 (5) and on e7 (a string is not > 7) */
    diff = nh_diff(plain,
        "r1|match@2000 a:[e1] b:[e2]; r1|match@4000 a:[e3] b:[e4];"
        "r1|match@6000 a:[e4] b:[e6];"
        "r2|match@3000 a:[e2] b:[e3];"
        "r3|match@4000 a:[e3] b:[e4]; r3|match@6000 a:[e4] b:[e6];"
        "r4|match@4000 a:[e4];"
        "r5|match@2000 a:[e2]; r5|match@4000 a:[e4]; r5|match@6000 a:[e6]");
    ck_assert_msg(diff == NULL, "%s", diff);
    nh_free(plain);
    nh_free(shared);
}
END_TEST

/* A match that completes at its first event waits behind an earlier partial match of
 * the same key (skip to_first: the earlier one may still come first). The rule's cap
 * of one partial match refuses the new match's own continuation, so the key holds a
 * single partial match and the waiting match at once. */
START_TEST(test_single_event_match_waits_behind_earlier_partial)
{
    char *text = rule_text("begin a where n == \"s\" or n == \"x\";"
                           " followed_by b where n == \"b\" optional; skip to_first a;");
    NfaHarness *h = harness(text, NH_WITH_TIME);
    free(text);
    nh_limits(h)->max_partials_per_rule = 1;
    feed(h, "s1:s@1 x1:x@2");
    /* [x1] is complete but held: [s1] may still grow into [s1 b] */
    char *diff = nh_diff(h, "match@1000 a:[s1]");
    ck_assert_msg(diff == NULL, "%s", diff);
    ck_assert_uint_eq(nh_live(h), 1);
    /* x1's continuation: refused by the rule cap (and counted as dropped too) */
    ck_assert_uint_eq(nh_counters(h)->partials_refused, 1);
    ck_assert_uint_eq(nh_dropped(h), 1);
    feed(h, "b1:b@3");
    diff = nh_diff(h, "match@1000 a:[s1]; match@3000 a:[s1] b:[b1]; match@2000 a:[x1]");
    ck_assert_msg(diff == NULL, "%s", diff);
    ck_assert(nh_idle(h));
    nh_free(h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nfa_cover");
    TCase *tc = tcase_create("table");
    tcase_add_loop_test(tc, test_case, 0, (int)N_CASES);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("shared");
    tcase_add_test(tr, test_shared_prefix_fields);
    tcase_add_test(tr, test_single_event_match_waits_behind_earlier_partial);
    suite_add_tcase(s, tr);
    return check_run_suite(s);
}
