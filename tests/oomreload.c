/* tests/oomreload.c — see oomreload.h. */
#include "tests/oomreload.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "tests/oomcmd.h"
#include "tests/oomevents.h"
#include "tests/testutil.h"
#include "tests/tmptree.h"

/* The events: the first CUT before the reload, the rest of N_EVENTS after it, and with
 * --state N_RESTORED more for the run restoring. */
#define SEED 4711
#define N_USERS 8
#define N_EVENTS 600
#define CUT 300
#define N_RESTORED 300

typedef struct Sweep {
    const OomReloadCase *c;
    char dir[48], rules[96], control[96], out[96], state[96], third[96];
    char *first, *second;            /* heap */
    char *argv[16];
    char *restore_argv[12];          /* --state: the run restoring */
    bool sorted;                     /* two workers: alerts compared in any order */
} Sweep;

/* Events `from` to `to` of the sequence (tests/oomevents.h). Heap. */
static char *make_events(int from, int to)
{
    return oomevents_lines(SEED, N_USERS, from, to, NULL);
}

/* The argvs point into s: it stays where it is until teardown. */
static void setup(Sweep *s, const OomReloadCase *c, const char *workers)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    tmptree_make(s->dir, sizeof s->dir, c->name);
    tmptree_path(s->rules, sizeof s->rules, s->dir, "r.cep");
    tmptree_path(s->control, sizeof s->control, s->dir, "ctl");
    tmptree_path(s->out, sizeof s->out, s->dir, "out.jsonl");
    tmptree_path(s->state, sizeof s->state, s->dir, "state");
    tmptree_path(s->third, sizeof s->third, s->dir, "third.jsonl");
    s->first = make_events(0, CUT);
    s->second = make_events(CUT, N_EVENTS);
    s->sorted = strcmp(workers, "1") != 0;
    size_t n = 0;
    char **a = s->argv;
    a[n++] = "run";
    a[n++] = "--workers";
    a[n++] = (char *)workers;
    if (c->trigger == OOMFEED_RELOAD) {
        a[n++] = "--control";
        a[n++] = s->control;
    } else if (c->trigger == OOMFEED_WATCH) {
        a[n++] = "--watch";
    }
    if (c->state) {
        a[n++] = "--state";
        a[n++] = s->state;
        a[n++] = "--checkpoint-every";
        a[n++] = "1ms";
        a[n++] = "-o";
        a[n++] = s->out;
        char *third = make_events(N_EVENTS, N_EVENTS + N_RESTORED);
        tmptree_write(s->third, third);
        free(third);
        char *restore[] = {"run", "--workers", (char *)workers, "--state", s->state, "-i",
                           s->third, "-o", s->out, s->rules, NULL};
        memcpy(s->restore_argv, restore, sizeof restore);
    }
    a[n++] = s->rules;
    a[n] = NULL;
}

static void teardown(Sweep *s)
{
    tmptree_remove(s->dir);
    free(s->first);
    free(s->second);
}

/* The alerts without their "time" (the arrival's on processing time). Heap. */
static char *without_times(const char *alerts)
{
    static const char field[] = "\"time\":\"";
    char *text = strdup(alerts);
    ck_assert_ptr_nonnull(text);
    char *at;
    while ((at = strstr(text, field))) {
        char *end = strchr(at + sizeof field - 1, '"');
        ck_assert_ptr_nonnull(end);
        end += end[1] == ',' ? 2 : 1;
        memmove(at, end, strlen(end) + 1);
    }
    return text;
}

/* The alerts as compared: without their time on processing time, sorted with two
 * workers. Heap. */
static char *comparable(const Sweep *s, const char *alerts)
{
    char *text = s->c->arrival_time ? without_times(alerts) : strdup(alerts);
    ck_assert_ptr_nonnull(text);
    if (!s->sorted)
        return text;
    char *sorted = oomcmd_sorted_lines(text);
    free(text);
    return sorted;
}

/* Where the run with --state starts: no state folder, no output file. */
static void state_cleared(const Sweep *s)
{
    tmptree_remove(s->state);
    ck_assert_msg(unlink(s->out) == 0 || errno == ENOENT, "cannot remove %s", s->out);
}

/* With --state, after the run `first`: the run restoring, without failure, on the new
 * rules (those the feeder put in place). It must exit 0. The output file's alerts,
 * comparable. Heap. */
static char *restored_pair_alerts(const Sweep *s, size_t fail, const OomCmdRun *first)
{
    tmptree_write(s->rules, s->c->new_rules);
    OomCmdRun next = oomcmd_run(cmd_run, s->restore_argv, 0);
    ck_assert_msg(next.rc == EXIT_OK, "%s, allocation %zu: the run restoring after it: exit %d, "
                  "stderr\n%.1500s\nthe first run's (exit %d):\n%.1500s\nthe allocation that "
                  "failed:\n%s", s->c->name, fail, next.rc, next.err, first->rc, first->err,
                  first->stack);
    oomcmd_free(&next);
    char *text = access(s->out, F_OK) == 0 ? test_read_file(s->out, NULL) : strdup("");
    ck_assert_ptr_nonnull(text);
    char *alerts = comparable(s, text);
    free(text);
    return alerts;
}

/* The run with the old rules in place and a reload to `new_rules` between the first
 * two parts, allocation `fail` failing; its alerts, comparable, into *alerts (heap):
 * what it wrote, or with --state what the pair wrote to the output file. */
static OomCmdRun run_reloading(const Sweep *s, const char *new_rules, size_t fail,
                               char **alerts)
{
    tmptree_write(s->rules, s->c->old_rules);
    if (s->c->state)
        state_cleared(s);
    OomFeed feed = {s->first, s->c->trigger, s->control, s->rules, new_rules, s->second,
                    s->c->state};
    OomCmdRun r = oomfeed_run(cmd_run, s->argv, fail, &feed);
    *alerts = s->c->state ? restored_pair_alerts(s, fail, &r) : comparable(s, r.out);
    return r;
}

typedef struct Outcomes {
    size_t reloaded, kept_old, exits_3;
} Outcomes;

static void judge(const Sweep *s, size_t fail, const char *with_new, const char *with_old,
                  Outcomes *o)
{
    char *alerts;
    OomCmdRun r = run_reloading(s, s->c->new_rules, fail, &alerts);
    /* "reloaded" alone when its summary could not be formatted */
    bool reloaded = r.rc == EXIT_OK && !strcmp(alerts, with_new) &&
                    strstr(r.err, "vigil run: reloaded");
    bool kept_old = r.rc == EXIT_OK && !strcmp(alerts, with_old) &&
                    strstr(r.err, "reload failed (") && oomcmd_says_out_of_memory(r.err);
    bool exit_3 = r.rc == EXIT_IO && oomcmd_says_out_of_memory(r.err);
    ck_assert_msg(reloaded || kept_old || exit_3,
                  "%s, allocation %zu: exit %d, %zu alerts (%zu with the new rules, %zu with "
                  "the old), stderr\n%.2000s\nthe allocation that failed:\n%s", s->c->name, fail,
                  r.rc, oomcmd_count(alerts, "\n"), oomcmd_count(with_new, "\n"),
                  oomcmd_count(with_old, "\n"), r.err, r.stack);
    o->reloaded += reloaded;
    o->kept_old += kept_old;
    o->exits_3 += exit_3;
    free(alerts);
    oomcmd_free(&r);
}

static void assert_marks(const Sweep *s, const char *alerts, const char *const *marks,
                         const char *which)
{
    for (size_t i = 0; marks[i]; i++)
        ck_assert_msg(oomcmd_count(alerts, marks[i]) > 0, "%s: no %s in the alerts with the "
                      "%s rules", s->c->name, marks[i], which);
}

/* The allocations before the reload's: those of a run stopped at the same point (with
 * --state, its final checkpoint's too). */
static size_t allocations_before_reload(const Sweep *s)
{
    OomFeed stop = {.first = s->first, .action = OOMFEED_STOP};
    tmptree_write(s->rules, s->c->old_rules);
    if (s->c->state)
        state_cleared(s);
    OomCmdRun stopped = oomfeed_run(cmd_run, s->argv, 0, &stop);
    size_t n = stopped.n_allocs;
    oomcmd_free(&stopped);
    return n;
}

void oomreload_sweep(const OomReloadCase *c, const char *workers)
{
    Sweep s;
    setup(&s, c, workers);
    /* with the new rules after the cut; with the old throughout (a reload to the same
     * rules keeps every rule's state) */
    char *with_new, *with_old;
    OomCmdRun new_run = run_reloading(&s, c->new_rules, 0, &with_new);
    ck_assert_msg(new_run.rc == EXIT_OK && strstr(new_run.err, c->summary),
                  "%s: the reload without failure: exit %d\n%.1500s", c->name, new_run.rc,
                  new_run.err);
    OomCmdRun old_run = run_reloading(&s, c->old_rules, 0, &with_old);
    ck_assert_msg(old_run.rc == EXIT_OK && strstr(old_run.err, c->kept_all),
                  "%s: the reload to the same rules: exit %d\n%.1500s", c->name, old_run.rc,
                  old_run.err);
    assert_marks(&s, with_new, c->new_marks, "new");
    assert_marks(&s, with_old, c->old_marks, "old");
    /* where the reload's allocations start: a run stopped at the same point makes
     * those before it */
    size_t before = allocations_before_reload(&s);
    size_t reload_at = before > c->before_reload ? before - c->before_reload : 1;
    size_t reload_end = reload_at + 2 * oomcmd_load_allocations(s.rules) + 200;
    OomPace pace = {reload_at, reload_end,
                    oomcmd_step(c->reload_step, c->reload_step_sanitized),
                    oomcmd_step(c->step, c->step)};
    Outcomes o = {0};
    size_t last = oomcmd_last_fail(new_run.n_allocs);
    for (size_t fail = 1; fail <= last; fail = oomcmd_next_fail(&pace, fail))
        judge(&s, fail, with_new, with_old, &o);
    printf("%s, workers %s: allocations %zu to %zu of %zu for the reload; %zu runs reloaded, "
           "%zu kept the old rules, %zu exited 3\n", c->name, workers, pace.from, pace.to,
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
