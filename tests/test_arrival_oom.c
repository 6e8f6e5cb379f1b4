/* tests/test_arrival_oom.c — a hot reload (`vigil ctl SOCKET reload`) in the middle of
 * a `vigil run` on processing time (rules without a `time` declaration: an event's time
 * is its arrival) when an allocation fails, with one worker and two. Each run must swap
 * the rules, keep the old ones saying the reload failed for want of memory, or exit 3
 * saying so (tests/oomreload.h). Arrival times differ from run to run, so the rules
 * are chosen for alerts that do not depend on them: no `within`, no suppression,
 * nothing that a timer fires; only matches, whose alerts are compared without their
 * "time" (the last event's arrival). The allocations tried are every 97th, and through
 * the reload every 23rd (VIGIL_OOM_STEP in the environment sets the step everywhere;
 * 1 tries each in turn). */
#include <check.h>

#include "tests/checkmain.h"
#include "tests/oomreload.h"

/* Before the reload: two rules that match a pair of events (their partial matches
 * wait for as long as it takes), one with a filter, one of a single event. */
static const char OLD_RULES[] =
    "rule pair { key u; begin a where t == \"login\"; followed_by b where t == \"buy\" and\n"
    "  n > a.n; on match alert \"pair {u}\"; }\n"
    "rule shut { key u; begin a where t == \"open\"; followed_by b where t == \"close\";\n"
    "  on match alert \"closed {u}\"; }\n"
    "rule big { filter n > 90; key u; begin a where t == \"buy\"; on match alert \"big\"; }\n"
    "rule seen { key u; begin a where t == \"view\"; on match alert \"viewed {u}\"; }\n";

/* After: pair's action changed (it keeps its state), shut's steps changed (it starts
 * empty), big removed, seen unchanged, shop added. */
static const char NEW_RULES[] =
    "rule pair { key u; begin a where t == \"login\"; followed_by b where t == \"buy\" and\n"
    "  n > a.n; on match alert \"pair again {u}\" fields { n: b.n }; }\n"
    "rule shut { key u; begin a where t == \"open\"; followed_by b where t == \"close\" and\n"
    "  n > 20; on match alert \"closed {u}\"; }\n"
    "rule seen { key u; begin a where t == \"view\"; on match alert \"viewed {u}\"; }\n"
    "rule shop { key u; begin a where t == \"buy\"; followed_by b where t == \"buy\";\n"
    "  on match alert \"two buys {u}\"; }\n";

static const char *const NEW_MARKS[] = OOMRELOAD_NEW_MARKS;
static const char *const OLD_MARKS[] = OOMRELOAD_OLD_MARKS;

static const OomReloadCase ARRIVAL = {
    .name = "arrival-oom",
    .trigger = OOMFEED_RELOAD,
    .old_rules = OLD_RULES,
    .new_rules = NEW_RULES,
    .summary = OOMRELOAD_SUMMARY,
    .kept_all = OOMRELOAD_KEPT_ALL,
    .new_marks = NEW_MARKS,
    .old_marks = OLD_MARKS,
    .arrival_time = true,
    .step = 97,
    .reload_step = 23,
    .reload_step_sanitized = 61,
    .before_reload = 20,
};

START_TEST(arrival_time_with_one_worker_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&ARRIVAL, "1");
}
END_TEST

START_TEST(arrival_time_with_two_workers_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&ARRIVAL, "2");
}
END_TEST

static Suite *arrival_oom_suite(void)
{
    Suite *s = suite_create("arrival_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, arrival_time_with_one_worker_keeps_or_swaps_the_rules);
    tcase_add_test(tc, arrival_time_with_two_workers_keeps_or_swaps_the_rules);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(arrival_oom_suite());
}
