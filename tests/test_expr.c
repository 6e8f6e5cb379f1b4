/* tests/test_expr.c — compiled expressions: operators, null rules, functions,
 * regexes with limits, time and duration arithmetic, aggregates over match chains,
 * constant folding and compile errors. Expressions are built by hand as resolved
 * ASTs (what dsl_check produces). */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/load.h"
#include "dsl/parse.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

#define N_SLOTS 64
#define MAX_COMPILED 64

/* ---- fixture -------------------------------------------------------------- */

typedef struct Fixture {
    Arena ast;
    FieldTable fields;
    Step steps[3];           /* a, b, c */
    KeyDecl keys[2];         /* user, region */
    Rule rule;
    ExprEnv env;
    EvalScratch *scratch;
    CExpr *compiled[MAX_COMPILED];
    size_t n_compiled;
    Event *events[64];
    size_t n_events;
    MatchNode *match;        /* newest node of the test chain (owned reference) */
} Fixture;

static Fixture fx;

static void setup(void)
{
    memset(&fx, 0, sizeof fx);
    arena_init(&fx.ast, 4096);
    field_table_init(&fx.fields);
    static const char *const step_names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        fx.steps[i].name = step_names[i];
    fx.keys[0].name = "user";
    fx.keys[1].name = "region";
    fx.rule.name = "r";
    fx.rule.steps = fx.steps;
    fx.rule.n_steps = 3;
    fx.rule.keys = fx.keys;
    fx.rule.n_keys = 2;
    fx.env.fields = &fx.fields;
    fx.env.rule = &fx.rule;
    fx.scratch = expr_scratch_new();
    ck_assert_ptr_nonnull(fx.scratch);
}

static void teardown(void)
{
    for (size_t i = 0; i < fx.n_compiled; i++)
        expr_free(fx.compiled[i]);
    match_node_release(fx.match);
    for (size_t i = 0; i < fx.n_events; i++)
        event_release(fx.events[i]);
    expr_scratch_free(fx.scratch);
    field_table_free(&fx.fields);
    arena_free(&fx.ast);
}

/* ---- AST builders ----------------------------------------------------------- */

static Expr *node(ExprKind kind)
{
    Expr *e = arena_zalloc(&fx.ast, sizeof *e);
    ck_assert_ptr_nonnull(e);
    e->kind = kind;
    e->span.line = 1;
    e->span.col = 1;
    return e;
}

static Expr *num(double d)
{
    Expr *e = node(EX_NUMBER);
    e->u.number.value = d;
    return e;
}

static Expr *num_text(const char *text)
{
    Expr *e = num(strtod(text, NULL));
    e->u.number.text = text;
    return e;
}

static Expr *str(const char *s)
{
    Expr *e = node(EX_STRING);
    e->u.string.bytes = s;
    e->u.string.len = strlen(s);
    return e;
}

static Expr *boolean(bool b)
{
    Expr *e = node(EX_BOOL);
    e->u.boolean = b;
    return e;
}

static Expr *null_lit(void) { return node(EX_NULL); }

static Expr *dur(int64_t ms)
{
    Expr *e = node(EX_DURATION);
    e->u.duration.ms = ms;
    return e;
}

/* "payload.card" -> name segments; "items[1]" is not needed by these tests. */
static Expr *path_of(PathKind kind, const char *dotted)
{
    Expr *e = node(EX_PATH);
    size_t n = 1;
    for (const char *p = dotted; *p; p++)
        n += *p == '.';
    PathSeg *segs = arena_zalloc(&fx.ast, n * sizeof *segs);
    const char *start = dotted;
    for (size_t i = 0; i < n; i++) {
        const char *dot = strchr(start, '.');
        size_t len = dot ? (size_t)(dot - start) : strlen(start);
        segs[i].name = arena_strndup(&fx.ast, start, len);
        start += len + 1;
    }
    e->u.path.segs = segs;
    e->u.path.n_segs = n;
    e->u.path.kind = kind;
    e->u.path.step = -1;
    e->u.path.key = -1;
    return e;
}

static Expr *field(const char *dotted) { return path_of(PATH_FIELD, dotted); }

/* "a.amount" or "a": a step path, resolved to the step index. */
static Expr *stepf(const char *dotted)
{
    Expr *e = path_of(PATH_STEP, dotted);
    e->u.path.step = dotted[0] - 'a';
    return e;
}

static Expr *key(int index)
{
    Expr *e = path_of(PATH_KEY, index == 0 ? "key.user" : "key.region");
    e->u.path.key = index;
    return e;
}

static Expr *un(UnaryOp op, Expr *x)
{
    Expr *e = node(EX_UNARY);
    e->u.unary.op = op;
    e->u.unary.operand = x;
    return e;
}

static Expr *bin(BinaryOp op, Expr *l, Expr *r)
{
    Expr *e = node(EX_BINARY);
    e->u.binary.op = op;
    e->u.binary.lhs = l;
    e->u.binary.rhs = r;
    return e;
}

static Expr **expr_array(size_t n, va_list ap)
{
    Expr **items = arena_zalloc(&fx.ast, (n ? n : 1) * sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = va_arg(ap, Expr *);
    return items;
}

static Expr *list(size_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    Expr *e = node(EX_LIST);
    e->u.list.items = expr_array(n, ap);
    e->u.list.n = n;
    va_end(ap);
    return e;
}

static Expr *call(FuncId fn, const char *name, size_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    Expr *e = node(EX_CALL);
    e->u.call.name = name;
    e->u.call.fn = fn;
    e->u.call.args = expr_array(n, ap);
    e->u.call.n_args = n;
    va_end(ap);
    return e;
}

/* ---- compile, events, evaluation ------------------------------------------ */

static CExpr *compile(const Expr *e)
{
    char *err = NULL;
    CExpr *ce = expr_compile(e, &fx.env, &err);
    if (!ce)
        ck_abort_msg("compile failed: %s", err ? err : "(no message)");
    ck_assert_ptr_null(err);
    ck_assert_uint_lt(fx.n_compiled, MAX_COMPILED);
    fx.compiled[fx.n_compiled++] = ce;
    return ce;
}

/* The error message of a compile that must fail (static copy). */
static const char *compile_error(const Expr *e)
{
    static char msg[512];
    char *err = NULL;
    CExpr *ce = expr_compile(e, &fx.env, &err);
    ck_assert_ptr_null(ce);
    ck_assert_ptr_nonnull(err);
    snprintf(msg, sizeof msg, "%s", err);
    free(err);
    return msg;
}

static int slot(const char *dotted)
{
    Expr *p = field(dotted);
    int s = field_table_intern(&fx.fields, p->u.path.segs, p->u.path.n_segs);
    ck_assert_int_ge(s, 0);
    ck_assert_int_lt(s, N_SLOTS);
    return s;
}

/* An event at time_ms with fields given as (name, Value) pairs, ending with NULL. */
static Event *event(int64_t time_ms, ...)
{
    Event *ev = event_new("{}", 2, N_SLOTS);
    ck_assert_ptr_nonnull(ev);
    ev->time_ms = time_ms;
    va_list ap;
    va_start(ap, time_ms);
    for (const char *name; (name = va_arg(ap, const char *)) != NULL;)
        ev->slots[slot(name)] = va_arg(ap, Value);
    va_end(ap);
    ck_assert_uint_lt(fx.n_events, 64);
    fx.events[fx.n_events++] = ev;
    return ev;
}

/* Appends (step, ev) to the fixture's match chain. */
static void take(int step, Event *ev)
{
    MatchNode *n = match_node_new(fx.match, ev, (uint16_t)step);
    ck_assert_ptr_nonnull(n);
    match_node_release(fx.match);
    fx.match = n;
}

static Value eval_in(const Expr *e, const Event *ev)
{
    EvalCtx ctx = {ev, fx.match, NULL, 0, ev ? ev->time_ms : 0};
    return expr_eval(compile(e), &ctx, fx.scratch);
}

static Value eval0(const Expr *e) { return eval_in(e, NULL); }

#define ck_num(v, expected) do { Value v_ = (v); \
    ck_assert_int_eq(v_.type, V_NUM); ck_assert_double_eq_tol(v_.num, (expected), 1e-9); } while (0)
#define ck_bool(v, expected) do { Value v_ = (v); \
    ck_assert_int_eq(v_.type, V_BOOL); ck_assert_int_eq(v_.b, (expected)); } while (0)
#define ck_null(v) do { Value v_ = (v); ck_assert_msg(value_is_null(&v_), \
    "expected null, got type %d", (int)v_.type); } while (0)
#define ck_str(v, expected) do { Value v_ = (v); const char *x_ = (expected); \
    ck_assert_int_eq(v_.type, V_STR); ck_assert_uint_eq(v_.len, strlen(x_)); \
    ck_assert(memcmp(v_.s, x_, v_.len) == 0); } while (0)
#define ck_dur(v, expected) do { Value v_ = (v); \
    ck_assert_int_eq(v_.type, V_DUR); ck_assert_int_eq(v_.i, (expected)); } while (0)
#define ck_time(v, expected) do { Value v_ = (v); \
    ck_assert_int_eq(v_.type, V_TIME); ck_assert_int_eq(v_.i, (expected)); } while (0)

/* ---- literals, arithmetic and folding ------------------------------------- */

START_TEST(literals)
{
    ck_num(eval0(num(4.25)), 4.25);
    ck_str(eval0(str("hi")), "hi");
    ck_bool(eval0(boolean(true)), true);
    ck_assert_int_eq(eval0(null_lit()).type, V_NULL);
    ck_dur(eval0(dur(300000)), 300000);
    /* An integer literal keeps its digits for output. */
    Value big = eval0(num_text("1234567890123456789"));
    ck_assert_ptr_nonnull(big.raw);
    ck_assert_int_eq(strncmp(big.raw, "1234567890123456789", big.raw_len), 0);
    ck_assert_ptr_null(eval0(num_text("1.50")).raw);
    ck_assert_ptr_null(eval0(num_text("007")).raw); /* not JSON: printed from the double */
    ck_assert_ptr_nonnull(eval0(num_text("0")).raw);
    ck_assert_ptr_nonnull(eval0(num_text("-12")).raw);
}
END_TEST

START_TEST(arithmetic)
{
    ck_num(eval0(bin(BIN_ADD, num(1), bin(BIN_MUL, num(2), num(3)))), 7);
    ck_num(eval0(bin(BIN_SUB, num(1), num(3))), -2);
    ck_num(eval0(bin(BIN_DIV, num(7), num(2))), 3.5);
    ck_num(eval0(bin(BIN_MOD, num(7.5), num(2))), 1.5);
    ck_num(eval0(bin(BIN_MOD, num(-7), num(3))), -1);
    ck_null(eval0(bin(BIN_DIV, num(1), num(0))));
    ck_null(eval0(bin(BIN_MOD, num(1), num(0))));
    ck_num(eval0(un(UN_NEG, num(2))), -2);
    ck_null(eval0(un(UN_NEG, str("x"))));
    ck_str(eval0(bin(BIN_ADD, str("ab"), str("cd"))), "abcd");
    ck_null(eval0(bin(BIN_ADD, str("ab"), num(1))));
    ck_null(eval0(bin(BIN_SUB, str("ab"), str("a"))));
    ck_null(eval0(bin(BIN_MUL, boolean(true), num(2))));
}
END_TEST

START_TEST(arithmetic_with_null)
{
    Event *ev = event(0, "amount", value_num(10), "nothing", value_null(), NULL);
    ck_null(eval_in(bin(BIN_ADD, field("amount"), field("missing")), ev));
    ck_null(eval_in(bin(BIN_MUL, field("nothing"), num(2)), ev));
    ck_null(eval_in(un(UN_NEG, field("missing")), ev));
    ck_null(eval_in(bin(BIN_ADD, null_lit(), num(1)), ev));
    ck_num(eval_in(bin(BIN_ADD, field("amount"), num(1)), ev), 11);
}
END_TEST

START_TEST(folded_constants_outlive_scratch)
{
    /* "ab" + "cd" is folded at compile time, so its bytes live in the program,
     * not in the scratch that the next evaluation reuses. */
    Value folded = eval0(bin(BIN_ADD, str("ab"), str("cd")));
    Value upper = eval0(call(FN_UPPER, "upper", 1, bin(BIN_ADD, str("x"), str("y"))));
    expr_scratch_reset(fx.scratch);
    Event *ev = event(0, "s", test_str("zzzzzzzzzzzz"), NULL);
    ck_str(eval_in(bin(BIN_ADD, field("s"), field("s")), ev), "zzzzzzzzzzzzzzzzzzzzzzzz");
    ck_str(eval_in(call(FN_UPPER, "upper", 1, field("s")), ev), "ZZZZZZZZZZZZ");
    ck_str(folded, "abcd");
    ck_str(upper, "XY");
}
END_TEST

START_TEST(folding_keeps_runtime_parts)
{
    /* (2 + 3) * amount: the constant part folds, the field is still read per event. */
    Expr *e = bin(BIN_MUL, bin(BIN_ADD, num(2), num(3)), field("amount"));
    CExpr *ce = compile(e);
    Event *e1 = event(0, "amount", value_num(2), NULL);
    Event *e2 = event(0, "amount", value_num(4), NULL);
    EvalCtx c1 = {e1, NULL, NULL, 0, 0}, c2 = {e2, NULL, NULL, 0, 0};
    ck_num(expr_eval(ce, &c1, fx.scratch), 10);
    ck_num(expr_eval(ce, &c2, fx.scratch), 20);
    /* time() is not constant even with constant operands around it. */
    CExpr *t = compile(bin(BIN_ADD, call(FN_TIME, "time", 0), dur(1000)));
    EvalCtx at5 = {NULL, NULL, NULL, 0, 5000}, at9 = {NULL, NULL, NULL, 0, 9000};
    ck_time(expr_eval(t, &at5, fx.scratch), 6000);
    ck_time(expr_eval(t, &at9, fx.scratch), 10000);
}
END_TEST

/* ---- comparisons and null rules ------------------------------------------- */

START_TEST(comparisons)
{
    Event *ev = event(0, "amount", value_num(1500), "name", test_str("bob"), "flag", value_bool(true),
                      NULL);
    ck_bool(eval_in(bin(BIN_GT, field("amount"), num(1000)), ev), true);
    ck_bool(eval_in(bin(BIN_GE, field("amount"), num(1500)), ev), true);
    ck_bool(eval_in(bin(BIN_LT, field("amount"), num(1500)), ev), false);
    ck_bool(eval_in(bin(BIN_LE, field("amount"), num(1500)), ev), true);
    ck_bool(eval_in(bin(BIN_EQ, field("amount"), num(1500)), ev), true);
    ck_bool(eval_in(bin(BIN_NE, field("amount"), num(1500)), ev), false);
    ck_bool(eval_in(bin(BIN_EQ, field("name"), str("bob")), ev), true);
    ck_bool(eval_in(bin(BIN_LT, field("name"), str("carol")), ev), true);
    ck_bool(eval_in(bin(BIN_NE, field("name"), str("bobby")), ev), true);
    ck_bool(eval_in(bin(BIN_EQ, field("flag"), boolean(true)), ev), true);
    ck_bool(eval_in(bin(BIN_GT, field("flag"), boolean(false)), ev), false); /* no order */
}
END_TEST

START_TEST(mismatched_types_are_false)
{
    Event *ev = event(0, "amount", value_num(1), "code", test_str("1"), NULL);
    ck_bool(eval_in(bin(BIN_EQ, field("amount"), str("1")), ev), false);
    ck_bool(eval_in(bin(BIN_NE, field("amount"), str("1")), ev), false);
    ck_bool(eval_in(bin(BIN_EQ, field("code"), num(1)), ev), false);
    ck_bool(eval_in(bin(BIN_LT, field("code"), num(2)), ev), false);
    ck_bool(eval_in(bin(BIN_GE, field("code"), num(0)), ev), false);
    ck_bool(eval_in(bin(BIN_LT, call(FN_TIME, "time", 0), num(5)), ev), false);
    ck_bool(eval_in(bin(BIN_LT, dur(5), num(10)), ev), false);
}
END_TEST

START_TEST(null_comparisons)
{
    Event *ev = event(0, "amount", value_num(5), "nothing", value_null(), NULL);
    /* Only `== null` / `!= null` test for null; missing is null. */
    ck_bool(eval_in(bin(BIN_EQ, field("missing"), null_lit()), ev), true);
    ck_bool(eval_in(bin(BIN_EQ, null_lit(), field("missing")), ev), true);
    ck_bool(eval_in(bin(BIN_NE, field("missing"), null_lit()), ev), false);
    ck_bool(eval_in(bin(BIN_EQ, field("nothing"), null_lit()), ev), true);
    ck_bool(eval_in(bin(BIN_EQ, field("amount"), null_lit()), ev), false);
    ck_bool(eval_in(bin(BIN_NE, field("amount"), null_lit()), ev), true);
    ck_bool(eval_in(bin(BIN_EQ, null_lit(), null_lit()), ev), true);
    /* Any other comparison with null is false, `!=` included. */
    ck_bool(eval_in(bin(BIN_GT, field("missing"), num(0)), ev), false);
    ck_bool(eval_in(bin(BIN_LE, field("missing"), num(0)), ev), false);
    ck_bool(eval_in(bin(BIN_NE, field("missing"), num(5)), ev), false);
    ck_bool(eval_in(bin(BIN_EQ, field("missing"), field("nothing")), ev), false);
    ck_bool(eval_in(bin(BIN_NE, field("missing"), field("amount")), ev), false);
}
END_TEST

START_TEST(three_valued_logic)
{
    Event *ev = event(0, "t", value_bool(true), "f", value_bool(false), "n", value_num(1), NULL);
    Expr *unknown = field("missing");
    ck_bool(eval_in(bin(BIN_AND, field("t"), field("t")), ev), true);
    ck_bool(eval_in(bin(BIN_AND, field("t"), field("f")), ev), false);
    ck_bool(eval_in(bin(BIN_OR, field("f"), field("t")), ev), true);
    ck_bool(eval_in(bin(BIN_OR, field("f"), field("f")), ev), false);
    ck_null(eval_in(bin(BIN_AND, field("t"), unknown), ev));
    ck_bool(eval_in(bin(BIN_AND, field("missing"), field("f")), ev), false);
    ck_bool(eval_in(bin(BIN_AND, field("f"), field("missing")), ev), false);
    ck_bool(eval_in(bin(BIN_OR, field("missing"), field("t")), ev), true);
    ck_null(eval_in(bin(BIN_OR, field("f"), field("missing")), ev));
    ck_bool(eval_in(un(UN_NOT, field("t")), ev), false);
    ck_null(eval_in(un(UN_NOT, field("missing")), ev));
    /* Non-booleans are unknown, not truthy. */
    ck_null(eval_in(un(UN_NOT, field("n")), ev));
    ck_null(eval_in(bin(BIN_AND, field("n"), field("t")), ev));
    /* A comparison with null is false, so its negation holds. */
    ck_bool(eval_in(un(UN_NOT, bin(BIN_GT, field("missing"), num(1))), ev), true);
    /* expr_test: only boolean true holds. */
    EvalCtx ctx = {ev, NULL, NULL, 0, 0};
    ck_assert(expr_test(compile(field("t")), &ctx, fx.scratch));
    ck_assert(!expr_test(compile(field("n")), &ctx, fx.scratch));
    ck_assert(!expr_test(compile(bin(BIN_AND, field("t"), field("missing"))), &ctx, fx.scratch));
    ck_assert(!expr_test(compile(str("true")), &ctx, fx.scratch));
}
END_TEST

/* expr_test and expr_truth decide comparisons of fields, step fields and constants
 * on fast paths (no Value copies, a whole-program `field OP constant` form); each
 * must agree with expr_eval, which goes through the generic comparison, for every
 * pairing of value types, in both operand orders, in conditions and in actions. */
static int truth_of_value(Value v)
{
    return v.type == V_BOOL ? v.b : -1;
}

START_TEST(fast_conditions_agree_with_eval)
{
    const Value samples[] = {
        value_num(5), value_num(7), value_num(NAN),
        test_str("tx"), test_str("tx2"), test_str(""), test_str("t"),
        value_bool(true), value_bool(false), value_null(), value_missing(),
        value_time(5), value_dur(5), test_raw_json(V_OBJ, "{\"a\":1}"),
    };
    const size_t n_samples = sizeof samples / sizeof samples[0];
    Expr *consts[] = {num(5), num(6), str("tx"), str(""), boolean(false), boolean(true)};
    const BinaryOp ops[] = {BIN_EQ, BIN_NE, BIN_LT, BIN_LE, BIN_GT, BIN_GE};
    take(0, event(1, "x", test_str("tx"), NULL));
    size_t checked = 0;
    for (size_t i = 0; i < n_samples; i++) {
        Event *ev = event(2, "x", samples[i], "y", samples[(i + 3) % n_samples], NULL);
        /* the match's step `a` reads x = "tx" from the first event */
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            Expr *conds[2 * (sizeof consts / sizeof consts[0]) + 3];
            size_t n = 0;
            for (size_t k = 0; k < sizeof consts / sizeof consts[0]; k++) {
                conds[n++] = bin(ops[o], field("x"), consts[k]);
                conds[n++] = bin(ops[o], consts[k], field("x"));
            }
            conds[n++] = bin(ops[o], field("x"), stepf("a.x"));
            conds[n++] = bin(ops[o], stepf("a.x"), field("x"));
            conds[n++] = bin(ops[o], field("x"), field("y"));
            for (size_t c = 0; c < n; c++) {
                CExpr *ce = compile(conds[c]);
                EvalCtx in_cond = {ev, fx.match, NULL, 0, 2};
                int want = truth_of_value(expr_eval(ce, &in_cond, fx.scratch));
                ck_assert_int_eq(expr_truth(ce, &in_cond, fx.scratch), want);
                ck_assert_int_eq(expr_test(ce, &in_cond, fx.scratch), want == 1);
                /* actions: bare fields read the match's last event */
                EvalCtx in_action = {NULL, fx.match, NULL, 0, 2};
                want = truth_of_value(expr_eval(ce, &in_action, fx.scratch));
                ck_assert_int_eq(expr_truth(ce, &in_action, fx.scratch), want);
                checked++;
                fx.n_compiled--;
                expr_free(ce);
            }
        }
    }
    ck_assert_uint_eq(checked, n_samples * 6 * 15);
    /* A few by hand, so that agreement is not agreement in error. */
    Event *ev = event(3, "x", test_str("tx"), "n", value_num(250), NULL);
    EvalCtx ctx = {ev, fx.match, NULL, 0, 3};
    ck_assert_int_eq(expr_truth(compile(bin(BIN_EQ, field("x"), str("tx"))), &ctx, fx.scratch), 1);
    ck_assert_int_eq(expr_truth(compile(bin(BIN_NE, str("tx"), field("x"))), &ctx, fx.scratch), 0);
    ck_assert_int_eq(expr_truth(compile(bin(BIN_LT, num(200), field("n"))), &ctx, fx.scratch), 1);
    ck_assert_int_eq(expr_truth(compile(bin(BIN_GT, num(200), field("n"))), &ctx, fx.scratch), 0);
    ck_assert_int_eq(expr_truth(compile(bin(BIN_NE, field("missing"), str("tx"))), &ctx,
                                fx.scratch), 0);
    ck_assert_int_eq(expr_truth(compile(un(UN_NOT, field("n"))), &ctx, fx.scratch), -1);
    ck_assert_int_eq(expr_truth(compile(bin(BIN_OR, field("missing"),
                                            bin(BIN_EQ, field("x"), str("no")))), &ctx,
                                fx.scratch), -1);
}
END_TEST

/* What each comparison operator gives for every kind of operand pair, the rare ones
 * (orderings of strings, times and durations, equality of objects and arrays, NaN)
 * included: through expr_eval and expr_truth, between two fields and, for strings
 * and durations, against a constant in the whole-program `field OP constant` form. */
static const struct {
    Value l, r;
    const char *holds;       /* per operator == != < <= > >=: 1 holds, 0 not */
} COMPARED[] = {
    {{.type = V_TIME, .i = 5}, {.type = V_TIME, .i = 7}, "011100"},
    {{.type = V_TIME, .i = 7}, {.type = V_TIME, .i = 7}, "100101"},
    {{.type = V_DUR, .i = 5}, {.type = V_DUR, .i = 3}, "010011"},
    {{.type = V_TIME, .i = 5}, {.type = V_DUR, .i = 5}, "000000"},
    {{.type = V_STR, .s = "t", .len = 1}, {.type = V_STR, .s = "tx", .len = 2}, "011100"},
    {{.type = V_STR, .s = "b", .len = 1}, {.type = V_STR, .s = "a", .len = 1}, "010011"},
    {{.type = V_STR, .s = "", .len = 0}, {.type = V_STR, .s = "", .len = 0}, "100101"},
    {{.type = V_STR, .s = "ab", .len = 2}, {.type = V_STR, .s = "ab", .len = 2}, "100101"},
    {{.type = V_OBJ, .raw = "{\"a\":1}", .raw_len = 7},
     {.type = V_OBJ, .raw = "{\"a\":1}", .raw_len = 7}, "100000"},
    {{.type = V_OBJ, .raw = "{\"a\":1}", .raw_len = 7},
     {.type = V_OBJ, .raw = "{\"a\":2}", .raw_len = 7}, "010000"},
    {{.type = V_ARR, .raw = "[1]", .raw_len = 3}, {.type = V_ARR, .raw = "[1]", .raw_len = 3},
     "100000"},
    {{.type = V_BOOL, .b = true}, {.type = V_BOOL, .b = false}, "010000"},
    {{.type = V_BOOL, .b = true}, {.type = V_BOOL, .b = true}, "100000"},
    {{.type = V_NUM, .num = NAN}, {.type = V_NUM, .num = NAN}, "010000"},
    {{.type = V_NUM, .num = 2}, {.type = V_NUM, .num = NAN}, "010000"},
    {{.type = V_NUM, .num = -1}, {.type = V_NUM, .num = 2}, "011100"},
    {{.type = V_NULL}, {.type = V_NULL}, "000000"},
    {{.type = V_MISSING}, {.type = V_NULL}, "000000"},
};

/* The truth of `x op y` on ev, evaluated and tested; with literal, y is that
 * constant. */
static void check_compared(const Event *ev, BinaryOp op, Expr *literal, bool want)
{
    char *err = NULL;
    CExpr *ce = expr_compile(bin(op, field("x"), literal ? literal : field("y")), &fx.env, &err);
    ck_assert_ptr_nonnull(ce);
    EvalCtx ctx = {ev, NULL, NULL, 0, 1};
    ck_bool(expr_eval(ce, &ctx, fx.scratch), want);
    ck_assert_int_eq(expr_truth(ce, &ctx, fx.scratch), want);
    expr_free(ce);
}

START_TEST(comparison_table)
{
    const BinaryOp ops[] = {BIN_EQ, BIN_NE, BIN_LT, BIN_LE, BIN_GT, BIN_GE};
    for (size_t i = 0; i < sizeof COMPARED / sizeof COMPARED[0]; i++) {
        const Value *r = &COMPARED[i].r;
        Event *ev = event(1, "x", COMPARED[i].l, "y", *r, NULL);
        for (size_t o = 0; o < 6; o++) {
            bool want = COMPARED[i].holds[o] == '1';
            check_compared(ev, ops[o], NULL, want);
            if (r->type == V_STR)
                check_compared(ev, ops[o], str(r->s), want);
            else if (r->type == V_DUR)
                check_compared(ev, ops[o], dur(r->i), want);
        }
    }
}
END_TEST

/* The scratch's text buffer is the thread's own and outlives expr_scratch_reset
 * (alert records are built in it between evaluations). */
START_TEST(scratch_text_outlives_reset)
{
    Buf *b = expr_scratch_text(fx.scratch);
    ck_assert_ptr_nonnull(b);
    buf_puts(b, "record");
    expr_scratch_reset(fx.scratch);
    ck_assert_ptr_eq(expr_scratch_text(fx.scratch), b);
    ck_assert_str_eq(b->data, "record");
    EvalScratch *other = expr_scratch_new();
    ck_assert_ptr_nonnull(other);
    ck_assert_ptr_ne(expr_scratch_text(other), b);
    ck_assert_uint_eq(expr_scratch_text(other)->len, 0);
    expr_scratch_free(other);
}
END_TEST

START_TEST(short_circuit_skips_rhs)
{
    /* The right side hits the regex limit whenever it runs, which the scratch counts. */
    static char subject[64];
    memset(subject, 'a', 40);
    subject[40] = 'b';
    Event *ev = event(0, "f", value_bool(false), "t", value_bool(true), "s",
                      value_str(subject, 41), NULL);
    Expr *costly = bin(BIN_MATCH, field("s"), str("(a+)+$"));
    ck_bool(eval_in(bin(BIN_AND, field("f"), costly), ev), false);
    ck_bool(eval_in(bin(BIN_OR, field("t"), costly), ev), true);
    ck_assert_uint_eq(expr_scratch_regex_limit_hits(fx.scratch), 0);
    ck_bool(eval_in(bin(BIN_AND, field("t"), costly), ev), false);
    ck_assert_uint_eq(expr_scratch_regex_limit_hits(fx.scratch), 1);
}
END_TEST

/* ---- in ------------------------------------------------------------------- */

START_TEST(in_constant_list)
{
    Event *ev = event(0, "n", value_num(2), "s", test_str("b"), "code", test_str("1"),
                      "neg", value_num(-0.0), NULL);
    Expr *items = list(5, num(1), num(2), str("a"), str("b"), num(0));
    ck_bool(eval_in(bin(BIN_IN, field("n"), items), ev), true);
    ck_bool(eval_in(bin(BIN_IN, field("s"), items), ev), true);
    ck_bool(eval_in(bin(BIN_IN, field("code"), items), ev), false); /* "1" is not 1 */
    ck_bool(eval_in(bin(BIN_IN, field("neg"), items), ev), true);   /* -0 == 0 */
    ck_bool(eval_in(bin(BIN_IN, field("missing"), items), ev), false);
    ck_bool(eval_in(bin(BIN_IN, field("missing"), list(1, null_lit())), ev), false);
    ck_bool(eval_in(bin(BIN_IN, str("z"), items), ev), false);
    ck_bool(eval_in(bin(BIN_IN, num(2), list(0)), ev), false);
}
END_TEST

START_TEST(in_large_list)
{
    /* 200 numbers and 200 strings: every member found, non-members not. */
    Expr *big = node(EX_LIST);
    big->u.list.n = 400;
    big->u.list.items = arena_zalloc(&fx.ast, 400 * sizeof(Expr *));
    char *names = arena_alloc(&fx.ast, 200 * 8);
    for (int i = 0; i < 200; i++) {
        big->u.list.items[i] = num(i * 3);
        snprintf(names + i * 8, 8, "k%d", i);
        big->u.list.items[200 + i] = str(names + i * 8);
    }
    CExpr *ce = compile(bin(BIN_IN, field("v"), big));
    for (int i = 0; i < 600; i++) {
        Event *ev = event_new("{}", 2, N_SLOTS);
        ck_assert_ptr_nonnull(ev);
        ev->slots[slot("v")] = value_num(i);
        EvalCtx ctx = {ev, NULL, NULL, 0, 0};
        Value r = expr_eval(ce, &ctx, fx.scratch);
        ck_assert_int_eq(r.b, i % 3 == 0);
        char name[16];
        snprintf(name, sizeof name, "k%d", i);
        ev->slots[slot("v")] = test_str(name);
        r = expr_eval(ce, &ctx, fx.scratch);
        ck_assert_int_eq(r.b, i < 200);
        event_release(ev);
    }
}
END_TEST

START_TEST(in_runtime_list)
{
    Event *ev = event(0, "n", value_num(7), "m", value_num(7), "o", value_num(8), NULL);
    ck_bool(eval_in(bin(BIN_IN, field("n"), list(2, field("o"), field("m"))), ev), true);
    ck_bool(eval_in(bin(BIN_IN, field("n"), list(2, field("o"), num(1))), ev), false);
    ck_bool(eval_in(bin(BIN_IN, field("missing"), list(1, field("missing2"))), ev), false);
}
END_TEST

/* ---- regexes -------------------------------------------------------------- */

START_TEST(regex_match)
{
    Event *ev = event(0, "msg", test_str("ERROR disk full"), "n", value_num(500),
                      "u", test_str("\xc3\xa9"), NULL);
    ck_bool(eval_in(bin(BIN_MATCH, field("msg"), str("ERROR|FATAL")), ev), true);
    ck_bool(eval_in(bin(BIN_MATCH, field("msg"), str("^FATAL")), ev), false);
    ck_bool(eval_in(bin(BIN_NMATCH, field("msg"), str("^FATAL")), ev), true);
    ck_bool(eval_in(bin(BIN_NMATCH, field("msg"), str("disk")), ev), false);
    ck_bool(eval_in(bin(BIN_MATCH, field("msg"), str("(?i)error")), ev), true);
    ck_bool(eval_in(bin(BIN_MATCH, field("msg"), str("\\d")), ev), false);
    /* UTF-8: `.` is one code point. */
    ck_bool(eval_in(bin(BIN_MATCH, field("u"), str("^.$")), ev), true);
    /* Null and non-strings: false either way. */
    ck_bool(eval_in(bin(BIN_MATCH, field("missing"), str(".*")), ev), false);
    ck_bool(eval_in(bin(BIN_NMATCH, field("missing"), str("x")), ev), false);
    ck_bool(eval_in(bin(BIN_MATCH, field("n"), str("5")), ev), false);
    /* Subjects with NUL bytes and invalid UTF-8 still match. */
    Event *odd = event(0, "msg", value_str("a\0b\xff", 4), NULL);
    ck_bool(eval_in(bin(BIN_MATCH, field("msg"), str("b")), odd), true);
    ck_assert_uint_eq(expr_scratch_regex_limit_hits(fx.scratch), 0);
}
END_TEST

START_TEST(regex_catastrophic_backtracking)
{
    /* (a+)+$ on "aaaa...ab" backtracks exponentially: the match limit stops it. */
    static char subject[64];
    memset(subject, 'a', 40);
    subject[40] = 'b';
    Event *ev = event(0, "s", value_str(subject, 41), NULL);
    ck_bool(eval_in(bin(BIN_MATCH, field("s"), str("(a+)+$")), ev), false);
    ck_assert_uint_eq(expr_scratch_regex_limit_hits(fx.scratch), 1);
    ck_bool(eval_in(bin(BIN_NMATCH, field("s"), str("(a+)+$")), ev), true);
    ck_assert_uint_eq(expr_scratch_regex_limit_hits(fx.scratch), 2);
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 2, field("s"), str("(a+)+$")), ev));
    ck_assert_uint_eq(expr_scratch_regex_limit_hits(fx.scratch), 3);
    /* The same pattern on a short subject still works. */
    Event *ok = event(0, "s", test_str("aaa"), NULL);
    ck_bool(eval_in(bin(BIN_MATCH, field("s"), str("(a+)+$")), ok), true);
    ck_assert_uint_eq(expr_scratch_regex_limit_hits(fx.scratch), 3);
}
END_TEST

START_TEST(regex_extract_groups)
{
    Event *ev = event(0, "s", test_str("user=bob id=42"), NULL);
    ck_str(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 2, field("s"), str("id=(\\d+)")), ev),
           "42");
    ck_str(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 2, field("s"), str("id=\\d+")), ev),
           "id=42"); /* no group: the whole match */
    ck_str(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"),
                        str("(\\w+)=(\\w+)"), num(2)), ev), "bob");
    ck_str(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"),
                        str("(\\w+)=(\\w+)"), num(0)), ev), "user=bob");
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"),
                         str("(\\w+)=(\\w+)"), num(3)), ev));
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"),
                         str("(\\w+)"), num(0.5)), ev));
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 2, field("s"), str("x=(\\d+)")), ev));
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 2, field("missing"), str("(a)")), ev));
    /* An optional group that did not take part is null. */
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"),
                         str("user=(\\w+)( none)?"), num(2)), ev));
    /* More groups than the scratch's initial match data holds. */
    Event *many = event(0, "s", test_str("abcdefghijklmnopqrstuvwxyz"), NULL);
    char pattern[128] = "";
    for (int i = 0; i < 20; i++)
        strcat(pattern, "(.)");
    ck_str(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"), str(pattern),
                        num(20)), many), "t");
}
END_TEST

START_TEST(regex_errors)
{
    const char *msg = compile_error(bin(BIN_MATCH, field("s"), str("(unclosed")));
    ck_assert_msg(strstr(msg, "invalid regex") && strstr(msg, "offset 9"), "%s", msg);
    msg = compile_error(bin(BIN_MATCH, field("s"), field("t")));
    ck_assert_msg(strstr(msg, "string literal") != NULL, "%s", msg);
    msg = compile_error(call(FN_REGEX_EXTRACT, "regex_extract", 2, field("s"), str("[a-")));
    ck_assert_msg(strstr(msg, "invalid regex") != NULL, "%s", msg);
}
END_TEST

/* ---- functions ------------------------------------------------------------ */

START_TEST(string_functions)
{
    Event *ev = event(0, "s", test_str("H\xc3\xa9llo World"), "n", value_num(3), NULL);
    ck_str(eval_in(call(FN_LOWER, "lower", 1, field("s")), ev), "h\xc3\xa9llo world");
    ck_str(eval_in(call(FN_UPPER, "upper", 1, field("s")), ev), "H\xc3\xa9LLO WORLD");
    ck_str(eval_in(call(FN_LOWER, "lower", 1, str("abc")), ev), "abc");
    ck_null(eval_in(call(FN_LOWER, "lower", 1, field("n")), ev));
    ck_null(eval_in(call(FN_UPPER, "upper", 1, field("missing")), ev));
    ck_num(eval_in(call(FN_LEN, "len", 1, field("s")), ev), 11); /* code points, not bytes */
    ck_num(eval_in(call(FN_LEN, "len", 1, str("")), ev), 0);
    ck_null(eval_in(call(FN_LEN, "len", 1, field("n")), ev));
    ck_bool(eval_in(call(FN_STARTS_WITH, "starts_with", 2, field("s"), str("H\xc3\xa9")), ev), true);
    ck_bool(eval_in(call(FN_STARTS_WITH, "starts_with", 2, field("s"), str("World")), ev), false);
    ck_bool(eval_in(call(FN_ENDS_WITH, "ends_with", 2, field("s"), str("World")), ev), true);
    ck_bool(eval_in(call(FN_ENDS_WITH, "ends_with", 2, field("s"), str("Hello World!!")), ev),
            false);
    ck_bool(eval_in(call(FN_CONTAINS_STR, "contains", 2, field("s"), str("lo W")), ev), true);
    ck_bool(eval_in(call(FN_CONTAINS_STR, "contains", 2, field("s"), str("low")), ev), false);
    ck_bool(eval_in(call(FN_CONTAINS_STR, "contains", 2, field("s"), str("")), ev), true);
    ck_bool(eval_in(call(FN_CONTAINS_STR, "contains", 2, str("aab"), str("ab")), ev), true);
    ck_null(eval_in(call(FN_CONTAINS_STR, "contains", 2, field("missing"), str("a")), ev));
    ck_null(eval_in(call(FN_STARTS_WITH, "starts_with", 2, field("s"), field("n")), ev));
}
END_TEST

START_TEST(len_of_arrays_and_objects)
{
    Event *ev = event(0, "arr", test_raw_json(V_ARR, "[1, [2, 3], \"a,]b\", {\"x\": [4,5]}]"),
                      "empty", test_raw_json(V_ARR, "[ ]"),
                      "obj", test_raw_json(V_OBJ, "{\"a\":1,\"b\":2}"),
                      "eobj", test_raw_json(V_OBJ, "{}"),
                      "one", test_raw_json(V_ARR, "[\"\\\"]\"]"), NULL);
    ck_num(eval_in(call(FN_LEN, "len", 1, field("arr")), ev), 4);
    ck_num(eval_in(call(FN_LEN, "len", 1, field("empty")), ev), 0);
    ck_num(eval_in(call(FN_LEN, "len", 1, field("obj")), ev), 2);
    ck_num(eval_in(call(FN_LEN, "len", 1, field("eobj")), ev), 0);
    ck_num(eval_in(call(FN_LEN, "len", 1, field("one")), ev), 1);
}
END_TEST

START_TEST(math_functions)
{
    ck_num(eval0(call(FN_ABS, "abs", 1, num(-2.5))), 2.5);
    ck_dur(eval0(call(FN_ABS, "abs", 1, un(UN_NEG, dur(300)))), 300);
    ck_num(eval0(call(FN_ROUND, "round", 1, num(2.5))), 3);
    ck_num(eval0(call(FN_ROUND, "round", 1, num(-2.5))), -3);
    ck_num(eval0(call(FN_ROUND, "round", 1, num(2.4))), 2);
    ck_num(eval0(call(FN_FLOOR, "floor", 1, num(-1.5))), -2);
    ck_num(eval0(call(FN_CEIL, "ceil", 1, num(1.2))), 2);
    ck_null(eval0(call(FN_CEIL, "ceil", 1, str("1.2"))));
    ck_null(eval0(call(FN_ABS, "abs", 1, null_lit())));
    ck_num(eval0(call(FN_MIN2, "min", 2, num(3), num(-1))), -1);
    ck_num(eval0(call(FN_MAX2, "max", 2, num(3), num(-1))), 3);
    ck_str(eval0(call(FN_MAX2, "max", 2, str("apple"), str("banana"))), "banana");
    ck_dur(eval0(call(FN_MIN2, "min", 2, dur(5), dur(3))), 3);
    ck_null(eval0(call(FN_MIN2, "min", 2, num(3), str("a"))));
    ck_null(eval0(call(FN_MAX2, "max", 2, num(3), null_lit())));
}
END_TEST

START_TEST(null_handling_functions)
{
    Event *ev = event(0, "nothing", value_null(), "zero", value_num(0), "s", test_str("x"), NULL);
    ck_bool(eval_in(call(FN_EXISTS, "exists", 1, field("missing")), ev), false);
    ck_bool(eval_in(call(FN_EXISTS, "exists", 1, field("nothing")), ev), true);
    ck_bool(eval_in(call(FN_EXISTS, "exists", 1, field("zero")), ev), true);
    ck_num(eval_in(call(FN_COALESCE, "coalesce", 3, field("missing"), field("nothing"),
                        field("zero")), ev), 0);
    ck_str(eval_in(call(FN_COALESCE, "coalesce", 2, field("s"), num(1)), ev), "x");
    ck_null(eval_in(call(FN_COALESCE, "coalesce", 2, field("missing"), null_lit()), ev));
}
END_TEST

START_TEST(conversions)
{
    Event *ev = event(1767226140000,
                      "id", test_raw_num(1234567890123456789.0, "1234567890123456789"),
                      "obj", test_raw_json(V_OBJ, "{\"a\":1}"), NULL);
    ck_str(eval0(call(FN_STR, "str", 1, num(1.5))), "1.5");
    ck_str(eval0(call(FN_STR, "str", 1, num(1e6))), "1000000");
    ck_str(eval0(call(FN_STR, "str", 1, boolean(false))), "false");
    ck_str(eval0(call(FN_STR, "str", 1, str("s"))), "s");
    ck_str(eval0(call(FN_STR, "str", 1, dur(1500))), "1500");
    ck_null(eval0(call(FN_STR, "str", 1, null_lit())));
    ck_str(eval_in(call(FN_STR, "str", 1, field("id")), ev), "1234567890123456789");
    ck_str(eval_in(call(FN_STR, "str", 1, field("obj")), ev), "{\"a\":1}");
    ck_str(eval_in(call(FN_STR, "str", 1, call(FN_TIME, "time", 0)), ev),
           "2026-01-01T00:09:00.000Z");
    ck_num(eval0(call(FN_NUM, "num", 1, str("42"))), 42);
    ck_num(eval0(call(FN_NUM, "num", 1, str(" -3.5e2 "))), -350);
    ck_num(eval0(call(FN_NUM, "num", 1, num(7))), 7);
    ck_num(eval0(call(FN_NUM, "num", 1, boolean(true))), 1);
    ck_num(eval0(call(FN_NUM, "num", 1, dur(2000))), 2000);
    ck_null(eval0(call(FN_NUM, "num", 1, str("abc"))));
    ck_null(eval0(call(FN_NUM, "num", 1, str("12abc"))));
    ck_null(eval0(call(FN_NUM, "num", 1, str("0x10"))));
    ck_null(eval0(call(FN_NUM, "num", 1, str("inf"))));
    ck_null(eval0(call(FN_NUM, "num", 1, str("1e999"))));
    ck_null(eval0(call(FN_NUM, "num", 1, str(""))));
    ck_null(eval0(call(FN_NUM, "num", 1, str("-"))));
    ck_null(eval0(call(FN_NUM, "num", 1, null_lit())));
    /* A long numeric string is parsed too (beyond the small stack buffer). */
    char *longnum = arena_alloc(&fx.ast, 120);
    memset(longnum, '0', 100);
    strcpy(longnum + 100, "12.5");
    ck_num(eval0(call(FN_NUM, "num", 1, str(longnum))), 12.5);
    Value s = value_str("1\0" "2", 3);
    Event *nul = event(0, "s", s, NULL);
    ck_null(eval_in(call(FN_NUM, "num", 1, field("s")), nul));
}
END_TEST

/* ---- time and durations --------------------------------------------------- */

START_TEST(time_arithmetic)
{
    Event *first = event(1000, NULL);
    take(0, first);
    Event *now = event(61000, NULL);
    Expr *since = bin(BIN_SUB, call(FN_TIME, "time", 0), call(FN_TIME, "time", 1, stepf("a")));
    ck_dur(eval_in(since, now), 60000);
    ck_bool(eval_in(bin(BIN_LT, since, dur(5 * 60000)), now), true);
    ck_bool(eval_in(bin(BIN_GE, since, dur(60000)), now), true);
    ck_time(eval_in(call(FN_TIME, "time", 0), now), 61000);
    ck_time(eval_in(call(FN_TIME, "time", 1, stepf("a")), now), 1000);
    ck_null(eval_in(call(FN_TIME, "time", 1, stepf("b")), now)); /* no event for b yet */
    ck_time(eval_in(bin(BIN_ADD, call(FN_TIME, "time", 0), dur(500)), now), 61500);
    ck_time(eval_in(bin(BIN_ADD, dur(500), call(FN_TIME, "time", 0)), now), 61500);
    ck_time(eval_in(bin(BIN_SUB, call(FN_TIME, "time", 0), dur(1000)), now), 60000);
    ck_null(eval_in(bin(BIN_ADD, call(FN_TIME, "time", 0), call(FN_TIME, "time", 0)), now));
    ck_null(eval_in(bin(BIN_SUB, dur(5), call(FN_TIME, "time", 0)), now));
    ck_null(eval_in(bin(BIN_ADD, call(FN_TIME, "time", 0), num(5)), now));
}
END_TEST

START_TEST(duration_arithmetic)
{
    ck_dur(eval0(bin(BIN_ADD, dur(1000), dur(500))), 1500);
    ck_dur(eval0(bin(BIN_SUB, dur(1000), dur(1500))), -500);
    ck_dur(eval0(bin(BIN_MUL, dur(1000), num(2.5))), 2500);
    ck_dur(eval0(bin(BIN_MUL, num(3), dur(1000))), 3000);
    ck_dur(eval0(bin(BIN_DIV, dur(1000), num(4))), 250);
    ck_num(eval0(bin(BIN_DIV, dur(1000), dur(250))), 4);
    ck_dur(eval0(bin(BIN_MOD, dur(1000), dur(300))), 100);
    ck_null(eval0(bin(BIN_DIV, dur(1000), num(0))));
    ck_null(eval0(bin(BIN_DIV, dur(1000), dur(0))));
    ck_null(eval0(bin(BIN_MUL, dur(1000), dur(2))));
    ck_null(eval0(bin(BIN_ADD, dur(1000), num(2))));
    ck_dur(eval0(un(UN_NEG, dur(5))), -5);
    ck_bool(eval0(bin(BIN_LT, dur(59000), dur(60000))), true);
    ck_bool(eval0(bin(BIN_EQ, dur(60000), dur(60000))), true);
    /* Overflow gives null, not a wrapped value. */
    ck_null(eval0(bin(BIN_ADD, dur(INT64_MAX), dur(1))));
    ck_null(eval0(bin(BIN_MUL, dur(INT64_MAX / 2), num(4))));
    ck_null(eval0(bin(BIN_MUL, dur(1), num(NAN))));
    ck_dur(eval0(bin(BIN_MOD, dur(INT64_MIN), un(UN_NEG, dur(1)))), 0);
}
END_TEST

/* ---- paths, steps, keys and aggregates ------------------------------------ */

START_TEST(step_fields_read_last_event)
{
    take(0, event(1, "amount", value_num(10), NULL));
    take(1, event(2, "amount", value_num(99), NULL));
    take(0, event(3, "amount", value_num(20), NULL));
    Event *cur = event(4, "amount", value_num(30), NULL);
    ck_num(eval_in(stepf("a.amount"), cur), 20);
    ck_num(eval_in(stepf("b.amount"), cur), 99);
    ck_null(eval_in(stepf("c.amount"), cur));
    ck_assert_int_eq(eval_in(stepf("c.amount"), cur).type, V_MISSING);
    ck_num(eval_in(field("amount"), cur), 30);
    /* In actions there is no current event: bare fields read the match's last event. */
    ck_num(eval_in(field("amount"), NULL), 20);
}
END_TEST

START_TEST(keys)
{
    Value keyvals[2] = {test_str("u7"),
                        test_raw_num(12345678901234567890.0, "12345678901234567890")};
    CExpr *ce = compile(key(0));
    CExpr *ce2 = compile(key(1));
    EvalCtx ctx = {NULL, NULL, keyvals, 2, 0};
    ck_str(expr_eval(ce, &ctx, fx.scratch), "u7");
    Value big = expr_eval(ce2, &ctx, fx.scratch);
    ck_assert_int_eq(strncmp(big.raw, "12345678901234567890", big.raw_len), 0);
    EvalCtx none = {NULL, NULL, NULL, 0, 0};
    ck_null(expr_eval(ce, &none, fx.scratch));
}
END_TEST

/* a: amounts 10, 20, (missing), 30, 20 and tags; b: amount 1000 in between. */
static void build_chain(void)
{
    take(0, event(1000, "amount", value_num(10), "tag", test_str("x"), NULL));
    take(0, event(2000, "amount", value_num(20), "tag", test_str("y"), NULL));
    take(1, event(2500, "amount", value_num(1000), "tag", test_str("z"), NULL));
    take(0, event(3000, "tag", test_str("x"), "other", value_null(), NULL));
    take(0, event(4000, "amount", test_raw_num(30, "30.0"), "tag", value_num(5), NULL));
    take(0, event(5000, "amount", value_num(20), "tag", test_str("x"), NULL));
}

START_TEST(aggregates)
{
    build_chain();
    Event *cur = event(6000, "amount", value_num(1), NULL);
    ck_num(eval_in(call(FN_COUNT, "count", 1, stepf("a")), cur), 5);
    ck_num(eval_in(call(FN_COUNT, "count", 1, stepf("b")), cur), 1);
    ck_num(eval_in(call(FN_COUNT, "count", 1, stepf("a.amount")), cur), 4);
    ck_num(eval_in(call(FN_SUM, "sum", 1, stepf("a.amount")), cur), 80);
    ck_num(eval_in(call(FN_SUM, "sum", 1, stepf("a.tag")), cur), 5); /* non-numbers skipped */
    ck_num(eval_in(call(FN_AVG, "avg", 1, stepf("a.amount")), cur), 20);
    ck_num(eval_in(call(FN_MIN, "min", 1, stepf("a.amount")), cur), 10);
    Value mx = eval_in(call(FN_MAX, "max", 1, stepf("a.amount")), cur);
    ck_num(mx, 30);
    ck_assert_int_eq(strncmp(mx.raw, "30.0", mx.raw_len), 0); /* the event's own value */
    ck_num(eval_in(call(FN_COUNT_DISTINCT, "count_distinct", 1, stepf("a.amount")), cur), 3);
    ck_num(eval_in(call(FN_COUNT_DISTINCT, "count_distinct", 1, stepf("a.tag")), cur), 3);
    ck_num(eval_in(call(FN_FIRST, "first", 1, stepf("a.amount")), cur), 10);
    ck_num(eval_in(call(FN_LAST, "last", 1, stepf("a.amount")), cur), 20);
    ck_null(eval_in(call(FN_FIRST, "first", 1, stepf("a.other")), cur));
    ck_bool(eval_in(call(FN_CONTAINS_AGG, "contains", 2, stepf("a.tag"), str("y")), cur), true);
    ck_bool(eval_in(call(FN_CONTAINS_AGG, "contains", 2, stepf("a.tag"), str("z")), cur), false);
    ck_bool(eval_in(call(FN_CONTAINS_AGG, "contains", 2, stepf("a.amount"), field("amount")),
                    cur), false);
    ck_bool(eval_in(call(FN_CONTAINS_AGG, "contains", 2, stepf("a.amount"), num(30)), cur), true);
    ck_bool(eval_in(call(FN_CONTAINS_AGG, "contains", 2, stepf("a.other"), null_lit()), cur),
            false);
}
END_TEST

/* Two values are the same result: same type, same content, same raw text. */
static bool same_result(const Value *x, const Value *y)
{
    if (x->type != y->type)
        return false;
    if (x->type == V_NUM && x->num != y->num && !(isnan(x->num) && isnan(y->num)))
        return false;
    if (x->type != V_NUM && !value_equal(x, y) && !value_is_null(x))
        return false;
    if ((x->raw == NULL) != (y->raw == NULL))
        return false;
    return !x->raw || (x->raw_len == y->raw_len && memcmp(x->raw, y->raw, x->raw_len) == 0);
}

/* The running aggregates kept per node (expr_bind_aggregates + expr_agg_fold) give
 * exactly what a re-scan of the chain gives, after every node of a long random chain
 * of numbers (with fractions whose sums depend on order), strings, nulls, booleans
 * and missing fields over three steps. */
START_TEST(running_aggregates_match_rescan)
{
    static const FuncId fns[] = {FN_COUNT, FN_SUM, FN_AVG, FN_MIN, FN_MAX, FN_FIRST, FN_LAST};
    static const char *const names[] = {"count", "sum", "avg", "min", "max", "first", "last"};
    static const char *const fields[] = {"a.v", "b.v", "a.w"};
    enum { N_FN = 7, N_F = 3, N_EXPR = N_FN * N_F + 2 };
    CExpr *bound[N_EXPR], *rescan[N_EXPR];
    AggKey *keys = NULL;
    size_t n_keys = 0;
    for (size_t i = 0; i < N_EXPR; i++) {
        Expr *e = i < N_FN * N_F ? call(fns[i % N_FN], names[i % N_FN], 1, stepf(fields[i / N_FN]))
                                 : call(FN_COUNT, "count", 1, stepf(i % 2 ? "a" : "b"));
        bound[i] = compile(e);
        rescan[i] = compile(e);
        ck_assert(expr_bind_aggregates(bound[i], &keys, &n_keys));
    }
    ck_assert_uint_eq(n_keys, N_F + 2);   /* one key per (step, field), shared by functions */
    static const char *const words[] = {"pear", "apple", "fig", "apple"};
    unsigned seed = 12345;
    MatchNode *chain = NULL;
    Event *evs[400];
    for (int i = 0; i < 400; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = seed >> 8;
        Value v;
        switch (r % 6) {
        case 0: v = value_str(words[r / 6 % 4], strlen(words[r / 6 % 4])); break;
        case 1: v = value_null(); break;
        case 2: v = value_bool(r & 64); break;
        case 3: v = value_missing(); break;
        default: v = value_num((double)(r % 1000) / 10.0 - 30.0); break;
        }
        Value w = value_num((r % 7) * 0.1);
        evs[i] = event_new("{}", 2, N_SLOTS);
        ck_assert_ptr_nonnull(evs[i]);
        evs[i]->slots[slot("v")] = v;
        if (r % 5)
            evs[i]->slots[slot("w")] = w;
        uint16_t step = (uint16_t)(r % 3 ? 0 : 1);
        MatchNode *n = match_node_new_acc(chain, evs[i], step, (uint16_t)n_keys);
        ck_assert_ptr_nonnull(n);
        for (size_t k = 0; k < n_keys; k++)
            if (keys[k].step == step)
                expr_agg_fold(&n->acc[k], &keys[k], evs[i]);
        match_node_release(chain);
        chain = n;
        EvalCtx ctx = {.match = chain};
        for (size_t e = 0; e < N_EXPR; e++) {
            Value x = expr_eval(bound[e], &ctx, fx.scratch);
            Value y = expr_eval(rescan[e], &ctx, fx.scratch);
            ck_assert_msg(same_result(&x, &y), "expr %zu after %d nodes: types %d/%d", e, i + 1,
                          (int)x.type, (int)y.type);
        }
        expr_scratch_reset(fx.scratch);
    }
    match_node_release(chain);
    for (int i = 0; i < 400; i++)
        event_release(evs[i]);
    free(keys);
}
END_TEST

START_TEST(aggregates_over_no_events)
{
    take(0, event(1000, "amount", value_num(10), NULL));
    Event *cur = event(2000, NULL);
    ck_num(eval_in(call(FN_COUNT, "count", 1, stepf("c")), cur), 0);
    ck_num(eval_in(call(FN_SUM, "sum", 1, stepf("c.amount")), cur), 0);
    ck_null(eval_in(call(FN_AVG, "avg", 1, stepf("c.amount")), cur));
    ck_null(eval_in(call(FN_MIN, "min", 1, stepf("c.amount")), cur));
    ck_null(eval_in(call(FN_MAX, "max", 1, stepf("c.amount")), cur));
    ck_num(eval_in(call(FN_COUNT_DISTINCT, "count_distinct", 1, stepf("c.amount")), cur), 0);
    ck_null(eval_in(call(FN_FIRST, "first", 1, stepf("c.amount")), cur));
    ck_null(eval_in(call(FN_LAST, "last", 1, stepf("c.amount")), cur));
    ck_bool(eval_in(call(FN_CONTAINS_AGG, "contains", 2, stepf("c.amount"), num(1)), cur), false);
    /* And with no match at all. */
    match_node_release(fx.match);
    fx.match = NULL;
    ck_num(eval_in(call(FN_COUNT, "count", 1, stepf("a")), cur), 0);
    ck_null(eval_in(call(FN_AVG, "avg", 1, stepf("a.amount")), cur));
}
END_TEST

START_TEST(flink_average_condition)
{
    /* Flink SQL's iterative condition: (sum(a.price) + price) / (count(a) + 1) < 15. */
    Expr *cond = bin(BIN_LT,
                     bin(BIN_DIV,
                         bin(BIN_ADD, call(FN_SUM, "sum", 1, stepf("a.price")), field("price")),
                         bin(BIN_ADD, call(FN_COUNT, "count", 1, stepf("a")), num(1))),
                     num(15));
    CExpr *ce = compile(cond);
    ck_assert(expr_is_iterative(ce));
    static const double prices[] = {10, 15, 20, 12, 30};
    static const bool expected[] = {true, true, false, true, false};
    /* Accept each event into `a` while the condition holds, as the matcher would. */
    for (size_t i = 0; i < sizeof prices / sizeof prices[0]; i++) {
        Event *ev = event((int64_t)i, "price", value_num(prices[i]), NULL);
        EvalCtx ctx = {ev, fx.match, NULL, 0, ev->time_ms};
        bool holds = expr_test(ce, &ctx, fx.scratch);
        ck_assert_msg(holds == expected[i], "price %g", prices[i]);
        if (holds)
            take(0, ev);
    }
    ck_num(eval_in(call(FN_COUNT, "count", 1, stepf("a")), NULL), 3);
}
END_TEST

START_TEST(count_distinct_many)
{
    /* 5000 events with 97 distinct values (numbers) plus equal-by-value raw forms. */
    for (int i = 0; i < 5000; i++) {
        Event *ev = event_new("{}", 2, N_SLOTS);
        ck_assert_ptr_nonnull(ev);
        ev->slots[slot("v")] = i % 2 ? value_num(i % 97) : test_raw_num(i % 97, "x");
        take(0, ev);
        event_release(ev);
    }
    ck_num(eval_in(call(FN_COUNT_DISTINCT, "count_distinct", 1, stepf("a.v")), NULL), 97);
    ck_num(eval_in(call(FN_COUNT, "count", 1, stepf("a")), NULL), 5000);
}
END_TEST

START_TEST(iterative_flag)
{
    ck_assert(!expr_is_iterative(compile(bin(BIN_GT, field("amount"), num(1)))));
    ck_assert(!expr_is_iterative(compile(call(FN_TIME, "time", 0))));
    ck_assert(!expr_is_iterative(compile(key(0))));
    ck_assert(expr_is_iterative(compile(bin(BIN_GT, field("amount"), stepf("a.amount")))));
    ck_assert(expr_is_iterative(compile(call(FN_COUNT, "count", 1, stepf("b")))));
    ck_assert(expr_is_iterative(compile(call(FN_TIME, "time", 1, stepf("a")))));
    ck_assert(expr_is_iterative(compile(
        bin(BIN_OR, boolean(false), call(FN_CONTAINS_AGG, "contains", 2, stepf("a.x"), num(1))))));
}
END_TEST

START_TEST(fields_are_interned)
{
    compile(bin(BIN_GT, field("payload.card.bin"), field("amount")));
    compile(bin(BIN_GT, stepf("a.amount"), call(FN_SUM, "sum", 1, stepf("b.payload.card.bin"))));
    /* Step fields read the same slots as bare fields. */
    ck_assert_uint_eq(fx.fields.n, 2);
    ck_assert_str_eq(fx.fields.paths[0].text, "payload.card.bin");
    ck_assert_str_eq(fx.fields.paths[1].text, "amount");
}
END_TEST

/* ---- compile errors ------------------------------------------------------- */

START_TEST(compile_errors)
{
    Expr *unresolved = field("x");
    unresolved->u.path.kind = PATH_UNRESOLVED;
    const char *msg = compile_error(unresolved);
    ck_assert_msg(strstr(msg, "unresolved") != NULL, "%s", msg);
    msg = compile_error(call(FN_UNRESOLVED, "nosuch", 0));
    ck_assert_msg(strstr(msg, "nosuch") != NULL, "%s", msg);
    msg = compile_error(list(1, num(1)));
    ck_assert_msg(strstr(msg, "only allowed after `in`") != NULL, "%s", msg);
    msg = compile_error(bin(BIN_IN, num(1), field("x")));
    ck_assert_msg(strstr(msg, "needs a list") != NULL, "%s", msg);
    msg = compile_error(call(FN_SUM, "sum", 1, field("amount")));
    ck_assert_msg(strstr(msg, "sum() needs a step field") != NULL, "%s", msg);
    msg = compile_error(call(FN_SUM, "sum", 1, stepf("a")));
    ck_assert_msg(strstr(msg, "needs a step field") != NULL, "%s", msg);
    msg = compile_error(call(FN_LOWER, "lower", 2, str("a"), str("b")));
    ck_assert_msg(strstr(msg, "wrong number of arguments to lower()") != NULL, "%s", msg);
    msg = compile_error(stepf("a"));
    ck_assert_msg(strstr(msg, "step 'a' is not a value") != NULL, "%s", msg);
    msg = compile_error(call(FN_TIME, "time", 1, stepf("a.ts")));
    ck_assert_msg(strstr(msg, "takes a step") != NULL, "%s", msg);
    Expr *bad_step = stepf("a.x");
    bad_step->u.path.step = 7;
    msg = compile_error(bad_step);
    ck_assert_msg(strstr(msg, "out of range") != NULL, "%s", msg);
    /* Messages carry the position. */
    Expr *at = call(FN_UNRESOLVED, "f", 0);
    at->u.call.name_span.line = 3;
    at->u.call.name_span.col = 14;
    msg = compile_error(at);
    ck_assert_msg(strncmp(msg, "3:14: ", 6) == 0, "%s", msg);
    /* A NULL err pointer is allowed. */
    ck_assert_ptr_null(expr_compile(list(0), &fx.env, NULL));
}
END_TEST

START_TEST(nesting_limit)
{
    Expr *deep = field("t");
    for (int i = 0; i < 900; i++)
        deep = un(UN_NOT, deep);
    Event *ev = event(0, "t", value_bool(true), NULL);
    ck_bool(eval_in(deep, ev), true); /* 900 negations: even */
    for (int i = 0; i < 200; i++)
        deep = un(UN_NOT, deep);
    const char *msg = compile_error(deep);
    ck_assert_msg(strstr(msg, "nested too deeply") != NULL, "%s", msg);
}
END_TEST

/* ---- through the parser and checker --------------------------------------- */

/* Fails the test with the printed diagnostics if there are errors. */
static void assert_no_errors(const Diags *d)
{
    if (d->errors == 0)
        return;
    ck_abort_msg("unexpected errors:\n%s", test_diags_text(d));
}

static RuleSet *parse_checked(const char *text)
{
    RuleSet *rs = test_parse_checked(text);
    ck_assert_uint_ge(rs->n_rules, 1);
    return rs;
}

/* Compiles a parsed expression of `rule`. */
static CExpr *compile_for(const Rule *rule, const Expr *e)
{
    ck_assert_ptr_nonnull(e);
    fx.env.rule = rule;
    return compile(e);
}

/* Renders a message template the way an alert would: literal parts and the text
 * form of each interpolated value. */
static char *render(const Rule *rule, const Template *t, const EvalCtx *ctx)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < t->n_parts; i++) {
        if (!t->parts[i].expr) {
            buf_append(&b, t->parts[i].text, t->parts[i].len);
            continue;
        }
        Value v = expr_eval(compile_for(rule, t->parts[i].expr), ctx, fx.scratch);
        value_to_text(&v, &b);
    }
    ck_assert(!b.failed);
    return buf_steal(&b);
}

static const char PARSED_RULE[] =
    "rule t {\n"
    "  key user;\n"
    "  begin a where amount > 10 and name =~ '^b' times 2;\n"
    "  followed_by b where time() - time(a) < 5m and lower(country) in [\"de\", \"fr\"]\n"
    "                  and amount > a.amount;\n"
    "  within 10m;\n"
    "  on match alert \"user {key.user}: {count(a)} then {amount} at {time()}\"\n"
    "    fields { total: sum(a.amount) + b.amount, u: key.user, avg: avg(a.amount),\n"
    "             tag: regex_extract(name, 'b(o+)'), first_a: first(a.name) };\n"
    "}\n";

START_TEST(parsed_rule_conditions)
{
    RuleSet *rs = parse_checked(PARSED_RULE);
    const Rule *r = &rs->rules[0];
    ck_assert_uint_eq(r->n_steps, 2);
    CExpr *where_a = compile_for(r, r->steps[0].where);
    CExpr *where_b = compile_for(r, r->steps[1].where);
    ck_assert(!expr_is_iterative(where_a));
    ck_assert(expr_is_iterative(where_b));

    Event *e1 = event(0, "amount", value_num(20), "name", test_str("bob"), NULL);
    Event *low = event(0, "amount", value_num(5), "name", test_str("bob"), NULL);
    Event *alice = event(0, "amount", value_num(50), "name", test_str("alice"), NULL);
    EvalCtx c1 = {e1, NULL, NULL, 0, 0}, c2 = {low, NULL, NULL, 0, 0}, c3 = {alice, NULL, NULL, 0, 0};
    ck_assert(expr_test(where_a, &c1, fx.scratch));
    ck_assert(!expr_test(where_a, &c2, fx.scratch));
    ck_assert(!expr_test(where_a, &c3, fx.scratch));

    take(0, e1);
    take(0, event(60000, "amount", value_num(30), "name", test_str("boo"), NULL));
    Event *in_time = event(120000, "amount", value_num(40), "country", test_str("DE"),
                           "name", test_str("bo"), NULL);
    Event *late = event(400000, "amount", value_num(40), "country", test_str("fr"), NULL);
    Event *small = event(120000, "amount", value_num(30), "country", test_str("fr"), NULL);
    Event *other = event(120000, "amount", value_num(99), "country", test_str("us"), NULL);
    EvalCtx ok = {in_time, fx.match, NULL, 0, in_time->time_ms};
    EvalCtx too_late = {late, fx.match, NULL, 0, late->time_ms};
    EvalCtx not_bigger = {small, fx.match, NULL, 0, small->time_ms};
    EvalCtx wrong_country = {other, fx.match, NULL, 0, other->time_ms};
    ck_assert(expr_test(where_b, &ok, fx.scratch));
    ck_assert(!expr_test(where_b, &too_late, fx.scratch));
    ck_assert(!expr_test(where_b, &not_bigger, fx.scratch));
    ck_assert(!expr_test(where_b, &wrong_country, fx.scratch));

    /* The action, after b took in_time: bare fields read the match's last event. */
    take(1, in_time);
    Value key_values[1] = {test_str("u1")};
    EvalCtx action = {NULL, fx.match, key_values, 1, in_time->time_ms};
    const Action *act = &r->on[0].actions[0];
    ck_assert_uint_eq(act->n_fields, 5);
    CExpr *total = compile_for(r, act->fields[0].value);
    ck_num(expr_eval(total, &action, fx.scratch), 90);
    ck_str(expr_eval(compile_for(r, act->fields[1].value), &action, fx.scratch), "u1");
    ck_num(expr_eval(compile_for(r, act->fields[2].value), &action, fx.scratch), 25);
    ck_str(expr_eval(compile_for(r, act->fields[3].value), &action, fx.scratch), "o");
    ck_str(expr_eval(compile_for(r, act->fields[4].value), &action, fx.scratch), "bob");
    char *msg = render(r, &act->message, &action);
    ck_assert_str_eq(msg, "user u1: 2 then 40 at 1970-01-01T00:02:00.000Z");
    free(msg);
    ast_ruleset_free(rs); /* the programs do not borrow from the AST */
    ck_num(expr_eval(total, &action, fx.scratch), 90);
    ck_assert(expr_test(where_b, &ok, fx.scratch)); /* its `in` strings are its own */
}
END_TEST

START_TEST(parsed_operators)
{
    RuleSet *rs = parse_checked(
        "rule p {\n"
        "  begin a where (1 + 2 * 3 == 7) and not (x != null) and -2 * 3 % 4 == -2\n"
        "    and \"ab\" + \"c\" == 'abc' and 7 / 2 == 3.5 and 90s == 1m + 30s\n"
        "    and coalesce(x, 'd') in ['d'] and len(\"h\\u00e9\") == 2 and str(1.50) == \"1.5\";\n"
        "}\n");
    const Rule *r = &rs->rules[0];
    CExpr *ce = compile_for(r, r->steps[0].where);
    Event *ev = event(0, NULL);
    EvalCtx ctx = {ev, NULL, NULL, 0, 0};
    ck_bool(expr_eval(ce, &ctx, fx.scratch), true);
    Event *with_x = event(0, "x", value_num(1), NULL);
    EvalCtx ctx2 = {with_x, NULL, NULL, 0, 0};
    ck_bool(expr_eval(ce, &ctx2, fx.scratch), false);
    ast_ruleset_free(rs);
}
END_TEST

/* The value of "NAME": in a flat JSON line (numbers and simple strings only). */
static const char *json_field(const char *line, const char *name, char *out, size_t cap)
{
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\":", name);
    const char *p = strstr(line, quoted);
    ck_assert_msg(p != NULL, "no %s in %s", name, line);
    p += strlen(quoted);
    while (*p == ' ' || *p == '"')
        p++;
    size_t n = strcspn(p, "\",}");
    ck_assert_uint_lt(n, cap);
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

START_TEST(conformance_iterative_avg)
{
    /* Flink SQL's example: A+ B where (sum(a.price) + price) / (count(a) + 1) < 15.
     * Feed the case's events to step a's condition, accepting while it holds, and
     * compare the accepted ids with the first expected match. */
    const char *shared = getenv("VIGIL_SHARED");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/conformance/iterative_avg", shared ? shared : "");
    char rules[1100], events_path[1100], expect_path[1100];
    snprintf(rules, sizeof rules, "%s/rules.cep", dir);
    snprintf(events_path, sizeof events_path, "%s/cases/prices.events.jsonl", dir);
    snprintf(expect_path, sizeof expect_path, "%s/cases/prices.expect.jsonl", dir);
    FILE *events = fopen(events_path, "r");
    FILE *expect = fopen(expect_path, "r");
    if (!shared || !events || !expect) {
        printf("SKIP conformance_iterative_avg: %s not found (set VIGIL_SHARED)\n", dir);
        if (events)
            fclose(events);
        if (expect)
            fclose(expect);
        return;
    }
    Diags d;
    diags_init(&d);
    const char *paths[] = {rules};
    RuleSet *rs = dsl_load(paths, 1, &d);
    ck_assert_ptr_nonnull(rs);
    assert_no_errors(&d);
    diags_free(&d);
    const Rule *r = &rs->rules[0];
    CExpr *cond = compile_for(r, r->steps[0].where);

    Buf accepted = BUF_INIT;
    char line[512], id[64], price[64];
    while (fgets(line, sizeof line, events)) {
        Event *ev = event(0, "price", value_num(strtod(json_field(line, "price", price,
                                                                   sizeof price), NULL)), NULL);
        EvalCtx ctx = {ev, fx.match, NULL, 0, 0};
        if (!expr_test(cond, &ctx, fx.scratch))
            break;
        take(0, ev);
        buf_printf(&accepted, "%s{\"id\": \"%s\"}", accepted.len ? ", " : "",
                   json_field(line, "id", id, sizeof id));
    }
    ck_assert_ptr_nonnull(fgets(line, sizeof line, expect));
    ck_assert_ptr_nonnull(accepted.data);
    char want[600];
    snprintf(want, sizeof want, "\"a\": [%s]", accepted.data);
    ck_assert_msg(strstr(line, want) != NULL, "accepted %s, expected %s", want, line);
    buf_free(&accepted);
    fclose(events);
    fclose(expect);
    ast_ruleset_free(rs);
}
END_TEST

/* ---- coverage: edge values the other tests leave out ------------------------ */

START_TEST(edge_values_of_functions)
{
    Event *ev = event(0, "arr", test_raw_json(V_ARR, "[1,2]"), "s", test_str("id=7"), NULL);
    /* booleans and arrays as text and numbers */
    ck_str(eval0(call(FN_STR, "str", 1, boolean(true))), "true");
    ck_str(eval_in(call(FN_STR, "str", 1, field("arr")), ev), "[1,2]");
    ck_num(eval0(call(FN_NUM, "num", 1, boolean(false))), 0);
    /* the one duration that has no negation or absolute value */
    ck_null(eval0(un(UN_NEG, dur(INT64_MIN))));
    ck_null(eval0(call(FN_ABS, "abs", 1, dur(INT64_MIN))));
    ck_dur(eval0(call(FN_ABS, "abs", 1, dur(-1500))), 1500);
    ck_dur(eval0(call(FN_ABS, "abs", 1, dur(INT64_MAX))), INT64_MAX);
    ck_null(eval0(call(FN_ABS, "abs", 1, str("5"))));
    /* strings joined with an empty side */
    ck_str(eval_in(bin(BIN_ADD, field("s"), str("")), ev), "id=7");
    ck_str(eval_in(bin(BIN_ADD, str(""), field("s")), ev), "id=7");
    ck_str(eval0(bin(BIN_ADD, str(""), str(""))), "");
    /* a group number that is not a whole number in range gives null */
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"), str("id=(\\d+)"),
                         num(-1)), ev));
    ck_null(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"), str("id=(\\d+)"),
                         str("1")), ev));
    ck_str(eval_in(call(FN_REGEX_EXTRACT, "regex_extract", 3, field("s"), str("id=(\\d+)"),
                        num(1)), ev), "7");
}
END_TEST

static Suite *expr_suite(void)
{
    Suite *s = suite_create("expr");
    struct { const char *name; const TTest *tests[16]; } groups[] = {
        {"basics", {literals, arithmetic, arithmetic_with_null, folded_constants_outlive_scratch,
                    folding_keeps_runtime_parts}},
        {"compare", {comparisons, mismatched_types_are_false, null_comparisons,
                     three_valued_logic, short_circuit_skips_rhs,
                     fast_conditions_agree_with_eval, comparison_table,
                     scratch_text_outlives_reset}},
        {"in", {in_constant_list, in_large_list, in_runtime_list}},
        {"regex", {regex_match, regex_catastrophic_backtracking, regex_extract_groups,
                   regex_errors}},
        {"functions", {string_functions, len_of_arrays_and_objects, math_functions,
                       null_handling_functions, conversions,
                       edge_values_of_functions}},
        {"time", {time_arithmetic, duration_arithmetic}},
        {"match", {step_fields_read_last_event, keys, aggregates, running_aggregates_match_rescan,
                   aggregates_over_no_events,
                   flink_average_condition, count_distinct_many, iterative_flag,
                   fields_are_interned}},
        {"errors", {compile_errors, nesting_limit}},
        {"parsed", {parsed_rule_conditions, parsed_operators, conformance_iterative_avg}},
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        TCase *tc = tcase_create(groups[g].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        for (size_t i = 0; i < 16 && groups[g].tests[i]; i++)
            tcase_add_test(tc, groups[g].tests[i]);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return check_run_suite(expr_suite());
}
