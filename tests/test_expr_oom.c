/* tests/test_expr_oom.c — compiling and evaluating expressions when an allocation
 * fails (tests/oomwrap.h).
 * Evaluation: an expression that builds a string, parses a long number or walks a
 * match chain gives null when its allocation fails; the scratch counts it
 * (expr_scratch_out_of_memory), so that a caller never takes that null for the value.
 * A normal evaluation leaves the count at 0.
 * Compilation: every allocation of loading and compiling a rule set with several kinds
 * of rule (filters with constant folding, keys computed by expressions, regexes, loops
 * with until, negations, timeouts, templates, fields) fails in turn, each in a child
 * that LeakSanitizer checks (tests/oomcmd.h). The rule set must then compile to the
 * same thing (filters, key expressions and alert fields give the same values on a
 * sample match; the automata explain the same) or fail saying out of memory with
 * diags->oom set: never as an error of the rules. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "cli/commands.h"
#include "dsl/ast.h"
#include "dsl/diag.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "rules/ruleset.h"
#include "runtime/decode.h"
#include "tests/checkmain.h"
#include "tests/oomcmd.h"
#include "tests/oomwrap.h"
#include "tests/testutil.h"

/* ---- evaluation -------------------------------------------------------------- */

/* The alert fields are the expressions under test; the steps give them a chain. */
static const char EVAL_RULES[] =
    "rule r { key k;\n"
    "  begin a where v == 1; followed_by b where v == 2 one_or_more;\n"
    "  on match alert \"m\" fields {\n"
    "    joined: a.s + b.s, upper: upper(a.s), text: str(a.x * 1.5), number: num(a.long),\n"
    "    distinct: count_distinct(b.s), total: sum(b.x), holds: upper(a.s) == \"HELLO\" }; }\n";

/* What each field gives without failure, as value_to_text writes it. */
static const char *const EVAL_WANT[] = {
    "helloworld", "HELLO", "3", "1.5", "2", "30", "true",
};

#define N_EVAL (sizeof EVAL_WANT / sizeof *EVAL_WANT)

static const char *const EVAL_EVENTS[] = {
    "{\"k\":\"u\",\"v\":1,\"s\":\"hello\",\"x\":2,"
    "\"long\":\"0000000000000000000000000000000000000000000000000000000000000000001.5\"}",
    "{\"k\":\"u\",\"v\":2,\"s\":\"there\",\"x\":10}",
    "{\"k\":\"u\",\"v\":2,\"s\":\"world\",\"x\":20}",
};

#define N_EVENTS (sizeof EVAL_EVENTS / sizeof *EVAL_EVENTS)

typedef struct EvalFixture {
    RuleSet *ast;
    FieldTable fields;
    CExpr *exprs[N_EVAL];
    MatchNode *chain;        /* a, b, b: newest first, one reference */
} EvalFixture;

static void eval_fixture_init(EvalFixture *f)
{
    memset(f, 0, sizeof *f);
    f->ast = test_parse_checked(EVAL_RULES);
    field_table_init(&f->fields);
    const Rule *rule = &f->ast->rules[0];
    const Action *action = &rule->on[0].actions[0];
    ck_assert_uint_eq(action->n_fields, N_EVAL);
    ExprEnv env = {&f->fields, rule};
    for (size_t i = 0; i < N_EVAL; i++) {
        char *err = NULL;
        f->exprs[i] = expr_compile(action->fields[i].value, &env, &err);
        ck_assert_msg(f->exprs[i] != NULL, "%s: %s", action->fields[i].name, err);
    }
    Decoder *d = decoder_new(&f->fields, 64);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < N_EVENTS; i++) {
        DecodeError err;
        Event *ev = decoder_decode(d, EVAL_EVENTS[i], strlen(EVAL_EVENTS[i]), &err);
        ck_assert_ptr_nonnull(ev);
        MatchNode *m = match_node_new(f->chain, ev, i == 0 ? 0 : 1);
        ck_assert_ptr_nonnull(m);
        match_node_release(f->chain);
        event_release(ev);
        f->chain = m;
    }
    decoder_free(d);
}

static void eval_fixture_free(EvalFixture *f)
{
    match_node_release(f->chain);
    for (size_t i = 0; i < N_EVAL; i++)
        expr_free(f->exprs[i]);
    field_table_free(&f->fields);
    ast_ruleset_free(f->ast);
}

/* Field i evaluated over the chain (as an action does) with allocation `fail` of the
 * evaluation failing (0: none), in a fresh scratch: its text, how many allocations it
 * made and the scratch's count of failed ones. */
typedef struct EvalRun {
    char text[64];
    size_t n_allocs;
    uint64_t out_of_memory;
} EvalRun;

static EvalRun eval_failing(const EvalFixture *f, size_t i, size_t fail)
{
    EvalScratch *s = expr_scratch_new();
    ck_assert_ptr_nonnull(s);
    EvalCtx ctx = {.event = NULL, .match = f->chain};
    EvalRun run;
    oom_count_begin(fail);
    Value v = expr_eval(f->exprs[i], &ctx, s);
    run.n_allocs = oom_count_end();
    run.out_of_memory = expr_scratch_out_of_memory(s);
    Buf b = BUF_INIT;
    value_to_text(&v, &b);
    ck_assert(!b.failed);
    snprintf(run.text, sizeof run.text, "%s", b.data);
    buf_free(&b);
    expr_scratch_reset(s);
    ck_assert_uint_eq(expr_scratch_out_of_memory(s), run.out_of_memory);   /* kept */
    expr_scratch_free(s);
    return run;
}

START_TEST(a_normal_evaluation_leaves_the_count_at_zero)
{
    EvalFixture f;
    eval_fixture_init(&f);
    for (size_t i = 0; i < N_EVAL; i++) {
        EvalRun run = eval_failing(&f, i, 0);
        ck_assert_msg(!strcmp(run.text, EVAL_WANT[i]), "field %zu gave %s", i, run.text);
        ck_assert_uint_eq(run.out_of_memory, 0);
        ck_assert_msg(run.n_allocs > 0, "field %zu allocates nothing: it tests nothing", i);
    }
    eval_fixture_free(&f);
}
END_TEST

START_TEST(each_failed_allocation_of_an_evaluation_is_counted)
{
    EvalFixture f;
    eval_fixture_init(&f);
    for (size_t i = 0; i < N_EVAL; i++) {
        size_t total = eval_failing(&f, i, 0).n_allocs;
        for (size_t fail = 1; fail <= total; fail++) {
            EvalRun run = eval_failing(&f, i, fail);
            ck_assert_msg(run.out_of_memory > 0, "field %zu, allocation %zu of %zu: gave %s, "
                          "out of memory not counted", i, fail, total, run.text);
            ck_assert_msg(strcmp(run.text, EVAL_WANT[i]) != 0,
                          "field %zu, allocation %zu: counted, yet the right value", i, fail);
        }
    }
    eval_fixture_free(&f);
}
END_TEST

/* A condition (expr_test's own path, not expr_eval's) that runs out of memory is
 * false, and counted. */
START_TEST(a_condition_that_runs_out_of_memory_is_counted)
{
    EvalFixture f;
    eval_fixture_init(&f);
    const CExpr *holds = f.exprs[N_EVAL - 1];
    EvalCtx ctx = {.event = NULL, .match = f.chain};
    for (size_t fail = 0;; fail++) {
        EvalScratch *s = expr_scratch_new();
        ck_assert_ptr_nonnull(s);
        oom_count_begin(fail);
        bool held = expr_test(holds, &ctx, s);
        size_t n = oom_count_end();
        uint64_t oom = expr_scratch_out_of_memory(s);
        expr_scratch_free(s);
        ck_assert_msg(held == (oom == 0), "allocation %zu: held %d, count %llu", fail,
                      (int)held, (unsigned long long)oom);
        if (fail >= n)
            break;
    }
    eval_fixture_free(&f);
}
END_TEST

/* ---- compilation ------------------------------------------------------------- */

static const char COMPILE_RULES[] =
    "time ts lateness 5s;\n"
    "rule burst { filter kind == \"t\" + \"x\" and src in [\"a\", \"b\", \"c\"];\n"
    "  key user, h = lower(host);\n"
    "  begin s where amount > 10 and msg =~ '^id-(\\d+)$';\n"
    "  followed_by t where amount > s.amount * 2 one_or_more until kind == \"void\";\n"
    "  within 10m; skip past_last_event;\n"
    "  on match alert high \"{user}: {count(t)} after {s.amount}\"\n"
    "    fields { total: sum(t.amount), id: regex_extract(s.msg, 'id-(\\d+)', 1),\n"
    "             tag: upper(\"a\" + \"b\") + str(max(s.amount)) };\n"
    "  on timeout alert low \"gave up on {key.user}\"; }\n"
    "rule quiet { key user; begin x where ok == false times 3; not_followed_by y where ok;\n"
    "  within 1m; on match alert \"no recovery: {count_distinct(x.host)} hosts\"; }\n"
    "rule admin { filter not (src == \"z\") or amount >= 1000; key user;\n"
    "  begin p where contains(str(path), \"admin\") or exists(role);\n"
    "  next q where coalesce(a, b) > 1 and time(q) - time(p) < 5s; }\n";

/* A match of every rule's steps, from these events (the first of each step). */
static const char SAMPLE_EVENT[] =
    "{\"ts\":1000,\"kind\":\"tx\",\"src\":\"b\",\"user\":\"u\",\"host\":\"HoSt\",\"amount\":50,"
    "\"msg\":\"id-42\",\"ok\":false,\"path\":\"/admin\",\"a\":2}";

/* Each value `ce` gives over a one-node chain of ev, as text, after `label`. */
static void print_value(Buf *b, const char *label, const CExpr *ce, const MatchNode *chain,
                        const Event *ev, EvalScratch *s)
{
    EvalCtx ctx = {.event = ev, .match = chain, .time_ms = ev->time_ms};
    if (!ce) {
        buf_printf(b, "%s: none\n", label);
        return;
    }
    Value v = expr_eval(ce, &ctx, s);
    buf_printf(b, "%s: ", label);
    value_to_text(&v, b);
    buf_puts(b, "\n");
}

/* What the compiled rules do with the sample event: filters, keys, alert fields. */
static void describe_rules(Buf *b, const CompiledRuleSet *rs, const MatchNode *chain,
                           EvalScratch *s)
{
    const Event *ev = chain->event;
    buf_printf(b, "%zu rules, %zu atoms\n", rs->n_rules, rs->filters.n_atoms);
    for (size_t i = 0; i < rs->n_rules; i++) {
        const CompiledRule *r = &rs->rules[i];
        buf_printf(b, "rule %s: %zu keys, %zu on match, %zu on timeout, %zu steps\n", r->name,
                   r->n_keys, r->n_on_match, r->n_on_timeout, nfa_step_count(r->nfa));
        print_value(b, "filter", r->filter, chain, ev, s);
        for (size_t k = 0; k < r->n_keys; k++)
            print_value(b, r->key_names[k], r->keys[k], chain, ev, s);
        for (size_t a = 0; a < r->n_on_match; a++)
            for (size_t f = 0; f < r->on_match[a].n_fields; f++)
                print_value(b, r->on_match[a].field_names[f], r->on_match[a].field_values[f],
                            chain, ev, s);
    }
}

/* A command for oomcmd_run: loads and compiles the rules at argv[1], then writes what
 * they do with the sample event. Exit 3 saying out of memory, or 1 on errors. No
 * ck_assert here: Check's bookkeeping allocates, and the allocations are counted. */
static int compile_command(int argc, char **argv)
{
    (void)argc;
    Diags d;
    diags_init(&d);
    const char *path = argv[1];
    CompiledRuleSet *rs = ruleset_load(&path, 1, &d);
    diags_print(&d, stderr);
    bool oom = d.oom;
    diags_free(&d);
    if (!rs) {
        fprintf(stderr, oom ? "compile: out of memory\n" : "compile: errors\n");
        return oom ? EXIT_IO : EXIT_RULES;
    }
    Decoder *dec = decoder_new(&rs->fields, 64);
    DecodeError err;
    Event *ev = dec ? decoder_decode(dec, SAMPLE_EVENT, strlen(SAMPLE_EVENT), &err) : NULL;
    MatchNode *chain = ev ? match_node_new(NULL, ev, 0) : NULL;
    EvalScratch *s = expr_scratch_new();
    Buf b = BUF_INIT;
    if (chain && s)
        describe_rules(&b, rs, chain, s);
    int rc = EXIT_OK;
    if (!chain || !s || b.failed || expr_scratch_out_of_memory(s) > 0) {
        fprintf(stderr, "compile: out of memory\n");   /* describing, not compiling */
        rc = EXIT_IO;
    } else {
        fputs(b.data, stdout);
        /* the automata as explain shows them: states, their labels, their order */
        for (size_t i = 0; i < rs->n_rules && rc == EXIT_OK; i++)
            if (nfa_explain(rs->rules[i].nfa, stdout, false) < 0) {
                fprintf(stderr, "compile: out of memory\n");
                rc = EXIT_IO;
            }
    }
    buf_free(&b);
    expr_scratch_free(s);
    match_node_release(chain);
    if (ev)
        event_release(ev);
    decoder_free(dec);
    ruleset_free(rs);
    return rc;
}

START_TEST(a_compile_that_runs_out_of_memory_is_no_rule_error)
{
    char path[] = "/tmp/vigil-expr-oom-XXXXXX.cep";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    ck_assert(write(fd, COMPILE_RULES, strlen(COMPILE_RULES)) == (ssize_t)strlen(COMPILE_RULES));
    close(fd);
    char *argv[] = {"compile", path, NULL};
    OomCmdRun want = oomcmd_run(compile_command, argv, 0);
    ck_assert_msg(want.rc == EXIT_OK, "exit %d:\n%s", want.rc, want.err);
    /* the constant folded filter holds, the computed key is lower case */
    ck_assert_msg(strstr(want.out, "filter: true\nuser: u\nh: host\n") &&
                  strstr(want.out, "tag: AB50\n"), "described as\n%s", want.out);
    size_t compile_oom = 0;
    for (size_t fail = 1; fail <= want.n_allocs; fail++) {
        OomCmdRun got = oomcmd_run(compile_command, argv, fail);
        if (got.rc != want.rc || strcmp(got.out, want.out) || strcmp(got.err, want.err)) {
            ck_assert_msg(got.rc == EXIT_IO && oomcmd_starts_with(want.out, got.out) &&
                          strstr(got.err, "compile: out of memory\n"),
                          "allocation %zu of %zu: exit %d\n%.1500s\nstderr\n%.1500s", fail,
                          want.n_allocs, got.rc, got.out, got.err);
            compile_oom += strstr(got.err, "out of memory while compiling rules") != NULL;
        }
        oomcmd_free(&got);
    }
    ck_assert_uint_gt(compile_oom, 0);
    oomcmd_free(&want);
    unlink(path);
}
END_TEST

static Suite *expr_oom_suite(void)
{
    Suite *s = suite_create("expr_oom");
    TCase *tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, a_normal_evaluation_leaves_the_count_at_zero);
    tcase_add_test(tc, each_failed_allocation_of_an_evaluation_is_counted);
    tcase_add_test(tc, a_condition_that_runs_out_of_memory_is_counted);
    tcase_add_test(tc, a_compile_that_runs_out_of_memory_is_no_rule_error);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(expr_oom_suite());
}
