/* tests/test_reload_state_oom.c — a hot reload by SIGHUP in the middle of `vigil run
 * --state DIR` (a checkpoint at nearly every turn of its read loop) when an allocation
 * fails, with one worker and two; the run is stopped (SIGTERM) once it has read the
 * events after the reload, and a second run on the same state folder, without failure
 * and with the new rules in the rule file, restores its checkpoint and reads more
 * events from a file. After a first run that exited 0, the output file the pair leaves
 * must hold exactly what the pair without failure leaves (none lost, none repeated):
 * that of the pair whose reload took the new rules if the run says it reloaded, or
 * that of a pair whose first run kept the old rules if it says the reload failed for
 * want of memory. A first run that exits 3 must say that memory ran out, and the run
 * restoring after it must exit 0 (tests/oomreload.h). The allocations tried are every
 * 97th, and through the reload every 23rd (VIGIL_OOM_STEP in the environment sets the
 * step everywhere; 1 tries each in turn). */
#include <check.h>

#include "tests/checkmain.h"
#include "tests/oomreload.h"

static const char *const NEW_MARKS[] = OOMRELOAD_NEW_MARKS;
static const char *const OLD_MARKS[] = OOMRELOAD_OLD_MARKS;

static const OomReloadCase STATE = {
    .name = "reload-state-oom",
    .trigger = OOMFEED_HUP,
    .old_rules = OOMRELOAD_OLD_RULES,
    .new_rules = OOMRELOAD_NEW_RULES,
    .summary = OOMRELOAD_SUMMARY,
    .kept_all = OOMRELOAD_KEPT_ALL,
    .new_marks = NEW_MARKS,
    .old_marks = OLD_MARKS,
    .state = true,
    .step = 97,
    .reload_step = 23,
    .reload_step_sanitized = 61,
    .before_reload = 80,
};

START_TEST(reload_with_state_and_one_worker_loses_and_repeats_nothing)
{
    oomreload_sweep(&STATE, "1");
}
END_TEST

START_TEST(reload_with_state_and_two_workers_loses_and_repeats_nothing)
{
    oomreload_sweep(&STATE, "2");
}
END_TEST

static Suite *reload_state_oom_suite(void)
{
    Suite *s = suite_create("reload_state_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, reload_with_state_and_one_worker_loses_and_repeats_nothing);
    tcase_add_test(tc, reload_with_state_and_two_workers_loses_and_repeats_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(reload_state_oom_suite());
}
