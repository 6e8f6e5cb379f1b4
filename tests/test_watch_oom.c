/* tests/test_watch_oom.c — a hot reload by `vigil run --watch` in the middle of a run
 * when an allocation fails: the rule file is rewritten as editors save (a temp file
 * renamed over it, by the feeder process of tests/oomfeed.h once the command has read
 * the first part of its input), and the watch reloads once the change has settled.
 * Each run must swap the rules, keep the old ones saying the reload failed for want of
 * memory, or exit 3 saying so (tests/oomreload.h). Each run waits for the settling
 * (WATCH_SETTLE_MS, 200 ms) and a poll slice, so fewer allocations are tried than for
 * the other reloads: every 199th, and through the reload every 37th (VIGIL_OOM_STEP in
 * the environment sets the step everywhere; 1 tries each in turn). */
#include <check.h>

#include "tests/checkmain.h"
#include "tests/oomreload.h"

static const char *const NEW_MARKS[] = OOMRELOAD_NEW_MARKS;
static const char *const OLD_MARKS[] = OOMRELOAD_OLD_MARKS;

static const OomReloadCase WATCH = {
    .name = "watch-oom",
    .trigger = OOMFEED_WATCH,
    .old_rules = OOMRELOAD_OLD_RULES,
    .new_rules = OOMRELOAD_NEW_RULES,
    .summary = OOMRELOAD_SUMMARY,
    .kept_all = OOMRELOAD_KEPT_ALL,
    .new_marks = NEW_MARKS,
    .old_marks = OLD_MARKS,
    .step = 199,
    .reload_step = 37,
    .reload_step_sanitized = 97,
    .before_reload = 20,
};

START_TEST(watch_with_one_worker_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&WATCH, "1");
}
END_TEST

START_TEST(watch_with_two_workers_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&WATCH, "2");
}
END_TEST

static Suite *watch_oom_suite(void)
{
    Suite *s = suite_create("watch_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, watch_with_one_worker_keeps_or_swaps_the_rules);
    tcase_add_test(tc, watch_with_two_workers_keeps_or_swaps_the_rules);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(watch_oom_suite());
}
