/* tests/test_state_oom.c — `vigil run --state DIR` when an allocation fails: while
 * it writes checkpoints, and while it restores one. RUNTIME.md: running out of memory
 * is never silent (exit 3 saying so), and with --state a file input and a file output
 * get every alert exactly once across runs, whatever stopped a run. So:
 * - a checkpointing run (a checkpoint at nearly every turn of its read loop, and one
 *   at the end) with allocation N failing must exit 0 with exactly the alerts of the
 *   run without failure, or exit 3 saying that memory ran out; then a second run on
 *   the same state folder, without failure, must leave the output file with exactly
 *   the alerts of the pair of runs without failure: none lost, none repeated (as
 *   after a crash: the second run cuts the file back to the last checkpoint and goes
 *   on from there);
 * - a run restoring a checkpoint that holds keys, partial matches and buffered events
 *   (taken at a stop, SIGTERM) with allocation N failing must likewise exit 0 with
 *   the alerts the restore owes, or exit 3 saying so, and then a run without failure
 *   must make the output whole; a restore that fails is never a run that goes on
 *   without the restored state.
 * One worker (byte for byte) and two (the same lines in any order). Each run in a
 * child that LeakSanitizer checks and that is killed if it hangs (tests/oomcmd.h).
 * Allocations fail in turn for a few hundred after the rules are loaded, elsewhere
 * every OOM_STEP-th (VIGIL_OOM_STEP in the environment; 1 fails each in turn, which
 * takes minutes). */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "tests/oomcmd.h"
#include "tests/oomevents.h"
#include "tests/oomfeed.h"
#include "tests/testutil.h"
#include "tests/tmptree.h"

/* Events over 128 KiB (the input layer's first read), so a run reads its file in
 * several turns and checkpoints between them. */
#define N_EVENTS 1500
#define N_USERS 12
/* Which allocations fail: every OOM_STEP-th while the rules load (test_load_oom's
 * part), then each in turn for OOM_EACH (opening the state folder, reading and
 * restoring a checkpoint, starting the engine, the first reads), then every
 * OOM_STEP-th again. */
#define OOM_EACH 200
#define OOM_STEP 19
#define OOM_EACH_SANITIZED 30
#define OOM_STEP_SANITIZED 151

/* tests/oomevents.h's rules and one with suppression: state of each kind in a
 * checkpoint. */
static const char RULES[] =
    "time ts lateness 3s;\n" OOMEVENTS_RULES
    "rule calm { key u; begin a where t == \"view\"; suppress 20s; on match alert \"viewed\"; }\n";

/* Events `from` to `to` of the sequence (tests/oomevents.h), padded. Heap. */
static char *make_events(int from, int to)
{
    return oomevents_lines(12345, N_USERS, from, to,
                           "................................................................");
}

typedef struct Tree {
    char dir[48];
    char rules[96], events[96], out[96], state[96], pristine[96], saved_out[96];
} Tree;

static void make_tree(Tree *t)
{
    tmptree_make(t->dir, sizeof t->dir, "state-oom");
    tmptree_path(t->rules, sizeof t->rules, t->dir, "r.cep");
    tmptree_path(t->events, sizeof t->events, t->dir, "events.jsonl");
    tmptree_path(t->out, sizeof t->out, t->dir, "out.jsonl");
    tmptree_path(t->state, sizeof t->state, t->dir, "state");
    tmptree_path(t->pristine, sizeof t->pristine, t->dir, "pristine");
    tmptree_path(t->saved_out, sizeof t->saved_out, t->dir, "saved-out.jsonl");
    tmptree_write(t->rules, RULES);
}

static void shell(const char *fmt, const char *a, const char *b)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* The output file's alerts ("" if there is none); sorted with two workers. Heap. */
static char *alerts_in(const char *path, bool sorted)
{
    char *text = access(path, F_OK) == 0 ? test_read_file(path, NULL) : strdup("");
    ck_assert_ptr_nonnull(text);
    if (!sorted)
        return text;
    char *s = oomcmd_sorted_lines(text);
    free(text);
    return s;
}

/* Whether the line of text that holds `line` holds none of `a` and `b`. */
static bool line_lacks(const char *text, const char *line, const char *a, const char *b)
{
    const char *at = strstr(text, line);
    if (!at)
        return false;
    const char *end = strchr(at, '\n');
    char *copy = strndup(at, end ? (size_t)(end - at) : strlen(at));
    ck_assert_ptr_nonnull(copy);
    bool lacks = !strstr(copy, a) && !strstr(copy, b);
    free(copy);
    return lacks;
}

/* Each allocation in turn for OOM_EACH after the rules are loaded, elsewhere every
 * OOM_STEP-th (both smaller under the sanitizers; tests/oomcmd.h). */
static OomPace oom_pace(const Tree *t)
{
    size_t from = oomcmd_load_allocations(t->rules);
    return (OomPace){from, from + oomcmd_sized(OOM_EACH, OOM_EACH_SANITIZED), 1,
                     oomcmd_step(OOM_STEP, OOM_STEP_SANITIZED)};
}

/* The run of `argv` on the state folder as it is, with allocation `fail` failing;
 * `how` names it in messages, with the first run's allocation `attempt`. Exit 0 with
 * `want` in the output file (`sorted`), or, when an allocation fails, exit 3 saying
 * that memory ran out. Returns the exit code. With err_out: if *err_out is NULL, the
 * run's stderr goes there (heap), else *err_out (the first run's) is quoted in the
 * failure message. */
static int run_judged(char **argv, const Tree *t, size_t fail, const char *want, bool sorted,
                      const char *how, size_t attempt, char **err_out)
{
    OomCmdRun r = oomcmd_run(cmd_run, argv, fail);
    char *got = alerts_in(t->out, sorted);
    bool same = r.rc == EXIT_OK && !strcmp(got, want);
    bool exit_3 = fail > 0 && r.rc == EXIT_IO && oomcmd_says_out_of_memory(r.err);
    ck_assert_msg(same || exit_3,
                  "%s (allocation %zu failed in the first run): exit %d, %zu alert lines "
                  "of %zu, stderr\n%.2000s\nthe allocation that failed:\n%s\n"
                  "the first run's stderr:\n%.2000s", how, attempt, r.rc, oomcmd_count(got, "\n"),
                  oomcmd_count(want, "\n"), r.err, r.stack, err_out && *err_out ? *err_out : "");
    int rc = r.rc;
    if (err_out && !*err_out) {
        size_t len = strlen(r.err) + strlen(r.stack) + sizeof "the allocation that failed:\n";
        *err_out = malloc(len);
        ck_assert_ptr_nonnull(*err_out);
        snprintf(*err_out, len, "%sthe allocation that failed:\n%s", r.err, r.stack);
    }
    free(got);
    oomcmd_free(&r);
    return rc;
}

/* run_judged of the run with allocation `fail` failing (`how`), then of the next run,
 * without failure, on the state folder it left. Returns whether the first exited 3. */
static bool pair_judged(char **argv, const Tree *t, size_t fail, const char *want, bool sorted,
                        const char *how)
{
    char *first_err = NULL;
    bool exit_3 = run_judged(argv, t, fail, want, sorted, how, fail, &first_err) == EXIT_IO;
    run_judged(argv, t, 0, want, sorted, "the next run, without failure", fail, &first_err);
    free(first_err);
    return exit_3;
}

/* ---- checkpoints written with an allocation failing ---- */

static void checkpointing_runs(const char *workers)
{
    Tree t;
    make_tree(&t);
    char *events = make_events(0, N_EVENTS);
    tmptree_write(t.events, events);
    free(events);
    char *argv[] = {"run", "--state", t.state, "--checkpoint-every", "1ms", "--workers",
                    (char *)workers, "-i", t.events, "-o", t.out, t.rules, NULL};
    bool sorted = strcmp(workers, "1") != 0;
    /* the pair without failure: the second finds the input read to its end */
    OomCmdRun first = oomcmd_run(cmd_run, argv, 0);
    ck_assert_msg(first.rc == EXIT_OK, "without failure: exit %d\n%.1500s", first.rc, first.err);
    /* one at least while it reads (it reads its file in two turns or more) */
    ck_assert_msg(strstr(first.err, "checkpoints in this run") &&
                  !strstr(first.err, " 1 checkpoints in this run"),
                  "too few checkpoints: %s", first.err);
    char *want = alerts_in(t.out, sorted);
    ck_assert_uint_gt(oomcmd_count(want, "\"kind\":\"timeout\""), 0);
    ck_assert_uint_gt(oomcmd_count(want, "\"rule\":\"pair\""), 0);
    run_judged(argv, &t, 0, want, sorted, "the second run without failure", 0, NULL);
    OomPace pace = oom_pace(&t);
    size_t exits_3 = 0, last = oomcmd_last_fail(first.n_allocs);
    for (size_t fail = 1; fail <= last; fail = oomcmd_next_fail(&pace, fail)) {
        shell("rm -rf '%s' '%s'", t.state, t.out);
        exits_3 += pair_judged(argv, &t, fail, want, sorted, "the run");
    }
    ck_assert_uint_gt(exits_3, 0);
    free(want);
    oomcmd_free(&first);
    tmptree_remove(t.dir);
}

START_TEST(checkpoints_with_one_worker_lose_and_repeat_nothing)
{
    checkpointing_runs("1");
}
END_TEST

START_TEST(checkpoints_with_two_workers_lose_and_repeat_nothing)
{
    checkpointing_runs("2");
}
END_TEST

/* ---- a restore with an allocation failing ---- */

/* The events cut in two: the first part goes through a pipe to a run that is then
 * stopped (its checkpoint keeps partial matches and buffered events); the second is
 * the file the restoring runs read (new to the checkpoint, so read from its start). */
#define CUT (N_EVENTS / 2)

/* What one run over all the events gives (sorted with two workers). Heap. */
static char *one_run_alerts(const Tree *t, char *workers, bool sorted)
{
    char *all = make_events(0, N_EVENTS);
    tmptree_write(t->events, all);
    free(all);
    char *argv[] = {"run", "--workers", workers, "-i", (char *)t->events, "-o", (char *)t->out,
                    (char *)t->rules, NULL};
    OomCmdRun whole = oomcmd_run(cmd_run, argv, 0);
    ck_assert_msg(whole.rc == EXIT_OK, "one run: exit %d\n%.1500s", whole.rc, whole.err);
    char *want = alerts_in(t->out, sorted);
    oomcmd_free(&whole);
    shell("rm -f '%s'%s", t->out, "");
    return want;
}

/* What the restores and the stops start from: a tree, what one run over all the events
 * gives, and the events cut in two, the second part in the events file; the stopped
 * run's argv (the first part on standard input: `stop`) and the restoring run's (the
 * second part from the file). */
typedef struct Split {
    Tree t;
    bool sorted;                 /* two workers: alerts compared in any order */
    char *want;                  /* one run's alerts; heap */
    char *first, *second;        /* heap */
    char *stop_argv[9], *argv[11];
    OomFeed stop;
} Split;

/* The argvs point into s->t: s stays where it is until split_end. */
static void split_start(Split *s, const char *workers)
{
    make_tree(&s->t);
    Tree *t = &s->t;
    s->sorted = strcmp(workers, "1") != 0;
    s->want = one_run_alerts(t, (char *)workers, s->sorted);
    s->first = make_events(0, CUT);
    s->second = make_events(CUT, N_EVENTS);
    tmptree_write(t->events, s->second);
    char *stop_argv[] = {"run", "--state", t->state, "--workers", (char *)workers, "-o", t->out,
                         t->rules, NULL};
    char *argv[] = {"run", "--state", t->state, "--workers", (char *)workers, "-i", t->events,
                    "-o", t->out, t->rules, NULL};
    memcpy(s->stop_argv, stop_argv, sizeof stop_argv);
    memcpy(s->argv, argv, sizeof argv);
    s->stop = (OomFeed){.first = s->first, .action = OOMFEED_STOP};
}

static void split_end(Split *s)
{
    free(s->first);
    free(s->second);
    free(s->want);
    tmptree_remove(s->t.dir);
}

static void restoring_runs(const char *workers)
{
    Split s;
    split_start(&s, workers);
    const Tree *t = &s.t;
    OomCmdRun stopped = oomfeed_run(cmd_run, s.stop_argv, 0, &s.stop);
    ck_assert_msg(stopped.rc == EXIT_OK && line_lacks(stopped.err, "state saved in",
                                                      " 0 partial matches", "of which 0 buffered"),
                  "the stopped run: exit %d\n%.1500s", stopped.rc, stopped.err);
    oomcmd_free(&stopped);
    shell("cp -a '%s' '%s'", t->state, t->pristine);
    shell("cp -a '%s' '%s'", t->out, t->saved_out);
    OomCmdRun restored = oomcmd_run(cmd_run, s.argv, 0);
    ck_assert_msg(restored.rc == EXIT_OK && line_lacks(restored.err, "restored checkpoint",
                                                       " 0 partial matches", " 0 buffered events"),
                  "the restoring run without failure: exit %d\n%.1500s", restored.rc,
                  restored.err);
    char *got = alerts_in(t->out, s.sorted);
    ck_assert_msg(!strcmp(got, s.want), "stopped and restored: %zu alert lines, one run %zu",
                  oomcmd_count(got, "\n"), oomcmd_count(s.want, "\n"));
    free(got);
    OomPace pace = oom_pace(t);
    size_t exits_3 = 0, last = oomcmd_last_fail(restored.n_allocs);
    for (size_t fail = 1; fail <= last; fail = oomcmd_next_fail(&pace, fail)) {
        shell("rm -rf '%s'%s", t->state, "");
        shell("cp '%s' '%s'", t->saved_out, t->out);
        shell("cp -a '%s' '%s'", t->pristine, t->state);
        exits_3 += pair_judged(s.argv, t, fail, s.want, s.sorted, "the restoring run");
    }
    ck_assert_uint_gt(exits_3, 0);
    oomcmd_free(&restored);
    split_end(&s);
}

START_TEST(restores_with_one_worker_lose_and_repeat_nothing)
{
    restoring_runs("1");
}
END_TEST

START_TEST(restores_with_two_workers_lose_and_repeat_nothing)
{
    restoring_runs("2");
}
END_TEST

/* ---- a stop (SIGTERM) with an allocation failing ---- */

/* The stopped run of restoring_runs with allocation N failing (every STOP_STEP-th: each
 * run waits up to a poll slice for the stop to be taken): exit 0, or exit 3 saying
 * that memory ran out. After an exit 0 the restoring run must give what one run
 * gives; after an exit 3 the first part, read from a pipe, cannot be read again, so
 * only the message is judged. */
#define STOP_STEP 23
#define STOP_STEP_SANITIZED 97

static void stopping_runs(const char *workers)
{
    Split s;
    split_start(&s, workers);
    OomPace pace = {0, 1, 1, oomcmd_step(STOP_STEP, STOP_STEP_SANITIZED)};
    size_t last = SIZE_MAX, exits_0 = 0, exits_3 = 0;
    for (size_t fail = 0; fail <= last; fail = oomcmd_next_fail(&pace, fail)) {
        shell("rm -rf '%s' '%s'", s.t.state, s.t.out);
        OomCmdRun r = oomfeed_run(cmd_run, s.stop_argv, fail, &s.stop);
        if (fail == 0)
            last = oomcmd_last_fail(r.n_allocs);
        bool exit_3 = fail > 0 && r.rc == EXIT_IO && oomcmd_says_out_of_memory(r.err);
        ck_assert_msg(r.rc == EXIT_OK || exit_3, "the stopped run, allocation %zu: exit %d, "
                      "stderr\n%.2000s\nthe allocation that failed:\n%s", fail, r.rc, r.err,
                      r.stack);
        if (r.rc == EXIT_OK) {
            char *err = strdup(r.err);
            ck_assert_ptr_nonnull(err);
            run_judged(s.argv, &s.t, 0, s.want, s.sorted, "the restoring run, without failure",
                       fail, &err);
            free(err);
            exits_0++;
        }
        exits_3 += exit_3;
        oomcmd_free(&r);
    }
    ck_assert_uint_gt(exits_0, 1);
    ck_assert_uint_gt(exits_3, 0);
    split_end(&s);
}

START_TEST(stops_with_one_worker_lose_and_repeat_nothing)
{
    stopping_runs("1");
}
END_TEST

START_TEST(stops_with_two_workers_lose_and_repeat_nothing)
{
    stopping_runs("2");
}
END_TEST

/* Built twice (tests/state_oom.mk), so that each program's share of make check stays
 * short: test_state_oom runs the checkpoints and restores, test_stop_oom (built with
 * STATE_OOM_STOPS) the stops. */
#ifdef STATE_OOM_STOPS
#define STATE_OOM_CASE "stops"
#else
#define STATE_OOM_CASE "checkpoints"
#endif

static Suite *state_oom_suite(void)
{
    Suite *s = suite_create("state_oom");
    TCase *checkpoints = tcase_create("checkpoints"), *stops = tcase_create("stops");
    tcase_set_timeout(checkpoints, 600);
    tcase_set_timeout(stops, 600);
    tcase_add_test(checkpoints, checkpoints_with_one_worker_lose_and_repeat_nothing);
    tcase_add_test(checkpoints, checkpoints_with_two_workers_lose_and_repeat_nothing);
    tcase_add_test(checkpoints, restores_with_one_worker_lose_and_repeat_nothing);
    tcase_add_test(checkpoints, restores_with_two_workers_lose_and_repeat_nothing);
    tcase_add_test(stops, stops_with_one_worker_lose_and_repeat_nothing);
    tcase_add_test(stops, stops_with_two_workers_lose_and_repeat_nothing);
    suite_add_tcase(s, checkpoints);
    suite_add_tcase(s, stops);
    return s;
}

/* check_run_suite for one case of the suite (CK_RUN_CASE in the environment still
 * picks another). */
int main(void)
{
    SRunner *sr = srunner_create(state_oom_suite());
    const char *which = getenv("CK_RUN_CASE");
    srunner_run(sr, NULL, which ? which : STATE_OOM_CASE, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
