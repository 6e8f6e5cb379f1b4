/* tests/test_cli_oom.c — `vigil fmt`, `vigil test` and the loading of `vigil run` when
 * an allocation fails. Each
 * allocation of the command is made to fail in turn (tests/oomwrap.h), each run in a
 * child that LeakSanitizer checks (tests/oomcmd.h). A run must then either give the
 * result it gives without failure (the same exit code, stdout and stderr: the failure
 * was harmless), or exit 3 with "vigil CMD: out of memory" as the last line of stderr,
 * having printed on stdout only a beginning of the normal output and never "out of
 * memory" there: not exit 1 as if the rules or a case were wrong (nor a failed case for
 * a template that ran out of memory, nor for a compile that did). `vigil fmt -w` leaves
 * every file either as it was or in canonical form, and no temporary file behind. */
#include <check.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "tests/checkmain.h"
#include "tests/oomcmd.h"
#include "tests/testutil.h"
#include "tests/tmptree.h"

/* Not canonical: spacing, a comment, parentheses fmt drops. */
static const char MESSY[] =
    "# bursts of large transactions\n"
    "time ts lateness 5s;\n"
    "rule big  { filter (type == \"tx\") ; key user;\n"
    "  begin a where amount > 100; followed_by b where amount > a.amount times 2;\n"
    "  within 10m; on match alert high \"{user}: {count(b)} more\" fields { n: count(b) }; }\n";

static const char CANONICAL[] =
    "rule quiet {\n"
    "  key user;\n"
    "  begin a where type == \"login\";\n"
    "  not_followed_by b where type == \"logout\";\n"
    "  within 1h;\n"
    "}\n";

/* A passing case, a failing one (a missing and an unexpected alert) and a dead letter,
 * so that every part of `vigil test` runs. */
static const char TEST_RULES[] =
    "time ts;\n"
    "rule two { key k; begin a where v == 1; followed_by b where v == 2;\n"
    "  on match alert \"m {k}\" fields { first: a.ts }; }\n"
    "rule gone { key k; begin a where v == 1; not_followed_by c where v == 3; within 5s;\n"
    "  on match alert low \"no c for {k}\"; }\n";
static const char EVENTS[] =
    "{\"ts\":1,\"k\":\"x\",\"v\":1}\n"
    "{\"ts\":2,\"k\":\"y\",\"v\":1}\n"
    "not json\n"
    "{\"ts\":3,\"k\":\"y\",\"v\":2}\n"
    "{\"ts\":4,\"k\":\"x\",\"v\":3}\n";
static const char PASS_EXPECT[] =
    "{\"rule\":\"two\",\"key\":{\"k\":\"y\"},\"events\":{\"a\":[{\"ts\":2}],\"b\":[{\"ts\":3}]}}\n"
    "{\"message\":\"no c for y\"}\n";
static const char FAIL_EXPECT[] =
    "{\"message\":\"m y\"}\n"
    "{\"message\":\"no c for z\"}\n";

typedef struct Tree {
    char dir[40];
    char cases[64];
} Tree;

static char *read_in(const char *dir, const char *name)
{
    char path[128];
    char *text = test_read_file(tmptree_path(path, sizeof path, dir, name), NULL);
    ck_assert_ptr_nonnull(text);
    return text;
}

static void make_tree(Tree *t)
{
    tmptree_make(t->dir, sizeof t->dir, "cli-oom");
    tmptree_path(t->cases, sizeof t->cases, t->dir, "cases");
}

/* The last line of text, with its newline, is `line`. */
static bool ends_with_line(const char *text, const char *line)
{
    size_t n = strlen(text), m = strlen(line);
    return n >= m && strcmp(text + n - m, line) == 0 && (n == m || text[n - m - 1] == '\n');
}

/* got is want, or says out of memory as the comment at the top says. Returns whether it
 * ran out of memory. */
static bool same_or_out_of_memory(const OomCmdRun *got, const OomCmdRun *want, size_t fail,
                                  const char *message)
{
    if (got->rc == want->rc && !strcmp(got->out, want->out) && !strcmp(got->err, want->err))
        return false;
    ck_assert_msg(got->rc == EXIT_IO && ends_with_line(got->err, message),
                  "allocation %zu of %zu: exit %d, stdout\n%.1200s\nstderr\n%.1200s\n"
                  "instead of exit %d, stdout\n%.1200s\nstderr\n%.1200s", fail, want->n_allocs,
                  got->rc, got->out, got->err, want->rc, want->out, want->err);
    ck_assert_msg(oomcmd_starts_with(want->out, got->out) && !strstr(got->out, "out of memory"),
                  "allocation %zu: stdout is not a beginning of the normal output:\n%.1800s",
                  fail, got->out);
    return true;
}

/* ---- vigil fmt ------------------------------------------------------------- */

static void write_rules(const Tree *t)
{
    tmptree_write_in(t->dir, "a.cep", MESSY);
    tmptree_write_in(t->dir, "b.cep", CANONICAL);
}

/* Fails each allocation of `vigil fmt OPTION DIR` in turn (files written afresh
 * before each run); returns the run without failure. */
static OomCmdRun each_allocation_of_fmt(const Tree *t, const char *option, size_t *failures)
{
    char *argv[] = {"fmt", (char *)option, (char *)t->dir, NULL};
    write_rules(t);
    OomCmdRun want = oomcmd_run(cmd_fmt, argv, 0);
    ck_assert_uint_gt(want.n_allocs, 0);
    *failures = 0;
    for (size_t fail = 1; fail <= want.n_allocs; fail++) {
        write_rules(t);
        OomCmdRun got = oomcmd_run(cmd_fmt, argv, fail);
        *failures += same_or_out_of_memory(&got, &want, fail, "vigil fmt: out of memory\n");
        oomcmd_free(&got);
    }
    return want;
}

START_TEST(fmt_prints_whole_files_or_exits_3)
{
    Tree t;
    make_tree(&t);
    size_t failures;
    OomCmdRun want = each_allocation_of_fmt(&t, "--", &failures);
    ck_assert_int_eq(want.rc, EXIT_OK);
    ck_assert_ptr_nonnull(strstr(want.out, CANONICAL));
    ck_assert_uint_gt(failures, 0);
    oomcmd_free(&want);
    tmptree_remove(t.dir);
}
END_TEST

START_TEST(fmt_check_lists_or_exits_3)
{
    Tree t;
    make_tree(&t);
    size_t failures;
    OomCmdRun want = each_allocation_of_fmt(&t, "--check", &failures);
    ck_assert_int_eq(want.rc, EXIT_RULES);
    char listed[64];
    snprintf(listed, sizeof listed, "%s/a.cep\n", t.dir);
    ck_assert_str_eq(want.out, listed);
    ck_assert_uint_gt(failures, 0);
    oomcmd_free(&want);
    tmptree_remove(t.dir);
}
END_TEST

/* Each file is as it was or canonical, and nothing else is left in the folder. */
static void assert_whole_files(const Tree *t, const char *canonical_a, size_t fail)
{
    char *a = read_in(t->dir, "a.cep"), *b = read_in(t->dir, "b.cep");
    ck_assert_msg(!strcmp(a, MESSY) || !strcmp(a, canonical_a),
                  "allocation %zu: a.cep is\n%s", fail, a);
    ck_assert_msg(!strcmp(b, CANONICAL), "allocation %zu: b.cep is\n%s", fail, b);
    free(a);
    free(b);
    DIR *d = opendir(t->dir);
    ck_assert_ptr_nonnull(d);
    size_t entries = 0;
    for (struct dirent *de; (de = readdir(d));)
        entries += de->d_name[0] != '.';
    closedir(d);
    ck_assert_msg(entries == 2, "allocation %zu: %zu files left in the folder", fail, entries);
}

START_TEST(fmt_w_rewrites_whole_files_or_exits_3)
{
    Tree t;
    make_tree(&t);
    char *argv[] = {"fmt", "-w", t.dir, NULL};
    write_rules(&t);
    OomCmdRun want = oomcmd_run(cmd_fmt, argv, 0);
    ck_assert_int_eq(want.rc, EXIT_OK);
    char *canonical_a = read_in(t.dir, "a.cep");
    ck_assert_str_ne(canonical_a, MESSY);
    size_t failures = 0;
    for (size_t fail = 1; fail <= want.n_allocs; fail++) {
        write_rules(&t);
        OomCmdRun got = oomcmd_run(cmd_fmt, argv, fail);
        failures += same_or_out_of_memory(&got, &want, fail, "vigil fmt: out of memory\n");
        assert_whole_files(&t, canonical_a, fail);
        if (got.rc == EXIT_OK) {
            char *a = read_in(t.dir, "a.cep");
            ck_assert_msg(!strcmp(a, canonical_a), "allocation %zu: exit 0, a.cep\n%s", fail, a);
            free(a);
        }
        oomcmd_free(&got);
    }
    ck_assert_uint_gt(failures, 0);
    free(canonical_a);
    oomcmd_free(&want);
    tmptree_remove(t.dir);
}
END_TEST

/* ---- vigil test ------------------------------------------------------------ */

/* text without the reasons given for rejected event lines (cut after "rejected: "),
 * which may be shorter when memory runs out. Heap. */
static char *without_rejection_reasons(const char *text)
{
    static const char marker[] = "event line rejected: ";
    char *copy = strdup(text);
    ck_assert_ptr_nonnull(copy);
    char *to = copy;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        const char *cut = strstr(line, marker);
        size_t keep = cut && cut < line + len ? (size_t)(cut - line) + sizeof marker - 1 : len;
        memmove(to, line, keep);
        to += keep;
        line += len;
    }
    *to = '\0';
    return copy;
}

/* got is want but for the reasons given for rejected lines (the engine names a line
 * "invalid JSON" when the longer reason cannot be formatted: still a dead letter). */
static bool same_but_rejection_reasons(const OomCmdRun *got, const OomCmdRun *want)
{
    if (got->rc != want->rc || strcmp(got->out, want->out) != 0)
        return false;
    char *g = without_rejection_reasons(got->err), *w = without_rejection_reasons(want->err);
    bool same = !strcmp(g, w);
    free(g);
    free(w);
    return same;
}

/* A tree for `vigil test`: the rules in r.cep and an empty cases folder. */
static void make_test_tree(Tree *t, const char *rules)
{
    make_tree(t);
    tmptree_write_in(t->dir, "r.cep", rules);
    ck_assert_int_eq(mkdir(t->cases, 0755), 0);
}

/* `vigil test` over the tree without failure: exit `rc`, stdout ending with `closing`. */
static OomCmdRun test_without_failure(const Tree *t, int rc, const char *closing)
{
    char *argv[] = {"test", (char *)t->dir, NULL};
    OomCmdRun want = oomcmd_run(cmd_test, argv, 0);
    ck_assert_msg(want.rc == rc && ends_with_line(want.out, closing),
                  "exit %d:\n%s%s", want.rc, want.out, want.err);
    return want;
}

/* Fails each allocation of `vigil test` over the tree in turn; returns how many runs
 * ran out of memory. */
static size_t each_allocation_of_test(const Tree *t, const OomCmdRun *want)
{
    char *argv[] = {"test", (char *)t->dir, NULL};
    size_t failures = 0;
    for (size_t fail = 1; fail <= want->n_allocs; fail++) {
        OomCmdRun got = oomcmd_run(cmd_test, argv, fail);
        if (!same_but_rejection_reasons(&got, want) &&
                   same_or_out_of_memory(&got, want, fail, "vigil test: out of memory\n")) {
            failures++;
            ck_assert_msg(!strstr(got.out, " passed, "),
                          "allocation %zu: a closing count after running out of memory:\n%s",
                          fail, got.out);
        }
        oomcmd_free(&got);
    }
    return failures;
}

START_TEST(test_gives_every_verdict_or_exits_3)
{
    Tree t;
    make_test_tree(&t, TEST_RULES);
    tmptree_write_in(t.cases, "fail.events.jsonl", EVENTS);
    tmptree_write_in(t.cases, "fail.expect.jsonl", FAIL_EXPECT);
    tmptree_write_in(t.cases, "pass.events.jsonl", EVENTS);
    tmptree_write_in(t.cases, "pass.expect.jsonl", PASS_EXPECT);
    OomCmdRun want = test_without_failure(&t, EXIT_RULES, "1 passed, 1 failed\n");
    ck_assert_ptr_nonnull(strstr(want.out, "+ unexpected"));
    ck_assert_ptr_nonnull(strstr(want.err, "event line rejected"));
    ck_assert_uint_gt(each_allocation_of_test(&t, &want), 0);
    oomcmd_free(&want);
    tmptree_remove(t.dir);
}
END_TEST

/* A condition and a template whose evaluation builds strings (a concatenation longer
 * than the scratch's blocks, so each evaluation allocates it afresh; upper() and str()
 * copies): an allocation failing there would give null, a `where` that does not hold or
 * "null" in the message or a field, a failed case as if the rules were wrong. */
static const char BUILD_RULES[] =
    "time ts;\n"
    "rule long { key k; begin a where v == 1 and len(pad + pad) == 6000;\n"
    "  followed_by b where v == 2;\n"
    "  on match alert \"{a.pad + b.pad}\" fields { up: upper(a.pad), n: str(a.x * 1.5) }; }\n";

#define PAD_LEN 3000

/* `{"PREFIX":"` then PAD_LEN times c then `SUFFIX`, into out (room for it all). */
static void put_padded(char *out, size_t room, const char *prefix, char c, size_t times,
                       const char *suffix)
{
    size_t at = (size_t)snprintf(out, room, "%s", prefix);
    ck_assert_uint_lt(at + times + strlen(suffix), room);
    memset(out + at, c, times);
    snprintf(out + at + times, room - at - times, "%s", suffix);
}

START_TEST(test_template_out_of_memory_exits_3)
{
    Tree t;
    make_test_tree(&t, BUILD_RULES);
    static char events[2 * PAD_LEN + 256], expect[4 * PAD_LEN + 256], half[PAD_LEN + 64];
    put_padded(events, sizeof events, "{\"ts\":1,\"k\":\"x\",\"v\":1,\"x\":1,\"pad\":\"", 'p',
               PAD_LEN, "\"}\n");
    put_padded(half, sizeof half, "{\"ts\":2,\"k\":\"x\",\"v\":2,\"pad\":\"", 'q', PAD_LEN,
               "\"}\n");
    strcat(events, half);
    put_padded(expect, sizeof expect, "{\"message\":\"", 'p', PAD_LEN, "");
    put_padded(expect + strlen(expect), sizeof expect - strlen(expect), "", 'q', PAD_LEN,
               "\",\"fields\":{\"up\":\"");
    put_padded(expect + strlen(expect), sizeof expect - strlen(expect), "", 'P', PAD_LEN,
               "\",\"n\":\"1.5\"}}\n");
    tmptree_write_in(t.cases, "long.events.jsonl", events);
    tmptree_write_in(t.cases, "long.expect.jsonl", expect);
    OomCmdRun want = test_without_failure(&t, EXIT_OK, "1 passed, 0 failed\n");
    ck_assert_uint_gt(each_allocation_of_test(&t, &want), 0);
    oomcmd_free(&want);
    tmptree_remove(t.dir);
}
END_TEST

/* ---- vigil run ------------------------------------------------------------- */

/* A tree for `vigil run`: the rules in r.cep, the events in events.jsonl, and argv
 * `run -i EVENTS RULES`. */
typedef struct RunTree {
    Tree t;
    char rules[128], input[128];
    char *argv[5];
} RunTree;

static void make_run_tree(RunTree *r, const char *rules, const char *events)
{
    make_test_tree(&r->t, rules);
    tmptree_path(r->rules, sizeof r->rules, r->t.dir, "r.cep");
    tmptree_write(tmptree_path(r->input, sizeof r->input, r->t.dir, "events.jsonl"), events);
    char *argv[] = {"run", "-i", r->input, r->rules, NULL};
    memcpy(r->argv, argv, sizeof argv);
}

/* Loading the rules of `vigil run`: each allocation of the load fails in turn. A load
 * that ran out of memory may still return the rules that fitted; running those would
 * miss the others' alerts without a word, so the run must exit 3 instead. */
START_TEST(run_loads_every_rule_or_exits_3)
{
    RunTree r;
    make_run_tree(&r, TEST_RULES, EVENTS);
    OomCmdRun want = oomcmd_run(cmd_run, r.argv, 0);
    ck_assert_msg(want.rc == EXIT_OK && strstr(want.out, "\"rule\":\"two\"") &&
                  strstr(want.out, "\"rule\":\"gone\""), "exit %d:\n%s%s", want.rc,
                  want.out, want.err);
    size_t load = oomcmd_load_allocations(r.rules), failures = 0;
    ck_assert_uint_gt(load, 0);
    for (size_t fail = 1; fail <= load; fail++) {
        OomCmdRun got = oomcmd_run(cmd_run, r.argv, fail);
        if (!same_but_rejection_reasons(&got, &want))
            failures += same_or_out_of_memory(&got, &want, fail, "vigil run: out of memory\n");
        oomcmd_free(&got);
    }
    ck_assert_uint_gt(failures, 0);
    oomcmd_free(&want);
    tmptree_remove(r.t.dir);
}
END_TEST

/* A whole `vigil run` whose conditions and templates build strings (BUILD_RULES), each
 * allocation failing in turn: the alerts of a run without failure, or exit 3 saying
 * that memory ran out. Never exit 0 with an alert missing or wrong: an alert whose
 * rendering ran out of memory is logged as lost and fails the run. */
START_TEST(run_gives_every_alert_or_exits_3)
{
    static char events[2 * PAD_LEN + 256];
    put_padded(events, sizeof events, "{\"ts\":1,\"k\":\"x\",\"v\":1,\"x\":1,\"pad\":\"", 'p',
               PAD_LEN, "\"}\n{\"ts\":2,\"k\":\"x\",\"v\":2,\"pad\":\"\"}\n");
    RunTree r;
    make_run_tree(&r, BUILD_RULES, events);
    OomCmdRun want = oomcmd_run(cmd_run, r.argv, 0);
    ck_assert_msg(want.rc == EXIT_OK && strstr(want.out, "\"rule\":\"long\""),
                  "exit %d:\n%.300s%s", want.rc, want.out, want.err);
    size_t exits_3 = 0;
    for (size_t fail = 1; fail <= want.n_allocs; fail++) {
        OomCmdRun got = oomcmd_run(cmd_run, r.argv, fail);
        bool same = got.rc == want.rc && !strcmp(got.out, want.out);
        ck_assert_msg(same || (got.rc == EXIT_IO && oomcmd_says_out_of_memory(got.err)),
                      "allocation %zu of %zu: exit %d, stdout\n%.400s\nstderr\n%.1200s", fail,
                      want.n_allocs, got.rc, got.out, got.err);
        exits_3 += !same;
        oomcmd_free(&got);
    }
    ck_assert_uint_gt(exits_3, 0);
    oomcmd_free(&want);
    tmptree_remove(r.t.dir);
}
END_TEST

static Suite *cli_oom_suite(void)
{
    Suite *s = suite_create("cli_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, fmt_prints_whole_files_or_exits_3);
    tcase_add_test(tc, fmt_check_lists_or_exits_3);
    tcase_add_test(tc, fmt_w_rewrites_whole_files_or_exits_3);
    tcase_add_test(tc, test_gives_every_verdict_or_exits_3);
    tcase_add_test(tc, test_template_out_of_memory_exits_3);
    tcase_add_test(tc, run_loads_every_rule_or_exits_3);
    tcase_add_test(tc, run_gives_every_alert_or_exits_3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(cli_oom_suite());
}
