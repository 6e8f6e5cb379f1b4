/* tests/test_reload_oom.c — a hot reload asked with `vigil ctl SOCKET reload` in the
 * middle of `vigil run` when an allocation fails, with one worker and two: each run
 * must swap the rules, keep the old ones saying the reload failed for want of memory,
 * or exit 3 saying so (tests/oomreload.h). The allocations tried are every 97th, and
 * through the reload every 13th (VIGIL_OOM_STEP in the environment sets the
 * step everywhere; 1 tries each in turn). Each run waits up to the read loop's poll
 * slice (100 ms) before the reload is served, hence few. */
#include <check.h>

#include "tests/checkmain.h"
#include "tests/oomreload.h"

static const char *const NEW_MARKS[] = OOMRELOAD_NEW_MARKS;
static const char *const OLD_MARKS[] = OOMRELOAD_OLD_MARKS;

static const OomReloadCase CONTROL = {
    .name = "reload-oom",
    .trigger = OOMFEED_RELOAD,
    .old_rules = OOMRELOAD_OLD_RULES,
    .new_rules = OOMRELOAD_NEW_RULES,
    .summary = OOMRELOAD_SUMMARY,
    .kept_all = OOMRELOAD_KEPT_ALL,
    .new_marks = NEW_MARKS,
    .old_marks = OLD_MARKS,
    .step = 97,
    .reload_step = 13,
    .reload_step_sanitized = 41,
    .before_reload = 20,
};

START_TEST(reload_with_one_worker_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&CONTROL, "1");
}
END_TEST

START_TEST(reload_with_two_workers_keeps_or_swaps_the_rules)
{
    oomreload_sweep(&CONTROL, "2");
}
END_TEST

static Suite *reload_oom_suite(void)
{
    Suite *s = suite_create("reload_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, reload_with_one_worker_keeps_or_swaps_the_rules);
    tcase_add_test(tc, reload_with_two_workers_keeps_or_swaps_the_rules);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(reload_oom_suite());
}
