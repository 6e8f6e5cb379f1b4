/* tests/test_nfa_explain.c — nfa_explain's text names states, edges and conditions;
 * its dot output is accepted by Graphviz (when `dot` is installed); `vigil explain`
 * ends each rule's text with its relevance or why it has none. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nfa/nfa.h"
#include "tests/checkmain.h"
#include "tests/test_nfa_harness.h"
#include "tests/testutil.h"

static const char RULES[] =
    "time ts;\n"
    "rule r { begin a where n == \"a\"; followed_by b where n == \"b\" one_or_more;\n"
    "         not_next x where n == \"x\"; followed_by c where n == \"c\" optional; next d;\n"
    "         within 10s; skip to_last b; on match alert \"m\"; }\n";

static char *explain(bool dot)
{
    char *err = NULL;
    NfaHarness *h = nh_new(RULES, 0, 0, &err);
    ck_assert_msg(h != NULL, "%s", err ? err : "?");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    nfa_explain(nh_nfa(h, 0), f, dot);
    fclose(f);
    nh_free(h);
    return text;
}

START_TEST(test_text)
{
    char *t = explain(false);
    static const char *const want[] = {
        "rule r: ", "start a", "within 10s", "skip to_last b",
        "a [start, normal]", "take    -> b if where(a: n == \"a\")", "take    -> b#2 if where(b: n == \"b\")",
        "ignore  -> b if not where(b: n == \"b\")", "proceed -> x$stop if where(x: n == \"x\")",
        "-> $end", "$end [final]", "x$stop [stop]",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(t, want[i]) != NULL, "missing '%s' in:\n%s", want[i], t);
    free(t);
}
END_TEST

START_TEST(test_dot_renders)
{
    char *t = explain(true);
    ck_assert_msg(strncmp(t, "digraph \"r\" {", 13) == 0, "%s", t);
    ck_assert_ptr_nonnull(strstr(t, "shape=doublecircle"));
    ck_assert_ptr_nonnull(strstr(t, "\\\"b\\\""));   /* quotes in conditions are escaped */
    if (system("command -v dot >/dev/null 2>&1") != 0) {
        printf("dot not installed: rendering not checked\n");
        free(t);
        return;
    }
    FILE *p = popen("dot -Tsvg >/dev/null", "w");
    ck_assert_ptr_nonnull(p);
    fputs(t, p);
    ck_assert_int_eq(pclose(p), 0);
    free(t);
}
END_TEST

/* `vigil explain` itself, when the harness tells where the build is. */
static int run(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* rules in a new temporary file; path is a mkstemp template, which becomes its name. */
static void write_temp_rules(char *path, const char *rules)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(rules, f);
    fclose(f);
}

/* `vigil explain` on rules, as one string; NULL without top_builddir. */
static char *vigil_explain(const char *rules, const char *args)
{
    const char *bdir = getenv("top_builddir");
    if (!bdir)
        return NULL;
    char path[] = "/tmp/vigil-explain-XXXXXX";
    write_temp_rules(path, rules);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s/vigil' explain %s '%s'", bdir, args, path);
    char *text;
    ck_assert_int_eq(test_run_command(cmd, &text), 0);
    remove(path);
    return text;
}

/* Each rule's last line is its relevance in canonical rule syntax, or `none` with the
 * step that makes it strict or whose condition reads the partial match. */
START_TEST(test_cli_relevance)
{
    static const char rules[] =
        "rule pair { key u; begin a where amount>500 and (k==\"x\" or k==\"y\");\n"
        "  followed_by b where t == \"b\" and b.n > a.n; }\n"
        "rule strict { key u; begin a where x == 1; followed_by b where y == 1 optional;\n"
        "  next c where z == 1; }\n"
        "rule reads_a { key u; begin a where x == 1; followed_by b where b.y > a.y; }\n";
    char *t = vigil_explain(rules, "");
    if (!t) {
        printf("top_builddir not set: vigil explain not checked\n");
        return;
    }
    static const char *const want[] = {
        "  $end [final]\n  relevance: (amount > 500 and (k == \"x\" or k == \"y\")) or "
        "t == \"b\"\n\nrule strict: ",
        "  relevance: x == 1 or y == 1 or z == 1; other events still reach the rule as "
        "blanks, their values unread, since step b is optional: an event it ignores "
        "branches a partial match\n\nrule reads_a: ",
        "  relevance: none, no conjunct of step b's where reads only the event (STEP.x, "
        "aggregates and time(STEP) read the partial match)\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(t, want[i]) != NULL, "missing '%s' in:\n%s", want[i], t);
    free(t);
    t = vigil_explain(rules, "--dot");   /* Graphviz input only */
    ck_assert_ptr_null(strstr(t, "relevance"));
    free(t);
}
END_TEST

START_TEST(test_cli)
{
    const char *bdir = getenv("top_builddir");
    if (!bdir) {
        printf("top_builddir not set: vigil explain not checked\n");
        return;
    }
    char path[] = "/tmp/vigil-explain-XXXXXX";
    write_temp_rules(path, RULES);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s/vigil' explain '%s' r | grep -q 'rule r: '", bdir, path);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s/vigil' explain --dot '%s' | grep -q '^digraph'", bdir, path);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s/vigil' explain '%s' nosuchrule 2>/dev/null", bdir, path);
    ck_assert_int_eq(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "'%s/vigil' explain 2>/dev/null", bdir);
    ck_assert_int_eq(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "'%s/vigil' explain /nonexistent.cep 2>/dev/null", bdir);
    ck_assert_int_eq(run(cmd), 1);
    remove(path);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nfa_explain");
    TCase *tc = tcase_create("explain");
    tcase_add_test(tc, test_text);
    tcase_add_test(tc, test_dot_renders);
    tcase_add_test(tc, test_cli);
    tcase_add_test(tc, test_cli_relevance);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
