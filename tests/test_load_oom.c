/* tests/test_load_oom.c — loading rules when an allocation fails. Each allocation of
 * ruleset_load is made to fail in turn, over a rule folder of several files (an
 * event-time declaration, outputs, regexes, templates, comments) plus a file named
 * on its own, and over a folder holding a rule with an error. The result must be the
 * rule set loaded without failure (the same canonical text, the same rules), or NULL
 * with diagnostics that say out of memory (for the folder with an error: the same
 * diagnostics as without failure, or ones that say out of memory); never a rule set
 * with fewer rules, and nothing leaked. `vigil check` over the same folders either
 * says what it says without failure, or exits 3 saying out of memory.
 * Each load runs in a child that frees what it got and leaves with exit(), so that
 * under the sanitizer build LeakSanitizer checks every failing load on its own: a
 * leak makes the child's exit status nonzero.
 * Allocations fail through tests/oomwrap.h. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "cli/commands.h"
#include "dsl/diag.h"
#include "dsl/fmt.h"
#include "rules/ruleset.h"
#include "tests/checkmain.h"
#include "tests/oomcmd.h"
#include "tests/oomwrap.h"
#include "tests/testutil.h"
#include "tests/tmptree.h"

/* ---- rule files ------------------------------------------------------------ */

static const char OUTPUTS[] =
    "# outputs and the event time, first in name order\n"
    "time ts lateness 30s;\n"
    "output audit file \"/tmp/vigil-load-oom-{date}.jsonl\";\n"
    "output pager exec [\"/bin/true\", \"{rule}\", \"{key.user}\"] timeout 5s;\n"
    "output feed tcp \"127.0.0.1:9999\";\n";

static const char FRAUD[] =
    "/* regexes, templates, loops */\n"
    "rule card_test {\n"
    "  filter kind in [\"auth\", \"capture\"];\n"
    "  key user;\n"
    "  begin small where amount < 2 and merchant =~ '^shop-\\d+$';\n"
    "  followed_by big where amount > 500 one_or_more until kind == \"void\";\n"
    "  within 10m;\n"
    "  on match alert \"card test by {key.user}: {count(big)} big\" to audit, pager;\n"
    "}\n"
    "rule odd_agent { key user; begin a where agent !~ '(?i)mozilla|curl';\n"
    "  not_next b where ok == true; next c where contains(str(path), \"admin\");\n"
    "  on match alert \"agent {a.agent}\" to feed; }\n";

static const char LOGIN[] =
    "// a rule set with a timeout\n"
    "rule brute { key user, host; begin f where event == \"fail\" times 3..5;\n"
    "  followed_by s where event == \"ok\"; within 2m; skip past_last_event;\n"
    "  on match alert \"brute force on {key.host}\";\n"
    "  on timeout alert \"gave up\" to audit; }\n";

static const char LONE[] =
    "rule lone { key k; begin x where regex_extract(msg, 'id=(\\w+)', 1) == \"7\";\n"
    "  followed_by_any y where coalesce(a, b) > 1; within 1h; on match alert \"lone\"; }\n";

static const char BROKEN[] =
    "rule fine { key u; begin a where x == 1; on match alert \"fine\"; }\n"
    "rule broken { key u; begin first where x == 1; next second where frist.x == 2;\n"
    "  on match alert \"m\" to pagr; }\n"
    "output pages exec [\"/bin/true\"];\n";

typedef struct Tree {
    char dir[64];
    char folder[96];   /* the rules folder */
    char lone[96];     /* a file named on its own, outside it */
} Tree;

static void make_tree(Tree *t)
{
    tmptree_make(t->dir, sizeof t->dir, "load-oom");
    tmptree_path(t->folder, sizeof t->folder, t->dir, "rules");
    ck_assert_int_eq(mkdir(t->folder, 0700), 0);
    tmptree_write_in(t->folder, "a_outputs.cep", OUTPUTS);
    tmptree_write_in(t->folder, "b_fraud.cep", FRAUD);
    tmptree_write_in(t->folder, "c_login.cep", LOGIN);
    tmptree_write_in(t->folder, "notes.txt", "not a rule file\n");
    tmptree_write(tmptree_path(t->lone, sizeof t->lone, t->dir, "lone.cep"), LONE);
}

/* ---- one load -------------------------------------------------------------- */

/* What a load gave, as text: "rules" and counts, then every file's canonical text and
 * every compiled rule's name and matching part, or "null\n" then the diagnostics. Heap; NULL when the text
 * itself could not be made. Called with no allocation failing. */
static char *describe(const CompiledRuleSet *rs, const Diags *d)
{
    Buf b = BUF_INIT;
    if (rs == NULL) {
        char *diags = test_diags_text(d);
        buf_printf(&b, "null\n%s", diags);
        free(diags);
    } else {
        buf_printf(&b, "rules: %zu files, %zu outputs, %zu rules\n", rs->ast->n_files,
                   rs->ast->n_outputs, rs->n_rules);
        for (size_t i = 0; i < rs->ast->n_files; i++) {
            char *text = dsl_fmt_file(rs->ast, i);
            buf_printf(&b, "--- %s\n%s", rs->ast->files[i].src->path, text ? text : "(none)");
            free(text);
        }
        for (size_t i = 0; i < rs->n_rules; i++) {
            const CompiledRule *r = &rs->rules[i];
            char *matching = dsl_rule_matching_text(r->ast);
            buf_printf(&b, "rule %s: %zu keys, %zu on match, %zu on timeout, fingerprint %s\n%s\n",
                       r->name, r->n_keys, r->n_on_match, r->n_on_timeout,
                       r->fingerprint == dsl_rule_fingerprint(r->ast) ? "right" : "WRONG",
                       matching ? matching : "(none)");
            free(matching);
        }
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* ruleset_load of `paths` with allocation `fail` failing (0: none): its description,
 * and in *n_allocs how many allocations the load made. */
static char *load_failing(const char *const *paths, size_t n_paths, size_t fail,
                          size_t *n_allocs)
{
    Diags d;
    diags_init(&d);
    oom_count_begin(fail);
    CompiledRuleSet *rs = ruleset_load(paths, n_paths, &d);
    *n_allocs = oom_count_end();
    char *text = describe(rs, &d);
    ruleset_free(rs);
    diags_free(&d);
    return text;
}

typedef struct LoadCall {
    const char *const *paths;
    size_t n_paths, fail;
} LoadCall;

/* In the child: load_failing's description to fd. */
static int describe_load(void *user, int fd)
{
    const LoadCall *c = user;
    size_t n;
    char *text = load_failing(c->paths, c->n_paths, c->fail, &n);
    int rc = text == NULL ? 90 : dprintf(fd, "%s", text) < 0 ? 91 : 0;
    free(text);
    return rc;
}

/* load_failing in a child (tests/oomcmd.h: LeakSanitizer checks it). Heap; the child's
 * exit status in *status. */
static char *load_in_child(const char *const *paths, size_t n_paths, size_t fail, int *status)
{
    LoadCall call = {paths, n_paths, fail};
    return oomcmd_in_child(describe_load, &call, status);
}

static bool says_out_of_memory(const char *text)
{
    return strncmp(text, "null\n", 5) == 0 && strstr(text, "out of memory") != NULL;
}

/* Fails each allocation of loading `paths` in turn; `want_rules`: whether the load
 * without failure gives a rule set. Returns how many loads failed. */
static size_t each_allocation_of_load(const char *const *paths, size_t n_paths,
                                      bool want_rules)
{
    size_t total;
    char *want = load_failing(paths, n_paths, 0, &total);
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(want_rules == (strncmp(want, "rules", 5) == 0), "loaded as\n%s", want);
    ck_assert_uint_gt(total, 0);
    size_t failures = 0;
    for (size_t fail = 1; fail <= total; fail++) {
        int status;
        char *got = load_in_child(paths, n_paths, fail, &status);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "allocation %zu of %zu: the child's status is %d (a leak or a crash)\n"
                      "it loaded\n%.1800s", fail, total, status, got);
        if (strcmp(got, want) != 0) {
            ck_assert_msg(says_out_of_memory(got),
                          "allocation %zu of %zu: loaded as\n%.1800s\ninstead of\n%.1800s", fail, total,
                          got, want);
            failures++;
        }
        free(got);
    }
    free(want);
    return failures;
}

START_TEST(a_folder_and_a_file_load_whole_or_not_at_all)
{
    Tree t;
    make_tree(&t);
    const char *paths[] = {t.folder, t.lone};
    ck_assert_uint_gt(each_allocation_of_load(paths, 2, true), 0);
    tmptree_remove(t.dir);
}
END_TEST

START_TEST(a_rule_with_an_error_is_reported_whole_or_out_of_memory)
{
    Tree t;
    make_tree(&t);
    tmptree_write_in(t.folder, "d_broken.cep", BROKEN);
    const char *paths[] = {t.folder};
    ck_assert_uint_gt(each_allocation_of_load(paths, 1, false), 0);
    tmptree_remove(t.dir);
}
END_TEST

/* ---- vigil check ----------------------------------------------------------- */

/* `vigil check PATHS` with allocation `fail` failing, in a child (tests/oomcmd.h, which
 * fails the test on a leak or a crash): "exit RC\n", then what went to stdout, then
 * "stderr:\n" and what went there. Heap. */
static char *check_in_child(const char *const *paths, size_t n_paths, size_t fail)
{
    char *argv[4] = {"check", NULL, NULL, NULL};
    for (size_t i = 0; i < n_paths && i < 2; i++)
        argv[i + 1] = (char *)paths[i];
    OomCmdRun r = oomcmd_run(cmd_check, argv, fail);
    Buf b = BUF_INIT;
    buf_printf(&b, "exit %d\n%sstderr:\n%s", r.rc, r.out, r.err);
    oomcmd_free(&r);
    ck_assert(!b.failed);
    return buf_steal(&b);
}

/* Fails each allocation `vigil check` makes loading `paths` (as many as ruleset_load
 * makes at most: the compile is not check's) in turn. Returns how many runs failed. */
static size_t each_allocation_of_vigil_check(const char *const *paths, size_t n_paths,
                                             const char *want_start)
{
    size_t total;
    free(load_failing(paths, n_paths, 0, &total));
    char *want = check_in_child(paths, n_paths, 0);
    ck_assert_msg(strncmp(want, want_start, strlen(want_start)) == 0, "checked as\n%s", want);
    size_t failures = 0;
    for (size_t fail = 1; fail <= total; fail++) {
        char *got = check_in_child(paths, n_paths, fail);
        if (strcmp(got, want) != 0) {
            ck_assert_msg(strncmp(got, "exit 3\nstderr:\n", 15) == 0 &&
                              strstr(got, "vigil check: out of memory\n") != NULL,
                          "allocation %zu: checked as\n%.1800s\ninstead of\n%.1800s", fail, got, want);
            failures++;
        }
        free(got);
    }
    free(want);
    return failures;
}

START_TEST(vigil_check_exits_3_on_out_of_memory)
{
    Tree t;
    make_tree(&t);
    const char *paths[] = {t.folder, t.lone};
    ck_assert_uint_gt(each_allocation_of_vigil_check(paths, 2, "exit 0\n4 files, 4 rules"), 0);
    tmptree_write_in(t.folder, "d_broken.cep", BROKEN);
    ck_assert_uint_gt(each_allocation_of_vigil_check(paths, 2, "exit 1\nstderr:\n"), 0);
    tmptree_remove(t.dir);
}
END_TEST

static Suite *load_oom_suite(void)
{
    Suite *s = suite_create("load_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, a_folder_and_a_file_load_whole_or_not_at_all);
    tcase_add_test(tc, a_rule_with_an_error_is_reported_whole_or_out_of_memory);
    tcase_add_test(tc, vigil_check_exits_3_on_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(load_oom_suite());
}
