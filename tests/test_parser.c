/* tests/test_parser.c — the parser (dsl/parser.y, dsl/parse.c): every construct of
 * LANGUAGE.md to the expected AST, operator precedence, templates and their inner
 * spans, syntax errors with positions and recovery, and the conformance rule files. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/ast.h"
#include "dsl/diag.h"
#include "dsl/parse.h"
#include "tests/checkmain.h"

typedef struct Parsed {
    RuleSet *rs;
    Diags diags;
    int errors;
} Parsed;

static Parsed *parse(const char *text)
{
    Parsed *p = calloc(1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    p->rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(p->rs);
    diags_init(&p->diags);
    p->errors = dsl_parse_text(p->rs, "t.cep", text, strlen(text), &p->diags);
    return p;
}

/* Parses text that must be free of errors. */
static Parsed *parse_ok(const char *text)
{
    Parsed *p = parse(text);
    if (p->errors)
        diags_print(&p->diags, stderr);
    ck_assert_int_eq(p->errors, 0);
    return p;
}

static void parsed_free(Parsed *p)
{
    diags_free(&p->diags);
    ast_ruleset_free(p->rs);
    free(p);
}

static void assert_dump(const Expr *e, const char *want)
{
    char *got = ast_expr_dump(e);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    free(got);
}

/* Parses a lone expression and compares its dump. */
static void assert_expr(const char *text, const char *want)
{
    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    Expr *e = dsl_parse_expr(rs, text, &d);
    if (!e)
        diags_print(&d, stderr);
    ck_assert_msg(e != NULL, "'%s' did not parse", text);
    assert_dump(e, want);
    diags_free(&d);
    ast_ruleset_free(rs);
}

/* Parses a lone expression that must fail with a message containing `needle`. */
static void assert_expr_error(const char *text, int col, const char *needle)
{
    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    ck_assert_ptr_null(dsl_parse_expr(rs, text, &d));
    ck_assert_uint_ge(d.errors, 1);
    ck_assert_int_eq(d.items[0].span.col, col);
    ck_assert_msg(strstr(d.items[0].message, needle), "'%s' lacks '%s'", d.items[0].message,
                  needle);
    diags_free(&d);
    ast_ruleset_free(rs);
}

static void assert_diag(const Parsed *p, size_t i, int line, int col, const char *needle)
{
    ck_assert_uint_gt(p->diags.n, i);
    const Diagnostic *d = &p->diags.items[i];
    ck_assert_msg(d->span.line == line && d->span.col == col, "diag %zu '%s' at %d:%d, want %d:%d",
                  i, d->message, d->span.line, d->span.col, line, col);
    ck_assert_msg(strstr(d->message, needle), "'%s' lacks '%s'", d->message, needle);
    ck_assert_str_eq(d->file, "t.cep");
}

static void assert_span(Span s, int line, int col, int end_line, int end_col)
{
    ck_assert_msg(s.line == line && s.col == col && s.end_line == end_line && s.end_col == end_col,
                  "span %d:%d-%d:%d, want %d:%d-%d:%d", s.line, s.col, s.end_line, s.end_col,
                  line, col, end_line, end_col);
}

/* ---- expressions ------------------------------------------------------------ */

START_TEST(precedence_of_logic)
{
    assert_expr("a or b and c", "(or a (and b c))");
    assert_expr("a and b or c", "(or (and a b) c)");
    assert_expr("not a == b", "(not (== a b))");
    assert_expr("not a and b", "(and (not a) b)");
    assert_expr("not not a", "(not (not a))");
    assert_expr("a or b or c", "(or (or a b) c)");
    assert_expr("(a or b) and c", "(and (or a b) c)");
}
END_TEST

START_TEST(precedence_of_arithmetic)
{
    assert_expr("a + b * c - d", "(- (+ a (* b c)) d)");
    assert_expr("a % b / c * d", "(* (/ (% a b) c) d)");
    assert_expr("-a * b", "(* (neg a) b)");
    assert_expr("- -a", "(neg (neg a))");
    assert_expr("a - -1.5", "(- a -1.5)");
    assert_expr("(a + b) * c", "(* (+ a b) c)");
    assert_expr("a + b > c * 2", "(> (+ a b) (* c 2))");
}
END_TEST

START_TEST(every_comparison)
{
    assert_expr("a == 1", "(== a 1)");
    assert_expr("a != 1", "(!= a 1)");
    assert_expr("a < 1", "(< a 1)");
    assert_expr("a <= 1", "(<= a 1)");
    assert_expr("a > 1", "(> a 1)");
    assert_expr("a >= 1", "(>= a 1)");
    assert_expr("a in [1, 2, \"a\"]", "(in a (list 1 2 \"a\"))");
    assert_expr("a in []", "(in a (list))");
    assert_expr("s =~ '\\d+'", "(=~ s \"\\\\d+\")");
    assert_expr("s !~ \"x\"", "(!~ s \"x\")");
}
END_TEST

START_TEST(comparisons_do_not_chain)
{
    assert_expr_error("a < b < c", 7, "comparisons do not chain");
    assert_expr_error("a == b == c", 8, "syntax error: unexpected '=='");
}
END_TEST

START_TEST(literals)
{
    assert_expr("true", "true");
    assert_expr("false", "false");
    assert_expr("null", "null");
    assert_expr("1e6", "1e6");
    assert_expr("10m", "10m");
    assert_expr("'it''s'", "\"it's\"");

    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    Expr *e = dsl_parse_expr(rs, "[2h, -3, 'x', \"y\"]", &d);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->kind, EX_LIST);
    ck_assert_uint_eq(e->u.list.n, 4);
    ck_assert_int_eq(e->u.list.items[0]->kind, EX_DURATION);
    ck_assert_int_eq(e->u.list.items[0]->u.duration.ms, 7200000);
    ck_assert_int_eq(e->u.list.items[1]->kind, EX_NUMBER);
    ck_assert(e->u.list.items[1]->u.number.value == -3);
    ck_assert_str_eq(e->u.list.items[1]->u.number.text, "-3");
    ck_assert(e->u.list.items[2]->u.string.raw);
    ck_assert(!e->u.list.items[3]->u.string.raw);
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

START_TEST(paths_and_calls)
{
    assert_expr("amount", "amount");
    assert_expr("payload.card.bin", "(path payload.card.bin)");
    assert_expr("items[0].sku", "(path items[0].sku)");
    assert_expr("a[1][2]", "(path a[1][2])");
    assert_expr("`user-agent`", "user-agent");
    assert_expr("`time`.x", "(path time.x)");
    assert_expr("key.user_id", "(path key.user_id)");
    assert_expr("rule", "rule");
    assert_expr("sum(a.price)", "(call sum (path a.price))");
    assert_expr("coalesce(a, b, \"c\")", "(call coalesce a b \"c\")");
    assert_expr("time()", "(call time)");
    assert_expr("time() - time(first) < 5m", "(< (- (call time) (call time first)) 5m)");
    assert_expr("len(lower(x)) + 1", "(+ (call len (call lower x)) 1)");

    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    Expr *e = dsl_parse_expr(rs, "count(first) > high.x", &d);
    ck_assert_ptr_nonnull(e);
    const Expr *call = e->u.binary.lhs, *path = e->u.binary.rhs;
    ck_assert_int_eq(call->kind, EX_CALL);
    ck_assert_int_eq(call->u.call.fn, FN_UNRESOLVED);
    assert_span(call->u.call.name_span, 1, 1, 1, 6);
    assert_span(call->span, 1, 1, 1, 13);
    ck_assert_int_eq(path->kind, EX_PATH);
    ck_assert_int_eq(path->u.path.kind, PATH_UNRESOLVED);
    ck_assert_uint_eq(path->u.path.n_segs, 2);
    assert_span(path->u.path.segs[1].span, 1, 21, 1, 22);
    assert_span(e->u.binary.op_span, 1, 14, 1, 15);
    assert_span(e->span, 1, 1, 1, 22);
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

START_TEST(bad_index)
{
    assert_expr_error("a[1.5]", 2, "an array index must be a whole number");
}
END_TEST

START_TEST(nesting_is_capped)
{
    enum { DEEP = 300 };
    char text[DEEP * 2 + 2];
    memset(text, '(', DEEP);
    text[DEEP] = 'a';
    memset(text + DEEP + 1, ')', DEEP);
    text[DEEP * 2 + 1] = '\0';
    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    /* parentheses alone add no depth */
    ck_assert_ptr_nonnull(dsl_parse_expr(rs, text, &d));

    Buf b = BUF_INIT;
    for (int i = 0; i < DEEP; i++)
        buf_puts(&b, "-(");
    buf_putc(&b, 'a');
    for (int i = 0; i < DEEP; i++)
        buf_putc(&b, ')');
    ck_assert_ptr_null(dsl_parse_expr(rs, b.data, &d));
    ck_assert_uint_eq(d.errors, 1);
    ck_assert_ptr_nonnull(strstr(d.items[0].message, "nested too deeply"));
    buf_free(&b);

    /* a long left-leaning chain is deep too */
    for (int i = 0; i < 1000; i++)
        buf_puts(&b, "a + ");
    buf_putc(&b, 'a');
    ck_assert_ptr_null(dsl_parse_expr(rs, b.data, &d));
    ck_assert_uint_eq(d.errors, 2);
    buf_free(&b);

    /* far deeper than the parser stack: an error, not a crash */
    for (int i = 0; i < 20000; i++)
        buf_putc(&b, '(');
    ck_assert_ptr_null(dsl_parse_expr(rs, b.data, &d));
    ck_assert_uint_eq(d.errors, 3);
    ck_assert_ptr_nonnull(strstr(d.items[2].message, "nested too deeply"));
    buf_free(&b);
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

/* ---- file-level declarations ------------------------------------------------ */

START_TEST(time_declarations)
{
    Parsed *p = parse_ok("time payload.ts epoch_ms lateness 30s;\n");
    const TimeDecl *t = p->rs->time;
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->n_field, 2);
    ck_assert_str_eq(t->field[0].name, "payload");
    ck_assert_str_eq(t->field[1].name, "ts");
    ck_assert_int_eq(t->format, TIME_EPOCH_MS);
    ck_assert(t->lateness_written);
    ck_assert_int_eq(t->lateness_ms, 30000);
    assert_span(t->span, 1, 1, 1, 39);
    ck_assert_uint_eq(p->rs->n_files, 1);
    ck_assert_ptr_eq(p->rs->files[0].time, t);
    ck_assert_uint_eq(p->rs->files[0].n_decls, 1);
    ck_assert_int_eq(p->rs->files[0].decls[0].kind, DECL_TIME);
    parsed_free(p);

    p = parse_ok("time ts;");
    ck_assert_int_eq(p->rs->time->format, TIME_AUTO);
    ck_assert(!p->rs->time->lateness_written);
    ck_assert_int_eq(p->rs->time->lateness_ms, 0);
    parsed_free(p);

    p = parse_ok("time `time` iso8601;");
    ck_assert_str_eq(p->rs->time->field[0].name, "time");
    ck_assert_int_eq(p->rs->time->format, TIME_ISO8601);
    parsed_free(p);

    p = parse("time ts epoch;\ntime ts delay 5s;");
    ck_assert_int_eq(p->errors, 2);
    assert_diag(p, 0, 1, 9, "unknown time format 'epoch'");
    assert_diag(p, 1, 2, 9, "unknown option 'delay'");
    parsed_free(p);
}
END_TEST

START_TEST(output_declarations)
{
    Parsed *p = parse_ok(
        "output log file \"alerts/{rule}-{date}.jsonl\" rotate 1h;\n"
        "output pager exec [\"/bin/page\", \"{rule}\", \"{key.user_id}\"] timeout 5s;\n"
        "output sock tcp \"localhost:9000\";\n"
        "output local unix \"/run/vigil.sock\";\n");
    RuleSet *rs = p->rs;
    ck_assert_uint_eq(rs->n_outputs, 4);
    const OutputDecl *o = &rs->outputs[0];
    ck_assert_str_eq(o->name, "log");
    ck_assert_int_eq(o->kind, OUT_FILE);
    ck_assert_int_eq(o->rotate_ms, 3600000);
    ck_assert_int_eq(o->timeout_ms, DURATION_NONE);
    ck_assert_str_eq(o->path.source, "\"alerts/{rule}-{date}.jsonl\"");
    ck_assert_uint_eq(o->path.n_parts, 5);
    ck_assert_str_eq(o->path.parts[0].text, "alerts/");
    assert_dump(o->path.parts[1].expr, "rule");
    assert_dump(o->path.parts[3].expr, "date");
    assert_span(o->name_span, 1, 8, 1, 11);

    o = &rs->outputs[1];
    ck_assert_int_eq(o->kind, OUT_EXEC);
    ck_assert_uint_eq(o->n_argv, 3);
    ck_assert_str_eq(o->argv[0].parts[0].text, "/bin/page");
    assert_dump(o->argv[2].parts[0].expr, "(path key.user_id)");
    ck_assert_int_eq(o->timeout_ms, 5000);
    ck_assert_int_eq(o->rotate_ms, DURATION_NONE);

    ck_assert_int_eq(rs->outputs[2].kind, OUT_TCP);
    ck_assert_str_eq(rs->outputs[2].path.parts[0].text, "localhost:9000");
    ck_assert_int_eq(rs->outputs[3].kind, OUT_UNIX);
    ck_assert_uint_eq(rs->files[0].n_decls, 4);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(rs->files[0].decls[i].kind, DECL_OUTPUT);
        ck_assert_uint_eq(rs->files[0].decls[i].index, i);
    }
    parsed_free(p);
}
END_TEST

START_TEST(bad_output_declarations)
{
    Parsed *p = parse(
        "output a pipe \"x\";\n"
        "output b exec \"x\";\n"
        "output c file [\"x\"];\n"
        "output d tcp \"h:1\" rotate 1h;\n"
        "output e file \"x\" rotate 1h rotate 2h;\n");
    ck_assert_int_eq(p->errors, 5);
    assert_diag(p, 0, 1, 10, "unknown output kind 'pipe'");
    assert_diag(p, 1, 2, 15, "exec output takes a list");
    assert_diag(p, 2, 3, 15, "file output takes one string");
    assert_diag(p, 3, 4, 20, "'rotate' does not apply to tcp outputs");
    assert_diag(p, 4, 5, 29, "'rotate' given twice");
    parsed_free(p);
}
END_TEST

/* ---- rules ------------------------------------------------------------------- */

static const char *WHOLE_RULE =
    "rule large_tx_burst {\n"                                                  /* 1 */
    "  filter type == \"tx\";\n"                                               /* 2 */
    "  key user_id, items[0], lower(email), region = payload.region;\n"        /* 3 */
    "  begin first within 1m where amount > 1000;\n"                           /* 4 */
    "  next second where amount > 1000 times 2..4 greedy;\n"                   /* 5 */
    "  followed_by third times 3+ consecutive until amount < 0 optional;\n"    /* 6 */
    "  followed_by_any high one_or_more allow_combinations;\n"                 /* 7 */
    "  not_next n1 where x;\n"                                                 /* 8 */
    "  not_followed_by n2 where y;\n"                                          /* 9 */
    "  within 10m;\n"                                                          /* 10 */
    "  skip to_last first;\n"                                                  /* 11 */
    "  suppress 30m;\n"                                                        /* 12 */
    "  on match alert high \"u {user_id}\" fields { total: sum(first.amount), n: 1, }\n"
    "           to stdout, pager\n"                                            /* 14 */
    "           alert \"second\";\n"                                           /* 15 */
    "  on timeout alert info \"late\";\n"                                      /* 16 */
    "}\n";

START_TEST(rule_fields)
{
    Parsed *p = parse_ok(WHOLE_RULE);
    ck_assert_uint_eq(p->rs->n_rules, 1);
    const Rule *r = &p->rs->rules[0];
    ck_assert_str_eq(r->name, "large_tx_burst");
    assert_span(r->name_span, 1, 6, 1, 20);
    assert_span(r->span, 1, 1, 17, 2);
    assert_dump(r->filter, "(== type \"tx\")");
    assert_span(r->filter_span, 2, 3, 2, 23);
    ck_assert_int_eq(r->within_ms, 600000);
    assert_span(r->within_span, 10, 3, 10, 14);
    ck_assert_int_eq(r->skip.kind, SKIP_TO_LAST);
    ck_assert(r->skip.written);
    ck_assert_str_eq(r->skip.step, "first");
    assert_span(r->skip.step_span, 11, 16, 11, 21);
    ck_assert_int_eq(r->suppress_ms, 1800000);
    parsed_free(p);
}
END_TEST

START_TEST(rule_keys)
{
    Parsed *p = parse_ok(WHOLE_RULE);
    const Rule *r = &p->rs->rules[0];
    ck_assert_uint_eq(r->n_keys, 4);
    ck_assert_str_eq(r->keys[0].name, "user_id");
    ck_assert(!r->keys[0].named);
    ck_assert_str_eq(r->keys[1].name, "items[0]");
    ck_assert_str_eq(r->keys[2].name, "lower(email)");
    assert_dump(r->keys[2].expr, "(call lower email)");
    ck_assert_str_eq(r->keys[3].name, "region");
    ck_assert(r->keys[3].named);
    assert_dump(r->keys[3].expr, "(path payload.region)");
    assert_span(r->keys[3].span, 3, 40, 3, 63);
    parsed_free(p);
}
END_TEST

START_TEST(rule_steps)
{
    Parsed *p = parse_ok(WHOLE_RULE);
    const Rule *r = &p->rs->rules[0];
    ck_assert_uint_eq(r->n_steps, 6);
    static const StepKind kinds[] = {STEP_BEGIN, STEP_NEXT, STEP_FOLLOWED_BY,
                                     STEP_FOLLOWED_BY_ANY, STEP_NOT_NEXT, STEP_NOT_FOLLOWED_BY};
    static const char *const names[] = {"first", "second", "third", "high", "n1", "n2"};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(r->steps[i].kind, kinds[i]);
        ck_assert_str_eq(r->steps[i].name, names[i]);
        ck_assert_int_eq(ast_step_index(r, names[i]), i);
    }
    ck_assert_int_eq(ast_step_index(r, "nope"), -1);

    const Step *s = &r->steps[0];
    assert_span(s->span, 4, 3, 4, 45);
    assert_span(s->name_span, 4, 9, 4, 14);
    ck_assert_int_eq(s->within_ms, 60000);
    assert_span(s->within_span, 4, 15, 4, 24);
    assert_dump(s->where, "(> amount 1000)");
    ck_assert_int_eq(s->quant.min, 1);
    ck_assert_int_eq(s->quant.max, 1);
    ck_assert(!s->quant.looping);
    ck_assert_int_eq(s->quant.times_span.line, 0);

    s = &r->steps[1];
    ck_assert_int_eq(s->within_ms, DURATION_NONE);
    ck_assert_int_eq(s->quant.min, 2);
    ck_assert_int_eq(s->quant.max, 4);
    ck_assert(s->quant.looping && s->quant.greedy && !s->quant.optional);
    assert_span(s->quant.times_span, 5, 35, 5, 45);
    assert_span(s->quant.greedy_span, 5, 46, 5, 52);

    s = &r->steps[2];
    ck_assert_ptr_null(s->where);
    ck_assert_int_eq(s->quant.min, 3);
    ck_assert_int_eq(s->quant.max, QUANT_UNBOUNDED);
    ck_assert(s->quant.looping && s->quant.consecutive && s->quant.optional);
    assert_dump(s->quant.until, "(< amount 0)");
    assert_span(s->quant.times_span, 6, 21, 6, 29);
    assert_span(s->quant.until_span, 6, 42, 6, 58);
    assert_span(s->quant.optional_span, 6, 59, 6, 67);

    s = &r->steps[3];
    ck_assert_int_eq(s->quant.min, 1);
    ck_assert_int_eq(s->quant.max, QUANT_UNBOUNDED);
    ck_assert(s->quant.looping && s->quant.allow_combinations);
    assert_span(s->quant.times_span, 7, 24, 7, 35);
    assert_span(s->quant.combinations_span, 7, 36, 7, 54);
    parsed_free(p);
}
END_TEST

START_TEST(rule_actions)
{
    Parsed *p = parse_ok(WHOLE_RULE);
    const Rule *r = &p->rs->rules[0];
    ck_assert_uint_eq(r->n_on, 2);
    const OnClause *on = &r->on[0];
    ck_assert_int_eq(on->trigger, ON_MATCH);
    assert_span(on->trigger_span, 13, 6, 13, 11);
    ck_assert_uint_eq(on->n_actions, 2);
    const Action *a = &on->actions[0];
    ck_assert_int_eq(a->severity, SEV_HIGH);
    ck_assert(a->severity_written);
    assert_span(a->severity_span, 13, 18, 13, 22);
    ck_assert_str_eq(a->message.source, "\"u {user_id}\"");
    ck_assert_uint_eq(a->n_fields, 2);
    ck_assert_str_eq(a->fields[0].name, "total");
    assert_dump(a->fields[0].value, "(call sum (path first.amount))");
    ck_assert_str_eq(a->fields[1].name, "n");
    ck_assert_uint_eq(a->n_to, 2);
    ck_assert_str_eq(a->to[0].name, "stdout");
    ck_assert_str_eq(a->to[1].name, "pager");
    ck_assert_int_eq(a->to[1].output, -1);
    assert_span(a->to[1].span, 14, 23, 14, 28);

    a = &on->actions[1];
    ck_assert_int_eq(a->severity, SEV_MEDIUM);
    ck_assert(!a->severity_written);
    ck_assert_uint_eq(a->n_fields, 0);
    ck_assert_uint_eq(a->n_to, 0);

    on = &r->on[1];
    ck_assert_int_eq(on->trigger, ON_TIMEOUT);
    ck_assert_int_eq(on->actions[0].severity, SEV_INFO);
    parsed_free(p);
}
END_TEST

START_TEST(statements_in_written_order)
{
    Parsed *p = parse_ok(WHOLE_RULE);
    const Rule *r = &p->rs->rules[0];
    static const StmtKind kinds[] = {STMT_FILTER, STMT_KEY, STMT_STEP, STMT_STEP, STMT_STEP,
                                     STMT_STEP, STMT_STEP, STMT_STEP, STMT_WITHIN, STMT_SKIP,
                                     STMT_SUPPRESS, STMT_ON, STMT_ON};
    ck_assert_uint_eq(r->n_stmts, sizeof kinds / sizeof kinds[0]);
    for (size_t i = 0; i < r->n_stmts; i++)
        ck_assert_int_eq(r->stmts[i].kind, kinds[i]);
    ck_assert_uint_eq(r->stmts[3].index, 1);   /* the second step */
    ck_assert_uint_eq(r->stmts[12].index, 1);  /* the second on */
    assert_span(r->stmts[1].span, 3, 3, 3, 64);
    parsed_free(p);

    p = parse_ok("rule r { key a; begin x; key b, c; }");
    r = &p->rs->rules[0];
    ck_assert_uint_eq(r->n_keys, 3);
    ck_assert_int_eq(r->stmts[2].kind, STMT_KEY);
    ck_assert_uint_eq(r->stmts[2].index, 1);   /* first key of that statement */
    parsed_free(p);
}
END_TEST

START_TEST(defaults_without_statements)
{
    Parsed *p = parse_ok("rule r { begin a; }");
    const Rule *r = &p->rs->rules[0];
    ck_assert_ptr_null(r->filter);
    ck_assert_uint_eq(r->n_keys, 0);
    ck_assert_int_eq(r->within_ms, DURATION_NONE);
    ck_assert_int_eq(r->suppress_ms, DURATION_NONE);
    ck_assert_int_eq(r->skip.kind, SKIP_PAST_LAST_EVENT);
    ck_assert(!r->skip.written);
    ck_assert_ptr_null(p->rs->time);
    parsed_free(p);
}
END_TEST

START_TEST(skip_strategies)
{
    static const struct { const char *text; SkipKind kind; } CASES[] = {
        {"no_skip", SKIP_NO_SKIP}, {"to_next", SKIP_TO_NEXT},
        {"past_last_event", SKIP_PAST_LAST_EVENT}, {"to_first a", SKIP_TO_FIRST},
        {"to_last a", SKIP_TO_LAST},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "rule r { begin a; skip %s; }", CASES[i].text);
        Parsed *p = parse_ok(text);
        ck_assert_int_eq(p->rs->rules[0].skip.kind, CASES[i].kind);
        parsed_free(p);
    }
    Parsed *p = parse("rule r { skip to_first; }\nrule s { skip no_skip a; }\nrule t { skip sideways; }");
    ck_assert_int_eq(p->errors, 3);
    assert_diag(p, 0, 1, 15, "needs a step");
    assert_diag(p, 1, 2, 23, "takes no step name");
    assert_diag(p, 2, 3, 15, "unknown skip strategy 'sideways'");
    parsed_free(p);
}
END_TEST

START_TEST(ordinary_words_as_names)
{
    Parsed *p = parse_ok(
        "rule match { begin first where high > 1 and timeout == \"x\";\n"
        "  next stdout where `to` == match;\n"
        "  on match alert critical \"{count(first)} {time(first)} {key.k}\"; }");
    const Rule *r = &p->rs->rules[0];
    ck_assert_str_eq(r->name, "match");
    ck_assert_str_eq(r->steps[0].name, "first");
    assert_dump(r->steps[0].where, "(and (> high 1) (== timeout \"x\"))");
    assert_dump(r->steps[1].where, "(== to match)");
    const Template *t = &r->on[0].actions[0].message;
    assert_dump(t->parts[0].expr, "(call count first)");
    assert_dump(t->parts[2].expr, "(call time first)");
    assert_dump(t->parts[4].expr, "(path key.k)");
    parsed_free(p);
}
END_TEST

START_TEST(repeated_clauses_are_errors)
{
    Parsed *p = parse(
        "rule r {\n"
        "  begin a where x where y times 2 one_or_more optional optional;\n"
        "  filter a; filter b;\n"
        "  within 1s; within 2s;\n"
        "}\n");
    ck_assert_int_eq(p->errors, 5);
    assert_diag(p, 0, 2, 19, "'where' appears twice");
    assert_diag(p, 1, 2, 35, "a step takes one repetition");
    assert_diag(p, 2, 2, 56, "'optional' appears twice");
    assert_diag(p, 3, 3, 13, "more than one 'filter'");
    assert_diag(p, 4, 4, 14, "more than one 'within'");
    /* the first of each stays */
    assert_dump(p->rs->rules[0].filter, "a");
    ck_assert_int_eq(p->rs->rules[0].within_ms, 1000);
    parsed_free(p);
}
END_TEST

START_TEST(bad_words_in_their_place)
{
    Parsed *p = parse("rule r { begin a; on fire alert \"x\"; on match alert urgent \"y\"; }");
    ck_assert_int_eq(p->errors, 2);
    assert_diag(p, 0, 1, 22, "expected 'match' or 'timeout'");
    assert_diag(p, 1, 1, 53, "unknown severity 'urgent'");
    parsed_free(p);

    p = parse("rule r { begin a times 2.5; }");
    ck_assert_int_eq(p->errors, 1);
    assert_diag(p, 0, 1, 18, "must be a whole number");
    parsed_free(p);
}
END_TEST

/* ---- templates --------------------------------------------------------------- */

static const Template *first_message(const Parsed *p)
{
    return &p->rs->rules[0].on[0].actions[0].message;
}

START_TEST(template_parts)
{
    Parsed *p = parse_ok("rule r { begin a; on match alert \"{{lit}} {a.x + 1} of {{{n}}}\"; }");
    const Template *t = first_message(p);
    ck_assert_uint_eq(t->n_parts, 5);
    ck_assert_str_eq(t->parts[0].text, "{lit} ");
    ck_assert_uint_eq(t->parts[0].len, 6);
    ck_assert_ptr_null(t->parts[0].expr);
    assert_dump(t->parts[1].expr, "(+ (path a.x) 1)");
    ck_assert_ptr_null(t->parts[1].text);
    ck_assert_str_eq(t->parts[2].text, " of {");
    assert_dump(t->parts[3].expr, "n");
    ck_assert_str_eq(t->parts[4].text, "}");
    assert_span(t->span, 1, 34, 1, 64);
    parsed_free(p);
}
END_TEST

START_TEST(template_inner_spans)
{
    /* col:  1234567890123456789012345678901234567890 */
    Parsed *p = parse_ok(
        "rule r { begin a;\n"
        "  on match alert \"\\t\\u00e9{lower(x)}\\\"{y == \\\"}\\\"}\"; }");
    const Template *t = first_message(p);
    ck_assert_uint_eq(t->n_parts, 4);
    ck_assert_str_eq(t->parts[0].text, "\t\xc3\xa9");
    const Expr *e = t->parts[1].expr;
    assert_dump(e, "(call lower x)");
    assert_span(e->span, 2, 28, 2, 36);
    assert_span(e->u.call.args[0]->span, 2, 34, 2, 35);
    ck_assert_str_eq(t->parts[2].text, "\"");
    e = t->parts[3].expr;
    assert_dump(e, "(== y \"}\")");
    assert_span(e->span, 2, 40, 2, 50);
    assert_span(e->u.binary.rhs->span, 2, 45, 2, 50);
    parsed_free(p);
}
END_TEST

START_TEST(template_errors)
{
    Parsed *p = parse(
        "rule r { begin a;\n"
        "  on match alert \"a {b\";\n"
        "  on match alert \"a } b\";\n"
        "  on match alert \"a { } b\";\n"
        "  on match alert \"x {a +} y {b c}\";\n"
        "}\n");
    ck_assert_int_eq(p->errors, 5);
    assert_diag(p, 0, 2, 21, "'{' without a matching '}'");
    assert_diag(p, 1, 3, 21, "unmatched '}'");
    assert_diag(p, 2, 4, 21, "empty '{}'");
    assert_diag(p, 3, 5, 25, "unexpected end of the template expression");
    assert_diag(p, 4, 5, 32, "syntax error: unexpected identifier 'c'");
    parsed_free(p);
}
END_TEST

/* ---- errors and recovery ------------------------------------------------------ */

START_TEST(several_syntax_errors_in_one_file)
{
    Parsed *p = parse(
        "time ts;\n"
        "rule a {\n"
        "  begin x where amount > ;\n"
        "  next y where z == 1\n"
        "  followed_by w;\n"
        "  on match alert \"a\";\n"
        "}\n"
        "rule 5 { begin q; }\n"
        "rule c { begin q where x; within 5; on match alert \"c\"; }\n"
        "output o file \"x\" rotate 1h;\n");
    ck_assert_int_eq(p->errors, 4);
    assert_diag(p, 0, 3, 26, "syntax error: unexpected ';', expected an expression");
    assert_diag(p, 1, 5, 3, "syntax error: unexpected 'followed_by' (is a ';' missing at the end of line 4?)");
    assert_diag(p, 2, 8, 6, "syntax error: unexpected number 5, expected identifier");
    assert_diag(p, 3, 9, 34, "syntax error: unexpected number 5, expected duration");
    /* what parsed is kept */
    ck_assert_uint_eq(p->rs->n_rules, 2);
    const Rule *a = &p->rs->rules[0];
    ck_assert_str_eq(a->name, "a");
    ck_assert_uint_eq(a->n_steps, 1);
    ck_assert_str_eq(a->steps[0].name, "w");
    ck_assert_uint_eq(a->n_on, 1);
    const Rule *c = &p->rs->rules[1];
    ck_assert_str_eq(c->name, "c");
    ck_assert_uint_eq(c->n_steps, 1);
    ck_assert_uint_eq(c->n_on, 1);
    ck_assert_uint_eq(p->rs->n_outputs, 1);
    ck_assert_ptr_nonnull(p->rs->time);
    parsed_free(p);
}
END_TEST

START_TEST(errors_name_tokens_readably)
{
    Parsed *p = parse("rule r { begin a where x y; }");
    assert_diag(p, 0, 1, 26, "syntax error: unexpected identifier 'y'");
    parsed_free(p);

    p = parse("rule r { begin a where x \"s\"; }");
    assert_diag(p, 0, 1, 26, "syntax error: unexpected string \"s\"");
    parsed_free(p);

    p = parse("rule r { begin a }");
    assert_diag(p, 0, 1, 18, "syntax error: unexpected '}' (is a ';' missing before it?)");
    parsed_free(p);

    p = parse("rule r { begin a where x > 1 next b; }");
    assert_diag(p, 0, 1, 30, "syntax error: unexpected 'next' (is a ';' missing before it?)");
    parsed_free(p);

    p = parse("rule r { begin a;");
    assert_diag(p, 0, 1, 18, "syntax error: unexpected end of file (the '{' at 1:8 is not closed)");
    parsed_free(p);

    p = parse("rule q { begin a; }\nrule r {\n  begin a;\n  on match alert \"m\" fields { n: 1 }\n");
    assert_diag(p, 0, 5, 1, "(the '{' at 2:8 is not closed)");   /* the rule's, not the fields' */
    parsed_free(p);

    p = parse("rule r { filter where; }");
    assert_diag(p, 0, 1, 17, "syntax error: unexpected 'where', expected an expression");
    parsed_free(p);
}
END_TEST

/* A reserved word written as a field name is read as the keyword; the message says
 * to write it in backticks, rather than that comparisons do not chain. */
START_TEST(reserved_word_as_field_says_backticks)
{
    Parsed *p = parse("rule r { begin a where time > 5; }");
    assert_diag(p, 0, 1, 29, "syntax error: unexpected '>' ('time' is a reserved word: "
                             "write `time` for a field of that name)");
    parsed_free(p);

    p = parse("rule r { filter key == \"a\"; begin a; }");
    assert_diag(p, 0, 1, 21, "('key' is a reserved word: write `key` for a field of that name)");
    parsed_free(p);

    p = parse("rule r { begin a where x > 1 and to == 1; }");
    assert_diag(p, 0, 1, 34, "syntax error: unexpected 'to', expected an expression ('to' is a "
                             "reserved word: write `to` for a field of that name)");
    parsed_free(p);

    /* operators and literals that are reserved words are not mistaken for fields */
    p = parse("rule r { begin a where x > 1 > 2; }");
    assert_diag(p, 0, 1, 30, "(comparisons do not chain: write 'a < b and b < c')");
    parsed_free(p);

    p = parse("rule r { begin a where x in [1] == true; }");
    assert_diag(p, 0, 1, 33, "(comparisons do not chain");
    parsed_free(p);

    p = parse("rule r { begin a where `time` > 5 and `to` == 1; }");
    ck_assert_int_eq(p->errors, 0);
    parsed_free(p);
}
END_TEST

START_TEST(lexical_errors_are_not_repeated_as_syntax_errors)
{
    Parsed *p = parse("rule r {\n  begin a where x == \"abc;\n  next b;\n}\n");
    ck_assert_int_eq(p->errors, 1);
    assert_diag(p, 0, 2, 22, "unterminated string");
    ck_assert_uint_eq(p->rs->n_rules, 1);
    ck_assert_uint_eq(p->rs->rules[0].n_steps, 1);
    ck_assert_str_eq(p->rs->rules[0].steps[0].name, "b");
    parsed_free(p);
}
END_TEST

/* ---- several files, file errors, the shared conformance rules ------------------ */

START_TEST(several_files_share_a_rule_set)
{
    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    const char *one = "# one\ntime ts;\noutput o file \"x\";\nrule a { begin x; }\n";
    const char *two = "time other;\nrule b { begin y; }\nrule c { begin z; }\n";
    ck_assert_int_eq(dsl_parse_text(rs, "one.cep", one, strlen(one), &d), 0);
    ck_assert_int_eq(dsl_parse_text(rs, "two.cep", two, strlen(two), &d), 0);
    ck_assert_uint_eq(rs->n_sources, 2);
    ck_assert_uint_eq(rs->n_files, 2);
    ck_assert_uint_eq(rs->n_rules, 3);
    ck_assert_uint_eq(rs->n_outputs, 1);
    ck_assert_str_eq(rs->time->field[0].name, "ts");
    ck_assert_str_eq(rs->files[1].time->field[0].name, "other");
    ck_assert_ptr_eq(rs->files[1].src, rs->sources[1]);
    ck_assert_uint_eq(rs->files[1].n_decls, 3);
    ck_assert_int_eq(rs->files[1].decls[2].kind, DECL_RULE);
    ck_assert_uint_eq(rs->files[1].decls[2].index, 2);
    ck_assert_ptr_eq(rs->rules[2].span.src, rs->sources[1]);
    ck_assert_uint_eq(rs->sources[0]->n_comments, 1);
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

START_TEST(unreadable_file)
{
    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    ck_assert_int_eq(dsl_parse_file(rs, "/nonexistent/x.cep", &d), 1);
    ck_assert_uint_eq(d.errors, 1);
    ck_assert_ptr_nonnull(strstr(d.items[0].message, "cannot read"));
    ck_assert_uint_eq(rs->n_files, 0);
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

START_TEST(nul_byte_in_file)
{
    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    ck_assert_int_eq(dsl_parse_text(rs, "t.cep", "rule r {\n begin\0 a; }", 20, &d), 1);
    ck_assert_int_eq(d.items[0].span.line, 2);
    ck_assert_int_eq(d.items[0].span.col, 7);
    ck_assert_ptr_nonnull(strstr(d.items[0].message, "NUL byte"));
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

static int parse_dir_rules(const char *dir, const char *file, int *count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    RuleSet *rs = ast_ruleset_new();
    Diags d;
    diags_init(&d);
    int errors = dsl_parse_file(rs, path, &d);
    if (errors)
        diags_print(&d, stderr);
    else
        ck_assert_uint_ge(rs->n_rules, 1);
    (*count)++;
    diags_free(&d);
    ast_ruleset_free(rs);
    return errors;
}

START_TEST(conformance_rules_parse)
{
    const char *shared = getenv("VIGIL_SHARED");
    char dir[4096];
    if (!shared || snprintf(dir, sizeof dir, "%s/conformance", shared) <= 0) {
        fprintf(stderr, "VIGIL_SHARED not set; skipping the conformance rule files\n");
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s missing; skipping the conformance rule files\n", dir);
        return;
    }
    int count = 0, errors = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.')
            continue;
        char sub[4096 + 256];
        snprintf(sub, sizeof sub, "%s/%s", dir, ent->d_name);
        errors += parse_dir_rules(sub, "rules.cep", &count);
    }
    closedir(d);
    ck_assert_int_eq(errors, 0);
    ck_assert_int_gt(count, 0);
}
END_TEST

START_TEST(example_rules_parse)
{
    const char *top = getenv("top_srcdir");
    if (!top) {
        fprintf(stderr, "top_srcdir not set; skipping examples\n");
        return;
    }
    static const char *const EXAMPLES[] = {
        "fraud/fraud.cep", "logins/logins.cep", "orders/orders.cep",
        "approvals/approvals.cep", "weblogs/weblogs.cep",
    };
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/examples", top);
    int count = 0, errors = 0;
    for (size_t i = 0; i < sizeof EXAMPLES / sizeof EXAMPLES[0]; i++)
        errors += parse_dir_rules(dir, EXAMPLES[i], &count);
    ck_assert_int_eq(errors, 0);
}
END_TEST

static Suite *parser_suite(void)
{
    Suite *s = suite_create("parser");
    TCase *tc = tcase_create("expressions");
    tcase_add_test(tc, precedence_of_logic);
    tcase_add_test(tc, precedence_of_arithmetic);
    tcase_add_test(tc, every_comparison);
    tcase_add_test(tc, comparisons_do_not_chain);
    tcase_add_test(tc, literals);
    tcase_add_test(tc, paths_and_calls);
    tcase_add_test(tc, bad_index);
    tcase_add_test(tc, nesting_is_capped);
    suite_add_tcase(s, tc);

    tc = tcase_create("declarations");
    tcase_add_test(tc, time_declarations);
    tcase_add_test(tc, output_declarations);
    tcase_add_test(tc, bad_output_declarations);
    tcase_add_test(tc, rule_fields);
    tcase_add_test(tc, rule_keys);
    tcase_add_test(tc, rule_steps);
    tcase_add_test(tc, rule_actions);
    tcase_add_test(tc, statements_in_written_order);
    tcase_add_test(tc, defaults_without_statements);
    tcase_add_test(tc, skip_strategies);
    tcase_add_test(tc, ordinary_words_as_names);
    tcase_add_test(tc, repeated_clauses_are_errors);
    tcase_add_test(tc, bad_words_in_their_place);
    suite_add_tcase(s, tc);

    tc = tcase_create("templates");
    tcase_add_test(tc, template_parts);
    tcase_add_test(tc, template_inner_spans);
    tcase_add_test(tc, template_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, several_syntax_errors_in_one_file);
    tcase_add_test(tc, errors_name_tokens_readably);
    tcase_add_test(tc, reserved_word_as_field_says_backticks);
    tcase_add_test(tc, lexical_errors_are_not_repeated_as_syntax_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_add_test(tc, several_files_share_a_rule_set);
    tcase_add_test(tc, unreadable_file);
    tcase_add_test(tc, nul_byte_in_file);
    tcase_add_test(tc, conformance_rules_parse);
    tcase_add_test(tc, example_rules_parse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(parser_suite());
}
