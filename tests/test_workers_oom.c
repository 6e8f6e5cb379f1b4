/* tests/test_workers_oom.c — `vigil run --workers 2` when an allocation fails, on any
 * thread: the engine's (reading, reordering, routing, dispatching), the decoding
 * jobs' (reading a file, decoding, filters and keys, splitting batches by owner) and
 * the workers' (matching, timers, alerts). The allocation count is the process's
 * (tests/oomwrap.h), so allocation N is whichever thread's came Nth, and may differ
 * from run to run. Each run, in a child that LeakSanitizer checks and that is killed
 * if it hangs (tests/oomcmd.h), must either exit 0 with exactly the alerts of a run
 * without failure (in any order: two workers write them) and the same late events and
 * rejected lines, or exit 3 saying that memory ran out; never exit 0 with an alert
 * missing, never crash, never hang.
 * Two ways in: the events on standard input through a pipe (the input layer reads,
 * the workers decode: runtime/engine.c's parallel decoding) and as a regular file
 * argument (the workers read it too: engine_read_start). Without lateness the events
 * come in time order but for a few in the first batch (late events, a line that is
 * not JSON, one without a time, one too long), so the later batches take the fast path (split by
 * owner on the decoding thread); with lateness and events a little out of order they
 * wait in the reorder buffer and the engine's thread dispatches them; on processing
 * time the engine's thread also runs the filters and keys (alerts are then compared
 * without their times).
 * Allocations fail in turn for the first few hundred (the start of a run: the rules,
 * the engine, the workers), then every OOM_STEP-th (VIGIL_OOM_STEP in the environment:
 * 1 fails each in turn, which takes minutes). */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "cli/commands.h"
#include "tests/checkmain.h"
#include "tests/oomcmd.h"
#include "tests/oomevents.h"
#include "tests/testutil.h"
#include "tests/tmptree.h"

/* Enough events for several batches of the decoding jobs (512 lines, or a 40 KiB read
 * when the workers read), over enough keys that both workers own some. */
#define N_EVENTS 2400
#define N_USERS 12
/* Which allocations fail: each of the first `each_first` in turn, then every
 * `step`-th. A run takes a few milliseconds, twenty times that under the sanitizers
 * (VIGIL_TEST_SMALL), where far fewer are tried. */
#define OOM_EACH_FIRST 400
#define OOM_STEP 13
#define OOM_EACH_FIRST_SANITIZED 40
#define OOM_STEP_SANITIZED 101

/* tests/oomevents.h's rules, after the time declaration. */
static const char RULES[] = OOMEVENTS_RULES;

/* --max-line, and what makes a line longer (an over-long line: rejected). */
#define MAX_LINE "200"
#define PAD "over-long over-long over-long over-long over-long over-long over-long over-long " \
            "over-long over-long over-long over-long over-long over-long over-long over-long "

/* Enough lateness for the early events (OOMEVENTS_EARLY seconds out of order). */
#define LATENESS "3s"

typedef struct Tree {
    char dir[40];
    char rules[96], events[96];
    char *text;                /* the events, heap */
} Tree;

/* The events: the sequence of tests/oomevents.h. Among the first FIRST_BATCH lines
 * (the first batch of either way in) now and then an event from the past (late,
 * whatever the lateness), a line that is not JSON, one with no time and one over
 * --max-line. With `disorder`, the early events early (out of order, not late with
 * LATENESS); without, the lines after the first batch are all good and in order.
 * Heap. */
#define FIRST_BATCH 512
static char *make_events(bool disorder)
{
    Buf b = BUF_INIT;
    OomEventSeq seq = oomevents_start(12345, N_USERS);
    for (int i = 0; i < N_EVENTS; i++) {
        OomEvent e = oomevents_next(&seq);
        const char *line_fmt = "{\"ts\":%ld,\"u\":\"u%u\",\"t\":\"%s\",\"n\":%u}\n";
        long t = disorder && e.early ? e.ts - OOMEVENTS_EARLY : e.ts;
        if (i < FIRST_BATCH && i % 97 == 50)
            t = e.ts - 20;   /* late */
        if (i < FIRST_BATCH && i % 331 == 100)
            line_fmt = "{\"ts\":%ld,\"u\":\"u%u\",\"t\":\"%s\",\"n\":%u\n";   /* not JSON */
        if (i < FIRST_BATCH && i % 409 == 200)
            line_fmt = "{\"at\":%ld,\"u\":\"u%u\",\"t\":\"%s\",\"n\":%u}\n";   /* no time */
        if (i < FIRST_BATCH && i % 293 == 150)
            line_fmt = "{\"ts\":%ld,\"u\":\"u%u\",\"t\":\"%s\",\"n\":%u,\"pad\":\"%s\"}\n";
        buf_printf(&b, line_fmt, t, e.user, e.type, e.n, PAD);
    }
    char *text = buf_steal(&b);
    ck_assert_ptr_nonnull(text);
    return text;
}

/* The rules (time declaration `time_decl`) and the events, written in a fresh folder. */
static void make_tree(Tree *t, const char *time_decl, bool disorder)
{
    tmptree_make(t->dir, sizeof t->dir, "workers-oom");
    tmptree_path(t->rules, sizeof t->rules, t->dir, "r.cep");
    tmptree_path(t->events, sizeof t->events, t->dir, "events.jsonl");
    t->text = make_events(disorder);
    size_t len = strlen(time_decl) + sizeof RULES + 1;
    char *rules = malloc(len);
    ck_assert_ptr_nonnull(rules);
    snprintf(rules, len, "%s\n%s", time_decl, RULES);
    tmptree_write(t->rules, rules);
    free(rules);
    tmptree_write(t->events, t->text);
}

static void remove_tree(Tree *t)
{
    tmptree_remove(t->dir);
    free(t->text);
}

/* text with the value of each `"time":"...",` emptied. Heap. */
static char *without_times(const char *text)
{
    static const char field[] = "\"time\":\"";
    char *copy = strdup(text);
    ck_assert_ptr_nonnull(copy);
    char *to = copy;
    for (const char *p = text; *p;) {
        const char *hit = strstr(p, field);
        const char *end = hit ? strchr(hit + sizeof field - 1, '"') : NULL;
        size_t keep = end ? (size_t)(hit - p) + sizeof field - 1 : strlen(p);
        memmove(to, p, keep);
        to += keep;
        p = end ? end : p + keep;
    }
    *to = '\0';
    return copy;
}

/* The alerts, whatever order the workers wrote them in; on processing time without
 * their times (when they were matched). Heap. */
static char *alerts_of(const OomCmdRun *r)
{
    char *untimed = without_times(r->out);
    char *sorted = oomcmd_sorted_lines(untimed);
    free(untimed);
    return sorted;
}

/* Which lines were late or rejected ("vigil run: ORIGIN:LINE: late", the reasons
 * cut: one may be shorter when memory runs out), and the count of those not shown.
 * Heap. */
static char *rejections_of(const OomCmdRun *r)
{
    return oomcmd_sorted_lines_cut(r->err, 4);
}

/* The run without failure, and what the others are compared with. */
typedef struct Want {
    OomCmdRun run;
    char *alerts, *rejections;
} Want;

/* The run with allocation `fail` failing: the alerts and rejections of `want`, or
 * exit 3 saying that memory ran out. */
static void same_or_exit_3(char **argv, const char *input, const Want *want, size_t fail,
                           size_t *exits_3)
{
    OomCmdRun got = oomcmd_run_input(cmd_run, argv, fail, input);
    char *alerts = alerts_of(&got), *rejections = rejections_of(&got);
    bool same = got.rc == EXIT_OK && !strcmp(alerts, want->alerts) &&
                !strcmp(rejections, want->rejections);
    bool exit_3 = got.rc == EXIT_IO && oomcmd_says_out_of_memory(got.err);
    ck_assert_msg(same || exit_3,
                  "%s, allocation %zu of about %zu: exit %d, %zu alerts of %zu, stderr\n"
                  "%.1500s\nthe allocation that failed:\n%s", input ? "standard input" : "file",
                  fail, want->run.n_allocs, got.rc, oomcmd_count(got.out, "\n"),
                  oomcmd_count(want->run.out, "\n"), got.err, got.stack);
    *exits_3 += exit_3;
    free(alerts);
    free(rejections);
    oomcmd_free(&got);
}

/* Each of the first OOM_EACH_FIRST allocations, then every OOM_STEP-th (both smaller
 * under the sanitizers; tests/oomcmd.h), up to a little past the count of the run
 * without failure. */
static void each_allocation(char **argv, const char *input, bool event_time)
{
    Want want = {oomcmd_run_input(cmd_run, argv, 0, input), NULL, NULL};
    const OomCmdRun *w = &want.run;
    ck_assert_msg(w->rc == EXIT_OK, "without failure: exit %d\n%.1500s", w->rc, w->err);
    ck_assert_uint_gt(oomcmd_count(w->out, "\"rule\":\"pair\""), 0);
    ck_assert_uint_gt(oomcmd_count(w->out, "\"message\":\"left open "), 0);
    ck_assert_uint_gt(oomcmd_count(w->out, "\"rule\":\"big\""), 0);
    if (event_time)
        ck_assert_uint_gt(oomcmd_count(w->err, ": late: "), 0);
    ck_assert_uint_gt(oomcmd_count(w->err, ": malformed line: line longer than " MAX_LINE), 0);
    want.alerts = alerts_of(w);
    want.rejections = rejections_of(w);
    size_t exits_3 = 0;
    OomPace pace = {0, oomcmd_sized(OOM_EACH_FIRST, OOM_EACH_FIRST_SANITIZED), 1,
                    oomcmd_step(OOM_STEP, OOM_STEP_SANITIZED)};
    size_t last = oomcmd_last_fail(w->n_allocs);
    for (size_t fail = 1; fail <= last; fail = oomcmd_next_fail(&pace, fail))
        same_or_exit_3(argv, input, &want, fail, &exits_3);
    ck_assert_uint_gt(exits_3, 0);
    free(want.alerts);
    free(want.rejections);
    oomcmd_free(&want.run);
}

/* each_allocation over a fresh tree (its rules after `time_decl`, its events made
 * with `disorder`): the events on standard input, or with `from_file` in the file the
 * workers read. */
static void each_allocation_of_tree(const char *time_decl, bool disorder, bool from_file)
{
    Tree t;
    make_tree(&t, time_decl, disorder);
    char *stdin_argv[] = {"run", "--workers", "2", "--max-line", MAX_LINE, t.rules, NULL};
    char *file_argv[] = {"run", "--workers", "2", "--max-line", MAX_LINE, "-i", t.events, t.rules,
                         NULL};
    each_allocation(from_file ? file_argv : stdin_argv, from_file ? NULL : t.text,
                    time_decl[0] != '\0');
    remove_tree(&t);
}

/* The input layer reads the pipe; the workers decode, route and split. */
START_TEST(standard_input_gives_every_alert_or_exits_3)
{
    each_allocation_of_tree("time ts;", false, false);
}
END_TEST

/* The workers read the file themselves (one regular file, event time, no --state). */
START_TEST(file_read_by_workers_gives_every_alert_or_exits_3)
{
    each_allocation_of_tree("time ts;", false, true);
}
END_TEST

/* Events out of order wait in the reorder buffer; the engine's thread releases and
 * dispatches them with the routes their decoding job found. */
START_TEST(reordered_input_gives_every_alert_or_exits_3)
{
    each_allocation_of_tree("time ts lateness " LATENESS ";", true, false);
}
END_TEST

/* On processing time the decoding jobs only decode: the engine's thread runs the
 * filters and keys and dispatches each event (workers_dispatch), and the workers fire
 * the timeouts at the end. */
START_TEST(processing_time_gives_every_alert_or_exits_3)
{
    each_allocation_of_tree("", false, false);
}
END_TEST

static Suite *workers_oom_suite(void)
{
    Suite *s = suite_create("workers_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, standard_input_gives_every_alert_or_exits_3);
    tcase_add_test(tc, file_read_by_workers_gives_every_alert_or_exits_3);
    tcase_add_test(tc, reordered_input_gives_every_alert_or_exits_3);
    tcase_add_test(tc, processing_time_gives_every_alert_or_exits_3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(workers_oom_suite());
}
