/* tests/test_route_cover.c — router cases the other route tests leave out: the
 * three-valued logic of filter trees whose `and`/`or` meets an unknown (a non-boolean
 * value used as a condition), and threshold ladders on several fields at once. Each
 * rule's routing is checked against its own filter and against the expected list. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/route.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

enum { MAX_RULES = 16 };

static int slot_of(const CompiledRuleSet *rs, const char *path)
{
    for (size_t i = 0; i < rs->fields.n; i++)
        if (!strcmp(rs->fields.paths[i].text, path))
            return (int)i;
    ck_abort_msg("no field %s", path);
    return -1;
}

/* An event with user "u" and the given slots (NULL value pointer: missing). */
typedef struct Fields {
    const char *type;     /* NULL: missing */
    const Value *flag;    /* NULL: missing */
    double amount, qty;   /* < 0: missing */
} Fields;

static Event *event_of(const CompiledRuleSet *rs, const Fields *f)
{
    Event *ev = event_new("{}", 2, rs->fields.n);
    ck_assert_ptr_nonnull(ev);
    ev->slots[slot_of(rs, "user")] = value_str("u", 1);
    if (f->type)
        ev->slots[slot_of(rs, "type")] = value_str(f->type, strlen(f->type));
    if (f->flag)
        ev->slots[slot_of(rs, "flag")] = *f->flag;
    if (f->amount >= 0)
        ev->slots[slot_of(rs, "amount")] = value_num(f->amount);
    if (f->qty >= 0)
        ev->slots[slot_of(rs, "qty")] = value_num(f->qty);
    return ev;
}

/* Routes ev with router_route_all and rule by rule, checks both against each rule's
 * filter, and returns the names of the admitted rules, space-separated (static). */
static const char *admitted(const CompiledRuleSet *rs, Router *all, Router *one,
                            EvalScratch *scratch, Event *ev)
{
    static char names[256];
    size_t order[MAX_RULES];
    RouteResult res[MAX_RULES];
    RouteKey keys[MAX_RULES];
    ck_assert_uint_le(rs->n_rules, MAX_RULES);
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    size_t n = router_route_all(all, ev, scratch, order, res, keys);
    router_begin(one);
    names[0] = '\0';
    size_t k = 0;
    for (size_t i = 0; i < rs->n_rules; i++) {
        const CompiledRule *cr = &rs->rules[i];
        bool want = !cr->filter || expr_test(cr->filter, &ctx, scratch);
        RouteKey key;
        RouteResult r = router_route(one, i, ev, scratch, &key);
        ck_assert_msg((r != ROUTE_FILTERED) == want, "rule %s", cr->name);
        if (!want)
            continue;
        ck_assert_uint_lt(k, n);
        ck_assert_uint_eq(order[k++], i);
        ck_assert_int_eq(res[i], ROUTE_KEYED);
        if (names[0])
            strcat(names, " ");
        strcat(names, cr->name);
    }
    ck_assert_uint_eq(k, n);
    return names;
}


static void expect_admitted(TestRouters *s, const Fields *f, const char *want)
{
    Event *ev = event_of(s->rs, f);
    const char *got = admitted(s->rs, s->all, s->one, s->scratch, ev);
    ck_assert_msg(!strcmp(got, want), "type %s amount %g qty %g: admitted '%s', want '%s'",
                  f->type ? f->type : "-", f->amount, f->qty, got, want);
    event_release(ev);
    expr_scratch_reset(s->scratch);
}

/* A number used as a condition is neither true nor false: `not` keeps it unknown, and
 * `and`/`or` decide only where the other side settles the result (a filter that is not
 * true rejects the event). */
START_TEST(unknown_inside_and_or_not)
{
    static const char *const rules =
        "rule nand { filter not (flag and type == \"tx\"); key user; begin a; }\n"
        "rule nor { filter not (flag or type == \"tx\"); key user; begin a; }\n"
        "rule nand2 { filter not (type == \"tx\" and flag); key user; begin a; }\n"
        "rule nor2 { filter not (type == \"tx\" or flag); key user; begin a; }\n"
        "rule nn { filter not (not flag) or type == \"none\"; key user; begin a; }\n";
    TestRouters s = test_routers_new(rules);
    Value num = value_num(1), yes = value_bool(true), no = value_bool(false);
    /* unknown and true = unknown; unknown and false = false; unknown or true = true;
     * unknown or false = unknown */
    expect_admitted(&s, &(Fields){"tx", &num, -1, -1}, "");
    expect_admitted(&s, &(Fields){"login", &num, -1, -1}, "nand nand2");
    expect_admitted(&s, &(Fields){"tx", &yes, -1, -1}, "nn");
    expect_admitted(&s, &(Fields){"login", &no, -1, -1}, "nand nor nand2 nor2");
    expect_admitted(&s, &(Fields){"login", &yes, -1, -1}, "nand nand2 nn");
    /* a missing flag is null, not true either */
    expect_admitted(&s, &(Fields){"tx", NULL, -1, -1}, "");
    expect_admitted(&s, &(Fields){"none", NULL, -1, -1}, "nand nand2 nn");
    test_routers_free(&s);
}
END_TEST

/* Thresholds on two fields under the same guard make two ladders; each rule is
 * admitted exactly on its side of its own threshold. */
START_TEST(ladders_on_two_fields)
{
    static const char *const rules =
        "rule a10 { filter amount > 10; key user; begin a; }\n"
        "rule q5 { filter qty > 5; key user; begin a; }\n"
        "rule a20 { filter amount > 20; key user; begin a; }\n"
        "rule q7 { filter qty > 7; key user; begin a; }\n"
        "rule ta10 { filter type == \"tx\" and amount > 10; key user; begin a; }\n"
        "rule tq5 { filter type == \"tx\" and qty > 5; key user; begin a; }\n"
        "rule ta30 { filter type == \"tx\" and amount > 30; key user; begin a; }\n"
        "rule tq9 { filter type == \"tx\" and qty > 9; key user; begin a; }\n";
    TestRouters s = test_routers_new(rules);
    expect_admitted(&s, &(Fields){"x", NULL, 15, 6}, "a10 q5");
    expect_admitted(&s, &(Fields){"x", NULL, 25, 8}, "a10 q5 a20 q7");
    expect_admitted(&s, &(Fields){"tx", NULL, 10, 5}, "");
    expect_admitted(&s, &(Fields){"tx", NULL, 31, -1}, "a10 a20 ta10 ta30");
    expect_admitted(&s, &(Fields){"tx", NULL, -1, 10}, "q5 q7 tq5 tq9");
    expect_admitted(&s, &(Fields){"tx", NULL, 20.5, 9}, "a10 q5 a20 q7 ta10 tq5");
    /* every value around every threshold agrees with the filters */
    static const double vals[] = {-1, 0, 5, 5.5, 7, 8, 9, 9.5, 10, 10.5, 20, 21, 30, 31};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
        for (size_t j = 0; j < sizeof vals / sizeof *vals; j++)
            for (int tx = 0; tx < 2; tx++) {
                Event *ev = event_of(s.rs, &(Fields){tx ? "tx" : "y", NULL, vals[i], vals[j]});
                (void)admitted(s.rs, s.all, s.one, s.scratch, ev);
                event_release(ev);
                expr_scratch_reset(s.scratch);
            }
    test_routers_free(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("route_cover");
    TCase *tc = tcase_create("route");
    tcase_add_test(tc, unknown_inside_and_or_not);
    tcase_add_test(tc, ladders_on_two_fields);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
