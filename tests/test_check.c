/* tests/test_check.c — semantic checks: every error of LANGUAGE.md 7 with its exact
 * position and message, name resolution, warnings, loading, and the bad rule files
 * under tests/data/check/ (NAME.cep with the expected output in NAME.expect). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/load.h"
#include "dsl/parse.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

/* Parses and checks `text` as the file `name`; returns the printed diagnostics, their
 * counts in *errors and *warnings when these are not NULL. */
static char *check_named_text(const char *name, const char *text, size_t *errors,
                              size_t *warnings)
{
    RuleSet *rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(rs);
    Diags d;
    diags_init(&d);
    dsl_parse_text(rs, name, text, strlen(text), &d);
    dsl_check(rs, &d);
    char *out = test_diags_text(&d);
    if (errors)
        *errors = d.errors;
    if (warnings)
        *warnings = d.warnings;
    diags_free(&d);
    ast_ruleset_free(rs);
    return out;
}

static char *check_text(const char *text, size_t *errors, size_t *warnings)
{
    return check_named_text("t.cep", text, errors, warnings);
}

typedef struct BadCase {
    const char *text;
    const char *expected;   /* the diagnostic line, without the trailing newline */
} BadCase;

static const BadCase BAD[] = {
    /* unknown step, with a suggestion */
    {"rule r {\n  begin first where amount > 1;\n  followed_by third where frist.amount > 1000;\n"
     "  within 1m;\n}\n",
     "t.cep:3:27: error: unknown step 'frist' (did you mean 'first'?)"},
    /* duplicate names */
    {"rule x { begin a; }\nrule x { begin a; }\n",
     "t.cep:2:6: error: duplicate rule 'x' (first defined at t.cep:1:6)"},
    {"rule r { begin a; next a; }\n",
     "t.cep:1:24: error: duplicate step 'a' (first defined at t.cep:1:16)"},
    {"output o file \"a\";\noutput o file \"b\";\n",
     "t.cep:2:8: error: duplicate output 'o' (first defined at t.cep:1:8)"},
    {"output stdout file \"a\";\n",
     "t.cep:1:8: error: output 'stdout' is predefined and cannot be redeclared"},
    {"rule r { key a, a; begin s; }\n",
     "t.cep:1:17: error: duplicate key 'a' (first defined at t.cep:1:14)"},
    {"rule r { begin a; on match alert \"m\" fields { x: 1, x: 2 }; }\n",
     "t.cep:1:53: error: duplicate field 'x' in 'fields'"},
    {"time ts;\ntime t2;\n",
     "t.cep:2:1: error: more than one 'time' declaration (first at t.cep:1:1)"},
    /* counts that would unroll into millions of automaton states */
    {"rule r { begin a times 100000000; }\n",
     "t.cep:1:18: error: the count of 'times' must be at most 10000 (each counted event is a "
     "state of the automaton)"},
    {"rule r { begin a times 1..10001; }\n",
     "t.cep:1:18: error: the count of 'times' must be at most 10000 (each counted event is a "
     "state of the automaton)"},
    {"rule r { begin a times 20000+ within 1m; }\n",
     "t.cep:1:18: error: the count of 'times' must be at most 10000 (each counted event is a "
     "state of the automaton)"},
    /* network addresses the output could not connect to */
    {"output o tcp \"nohost\";\n",
     "t.cep:1:14: error: output 'o': expected \"HOST:PORT\", got \"nohost\""},
    {"output o tcp \"h:99999\";\n",
     "t.cep:1:14: error: output 'o': the port must be a number from 1 to 65535, got \"h:99999\""},
    {"output o tcp \"[::1:80\";\n",
     "t.cep:1:14: error: output 'o': an IPv6 address is written \"[ADDRESS]:PORT\", got \"[::1:80\""},
    {"output o unix \"\";\n",
     "t.cep:1:15: error: output 'o': a unix socket path must be 1 to 107 bytes, got 0"},
    {"output o unix \"a\\u0000b\";\n",
     "t.cep:1:15: error: output 'o': the address holds a NUL character"},
    /* functions */
    {"rule r { begin a where lenght(s) > 1; }\n",
     "t.cep:1:24: error: unknown function 'lenght' (did you mean 'len'?)"},
    {"rule r { begin a where sum(a.x, 2) > 1; }\n",
     "t.cep:1:24: error: 'sum' takes 1 argument, got 2"},
    {"rule r { begin a where regex_extract(s) == \"x\"; }\n",
     "t.cep:1:24: error: 'regex_extract' takes 2 or 3 arguments, got 1"},
    {"rule r { begin a where coalesce() == 1; }\n",
     "t.cep:1:24: error: 'coalesce' takes at least 1 argument, got 0"},
    {"rule r { begin a where min(1, 2, 3) == 1; }\n",
     "t.cep:1:24: error: 'min' takes 1 or 2 arguments, got 3"},
    {"rule r { begin a where time(a, b) > 1; }\n",
     "t.cep:1:24: error: 'time' takes 0 or 1 arguments, got 2"},
    /* aggregates */
    {"rule r { begin a where sum(zz.x) > 1; }\n",
     "t.cep:1:28: error: unknown step 'zz'"},
    {"rule r { begin a where sum(1) > 1; }\n",
     "t.cep:1:28: error: 'sum' needs a step path like sum(STEP.field)"},
    {"rule r { begin a where sum(a) > 1; }\n",
     "t.cep:1:28: error: 'sum' needs a field of step 'a', like sum(a.field)"},
    {"rule r { begin a where count(a.x) > 1; }\n",
     "t.cep:1:30: error: 'count' counts a step's events: write count(a)"},
    {"rule r { filter count(a) > 1; begin a; }\n",
     "t.cep:1:17: error: aggregate 'count' cannot be used in a filter: it runs before any match"},
    {"rule r { key time(a); begin a; }\n",
     "t.cep:1:14: error: 'time(STEP)' cannot be used in a key: it runs before any match; use time()"},
    /* paths */
    {"rule r { filter a.x == 1; begin a; }\n",
     "t.cep:1:17: error: step 'a' cannot be read in a filter: it runs before any match"},
    {"rule r { key a.x; begin a; }\n",
     "t.cep:1:14: error: step 'a' cannot be read in a key: it runs before any match"},
    {"rule r { begin a where a > 1; }\n",
     "t.cep:1:24: error: step 'a' is not a value; read a field like 'a.FIELD'"},
    {"rule r { key user; begin a where key.user == 1; }\n",
     "t.cep:1:34: error: 'key.user' can only be used in actions"},
    {"rule r { key user; begin a; on match alert \"m\" fields { k: key.usr }; }\n",
     "t.cep:1:64: error: unknown key 'usr' (did you mean 'user'?)"},
    {"rule r { begin a; on match alert \"m\" fields { k: key.user }; }\n",
     "t.cep:1:54: error: unknown key 'user': rule 'r' has no key"},
    /* pattern shape */
    {"rule r { next a; }\n",
     "t.cep:1:10: error: pattern must start with 'begin', not 'next'"},
    {"rule r { not_next a where x == 1; next b; }\n",
     "t.cep:1:10: error: pattern must start with 'begin', not 'not_next'"},
    {"rule r { begin a; begin b; }\n",
     "t.cep:1:19: error: 'begin' must be the first step only; use next or followed_by"},
    {"rule r { filter x == 1; }\n",
     "t.cep:1:6: error: rule 'r' has no pattern: it needs a 'begin' step"},
    {"rule r { begin a; not_followed_by b where x == 1; }\n",
     "t.cep:1:19: error: 'not_followed_by' as the last step needs 'within'"},
    {"rule r { begin a; not_next b where x == 1 optional; within 1m; }\n",
     "t.cep:1:43: error: a 'not_next' step cannot be optional"},
    {"rule r { begin a; not_followed_by b where x == 1 one_or_more; next c; within 1m; }\n",
     "t.cep:1:50: error: a 'not_followed_by' step cannot repeat"},
    /* quantifiers */
    {"rule r { begin a where x > 1 times 3 until x > 5; within 1m; }\n",
     "t.cep:1:38: error: 'until' needs an open loop (one_or_more or times N+)"},
    {"rule r { begin a until x > 5; }\n",
     "t.cep:1:18: error: 'until' needs an open loop (one_or_more or times N+)"},
    {"rule r { begin a times 0; }\n",
     "t.cep:1:18: error: 'times 0' matches nothing; the count must be at least 1"},
    {"rule r { begin a times 0..0; }\n",
     "t.cep:1:18: error: 'times 0..0': the upper bound must be at least 1"},
    {"rule r { begin a times 3..2; }\n",
     "t.cep:1:18: error: 'times 3..2': the upper bound must be >= the lower bound"},
    {"rule r { begin a times 0+; within 1m; }\n",
     "t.cep:1:18: error: 'times 0+' is not allowed; write 'one_or_more optional'"},
    {"rule r { begin a consecutive; }\n",
     "t.cep:1:18: error: 'consecutive' needs a loop (times or one_or_more)"},
    {"rule r { begin a greedy; }\n",
     "t.cep:1:18: error: 'greedy' needs a loop (times or one_or_more)"},
    {"rule r { begin a times 2 consecutive allow_combinations; }\n",
     "t.cep:1:38: error: 'consecutive' and 'allow_combinations' exclude each other"},
    /* negation steps hold no events */
    {"rule r { begin a; not_next b where x == 1; next c where b.x == 1; }\n",
     "t.cep:1:57: error: step 'b' is a 'not_next' step: it never holds events to read"},
    {"rule r { begin a; not_next b where x == 1; next c where count(b) > 1; }\n",
     "t.cep:1:63: error: step 'b' is a 'not_next' step: it never holds events to read"},
    {"rule r { begin a; not_next b where x == 1; next c; skip to_last b; }\n",
     "t.cep:1:65: error: step 'b' is a 'not_next' step: it never holds events to read"},
    /* regexes */
    {"rule r { begin a where regex_extract(s, 'a(b)', 2) == \"x\"; }\n",
     "t.cep:1:49: error: regex_extract asks for group 2, but the regex has 1"},
    {"rule r { begin a where s =~ 'ab(c'; }\n",
     "t.cep:1:34: error: invalid regex: missing closing parenthesis"},
    {"rule r { begin a where s !~ \"\\\\d{3,1}\"; }\n",
     "t.cep:1:37: error: invalid regex: numbers out of order in {} quantifier"},
    {"rule r { begin a where s =~ \"\\u00e9\\u00e9(\"; }\n",
     "t.cep:1:43: error: invalid regex: missing closing parenthesis"},
    {"rule r { begin a where s =~ 'a''(b'; }\n",
     "t.cep:1:35: error: invalid regex: missing closing parenthesis"},
    {"rule r { begin a where regex_extract(s, '[a', 1) == \"x\"; }\n",
     "t.cep:1:44: error: invalid regex: missing terminating ] for character class"},
    {"rule r { begin a where s =~ t; }\n",
     "t.cep:1:29: error: the right side of '=~' must be a string literal (a regex)"},
    {"rule r { begin a where regex_extract(s, p) == \"x\"; }\n",
     "t.cep:1:41: error: the pattern of 'regex_extract' must be a string literal"},
    {"rule r { begin a where s in t; }\n",
     "t.cep:1:29: error: the right side of 'in' must be a list like [1, 2]"},
    {"rule r { begin a where [1] == x; }\n",
     "t.cep:1:24: error: a list is only allowed on the right side of 'in'"},
    /* durations and timeouts */
    {"rule r { begin a; on timeout alert \"t\"; }\n",
     "t.cep:1:22: error: 'on timeout' needs a 'within' (the rule's or a step's)"},
    {"rule r { begin a; within 10x; }\n",
     "t.cep:1:26: error: invalid number or duration '10x' (a duration is a whole number and one of "
     "ms, s, m, h, d)"},
    {"rule r { begin a; within 0s; }\n",
     "t.cep:1:19: error: invalid duration: 'within' must be greater than 0"},
    {"rule r { begin a; next b within 0ms; }\n",
     "t.cep:1:26: error: invalid duration: 'within' must be greater than 0"},
    {"rule r { begin a; suppress 0s; within 1m; }\n",
     "t.cep:1:19: error: invalid duration: 'suppress' must be greater than 0"},
    /* outputs */
    {"output pager file \"p\";\nrule r { begin a; on match alert \"m\" to pagr; }\n",
     "t.cep:2:41: error: unknown output 'pagr' (did you mean 'pager'?)"},
    {"rule r { begin a; on match alert \"m\" to stdout, stdout; }\n",
     "t.cep:1:49: error: output 'stdout' is listed twice"},
    {"output o file \"x-{foo}.jsonl\";\n",
     "t.cep:1:19: error: a file output path may only use {date}, {hour} and {rule}"},
    {"output o file \"x-{dat}.jsonl\";\n",
     "t.cep:1:19: error: a file output path may only use {date}, {hour} and {rule} "
     "(did you mean 'date'?)"},
    {"output o file \"x-{severity}.jsonl\";\n",
     "t.cep:1:19: error: a file output path may only use {date}, {hour} and {rule}"},
    {"output o exec [\"/bin/{rule}\"];\n",
     "t.cep:1:23: error: the program of an exec output cannot hold {...} templates"},
    {"output o exec [\"/bin/page\", \"{kind}\", \"{key.user}\", \"{date}\"];\n",
     "t.cep:1:55: error: exec arguments may only use {rule}, {kind}, {severity} and {key.NAME}"},
    {"output o tcp \"{rule}:9000\";\n",
     "t.cep:1:16: error: a network output address cannot hold {...} templates"},
    /* negation after an optional step */
    {"rule r { begin a; next b optional; not_next c; followed_by d; }\n",
     "t.cep:1:36: error: a 'not_next' step cannot follow the optional step 'b'"},
    {"rule r { begin a; followed_by b times 0..2; not_followed_by c; followed_by d; }\n",
     "t.cep:1:45: error: a 'not_followed_by' step cannot follow the optional step 'b'"},
    /* Flink's Pattern.optional() after a greedy step; `times 0..M` is not checked there */
    {"rule r { begin a; followed_by b one_or_more greedy; followed_by c optional; within 1m; }\n",
     "t.cep:1:67: error: 'optional' cannot follow the greedy step 'b'"},
    /* Flink's checkPatternWindowTimes; a loop's step window is not Flink's, so not checked */
    {"rule r { begin a; followed_by b within 10m; within 5m; }\n",
     "t.cep:1:33: error: the 'within' of step 'b' is longer than the rule's (at t.cep:1:45), "
     "which always ends the match first"},
    /* skip */
    {"rule r { begin first; skip to_first frist; }\n",
     "t.cep:1:37: error: unknown step 'frist' in 'skip' (did you mean 'first'?)"},
};

START_TEST(reports_error_with_position)
{
    const BadCase *c = &BAD[_i];
    size_t errors = 0;
    char *out = check_text(c->text, &errors, NULL);
    char *first_line = strdup(out);
    ck_assert_ptr_nonnull(first_line);
    char *nl = strchr(first_line, '\n');
    if (nl)
        *nl = '\0';
    ck_assert_msg(strcmp(first_line, c->expected) == 0, "case %d:\n%s\nexpected: %s\ngot all:\n%s",
                  _i, c->text, c->expected, out);
    ck_assert_msg(errors == 1, "case %d: expected exactly 1 error, got %zu:\n%s", _i, errors, out);
    free(first_line);
    free(out);
}
END_TEST

START_TEST(reports_several_errors_in_one_file)
{
    const char *text =
        "rule a { begin x where lenght(s) > 1; next x; }\n"
        "rule b { next y; on timeout alert \"t\"; }\n"
        "rule a { begin z; skip to_first qq; }\n";
    size_t errors = 0;
    char *out = check_text(text, &errors, NULL);
    ck_assert_uint_eq(errors, 6);
    ck_assert_ptr_nonnull(strstr(out, "t.cep:1:24: error: unknown function 'lenght'"));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:1:44: error: duplicate step 'x'"));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:2:10: error: pattern must start with 'begin'"));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:2:21: error: 'on timeout' needs a 'within'"));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:3:6: error: duplicate rule 'a'"));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:3:33: error: unknown step 'qq' in 'skip'\n"));
    free(out);
}
END_TEST

START_TEST(syntax_and_semantic_errors_together)
{
    const char *text = "rule a { begin x where ; }\nrule b { begin y where lenght(s) > 1; }\n";
    size_t errors = 0;
    char *out = check_text(text, &errors, NULL);
    ck_assert_uint_ge(errors, 2);
    ck_assert_ptr_nonnull(strstr(out, "t.cep:1:24: error: "));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:2:24: error: unknown function 'lenght'"));
    free(out);
}
END_TEST

START_TEST(no_cascade_after_syntax_error)
{
    /* Recovery drops `begin a where ;`, which must not look like a missing begin. */
    const char *text = "rule r { begin a where ; next b; }\nrule s { next c; }\n";
    size_t errors = 0;
    char *out = check_text(text, &errors, NULL);
    ck_assert_msg(errors == 2, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "t.cep:1:24: error: syntax error"));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:2:10: error: pattern must start with 'begin'"));
    free(out);
}
END_TEST

START_TEST(caret_under_regex_error)
{
    char *out = check_text("rule r { begin a where s =~ 'ab(c'; }\n", NULL, NULL);
    ck_assert_str_eq(out,
        "t.cep:1:34: error: invalid regex: missing closing parenthesis\n"
        "rule r { begin a where s =~ 'ab(c'; }\n"
        "                                 ^\n");
    free(out);
}
END_TEST

typedef struct GoodCase {
    const char *text;
    size_t warnings;
    const char *warning;    /* expected first line, or NULL */
} GoodCase;

static const GoodCase GOOD[] = {
    {"rule r { begin a where x > 1 one_or_more; }\n", 1,
     "t.cep:1:16: warning: state can grow without bound: loop 'a' has neither 'within' nor 'until'"},
    {"rule r { begin a times 2+; }\n", 1, NULL},
    {"rule r { begin a; followed_by_any b; }\n", 1,
     "t.cep:1:35: warning: state can grow without bound: 'followed_by_any' step 'b' has no 'within'"},
    {"rule r { begin a one_or_more until x == 1; }\n", 0, NULL},
    {"rule r { begin a one_or_more; within 1m; }\n", 0, NULL},
    {"rule r { begin a; followed_by_any b within 5s; }\n", 0, NULL},
    {"rule r { begin a times 3; next b times 1..4 greedy; within 1m; }\n", 0, NULL},
    {"rule r { begin a times 0..2; next b; }\n", 0, NULL},
    /* what Flink accepts around the two checks above */
    {"rule r { begin a one_or_more greedy; followed_by b times 0..2; within 1m; }\n", 0, NULL},
    {"rule r { begin a one_or_more within 10m; followed_by b within 5m; within 5m; }\n", 0, NULL},
    {"rule r { begin a; not_followed_by x within 10m; followed_by b; within 5m; }\n", 0, NULL},
    {"rule r { begin a; not_followed_by b where x == 1; within 3s; }\n", 0, NULL},
    {"rule r { begin a; not_followed_by b where x == 1 within 3s; }\n", 0, NULL},
    {"rule r { begin a; next b within 2s; on timeout alert \"t\"; }\n", 0, NULL},
    {"rule r { begin a where s =~ '^\\d{3}-\\d{4}$' and t !~ \"a\\\\.b\"; }\n", 0, NULL},
    {"rule r { begin a where x in [1, \"a\", null]; }\n", 0, NULL},
    /* a field named like a step in a filter; a short nested field near a step name */
    {"rule r { filter first == 1; key first; begin first where c.x == 1; next b where bb.x > 1; }\n",
     0, NULL},
    {"rule r { begin a where regex_extract(s, '(\\w+)', 1) == \"x\"; }\n", 0, NULL},
    {"output f file \"out/{date}/{hour}-{rule}.jsonl\" rotate 1h;\n"
     "output p exec [\"/bin/pager\", \"{rule}\", \"{key.user}-{severity}-{kind}\"] timeout 5s;\n"
     "rule r { key user; begin a; on match alert \"m\" to f, p, stdout; }\n", 0, NULL},
};

START_TEST(accepts_valid_rules)
{
    const GoodCase *c = &GOOD[_i];
    size_t errors = 0, warnings = 0;
    char *out = check_text(c->text, &errors, &warnings);
    ck_assert_msg(errors == 0, "case %d:\n%s\ngot:\n%s", _i, c->text, out);
    ck_assert_msg(warnings == c->warnings, "case %d: %zu warnings:\n%s", _i, warnings, out);
    if (c->warning)
        ck_assert_msg(strncmp(out, c->warning, strlen(c->warning)) == 0, "case %d: got\n%s", _i, out);
    free(out);
}
END_TEST

START_TEST(resolves_paths_functions_outputs_and_skip)
{
    RuleSet *rs = test_parse_checked(
        "output log file \"x.jsonl\";\n"
        "rule r {\n"
        "  key user;\n"
        "  begin a where amount > 1 one_or_more;\n"
        "  next b where b.n > a.amount and contains(a.tag, \"x\") and contains(s, \"y\")\n"
        "    and min(a.v) < max(1, 2) and time(a) < time() and count(a) > 0;\n"
        "  within 1m;\n"
        "  skip to_last a;\n"
        "  on match alert \"m\" fields { k: key.user, total: sum(a.amount) } to stdout, log;\n"
        "}\n");
    Rule *r = &rs->rules[0];
    ck_assert_int_eq(r->skip.step_index, 0);
    Expr *where_a = r->steps[0].where;
    ck_assert_int_eq(where_a->u.binary.lhs->u.path.kind, PATH_FIELD);
    Expr *w = r->steps[1].where;
    /* ((((b.n > a.amount and contains) and contains) and min < max) and time < time) and count > 0 */
    Expr *count_cmp = w->u.binary.rhs;
    ck_assert_int_eq(count_cmp->u.binary.lhs->u.call.fn, FN_COUNT);
    Expr *rest = w->u.binary.lhs;
    Expr *time_cmp = rest->u.binary.rhs;
    ck_assert_int_eq(time_cmp->u.binary.lhs->u.call.fn, FN_TIME);
    ck_assert_int_eq(time_cmp->u.binary.lhs->u.call.args[0]->u.path.kind, PATH_STEP);
    rest = rest->u.binary.lhs;
    Expr *minmax = rest->u.binary.rhs;
    ck_assert_int_eq(minmax->u.binary.lhs->u.call.fn, FN_MIN);
    ck_assert_int_eq(minmax->u.binary.rhs->u.call.fn, FN_MAX2);
    rest = rest->u.binary.lhs;
    ck_assert_int_eq(rest->u.binary.rhs->u.call.fn, FN_CONTAINS_STR);
    rest = rest->u.binary.lhs;
    ck_assert_int_eq(rest->u.binary.rhs->u.call.fn, FN_CONTAINS_AGG);
    Expr *cmp = rest->u.binary.lhs;
    ck_assert_int_eq(cmp->u.binary.lhs->u.path.kind, PATH_STEP);
    ck_assert_int_eq(cmp->u.binary.lhs->u.path.step, 1);
    ck_assert_int_eq(cmp->u.binary.rhs->u.path.kind, PATH_STEP);
    ck_assert_int_eq(cmp->u.binary.rhs->u.path.step, 0);
    Action *act = &r->on[0].actions[0];
    ck_assert_int_eq(act->fields[0].value->u.path.kind, PATH_KEY);
    ck_assert_int_eq(act->fields[0].value->u.path.key, 0);
    ck_assert_int_eq(act->fields[1].value->u.call.fn, FN_SUM);
    ck_assert_int_eq(act->to[0].output, -1);
    ck_assert_int_eq(act->to[1].output, 0);
    ast_ruleset_free(rs);
}
END_TEST

START_TEST(time_declaration_is_recorded)
{
    RuleSet *rs = test_parse_checked("time ts lateness 30s;\nrule r { begin a; }\n");
    ck_assert_ptr_nonnull(rs->time);
    ck_assert_int_eq(rs->time->lateness_ms, 30000);
    ast_ruleset_free(rs);
}
END_TEST

START_TEST(duplicate_rule_across_files)
{
    RuleSet *rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(rs);
    Diags d;
    diags_init(&d);
    const char *a = "rule x { begin a; }\n";
    const char *b = "\nrule x { begin a; }\n";
    dsl_parse_text(rs, "a.cep", a, strlen(a), &d);
    dsl_parse_text(rs, "b.cep", b, strlen(b), &d);
    ck_assert_int_eq(dsl_check(rs, &d), 1);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_str_eq(d.items[0].message, "duplicate rule 'x' (first defined at a.cep:1:6)");
    ck_assert_int_eq(d.items[0].span.line, 2);
    ck_assert_str_eq(d.items[0].file, "b.cep");
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

/* Duplicates are found by sorting the names: every repeat names the first
 * definition (not the previous repeat), in any order of names, however many. */
START_TEST(duplicates_among_many_rules_name_the_first)
{
    Buf text = BUF_INIT;
    for (int i = 0; i < 3000; i++)
        buf_printf(&text, "rule r%d { begin a; }\n", (i * 7919) % 3000);
    buf_printf(&text, "rule r5 { begin a; }\nrule r17 { begin a; }\nrule r5 { begin a; }\n"
                      "output o file \"x\";\noutput p file \"y\";\noutput o file \"z\";\n"
                      "output o file \"w\";\n");
    ck_assert(!text.failed);
    size_t errors = 0;
    char *out = check_text(text.data, &errors, NULL);
    /* r5 is line 1 + 5*7919^-1 mod 3000; found below rather than computed */
    int r5_line = 0, r17_line = 0;
    for (int i = 0; i < 3000; i++) {
        if ((i * 7919) % 3000 == 5)
            r5_line = i + 1;
        if ((i * 7919) % 3000 == 17)
            r17_line = i + 1;
    }
    char want[512];
    snprintf(want, sizeof want,
             "t.cep:3001:6: error: duplicate rule 'r5' (first defined at t.cep:%d:6)\n", r5_line);
    ck_assert_ptr_nonnull(strstr(out, want));
    snprintf(want, sizeof want,
             "t.cep:3002:6: error: duplicate rule 'r17' (first defined at t.cep:%d:6)\n", r17_line);
    ck_assert_ptr_nonnull(strstr(out, want));
    snprintf(want, sizeof want,
             "t.cep:3003:6: error: duplicate rule 'r5' (first defined at t.cep:%d:6)\n", r5_line);
    ck_assert_ptr_nonnull(strstr(out, want));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:3006:8: error: duplicate output 'o' "
                                      "(first defined at t.cep:3004:8)\n"));
    ck_assert_ptr_nonnull(strstr(out, "t.cep:3007:8: error: duplicate output 'o' "
                                      "(first defined at t.cep:3004:8)\n"));
    ck_assert_uint_eq(errors, 5);
    free(out);
    buf_free(&text);
}
END_TEST

/* ---- loading ------------------------------------------------------------------ */

static char *make_temp_dir(void)
{
    char *dir = strdup("/tmp/vigil-test-check-XXXXXX");
    ck_assert_ptr_nonnull(dir);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

START_TEST(load_directory_in_name_order)
{
    char *dir = make_temp_dir();
    write_file(dir, "b.cep", "rule second { begin a; }\n");
    write_file(dir, "a.cep", "rule first { begin a; }\n");
    write_file(dir, "notes.txt", "rule ignored {\n");
    Diags d;
    diags_init(&d);
    const char *paths[] = {dir};
    RuleSet *rs = dsl_load(paths, 1, &d);
    ck_assert_ptr_nonnull(rs);
    ck_assert_uint_eq(d.errors, 0);
    ck_assert_uint_eq(rs->n_rules, 2);
    ck_assert_str_eq(rs->rules[0].name, "first");
    ck_assert_str_eq(rs->rules[1].name, "second");
    ck_assert_uint_eq(rs->n_files, 2);
    ast_ruleset_free(rs);
    diags_free(&d);
    remove_dir(dir);
    free(dir);
}
END_TEST

START_TEST(load_reports_missing_and_empty)
{
    char *dir = make_temp_dir();
    Diags d;
    diags_init(&d);
    const char *paths[] = {dir, "/nonexistent/vigil/rules.cep"};
    RuleSet *rs = dsl_load(paths, 2, &d);
    ck_assert_ptr_nonnull(rs);
    ck_assert_uint_eq(d.errors, 2);
    char expected[600];
    snprintf(expected, sizeof expected, "no .cep files in %s", dir);
    ck_assert_str_eq(d.items[0].message, expected);
    ck_assert_str_eq(d.items[1].file, "/nonexistent/vigil/rules.cep");
    ck_assert_ptr_nonnull(strstr(d.items[1].message, "No such file or directory"));
    ast_ruleset_free(rs);
    diags_free(&d);
    remove_dir(dir);
    free(dir);
}
END_TEST

/* A FIFO among a folder's *.cep files would block the load for good (with --watch,
 * the running engine), a folder named x.cep is not a file either: each is an error,
 * without being opened, and the folder's real files still load. */
/* A fresh folder holding the FIFO pipe.cep (caller removes and frees). */
static char *dir_with_fifo(void)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/pipe.cep", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    return dir;
}

START_TEST(load_refuses_folder_entries_that_are_not_files)
{
    char *dir = dir_with_fifo();
    write_file(dir, "a.cep", "rule r { begin a; }\n");
    char path[512];
    snprintf(path, sizeof path, "%s/sub.cep", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    Diags d;
    diags_init(&d);
    const char *paths[] = {dir};
    RuleSet *rs = dsl_load(paths, 1, &d);
    ck_assert_ptr_nonnull(rs);
    ck_assert_uint_eq(d.errors, 2);
    ck_assert_uint_eq(rs->n_rules, 1);
    for (size_t i = 0; i < 2; i++)
        ck_assert_msg(strstr(d.items[i].message, "not a regular file"), "%s", d.items[i].message);
    ck_assert_ptr_nonnull(strstr(d.items[0].file, ".cep"));
    ast_ruleset_free(rs);
    diags_free(&d);
    remove_dir(dir);
    free(dir);
}
END_TEST

/* A folder whose only *.cep entry is not a file: the error, and nothing to sort
 * (UBSan saw qsort get the list's NULL array when no name had been added). */
START_TEST(load_folder_with_only_a_fifo)
{
    char *dir = dir_with_fifo();
    Diags d;
    diags_init(&d);
    const char *paths[] = {dir};
    RuleSet *rs = dsl_load(paths, 1, &d);
    ck_assert_uint_eq(d.errors, 1);
    ck_assert_msg(strstr(d.items[0].message, "not a regular file"), "%s", d.items[0].message);
    ast_ruleset_free(rs);
    diags_free(&d);
    remove_dir(dir);
    free(dir);
}
END_TEST

/* A device named by mistake is not read until memory runs out. */
START_TEST(load_refuses_endless_file)
{
    if (access("/dev/zero", R_OK) != 0)
        return;
    Diags d;
    diags_init(&d);
    const char *paths[] = {"/dev/zero"};
    RuleSet *rs = dsl_load(paths, 1, &d);
    ck_assert_ptr_nonnull(rs);
    ck_assert_uint_eq(d.errors, 1);
    ck_assert_str_eq(d.items[0].message, "cannot read: larger than 64 MiB (is it a rule file?)");
    ast_ruleset_free(rs);
    diags_free(&d);
}
END_TEST

START_TEST(load_cross_file_duplicates)
{
    char *dir = make_temp_dir();
    write_file(dir, "a.cep", "output o file \"x\";\nrule r { begin a; }\n");
    write_file(dir, "b.cep", "output o file \"y\";\nrule r { begin a; }\n");
    Diags d;
    diags_init(&d);
    const char *paths[] = {dir};
    RuleSet *rs = dsl_load(paths, 1, &d);
    ck_assert_ptr_nonnull(rs);
    ck_assert_uint_eq(d.errors, 2);
    ck_assert_ptr_nonnull(strstr(d.items[0].message, "duplicate output 'o'"));
    ck_assert_ptr_nonnull(strstr(d.items[1].message, "duplicate rule 'r'"));
    ast_ruleset_free(rs);
    diags_free(&d);
    remove_dir(dir);
    free(dir);
}
END_TEST

/* ---- the `vigil check` command ------------------------------------------------ */

static const char *vigil_binary(char *buf, size_t size)
{
    const char *top = getenv("top_builddir");
    char rel[1024];
    snprintf(rel, sizeof rel, "%s/vigil", top ? top : ".");
    /* Absolute, because some commands run from another directory. */
    char *abs = realpath(rel, NULL);
    ck_assert_msg(abs != NULL, "cannot find %s", rel);
    snprintf(buf, size, "%s", abs);
    free(abs);
    return buf;
}

START_TEST(cli_accepts_every_conformance_rule_file)
{
    const char *shared = getenv("VIGIL_SHARED");
    char dir[1024];
    if (shared)
        snprintf(dir, sizeof dir, "%s/conformance", shared);
    DIR *d = shared ? opendir(dir) : NULL;
    if (d == NULL) {
        fprintf(stderr, "VIGIL_SHARED/conformance not found; skipping\n");
        return;
    }
    char vigil[1024];
    vigil_binary(vigil, sizeof vigil);
    int checked = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char cmd[4096], *out = NULL;
        snprintf(cmd, sizeof cmd, "'%s' check '%s/%s/rules.cep' 2>/dev/null", vigil, dir, e->d_name);
        int rc = test_run_command(cmd, &out);
        ck_assert_msg(rc == 0, "%s: vigil check exited %d", e->d_name, rc);
        ck_assert_msg(strncmp(out, "1 file, ", 8) == 0 && strstr(out, ", 0 errors"),
                      "%s: summary was '%s'", e->d_name, out);
        free(out);
        checked++;
    }
    closedir(d);
    ck_assert_int_gt(checked, 0);
}
END_TEST

START_TEST(cli_reports_errors_and_usage)
{
    char vigil[1024], cmd[4096], *out = NULL;
    vigil_binary(vigil, sizeof vigil);
    char *dir = make_temp_dir();
    write_file(dir, "bad.cep", "rule r { begin a where lenght(x) > 1; }\n");
    write_file(dir, "good.cep", "rule g { begin a one_or_more; }\n");
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' check bad.cep 2>&1", dir, vigil);
    ck_assert_int_eq(test_run_command(cmd, &out), 1);
    ck_assert_str_eq(out, "bad.cep:1:24: error: unknown function 'lenght' (did you mean 'len'?)\n"
                          "rule r { begin a where lenght(x) > 1; }\n"
                          "                       ^~~~~~\n");
    free(out);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' check good.cep 2>/dev/null", dir, vigil);
    ck_assert_int_eq(test_run_command(cmd, &out), 0);
    ck_assert_str_eq(out, "1 file, 1 rule, 0 errors, 1 warning\n");
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' check 2>/dev/null", vigil);
    ck_assert_int_eq(test_run_command(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' check --bogus x.cep 2>/dev/null", vigil);
    ck_assert_int_eq(test_run_command(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' check --help", vigil);
    ck_assert_int_eq(test_run_command(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: vigil check"));
    free(out);
    remove_dir(dir);
    free(dir);
}
END_TEST

/* ---- bad rule files with their expected output ---------------------------------- */

START_TEST(data_files_match_expected_output)
{
    const char *top = getenv("top_srcdir");
    if (top == NULL) {
        fprintf(stderr, "top_srcdir not set; skipping tests/data/check\n");
        return;
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/data/check", top);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int checked = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".cep") != 0)
            continue;
        /* Diagnostics name the file relative to the data folder. */
        char cep[1024], expect[1024];   /* room for dir and any d_name */
        snprintf(cep, sizeof cep, "%s/%s", dir, e->d_name);
        snprintf(expect, sizeof expect, "%s/%.*s.expect", dir, (int)(n - 4), e->d_name);
        char *text = test_read_file(cep, NULL);
        char *want = test_read_file(expect, NULL);
        ck_assert_msg(text && want, "missing %s or its .expect", cep);
        char *out = check_named_text(e->d_name, text, NULL, NULL);
        ck_assert_msg(strcmp(out, want) == 0, "%s:\n--- expected\n%s--- got\n%s", e->d_name, want,
                      out);
        free(out);
        free(text);
        free(want);
        checked++;
    }
    closedir(d);
    ck_assert_int_gt(checked, 0);
}
END_TEST

/* The outputs' address form, as `vigil check` and alerts/out_net.c read it: the host
 * (brackets off, the last ':' splits) and a port from 1 to 65535, each refusal worded
 * for an output (runtime/input.c words its own, with port 0 allowed). */
START_TEST(outputs_split_host_and_port)
{
    static const struct {
        const char *text, *host;
        unsigned port;
    } good[] = {
        {"localhost:9000", "localhost", 9000}, {"[::1]:1", "::1", 1},
        {"a:b:65535", "a:b", 65535},           {"h:0080", "h", 80},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        NetAddress a;
        ck_assert_msg(dsl_parse_host_port(good[i].text, &a) == NULL, "%s", good[i].text);
        ck_assert_uint_eq(a.host_len, strlen(good[i].host));
        ck_assert_int_eq(memcmp(a.host, good[i].host, a.host_len), 0);
        ck_assert_uint_eq(a.port, good[i].port);
    }
    static const char *const expected = "expected \"HOST:PORT\"",
                             *const v6 = "an IPv6 address is written \"[ADDRESS]:PORT\"",
                             *const port = "the port must be a number from 1 to 65535";
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"nohost", expected}, {":80", expected},  {"[]:80", expected},  {"", expected},
        {"[::1", v6},         {"[::1]80", v6},    {"[::1]", v6},        {"h:", port},
        {"[::1]:", port},     {"h:0", port},      {"h:65536", port},    {"h:99999999999", port},
        {"h:8x", port},       {"h:-1", port},     {"h: 80", port},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        NetAddress a = {NULL, 7, 7};
        const char *why = dsl_parse_host_port(bad[i].text, &a);
        ck_assert_msg(why && strcmp(why, bad[i].why) == 0, "\"%s\": %s", bad[i].text,
                      why ? why : "accepted");
        ck_assert_uint_eq(a.port, 7);   /* untouched */
    }
}
END_TEST

static Suite *check_suite(void)
{
    Suite *s = suite_create("check");
    TCase *tc = tcase_create("errors");
    tcase_add_loop_test(tc, reports_error_with_position, 0, (int)(sizeof BAD / sizeof BAD[0]));
    tcase_add_test(tc, reports_several_errors_in_one_file);
    tcase_add_test(tc, syntax_and_semantic_errors_together);
    tcase_add_test(tc, caret_under_regex_error);
    tcase_add_test(tc, no_cascade_after_syntax_error);
    tcase_add_test(tc, duplicate_rule_across_files);
    tcase_add_test(tc, duplicates_among_many_rules_name_the_first);
    tcase_add_test(tc, data_files_match_expected_output);
    suite_add_tcase(s, tc);
    TCase *ok = tcase_create("valid");
    tcase_add_loop_test(ok, accepts_valid_rules, 0, (int)(sizeof GOOD / sizeof GOOD[0]));
    tcase_add_test(ok, resolves_paths_functions_outputs_and_skip);
    tcase_add_test(ok, time_declaration_is_recorded);
    tcase_add_test(ok, outputs_split_host_and_port);
    suite_add_tcase(s, ok);
    TCase *load = tcase_create("load");
    tcase_add_test(load, load_directory_in_name_order);
    tcase_add_test(load, load_reports_missing_and_empty);
    tcase_add_test(load, load_cross_file_duplicates);
    tcase_add_test(load, load_refuses_folder_entries_that_are_not_files);
    tcase_add_test(load, load_folder_with_only_a_fifo);
    tcase_add_test(load, load_refuses_endless_file);
    suite_add_tcase(s, load);
    TCase *cli = tcase_create("cli");
    tcase_add_test(cli, cli_accepts_every_conformance_rule_file);
    tcase_add_test(cli, cli_reports_errors_and_usage);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    return check_run_suite(check_suite());
}
