/* tests/test_relevance_oom.c — compiling a rule set when an allocation fails. Each
 * allocation of ruleset_compile is made to fail in turn: the compile must then fail
 * with an error that says out of memory, or (where a failure is harmless) give the
 * very rule set it gives otherwise; never a rule set whose relevance was quietly
 * dropped.
 * Allocations fail through tests/oomwrap.h. */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "rules/ruleset.h"
#include "tests/checkmain.h"
#include "tests/oomwrap.h"
#include "tests/testutil.h"

/* Filters; conjuncts that read the partial match; a part written alike in two
 * steps; a rule whose relevance is dropped after its first step; `until`; a
 * negated step; a rule that is not relaxed. */
static const char RULES[] =
    "rule keep { key u; filter t == \"tx\" and amount > 5;\n"
    "  begin a where x == 1 and y == a.y;\n"
    "  followed_by b where x == 1 and y == a.y;\n"
    "  followed_by c where v == 3 and (z == 2 or w == a.w); }\n"
    "rule blocked { key u; begin a where q == 7 and r == 8; followed_by b where y == a.y; }\n"
    "rule shares { key u; filter amount > 5;\n"
    "  begin a where x == 1 and time() - time(a) < 5m times 2;\n"
    "  not_followed_by n where k == \"stop\" or k == \"halt\";\n"
    "  followed_by d where count(a) > 1 and d.v != null and (e == 1 or f == 2); }\n"
    "rule strict { key u; begin a where x == 2; next b where x == 3; }\n";

/* A failed allocation is reported as what it is: every error says "out of memory"
 * (none blames the rules, such as "pattern too complex"), or, when not even the
 * message could be stored, the diagnostics are marked as lost for want of memory
 * (diags_print then says out of memory). */
static void assert_reports_out_of_memory(const Diags *d, size_t fail)
{
    ck_assert_msg(d->errors > 0, "allocation %zu: failed without an error", fail);
    size_t stored = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (d->items[i].level != DIAG_ERROR)
            continue;
        stored++;
        ck_assert_msg(strstr(d->items[i].message, "out of memory") != NULL,
                      "allocation %zu: the error says \"%s\"", fail, d->items[i].message);
    }
    if (stored == 0)
        ck_assert_msg(d->oom, "allocation %zu: the error was neither stored nor noted lost",
                      fail);
}

/* The rule set RULES compiles to with allocation `fail` failing (0: none); *n_allocs
 * says how many allocations the compile made. NULL when it failed, after checking
 * that it reported the failed allocation. */
static CompiledRuleSet *compile_failing(size_t fail, size_t *n_allocs)
{
    RuleSet *ast = test_parse_checked(RULES);
    Diags d;
    diags_init(&d);
    oom_count_begin(fail);
    CompiledRuleSet *rs = ruleset_compile(ast, &d);
    *n_allocs = oom_count_end();
    if (!rs)
        assert_reports_out_of_memory(&d, fail);
    diags_free(&d);
    return rs;
}

static const char *text_or_dash(const char *s)
{
    return s ? s : "-";
}

/* got is the rule set `want` is: relevance, filters and the plan they are in. */
static void assert_same(const CompiledRuleSet *got, const CompiledRuleSet *want, size_t fail)
{
    ck_assert_uint_eq(got->n_rules, want->n_rules);
    for (size_t i = 0; i < want->n_rules; i++) {
        const CompiledRule *g = &got->rules[i], *w = &want->rules[i];
        ck_assert_msg(!strcmp(text_or_dash(g->relevance_text), text_or_dash(w->relevance_text)),
                      "allocation %zu: rule %s's relevance is %s", fail, w->name,
                      text_or_dash(g->relevance_text));
        ck_assert_str_eq(text_or_dash(g->relevance_why), text_or_dash(w->relevance_why));
        ck_assert_uint_eq(g->relevance_root, w->relevance_root);
        ck_assert_uint_eq(g->filter_root, w->filter_root);
    }
    ck_assert_uint_eq(got->filters.n_atoms, want->filters.n_atoms);
    ck_assert_uint_eq(got->filters.n_nodes, want->filters.n_nodes);
    ck_assert(!memcmp(got->filters.nodes, want->filters.nodes,
                      want->filters.n_nodes * sizeof *want->filters.nodes));
}

START_TEST(each_failed_allocation_fails_the_compile)
{
    size_t total;
    CompiledRuleSet *want = compile_failing(0, &total);
    ck_assert_ptr_nonnull(want);
    ck_assert_str_eq(text_or_dash(want->rules[0].relevance_text), "x == 1 or v == 3");
    ck_assert_str_eq(text_or_dash(want->rules[2].relevance_text),
                     "x == 1 or k == \"stop\" or k == \"halt\" or e == 1 or f == 2");
    size_t failed = 0;
    for (size_t fail = 1; fail <= total; fail++) {
        size_t n;
        CompiledRuleSet *got = compile_failing(fail, &n);
        ck_assert_uint_ge(n, fail);
        if (got)
            assert_same(got, want, fail);
        else
            failed++;
        ruleset_free(got);
    }
    ck_assert_uint_gt(failed, total / 2);
    ruleset_free(want);
}
END_TEST

static Suite *oom_suite(void)
{
    Suite *s = suite_create("relevance_oom");
    TCase *tc = tcase_create("compile");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, each_failed_allocation_fails_the_compile);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(oom_suite());
}
