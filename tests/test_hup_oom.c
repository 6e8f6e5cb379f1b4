/* tests/test_hup_oom.c — a hot reload by SIGHUP in the middle of `vigil run` when an
 * allocation fails, with one worker and two: the signal is sent to the running command
 * as an operator would (the feeder process of tests/oomfeed.h, once the command has
 * read the first part of its input), and taken between reads like any other. Each run
 * must swap the rules, keep the old ones saying the reload failed for want of memory,
 * or exit 3 saying so (tests/oomreload.h). The allocations tried are every 97th, and
 * through the reload every 23rd (VIGIL_OOM_STEP in the environment sets the step
 * everywhere; 1 tries each in turn). */
#include <check.h>

#include "tests/checkmain.h"
#include "tests/oomreload.h"

static const char *const NEW_MARKS[] = OOMRELOAD_NEW_MARKS;
static const char *const OLD_MARKS[] = OOMRELOAD_OLD_MARKS;

static const OomReloadCase HUP = {
    .name = "hup-oom",
    .trigger = OOMFEED_HUP,
    .old_rules = OOMRELOAD_OLD_RULES,
    .new_rules = OOMRELOAD_NEW_RULES,
    .summary = OOMRELOAD_SUMMARY,
    .kept_all = OOMRELOAD_KEPT_ALL,
    .new_marks = NEW_MARKS,
    .old_marks = OLD_MARKS,
    .step = 97,
    .reload_step = 23,
    .reload_step_sanitized = 61,
    .before_reload = 20,
};

START_TEST(sighup_with_one_worker_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&HUP, "1");
}
END_TEST

START_TEST(sighup_with_two_workers_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&HUP, "2");
}
END_TEST

static Suite *hup_oom_suite(void)
{
    Suite *s = suite_create("hup_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, sighup_with_one_worker_keeps_or_swaps_the_rules);
    tcase_add_test(tc, sighup_with_two_workers_keeps_or_swaps_the_rules);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(hup_oom_suite());
}
