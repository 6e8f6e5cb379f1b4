/* tests/test_route.c — filters split into shared atoms (rules/filters.c) and the
 * router that tests them (runtime/route.c): the plan shares what is written alike,
 * and the router's answer for every rule and event is the rule's own filter's, also
 * when a run of filters starting with the same atom is skipped because it fails, when a
 * non-boolean condition leaves `and`/`or`/`not` unknown, with threshold ladders on
 * several fields at once, and with switch texts that differ in any one byte. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runtime/partition.h"
#include "runtime/route.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

static const char *const RULES =
    "rule tx1 { filter type == \"tx\"; key user; begin a; }\n"
    "rule tx2 { filter type == \"tx\"; key user; begin a; }\n"
    "rule big { filter type == \"tx\" and amount > 5; key user; begin a; }\n"
    "rule either { filter type == \"order\" or type == \"shipped\"; key id; begin a; }\n"
    "rule tree { filter not (type == \"tx\") or (amount > 5 and flag); key user; begin a; }\n"
    "rule unknown { filter not flag; key user; begin a; }\n"
    "rule bigger { filter type == \"tx\" and amount > 50; key user; begin a; }\n"
    "rule login { filter type == \"login\" and amount > 1; key user; begin a; }\n"
    "rule all { key user; begin a; }\n";

/* The slot of a field the rules read, -1 if none reads it. */
static int find_slot(const CompiledRuleSet *rs, const char *text)
{
    for (size_t i = 0; i < rs->fields.n; i++)
        if (!strcmp(rs->fields.paths[i].text, text))
            return (int)i;
    return -1;
}

static int slot_named(const CompiledRuleSet *rs, const char *text)
{
    int i = find_slot(rs, text);
    ck_assert_msg(i >= 0, "no field %s", text);
    return i;
}

static const FilterNode *root_of(const CompiledRuleSet *rs, const char *rule)
{
    int i = ruleset_find(rs, rule);
    ck_assert_int_ge(i, 0);
    ck_assert_uint_lt(rs->rules[i].filter_root, rs->filters.n_nodes);
    return &rs->filters.nodes[rs->rules[i].filter_root];
}

START_TEST(plan_shares_atoms_written_alike)
{
    CompiledRuleSet *rs = test_rules_compile(RULES, NULL);
    /* type == "tx", amount > 5, type == "order", type == "shipped", flag, amount > 50,
     * type == "login", amount > 1 */
    ck_assert_uint_eq(rs->filters.n_atoms, 8);
    const FilterNode *tx1 = root_of(rs, "tx1"), *tx2 = root_of(rs, "tx2");
    ck_assert_int_eq(tx1->op, FILTER_ATOM);
    ck_assert_int_eq(tx2->op, FILTER_ATOM);
    ck_assert_uint_eq(tx1->a, tx2->a);
    const FilterNode *big = root_of(rs, "big");
    ck_assert_int_eq(big->op, FILTER_AND);
    ck_assert_int_eq(rs->filters.nodes[big->a].op, FILTER_ATOM);
    ck_assert_uint_eq(rs->filters.nodes[big->a].a, tx1->a);
    const FilterNode *tree = root_of(rs, "tree");
    ck_assert_int_eq(tree->op, FILTER_OR);
    const FilterNode *neg = &rs->filters.nodes[tree->a];
    ck_assert_int_eq(neg->op, FILTER_NOT);
    ck_assert_uint_eq(rs->filters.nodes[neg->a].a, tx1->a);
    ck_assert_uint_eq(rs->rules[ruleset_find(rs, "all")].filter_root, FILTER_NONE);
    ruleset_free(rs);
}
END_TEST

typedef struct Sample {
    const char *type;          /* NULL: missing */
    double amount;             /* < 0: missing */
    int flag;                  /* 0 false, 1 true, 2 a number (unknown), 3 missing */
    double qty;                /* < 0: missing */
} Sample;

static Event *sample_event(const CompiledRuleSet *rs, const Sample *s, int64_t t)
{
    Event *ev = event_new("{}", 2, rs->fields.n);
    ck_assert_ptr_nonnull(ev);
    ev->time_ms = t;
    ev->slots[slot_named(rs, "user")] = value_str("u1", 2);
    int id = find_slot(rs, "id");   /* only some rule sets key by it */
    if (id >= 0)
        ev->slots[id] = value_str("o1", 2);
    if (s->qty >= 0)
        ev->slots[slot_named(rs, "qty")] = value_num(s->qty);
    if (s->type)
        ev->slots[slot_named(rs, "type")] = value_str(s->type, strlen(s->type));
    if (s->amount >= 0)
        ev->slots[slot_named(rs, "amount")] = value_num(s->amount);
    if (s->flag < 2)
        ev->slots[slot_named(rs, "flag")] = value_bool(s->flag);
    else if (s->flag == 2)
        ev->slots[slot_named(rs, "flag")] = value_num(1);
    return ev;
}


#define MAX_RULES 32   /* in the rule sets that check_routes_agree checks */

/* The router's key of a rule agrees with the rule's key expressions evaluated one by
 * one: its values, canonical bytes and hash. */
static void check_key(const CompiledRule *cr, const EvalCtx *ctx, EvalScratch *scratch,
                      const RouteKey *got)
{
    Value vals[4];
    ck_assert_uint_le(cr->n_keys, 4);
    for (size_t k = 0; k < cr->n_keys; k++)
        vals[k] = expr_eval(cr->keys[k], ctx, scratch);
    Buf b = BUF_INIT;
    ck_assert(part_key_bytes(vals, cr->n_keys, &b));
    ck_assert(!b.failed);
    ck_assert_uint_eq(got->len, b.len);
    ck_assert(!b.len || !memcmp(got->bytes, b.data, b.len));
    ck_assert_uint_eq(got->hash, part_hash(b.data ? b.data : "", b.len));
    for (size_t k = 0; k < cr->n_keys; k++)
        ck_assert(value_equal(&got->vals[k], &vals[k]));
    buf_free(&b);
}

/* Routes ev through `all` (router_route_all) and `one` (router_route, rule by rule)
 * and checks both against each rule's own filter; returns how many rules it admits. */
static size_t check_routes_agree(const CompiledRuleSet *rs, Router *all, Router *one,
                                 EvalScratch *scratch, Event *ev, const char *what)
{
    size_t n = rs->n_rules;
    size_t order[MAX_RULES];
    RouteResult res[MAX_RULES];
    const RouteKey *keys[MAX_RULES];
    ck_assert_uint_le(n, MAX_RULES);
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    size_t admitted = router_route_all(all, ev, scratch, order, res, keys);
    router_begin(one);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const CompiledRule *cr = &rs->rules[i];
        bool want = !cr->filter || expr_test(cr->filter, &ctx, scratch);
        RouteKey key;
        RouteResult r = router_route(one, i, ev, scratch, &key);
        ck_assert_msg((r != ROUTE_FILTERED) == want, "rule %s, event %s", cr->name, what);
        if (!want)
            continue;
        ck_assert_uint_lt(k, admitted);
        ck_assert_uint_eq(order[k], i);
        ck_assert_int_eq(res[i], ROUTE_KEYED);
        ck_assert_int_eq(r, ROUTE_KEYED);
        check_key(cr, &ctx, scratch, keys[i]);
        check_key(cr, &ctx, scratch, &key);
        k++;
    }
    ck_assert_uint_eq(k, admitted);
    return admitted;
}

/* Checks the routers on the sample against each filter, then that they admit exactly
 * the rules named in `want` (space-separated, in rule order). */
static void expect_admitted(TestRouters *t, const Sample *sm, const char *want)
{
    Event *ev = sample_event(t->rs, sm, 0);
    char what[96];
    snprintf(what, sizeof what, "type %s, amount %g, flag %d, qty %g",
             sm->type ? sm->type : "(none)", sm->amount, sm->flag, sm->qty);
    check_routes_agree(t->rs, t->all, t->one, t->scratch, ev, what);
    expr_scratch_reset(t->scratch);
    size_t order[MAX_RULES];
    RouteResult res[MAX_RULES];
    const RouteKey *keys[MAX_RULES];
    size_t n = router_route_all(t->all, ev, t->scratch, order, res, keys);
    Buf names = BUF_INIT;
    for (size_t i = 0; i < n; i++)
        buf_printf(&names, "%s%s", i ? " " : "", t->rs->rules[order[i]].name);
    ck_assert(!names.failed);
    ck_assert_msg(!strcmp(names.data ? names.data : "", want), "%s: admitted '%s', want '%s'",
                  what, names.data ? names.data : "", want);
    buf_free(&names);
    event_release(ev);
    expr_scratch_reset(t->scratch);
}

START_TEST(router_agrees_with_each_filter)
{
    static const Sample samples[] = {
        {"tx", 10, 1, -1}, {"tx", 1, 1, -1}, {"tx", 10, 0, -1}, {"tx", 10, 2, -1},
        {"tx", -1, 3, -1}, {"order", 10, 0, -1}, {"shipped", -1, 2, -1}, {"login", 3, 3, -1},
        {NULL, 10, 1, -1}, {"", 0, 0, -1}, {"tx", 60, 1, -1}, {"login", 0, 1, -1},
    };
    TestRouters t = test_routers_new(RULES);
    CompiledRuleSet *rs = t.rs;
    Router *all = t.all, *one = t.one;
    EvalScratch *scratch = t.scratch;
    size_t admitted_total = 0;
    size_t order[16];
    RouteResult res[16];
    const RouteKey *keys[16];
    for (size_t e = 0; e < sizeof samples / sizeof samples[0]; e++) {
        Event *ev = sample_event(rs, &samples[e], (int64_t)e);
        char what[32];
        snprintf(what, sizeof what, "%zu", e);
        admitted_total += check_routes_agree(rs, all, one, scratch, ev, what);
        event_release(ev);
        expr_scratch_reset(scratch);
    }
    /* by hand: the first sample passes tx1, tx2, big, tree and all; not `either`, nor
     * `unknown` (not true is false) */
    ck_assert_uint_gt(admitted_total, 0);
    Event *ev = sample_event(rs, &samples[0], 0);
    ck_assert_uint_eq(router_route_all(all, ev, scratch, order, res, keys), 5);
    ck_assert_uint_eq(order[4], (size_t)ruleset_find(rs, "all"));
    ck_assert_ptr_eq(keys[order[0]], keys[order[4]]);   /* keyed alike: one key */
    event_release(ev);
    /* a non-boolean flag leaves `not flag` unknown: the filter does not pass */
    ev = sample_event(rs, &samples[3], 0);
    int unknown = ruleset_find(rs, "unknown");
    router_begin(one);
    RouteKey key;
    ck_assert_int_eq(router_route(one, (size_t)unknown, ev, scratch, &key), ROUTE_FILTERED);
    event_release(ev);
    test_routers_free(&t);
}
END_TEST

/* Filters that are one threshold on a field, alone or after the same atom, are
 * settled by one search on a ladder of thresholds per field, operator and guard: the
 * rules admitted are still exactly those whose filter holds, on each side of every
 * threshold, at it, without the field, with a string or NaN in it. */
START_TEST(threshold_filters_on_ladders)
{
    static const char *const RUNGS =
        "rule g500 { filter type == \"tx\" and amount > 500; key user; begin a; }\n"
        "rule g100 { filter type == \"tx\" and amount > 100; key user; begin a; }\n"
        "rule g100b { filter type == \"tx\" and amount > 100; key id; begin a; }\n"
        "rule ge300 { filter type == \"tx\" and amount >= 300; key user; begin a; }\n"
        "rule ge100 { filter type == \"tx\" and amount >= 100; key user; begin a; }\n"
        "rule lt50 { filter type == \"tx\" and amount < 50; key user; begin a; }\n"
        "rule lt400 { filter type == \"tx\" and 400 > amount; key user; begin a; }\n"
        "rule le7 { filter amount <= 7; key user; begin a; }\n"
        "rule le70 { filter amount <= 70; key user; begin a; }\n"
        "rule login { filter type == \"login\" and amount > 100; key user; begin a; }\n"
        "rule flag { filter flag and amount > 100; key user; begin a; }\n";
    static const double amounts[] = {-1, 0, 7, 7.5, 49.99, 50, 70, 99, 100, 100.01, 299,
                                     300, 399.5, 400, 500, 500.5, 1e9};
    static const char *const types[] = {"tx", "login", NULL};
    TestRouters t = test_routers_new(RUNGS);
    CompiledRuleSet *rs = t.rs;
    Router *all = t.all, *one = t.one;
    EvalScratch *scratch = t.scratch;
    int amount = slot_named(rs, "amount");
    size_t admitted_total = 0;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t a = 0; a < sizeof amounts / sizeof amounts[0] + 2; a++)
            for (int flag = 0; flag < 4; flag++) {
                Sample sm = {types[t], a < sizeof amounts / sizeof amounts[0] ? amounts[a] : 1,
                             flag, -1};
                Event *ev = sample_event(rs, &sm, 0);
                if (a == sizeof amounts / sizeof amounts[0])
                    ev->slots[amount] = value_str("600", 3);
                else if (a > sizeof amounts / sizeof amounts[0])
                    ev->slots[amount] = value_num(NAN);
                char what[64];
                snprintf(what, sizeof what, "type %s, amount #%zu, flag %d",
                         sm.type ? sm.type : "(none)", a, flag);
                admitted_total += check_routes_agree(rs, all, one, scratch, ev, what);
                event_release(ev);
                expr_scratch_reset(scratch);
            }
    /* a tx of 100 passes ge100, lt400, and the flag rule never (100 is not > 100) */
    Sample sm = {"tx", 100, 1, -1};
    Event *ev = sample_event(rs, &sm, 0);
    size_t order[16];
    RouteResult res[16];
    const RouteKey *keys[16];
    ck_assert_uint_eq(router_route_all(all, ev, scratch, order, res, keys), 2);
    ck_assert_uint_eq(order[0], (size_t)ruleset_find(rs, "ge100"));
    ck_assert_uint_eq(order[1], (size_t)ruleset_find(rs, "lt400"));
    event_release(ev);
    ck_assert_uint_gt(admitted_total, 0);
    test_routers_free(&t);
}
END_TEST

/* More rules than one 64-bit word holds, with filters and keys interleaved, so that
 * the bit sets of admitted rules and of each key's rules span several words. */
START_TEST(many_rules_over_several_words)
{
    static const char *const filters[] = {
        "type == \"tx\"", "type == \"tx\" and amount > 5", "type == \"login\"", "",
        "type == \"order\" or amount > 50",
    };
    static const char *const keys[] = {"user", "id", "user, id"};
    Buf text = BUF_INIT;
    for (int i = 0; i < 150; i++) {
        const char *f = filters[i % 5];
        buf_printf(&text, "rule r%d { %s%s%s key %s; begin a; }\n", i, *f ? "filter " : "", f,
                   *f ? ";" : "", keys[(i / 5) % 3]);
    }
    ck_assert(!text.failed);
    TestRouters t = test_routers_new(text.data);
    buf_free(&text);
    CompiledRuleSet *rs = t.rs;
    Router *all = t.all, *one = t.one;
    EvalScratch *scratch = t.scratch;
    static const Sample samples[] = {
        {"tx", 10, 3, -1}, {"tx", 1, 3, -1}, {"login", 60, 3, -1}, {"order", 0, 3, -1},
    };
    size_t order[150];
    RouteResult res[150];
    const RouteKey *keyed[150];
    for (size_t e = 0; e < sizeof samples / sizeof samples[0]; e++) {
        Event *ev = sample_event(rs, &samples[e], (int64_t)e);
        size_t admitted = router_route_all(all, ev, scratch, order, res, keyed);
        router_begin(one);
        size_t k = 0;
        for (size_t i = 0; i < rs->n_rules; i++) {
            RouteKey key;
            RouteResult r = router_route(one, i, ev, scratch, &key);
            if (r == ROUTE_FILTERED)
                continue;
            ck_assert_uint_lt(k, admitted);
            ck_assert_uint_eq(order[k++], i);
            ck_assert_int_eq(res[i], r);
            ck_assert_int_eq(r, ROUTE_KEYED);
            ck_assert_uint_eq(keyed[i]->len, key.len);
            ck_assert(!memcmp(keyed[i]->bytes, key.bytes, key.len));
            ck_assert_uint_eq(keyed[i]->hash, key.hash);
        }
        ck_assert_uint_eq(k, admitted);
        /* tx with amount 10 passes filters 0, 1 and 3 (none) of every five */
        if (e == 0)
            ck_assert_uint_eq(admitted, 90);
        event_release(ev);
        expr_scratch_reset(scratch);
    }
    test_routers_free(&t);
}
END_TEST

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
    TestRouters t = test_routers_new(rules);
    /* unknown and true = unknown; unknown and false = false; unknown or true = true;
     * unknown or false = unknown */
    expect_admitted(&t, &(Sample){"tx", -1, 2, -1}, "");
    expect_admitted(&t, &(Sample){"login", -1, 2, -1}, "nand nand2");
    expect_admitted(&t, &(Sample){"tx", -1, 1, -1}, "nn");
    expect_admitted(&t, &(Sample){"login", -1, 0, -1}, "nand nor nand2 nor2");
    expect_admitted(&t, &(Sample){"login", -1, 1, -1}, "nand nand2 nn");
    /* a missing flag is null, not true either */
    expect_admitted(&t, &(Sample){"tx", -1, 3, -1}, "");
    expect_admitted(&t, &(Sample){"none", -1, 3, -1}, "nand nand2 nn");
    test_routers_free(&t);
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
    TestRouters t = test_routers_new(rules);
    expect_admitted(&t, &(Sample){"x", 15, 3, 6}, "a10 q5");
    expect_admitted(&t, &(Sample){"x", 25, 3, 8}, "a10 q5 a20 q7");
    expect_admitted(&t, &(Sample){"tx", 10, 3, 5}, "");
    expect_admitted(&t, &(Sample){"tx", 31, 3, -1}, "a10 a20 ta10 ta30");
    expect_admitted(&t, &(Sample){"tx", -1, 3, 10}, "q5 q7 tq5 tq9");
    expect_admitted(&t, &(Sample){"tx", 20.5, 3, 9}, "a10 q5 a20 q7 ta10 tq5");
    /* every value around every threshold agrees with the filters */
    static const double vals[] = {-1, 0, 5, 5.5, 7, 8, 9, 9.5, 10, 10.5, 20, 21, 30, 31};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
        for (size_t j = 0; j < sizeof vals / sizeof *vals; j++)
            for (int tx = 0; tx < 2; tx++) {
                Sample sm = {tx ? "tx" : "y", vals[i], 3, vals[j]};
                Event *ev = sample_event(t.rs, &sm, 0);
                char what[64];
                snprintf(what, sizeof what, "%s, amount %g, qty %g", sm.type, sm.amount, sm.qty);
                check_routes_agree(t.rs, t.all, t.one, t.scratch, ev, what);
                event_release(ev);
                expr_scratch_reset(t.scratch);
            }
    test_routers_free(&t);
}
END_TEST

/* The field that most filters ask for a text (`type == "a"`) is read once and its
 * value picks a plan in which those atoms, and what they settle, are settled already:
 * whatever the field holds (each text, another, "", a number, a boolean, null,
 * nothing), the rules admitted are exactly those whose filter holds, with the text
 * written either side, under `not`, in `or`, beside `!=`, another field's text, a
 * condition left unknown, a ladder of thresholds behind the same text and one behind
 * a condition the text leaves open; the empty text is a text like any other (no
 * number, null or missing field holds it). Keys that are a field and keys that are
 * an expression give what the rule's own expressions give. */
START_TEST(switch_on_the_field_most_filters_ask)
{
    static const char *const rules =
        "rule a { filter type == \"a\"; key user; begin x; }\n"
        "rule b_rev { filter \"b\" == type; key user; begin x; }\n"
        "rule a_or_c { filter type == \"a\" or type == \"c\"; key user; begin x; }\n"
        "rule not_b { filter not (type == \"b\"); key user; begin x; }\n"
        "rule ne_a { filter type != \"a\"; key user; begin x; }\n"
        "rule a_flag { filter type == \"a\" and flag; key user; begin x; }\n"
        "rule flag_or_b { filter flag or type == \"b\"; key user; begin x; }\n"
        "rule tree { filter (type == \"a\" or flag) and not (type == \"c\"); key user; "
        "begin x; }\n"
        "rule kind { filter kind == \"a\" and type == \"c\"; key user; begin x; }\n"
        "rule a_big { filter type == \"a\" and amount > 5; key user; begin x; }\n"
        "rule a_bigger { filter type == \"a\" and amount > 50; key user; begin x; }\n"
        "rule c_big { filter type == \"c\" and amount > 5; key id; begin x; }\n"
        "rule f_big { filter flag and amount > 5; key user; begin x; }\n"
        "rule f_bigger { filter flag and amount > 50; key user; begin x; }\n"
        "rule empty { filter type == \"\" or \"\" == type; key user; begin x; }\n"
        "rule lower { filter type == \"d\"; key id, lower(user); begin x; }\n"
        "rule two_keys { filter type == \"d\"; key user, id; begin x; }\n"
        "rule all { key user; begin x; }\n";
    static const char *const types[] = {"a", "b", "c", "d", "", "ab", NULL};
    static const double amounts[] = {-1, 1, 10, 100};
    TestRouters t = test_routers_new(rules);
    int type = slot_named(t.rs, "type"), kind = slot_named(t.rs, "kind");
    size_t admitted = 0;
    for (size_t ty = 0; ty < sizeof types / sizeof *types + 3; ty++)
        for (size_t am = 0; am < sizeof amounts / sizeof *amounts; am++)
            for (int flag = 0; flag < 4; flag++)
                for (int k = 0; k < 2; k++) {
                    bool text = ty < sizeof types / sizeof *types;
                    Sample sm = {text ? types[ty] : NULL, amounts[am], flag, -1};
                    Event *ev = sample_event(t.rs, &sm, 0);
                    size_t odd = ty - sizeof types / sizeof *types;
                    if (!text)   /* not a string */
                        ev->slots[type] = odd == 0 ? value_num(7)
                                          : odd == 1 ? value_bool(true) : value_null();
                    if (k)
                        ev->slots[kind] = value_str("a", 1);
                    char what[64];
                    snprintf(what, sizeof what, "type #%zu, amount %g, flag %d, kind %d", ty,
                             sm.amount, flag, k);
                    admitted += check_routes_agree(t.rs, t.all, t.one, t.scratch, ev, what);
                    event_release(ev);
                    expr_scratch_reset(t.scratch);
                }
    ck_assert_uint_gt(admitted, 0);
    expect_admitted(&t, &(Sample){"a", 10, 1, -1},
                    "a a_or_c not_b a_flag flag_or_b tree a_big f_big all");
    expect_admitted(&t, &(Sample){"c", 10, 0, -1}, "a_or_c not_b ne_a c_big all");
    expect_admitted(&t, &(Sample){"b", 100, 2, -1}, "b_rev ne_a flag_or_b all");
    expect_admitted(&t, &(Sample){NULL, 100, 1, -1}, "not_b flag_or_b tree f_big f_bigger all");
    test_routers_free(&t);
}
END_TEST

/* A switch takes its first 16 texts; the filters asking for the others are tested
 * one by one, and each event still finds exactly its own rules: the texts are told
 * apart whole, not by a prefix ("t1" and "t10"). */
START_TEST(more_texts_than_the_switch_takes)
{
    Buf text = BUF_INIT;
    for (int i = 0; i < 20; i++)
        buf_printf(&text, "rule t%d { filter type == \"t%d\"; key user; begin a; }\n", i, i);
    buf_puts(&text, "rule two { filter type == \"t3\" or type == \"t19\"; key user; "
                    "begin a; }\n");
    ck_assert(!text.failed);
    TestRouters t = test_routers_new(text.data);
    buf_free(&text);
    char type[8], want[16];
    for (int i = 0; i < 22; i++) {
        snprintf(type, sizeof type, "t%d", i);
        want[0] = '\0';
        if (i < 20)
            snprintf(want, sizeof want, "t%d%s", i, i == 3 || i == 19 ? " two" : "");
        expect_admitted(&t, &(Sample){type, -1, 3, -1}, want);
    }
    expect_admitted(&t, &(Sample){"t", -1, 3, -1}, "");
    expect_admitted(&t, &(Sample){NULL, -1, 3, -1}, "");
    test_routers_free(&t);
}
END_TEST

/* The switch tells texts of every length apart by all of their bytes: rules for texts
 * of 1 to 16 bytes (one case each), events with each text, with one byte of it
 * changed at each place, one byte shorter and one longer. */
START_TEST(switch_texts_differ_at_any_byte)
{
    static const char pattern[] = "abcdefghijklmnopq";
    Buf text = BUF_INIT;
    for (int n = 1; n <= 16; n++)
        buf_printf(&text, "rule len%d { filter type == \"%.*s\"; key user; begin a; }\n", n,
                   n, pattern);
    ck_assert(!text.failed);
    TestRouters t = test_routers_new(text.data);
    buf_free(&text);
    size_t admitted = 0;
    char type[20];
    for (size_t n = 0; n <= 17; n++)
        for (size_t at = 0; at <= n; at++) {   /* at == n: the text as it is */
            memcpy(type, pattern, n);
            type[n] = '\0';
            if (at < n)
                type[at] ^= 0x20;
            Event *ev = sample_event(t.rs, &(Sample){type, -1, 3, -1}, 0);
            char what[40];
            snprintf(what, sizeof what, "type '%s'", type);
            admitted += check_routes_agree(t.rs, t.all, t.one, t.scratch, ev, what);
            event_release(ev);
            expr_scratch_reset(t.scratch);
        }
    ck_assert_uint_eq(admitted, 16);   /* each rule once, for its text unchanged */
    test_routers_free(&t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("route");
    TCase *tc = tcase_create("filters");
    tcase_add_test(tc, plan_shares_atoms_written_alike);
    tcase_add_test(tc, router_agrees_with_each_filter);
    tcase_add_test(tc, many_rules_over_several_words);
    tcase_add_test(tc, threshold_filters_on_ladders);
    tcase_add_test(tc, unknown_inside_and_or_not);
    tcase_add_test(tc, ladders_on_two_fields);
    tcase_add_test(tc, switch_on_the_field_most_filters_ask);
    tcase_add_test(tc, more_texts_than_the_switch_takes);
    tcase_add_test(tc, switch_texts_differ_at_any_byte);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
