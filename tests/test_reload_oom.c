/* tests/test_reload_oom.c — a hot reload (`vigil ctl SOCKET reload`) in the middle of
 * `vigil run` when an allocation fails, with one worker and two. RUNTIME.md 5: a
 * reload that cannot be done keeps the old rules running, says so and counts it; one
 * that can swaps between two events. Running out of memory is never silent. So each
 * run with allocation N failing must end in one of three ways: exit 0 with exactly
 * the alerts of the run whose reload took the new rules, saying it reloaded; exit 0
 * with exactly the alerts of a run that kept the old rules, saying the reload failed
 * for want of memory; or exit 3 saying that memory ran out. Never exit 0 with an
 * alert missing, never a crash or a hang.
 * The events come on standard input in two parts (tests/oomfeed.h): the reload is
 * asked once vigil has read the first, and the second follows its reply, so the
 * reload falls between the same two events in every run. The allocations tried are
 * every OOM_STEP-th up to the reload, and around it each in turn (VIGIL_OOM_STEP in
 * the environment sets the step everywhere; 1 tries each in turn). Each run waits up
 * to the read loop's poll slice (100 ms) before the reload is served, hence few. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "tests/checkmain.h"
#include "tests/oomcmd.h"
#include "tests/oomevents.h"
#include "tests/oomfeed.h"
#include "tests/testutil.h"
#include "tests/tmptree.h"

#define N_EVENTS 600
#define CUT 300
#define N_USERS 8
/* Before the reload every OOM_STEP-th allocation; from OOM_BEFORE_RELOAD before the
 * reload's first allocation every OOM_RELOAD_STEP-th through the reload. */
#define OOM_STEP 97
#define OOM_BEFORE_RELOAD 20
#define OOM_RELOAD_STEP 13
#define OOM_RELOAD_STEP_SANITIZED 41

/* The rules before: a rule that matches, one whose partial matches time out, one with
 * a filter, one with suppression. */
static const char OLD_RULES[] =
    "time ts lateness 3s;\n"
    "rule pair { key u; begin a where t == \"login\"; followed_by b where t == \"buy\" and\n"
    "  n > a.n; within 30s; on match alert \"pair {u}\"; }\n"
    "rule quiet { key u; begin a where t == \"open\"; followed_by b where t == \"close\";\n"
    "  within 5s; on match alert \"closed {u}\"; on timeout alert \"left open {u}\"; }\n"
    "rule big { filter n > 90; key u; begin a where t == \"buy\"; on match alert \"big\"; }\n"
    "rule calm { key u; begin a where t == \"view\"; suppress 20s; on match alert \"viewed\"; }\n";

/* After: pair's action changed (it keeps its state), quiet's window changed (it starts
 * empty), big removed, calm unchanged, shop added. */
static const char NEW_RULES[] =
    "time ts lateness 3s;\n"
    "rule pair { key u; begin a where t == \"login\"; followed_by b where t == \"buy\" and\n"
    "  n > a.n; within 30s; on match alert \"pair again {u}\" fields { n: b.n }; }\n"
    "rule quiet { key u; begin a where t == \"open\"; followed_by b where t == \"close\";\n"
    "  within 9s; on match alert \"closed {u}\"; on timeout alert \"left open {u}\"; }\n"
    "rule calm { key u; begin a where t == \"view\"; suppress 20s; on match alert \"viewed\"; }\n"
    "rule shop { key u; begin a where t == \"buy\"; followed_by b where t == \"buy\";\n"
    "  within 10s; on match alert \"two buys {u}\"; }\n";

/* Events `from` to `to` of the sequence (tests/oomevents.h). Heap. */
static char *make_events(int from, int to)
{
    return oomevents_lines(4711, N_USERS, from, to, NULL);
}

typedef struct Setup {
    char dir[48], rules[96], control[96];
    char *first, *second;
    char *argv[8];
    bool sorted;               /* two workers: alerts compared in any order */
} Setup;

static void setup(Setup *s, const char *workers)
{
    tmptree_make(s->dir, sizeof s->dir, "reload-oom");
    tmptree_path(s->rules, sizeof s->rules, s->dir, "r.cep");
    tmptree_path(s->control, sizeof s->control, s->dir, "ctl");
    s->first = make_events(0, CUT);
    s->second = make_events(CUT, N_EVENTS);
    char *argv[] = {"run", "--workers", (char *)workers, "--control", s->control, s->rules,
                    NULL};
    memcpy(s->argv, argv, sizeof argv);
    s->sorted = strcmp(workers, "1") != 0;
}

static void teardown(Setup *s)
{
    tmptree_remove(s->dir);
    free(s->first);
    free(s->second);
}

/* The run with the old rules in place and a reload to `new_rules` between the two
 * parts, allocation `fail` failing. */
static OomCmdRun run_reloading(const Setup *s, const char *new_rules, size_t fail)
{
    tmptree_write(s->rules, OLD_RULES);
    OomFeed feed = {s->first, OOMFEED_RELOAD, s->control, s->rules, new_rules, s->second};
    return oomfeed_run(cmd_run, (char **)s->argv, fail, &feed);
}

static char *alerts_of(const Setup *s, const OomCmdRun *r)
{
    return s->sorted ? oomcmd_sorted_lines(r->out) : strdup(r->out);
}

typedef struct Outcomes {
    size_t reloaded, kept_old, exits_3;
} Outcomes;

static void judge(const Setup *s, size_t fail, const char *with_new, const char *with_old,
                  Outcomes *o)
{
    OomCmdRun r = run_reloading(s, NEW_RULES, fail);
    char *alerts = alerts_of(s, &r);
    /* "reloaded" alone when its summary could not be formatted */
    bool reloaded = r.rc == EXIT_OK && !strcmp(alerts, with_new) &&
                    strstr(r.err, "vigil run: reloaded");
    bool kept_old = r.rc == EXIT_OK && !strcmp(alerts, with_old) &&
                    strstr(r.err, "reload failed (") && oomcmd_says_out_of_memory(r.err);
    bool exit_3 = r.rc == EXIT_IO && oomcmd_says_out_of_memory(r.err);
    ck_assert_msg(reloaded || kept_old || exit_3,
                  "allocation %zu: exit %d, %zu alerts (%zu with the new rules, %zu with the "
                  "old), stderr\n%.2000s\nthe allocation that failed:\n%s", fail, r.rc,
                  oomcmd_count(alerts, "\n"), oomcmd_count(with_new, "\n"),
                  oomcmd_count(with_old, "\n"), r.err, r.stack);
    o->reloaded += reloaded;
    o->kept_old += kept_old;
    o->exits_3 += exit_3;
    free(alerts);
    oomcmd_free(&r);
}

static void reload_with_failures(const char *workers)
{
    Setup s;
    setup(&s, workers);
    /* with the new rules after the cut; with the old throughout (a reload to the same
     * rules keeps every rule's state) */
    OomCmdRun new_run = run_reloading(&s, NEW_RULES, 0);
    ck_assert_msg(new_run.rc == EXIT_OK && strstr(new_run.err, "reloaded 4 rules: 1 changed, "
                  "1 added, 1 removed, 2 kept state"), "the reload without failure: exit %d\n"
                  "%.1500s", new_run.rc, new_run.err);
    OomCmdRun old_run = run_reloading(&s, OLD_RULES, 0);
    ck_assert_msg(old_run.rc == EXIT_OK && strstr(old_run.err, "4 kept state"),
                  "the reload to the same rules: exit %d\n%.1500s", old_run.rc, old_run.err);
    char *with_new = alerts_of(&s, &new_run), *with_old = alerts_of(&s, &old_run);
    ck_assert_uint_gt(oomcmd_count(with_new, "pair again"), 0);
    ck_assert_uint_gt(oomcmd_count(with_new, "\"rule\":\"shop\""), 0);
    ck_assert_uint_gt(oomcmd_count(with_old, "\"rule\":\"big\""), 0);
    /* where the reload's allocations start: a run stopped at the same point makes
     * those before it */
    OomFeed stop = {s.first, OOMFEED_STOP, NULL, NULL, NULL, NULL};
    tmptree_write(s.rules, OLD_RULES);
    OomCmdRun stopped = oomfeed_run(cmd_run, s.argv, 0, &stop);
    size_t reload_at = stopped.n_allocs > OOM_BEFORE_RELOAD ? stopped.n_allocs - OOM_BEFORE_RELOAD
                                                             : 1;
    oomcmd_free(&stopped);
    size_t reload_end = reload_at + 2 * oomcmd_load_allocations(s.rules) + 200;
    OomPace pace = {reload_at, reload_end,
                    oomcmd_step(OOM_RELOAD_STEP, OOM_RELOAD_STEP_SANITIZED),
                    oomcmd_step(OOM_STEP, OOM_STEP)};
    Outcomes o = {0};
    size_t last = oomcmd_last_fail(new_run.n_allocs);
    for (size_t fail = 1; fail <= last; fail = oomcmd_next_fail(&pace, fail))
        judge(&s, fail, with_new, with_old, &o);
    printf("workers %s: allocations %zu to %zu of %zu for the reload; %zu runs reloaded, "
           "%zu kept the old rules, %zu exited 3\n", workers, pace.from, pace.to,
           new_run.n_allocs, o.reloaded, o.kept_old, o.exits_3);
    fflush(stdout);
    ck_assert_uint_gt(o.kept_old, 0);
    ck_assert_uint_gt(o.exits_3, 0);
    free(with_new);
    free(with_old);
    oomcmd_free(&new_run);
    oomcmd_free(&old_run);
    teardown(&s);
}

START_TEST(reload_with_one_worker_keeps_or_swaps_the_rules)
{
    reload_with_failures("1");
}
END_TEST

START_TEST(reload_with_two_workers_keeps_or_swaps_the_rules)
{
    reload_with_failures("2");
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
