/* tests/test_relevance.c — the relevance analysis (rules/relevance.c): which rules
 * are relaxed, for every step kind and quantifier, and what their relevance is
 * (conjuncts split, those reading the partial match dropped, a step without an
 * event-only condition switching it off); and the router (runtime/route.c), which
 * must admit exactly the rules whose filter and relevance hold, through the ladders
 * of thresholds too, while missing keys still count. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "base/buf.h"
#include "dsl/diag.h"
#include "dsl/fmt.h"
#include "rules/ruleset.h"
#include "runtime/decode.h"
#include "runtime/engine.h"
#include "runtime/route.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

/* ---- analysis ----------------------------------------------------------------- */

static const CompiledRule *rule_named(const CompiledRuleSet *rs, const char *name)
{
    int i = ruleset_find(rs, name);
    ck_assert_msg(i >= 0, "no rule %s", name);
    return &rs->rules[i];
}

/* The rule's relevance text, "-" without one; and its root agrees with the text. */
static const char *relevance_of(const CompiledRuleSet *rs, const char *name)
{
    const CompiledRule *cr = rule_named(rs, name);
    if (!cr->relevance_text) {
        ck_assert_uint_eq(cr->relevance_root, FILTER_NONE);
        return "-";
    }
    ck_assert_uint_lt(cr->relevance_root, rs->filters.n_nodes);
    return cr->relevance_text;
}

/* One rule per shape: is it relaxed, and if not, how does `vigil explain` say why
 * (the start of CompiledRule.relevance_why)? */
static const struct {
    const char *body;
    bool relaxed;
    const char *why;
} SHAPES[] = {
    {"begin a where x > 1; followed_by b where x > 2;", true, NULL},
    {"begin a where x > 1; followed_by_any b where x > 2;", true, NULL},
    {"begin a where x > 1; next b where x > 2;", false, "step b is next: strict contiguity"},
    {"begin a where x > 1; not_next b where x > 2; followed_by c where x > 3;", false,
     "step b is not_next: strict contiguity"},
    {"begin a where x > 1; not_followed_by b where x > 2; followed_by c where x > 3;", true, NULL},
    {"begin a where x > 1; not_followed_by b where x > 2;", true, NULL},
    {"begin a where x > 1 times 3;", true, NULL},
    {"begin a where x > 1; followed_by b where x > 2 times 2;", true, NULL},
    {"begin a where x > 1; followed_by b where x > 2 times 2 allow_combinations;", true, NULL},
    {"begin a where x > 1 times 3 consecutive;", false, "step a is consecutive"},
    {"begin a where x > 1; followed_by b where x > 2 times 2..4;", false,
     "step b has a range (times N..M"},
    {"begin a where x > 1; followed_by b where x > 2 times 0..2;", false,
     "step b has a range"},
    {"begin a where x > 1; followed_by b where x > 2 times 2+; followed_by c where x > 3;", false,
     "step b loops (one_or_more, times N+)"},
    {"begin a where x > 1; followed_by b where x > 2 one_or_more; followed_by c where x > 3;",
     false, "step b loops"},
    {"begin a where x > 1; followed_by b where x > 2 one_or_more until x > 9; followed_by c where x > 3;", false, "step b loops"},
    {"begin a where x > 1; followed_by b where x > 2 one_or_more greedy; followed_by c where x > 3;", false, "step b is greedy"},
    {"begin a where x > 1; followed_by b where x > 2 optional; followed_by c where x > 3;", false,
     "step b is optional: an event it ignores branches a partial match"},
    {"begin a where x > 1 optional; followed_by c where x > 3;", false, "step a is optional"},
    {"begin a where x > 1 times 1;", true, NULL},
    {"begin a where x > 1; next b where x > 2 optional;", false, "step b is next"},
};

START_TEST(relaxed_by_step_kind_and_quantifier)
{
    Buf text = BUF_INIT;
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        buf_printf(&text, "rule r%zu { key k; %s within 1m; }\n", i, SHAPES[i].body);
    CompiledRuleSet *rs = test_rules_compile(text.data, NULL);
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%zu", i);
        const CompiledRule *cr = rule_named(rs, name);
        ck_assert_msg(cr->relaxed == SHAPES[i].relaxed, "%s: %s", SHAPES[i].body,
                      cr->relaxed ? "relaxed" : "not relaxed");
        /* every step has an event-only where, so every rule gets a relevance; for one
         * that is not relaxed (its irrelevant events are blanks) `vigil explain` names
         * its first strict step and construct */
        ck_assert_msg(!strncmp(relevance_of(rs, name), "x > 1", 5), "%s: %s",
                      SHAPES[i].body, relevance_of(rs, name));
        if (!cr->relaxed) {
            ck_assert_ptr_nonnull(cr->relevance_why);
            ck_assert_msg(!strncmp(cr->relevance_why, SHAPES[i].why, strlen(SHAPES[i].why)),
                          "%s: %s", SHAPES[i].body, cr->relevance_why);
        } else {
            ck_assert_ptr_null(cr->relevance_why);
        }
    }
    ruleset_free(rs);
    buf_free(&text);
}
END_TEST

START_TEST(relevance_is_the_or_of_the_event_only_conjuncts)
{
    CompiledRuleSet *rs = test_rules_compile(
        "rule same { key u; begin a where amount > 500; followed_by b where amount > 500; }\n"
        "rule step_field { key u; begin home where amount > 200;\n"
        "  followed_by abroad where country != home.country and amount > 200; }\n"
        "rule parts { key u; begin a where x == 1 and y == 2;\n"
        "  followed_by b where z == 3 and count(a) > 0 and time() - time(a) < 5m; }\n"
        "rule ors { key u; begin a where (x == 1 or y == 2) and w > 3; followed_by b where v; }\n"
        "rule negated { key u; begin a where x == 1; not_followed_by n where y == 2;\n"
        "  followed_by b where x == 3; }\n"
        "rule trailing { key u; begin a where x == 1; not_followed_by n where sum(a.v) > 2 and y == 9;\n"
        "  within 1m; }\n"
        "rule twice { key u; begin a where t == \"a\" times 2; followed_by b where t == \"b\"; }\n"
        "rule nested { key u; begin a where x == 1 and (y == 2 and a.q == 1); }\n",
        NULL);
    ck_assert_str_eq(relevance_of(rs, "same"), "amount > 500");
    ck_assert_str_eq(relevance_of(rs, "step_field"), "amount > 200");
    ck_assert_str_eq(relevance_of(rs, "parts"), "(x == 1 and y == 2) or z == 3");
    ck_assert_str_eq(relevance_of(rs, "ors"), "((x == 1 or y == 2) and w > 3) or v");
    ck_assert_str_eq(relevance_of(rs, "negated"), "x == 1 or y == 2 or x == 3");
    ck_assert_str_eq(relevance_of(rs, "trailing"), "x == 1 or y == 9");
    ck_assert_str_eq(relevance_of(rs, "twice"), "t == \"a\" or t == \"b\"");
    ck_assert_str_eq(relevance_of(rs, "nested"), "x == 1 and y == 2");
    ruleset_free(rs);
}
END_TEST

START_TEST(a_condition_without_event_only_conjunct_switches_it_off)
{
    CompiledRuleSet *rs = test_rules_compile(
        "rule no_where { key u; begin a where x == 1; followed_by b; }\n"
        "rule only_step { key u; begin a where x == 1; followed_by b where y == a.y; }\n"
        "rule only_agg { key u; begin a where x == 1; followed_by b where count(a) > 1 times 2; }\n"
        "rule only_time { key u; begin a where x == 1; followed_by b where time() - time(a) > 1s; }\n"
        "rule bare_not { key u; begin a where x == 1; not_followed_by n; followed_by b where x == 2; }\n"
        "rule or_of_step { key u; begin a where x == 1; followed_by b where y == 1 or y == a.y; }\n"
        "rule control { key u; begin a where x == 1; followed_by b where y == 1 or y == 2; }\n"
        "rule strict_no_where { key u; begin a where x == 1; next b; }\n"
        "rule strict_only_step { key u; begin a where x == 1 times 2 consecutive;\n"
        "  next b where y == a.y; }\n"
        "rule strict_bare_not { key u; begin a where x == 1; not_next n; followed_by b where x == 2; }\n",
        NULL);
    const char *off[] = {"no_where", "only_step", "only_agg", "only_time", "bare_not", "or_of_step",
                         "strict_no_where", "strict_only_step", "strict_bare_not"};
    const char *why[] = {
        "step b has no where: it takes every event",
        "no conjunct of step b's where reads only the event",
        "no conjunct of step b's where reads only the event",
        "no conjunct of step b's where reads only the event",
        "step n has no condition: every event ends a partial match",
        "no conjunct of step b's where reads only the event",
        "step b has no where: it takes every event",
        "no conjunct of step b's where reads only the event",
        "step n has no condition: every event ends a partial match",
    };
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        const CompiledRule *cr = rule_named(rs, off[i]);
        ck_assert_msg(cr->relaxed == !!strncmp(off[i], "strict", 6), "%s", off[i]);
        ck_assert_msg(!strcmp(relevance_of(rs, off[i]), "-"), "%s: %s", off[i],
                      relevance_of(rs, off[i]));
        ck_assert_ptr_nonnull(cr->relevance_why);
        ck_assert_msg(!strncmp(cr->relevance_why, why[i], strlen(why[i])), "%s: %s", off[i],
                      cr->relevance_why);
    }
    ck_assert_str_eq(relevance_of(rs, "control"), "x == 1 or y == 1 or y == 2");
    ruleset_free(rs);
}
END_TEST

/* nfa_takes_no_blank, the matcher's side of a strict rule's relevance: no take edge
 * may hold for an event whose every condition is false. */
START_TEST(blanks_only_where_no_take_holds_without_a_condition)
{
    CompiledRuleSet *rs = test_rules_compile(
        "rule wheres { key u; begin a where x == 1; next b where y == 1 optional;\n"
        "  followed_by c where z == 1 one_or_more until z == 9; not_next d where w == 1;\n"
        "  followed_by e where v == 1; }\n"
        "rule bare_next { key u; begin a where x == 1; next b; }\n"
        "rule bare_begin { key u; begin a times 2 consecutive; }\n"
        "rule bare_not { key u; begin a where x == 1; not_next n; followed_by b where x == 2; }\n",
        NULL);
    ck_assert(nfa_takes_no_blank(rule_named(rs, "wheres")->nfa));
    ck_assert(!nfa_takes_no_blank(rule_named(rs, "bare_next")->nfa));
    ck_assert(!nfa_takes_no_blank(rule_named(rs, "bare_begin")->nfa));
    /* a bare negation takes nothing, but has no relevance either */
    ck_assert(nfa_takes_no_blank(rule_named(rs, "bare_not")->nfa));
    ck_assert_str_eq(relevance_of(rs, "wheres"), "x == 1 or y == 1 or z == 1 or z == 9 or w == 1 or v == 1");
    ck_assert_str_eq(relevance_of(rs, "bare_not"), "-");
    ruleset_free(rs);
}
END_TEST

/* The switch: no relevance anywhere, and a reload keeps the setting. */
START_TEST(the_switch_turns_it_off_and_a_reload_keeps_it)
{
    const char *text = "rule r { key u; begin a where x > 1; followed_by b where x > 2; }\n";
    char path[] = "/tmp/vigil-relevance-XXXXXX.cep";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    const char *p = path;
    Diags d;
    diags_init(&d);
    RuleSetOptions off = {.all_relevant = true};
    CompiledRuleSet *rs = ruleset_load_with(&p, 1, NULL, &off, &d);
    ck_assert_ptr_nonnull(rs);
    ck_assert(rs->rules[0].relaxed);
    ck_assert_str_eq(relevance_of(rs, "r"), "-");
    ck_assert_str_eq(rs->rules[0].relevance_why, "switched off (all_relevant)");
    CompiledRuleSet *again = ruleset_reload(&p, 1, rs, &d);
    ck_assert_ptr_nonnull(again);
    ck_assert(again->opts.all_relevant);
    ck_assert_str_eq(relevance_of(again, "r"), "-");
    CompiledRuleSet *on = ruleset_load(&p, 1, &d);
    ck_assert_ptr_nonnull(on);
    ck_assert_str_eq(relevance_of(on, "r"), "x > 1 or x > 2");
    ck_assert_int_eq(d.errors, 0);
    ruleset_free(rs);
    ruleset_free(again);
    ruleset_free(on);
    diags_free(&d);
    unlink(path);
}
END_TEST

/* Conjuncts are compiled once, into the plan, and those that read the partial match,
 * parts written alike and the parts of a rule that ends up without relevance are
 * taken out again: the plan holds exactly the atoms and nodes the filters and
 * relevance trees test, none of them reading the partial match. */
START_TEST(the_plan_keeps_only_what_the_trees_test)
{
    CompiledRuleSet *rs = test_rules_compile(
        "rule keep { key u; filter t == \"tx\"; begin a where x == 1 and y == a.y;\n"
        "  followed_by b where x == 1 and y == a.y;\n"
        "  followed_by c where v == 3 and (z == 2 or w == a.w); }\n"
        "rule blocked { key u; begin a where q == 7 and r == 8; followed_by b where y == a.y; }\n"
        "rule shares { key u; begin a where x == 1 and time() - time(a) < 5m; }\n",
        NULL);
    ck_assert_str_eq(relevance_of(rs, "keep"), "x == 1 or v == 3");
    ck_assert_str_eq(relevance_of(rs, "blocked"), "-");
    ck_assert_str_eq(relevance_of(rs, "shares"), "x == 1");
    const FilterPlan *plan = &rs->filters;
    /* atoms: t == "tx", x == 1 (keep's two steps and shares), v == 3 */
    ck_assert_uint_eq(plan->n_atoms, 3);
    for (size_t i = 0; i < plan->n_atoms; i++)
        ck_assert(!expr_is_iterative(plan->atoms[i]));
    /* nodes: the filter's atom; keep's x == 1, v == 3 and their `or`; shares' x == 1 */
    ck_assert_uint_eq(plan->n_nodes, 5);
    const CompiledRule *keep = rule_named(rs, "keep"), *shares = rule_named(rs, "shares");
    ck_assert_uint_eq(keep->filter_root, 0);
    const FilterNode *or = &plan->nodes[keep->relevance_root];
    ck_assert_uint_eq(keep->relevance_root, 3);
    ck_assert_uint_eq(or->op, FILTER_OR);
    ck_assert_uint_eq(shares->relevance_root, 4);
    ck_assert_uint_eq(plan->nodes[or->a].a, plan->nodes[shares->relevance_root].a);
    ck_assert_uint_eq(plan->nodes[or->b].a, 2);
    ruleset_free(rs);
}
END_TEST

/* ---- the router ----------------------------------------------------------------- */

/* Rules with filters and relevance of every form the router tests differently:
 * ladders of each operator (thresholds shared, repeated, written the other way
 * round), trees, a rule without relevance, a strict rule, a second key. */
static const char ROUTED[] =
    "rule strict0 { filter type == \"tx\"; key user; begin a where amount > 500; next b where amount > 500; }\n"
    "rule gt1 { filter type == \"tx\"; key user; begin a where amount > 500; followed_by b where amount > 500; }\n"
    "rule gt2 { filter type == \"tx\"; key user; begin a where amount > 700; followed_by b where amount > 700; }\n"
    "rule gt3 { filter type == \"tx\"; key user; begin a where amount > 200; followed_by b where c != a.c and amount > 200; }\n"
    "rule gt4 { filter type == \"tx\" or type == \"refund\"; key user; begin a where 700 < amount; }\n"
    "rule ge1 { filter type == \"tx\"; key user; begin a where amount >= 700; }\n"
    "rule ge2 { key user; begin a where amount >= 300; }\n"
    "rule lt1 { filter type == \"tx\"; key user; begin a where amount < 300; }\n"
    "rule lt2 { filter type == \"tx\"; key user; begin a where amount < 700; }\n"
    "rule le1 { key user; begin a where amount <= 500; followed_by b where amount <= 500; }\n"
    "rule le2 { key card; begin a where 20 >= amount; }\n"
    "rule tree { filter type == \"order\" or type == \"shipped\"; key id; begin o where type == \"order\";\n"
    "  followed_by s where type == \"shipped\"; within 1h; }\n"
    "rule both { key user; begin a where type == \"tx\" and amount > 500 and flag; followed_by b where type == \"login\"; }\n"
    "rule none { filter type == \"tx\"; key user; begin a; followed_by b where amount > 1; }\n"
    "rule strict { filter type == \"tx\"; key user; begin a where amount > 500; next b where amount > 500; }\n";

/* Each rule's filter and relevance as plain compiled filters (the relevance's text
 * written as a filter), the router's oracle. */
typedef struct Oracle {
    CompiledRuleSet *filters;
    size_t n;
} Oracle;

static Oracle oracle_of(const CompiledRuleSet *rs)
{
    Buf text = BUF_INIT;
    for (size_t i = 0; i < rs->n_rules; i++) {
        const CompiledRule *cr = &rs->rules[i];
        char *f = cr->ast->filter ? dsl_fmt_expr(cr->ast->filter) : strdup("true");
        ck_assert_ptr_nonnull(f);
        buf_printf(&text, "rule f%zu { filter %s; begin a; }\n", i, f);
        buf_printf(&text, "rule r%zu { filter %s; begin a; }\n", i,
                   cr->relevance_text ? cr->relevance_text : "true");
        free(f);
    }
    Oracle o = {test_rules_compile(text.data, rs), rs->n_rules};
    buf_free(&text);
    return o;
}

/* blanks: as router_new's (a strict rule's irrelevant events are ROUTE_BLANK). */
static RouteResult expected(const Oracle *o, const CompiledRuleSet *rs, size_t rule,
                            const Event *ev, EvalScratch *scratch, bool blanks)
{
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    if (!expr_test(o->filters->rules[2 * rule].filter, &ctx, scratch))
        return ROUTE_FILTERED;
    const CompiledRule *cr = &rs->rules[rule];
    for (size_t k = 0; k < cr->n_keys; k++) {
        Value v = expr_eval(cr->keys[k], &ctx, scratch);
        if (value_is_null(&v))
            return ROUTE_NO_KEY;
    }
    if (!expr_test(o->filters->rules[2 * rule + 1].filter, &ctx, scratch))
        return cr->relaxed ? ROUTE_FILTERED : blanks ? ROUTE_BLANK : ROUTE_KEYED;
    return ROUTE_KEYED;
}

static const char *const TYPES[] = {"\"tx\"", "\"refund\"", "\"order\"", "\"shipped\"",
                                    "\"login\"", "7", NULL};
static const char *const AMOUNTS[] = {"0", "20", "19.5", "200", "200.01", "299", "300",
                                      "499", "500", "500.5", "700", "701", "1e9", "-3",
                                      "\"600\"", "null", "true", NULL};

static const char *pick(const char *const *list, uint64_t *seed)
{
    size_t n = 0;
    while (list[n])
        n++;
    *seed = *seed * 6364136223846793005u + 1442695040888963407u;
    size_t i = (size_t)(*seed >> 33) % (n + 1);
    return i < n ? list[i] : NULL;   /* NULL: the field is missing */
}

/* A random event: each field present or missing, amounts around every threshold. */
static Event *random_event(Decoder *dec, uint64_t *seed, Buf *line)
{
    buf_clear(line);
    buf_puts(line, "{\"n\":0");
    const char *type = pick(TYPES, seed), *amount = pick(AMOUNTS, seed);
    const char *user = pick((const char *const[]){"\"u1\"", "\"u2\"", NULL}, seed);
    const char *flag = pick((const char *const[]){"true", "false", NULL}, seed);
    const char *c = pick((const char *const[]){"\"NL\"", "\"DE\"", NULL}, seed);
    const char *names[] = {"type", "amount", "user", "flag", "c", "card", "id"};
    const char *vals[] = {type, amount, user, flag, c, user, c};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (vals[i])
            buf_printf(line, ",\"%s\":%s", names[i], vals[i]);
    buf_putc(line, '}');
    DecodeError err;
    Event *ev = decoder_decode(dec, line->data, line->len, &err);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

/* router_route one rule at a time, against the oracle's answers `want` for ev. The
 * first call for an event routes it for every rule, so the order of the calls varies
 * with the event: in rule order, backwards, or one rule only, asked twice. */
static void route_one_by_one(Router *one, const CompiledRuleSet *rs, const Event *ev,
                             EvalScratch *scratch, const RouteResult *want, size_t e,
                             const char *line)
{
    size_t n = rs->n_rules, asked = e % 3 == 2 ? 2 : n;
    router_begin(one);
    for (size_t q = 0; q < asked; q++) {
        size_t i = e % 3 == 0 ? q : e % 3 == 1 ? n - 1 - q : e % n;
        RouteKey key;
        RouteResult got = router_route(one, i, ev, scratch, &key);
        ck_assert_msg(got == want[i], "rule %s, event %s (order %zu): %d, not %d",
                      rs->rules[i].name, line, e % 3, got, want[i]);
    }
}

/* router_route_all and router_route against the oracle on random events; each run
 * of the loop is one event. Returns how many (rule, event) pairs the relevance
 * turned away, so the caller can check that it did something. */
static size_t route_against_oracle(const CompiledRuleSet *rs, size_t n_events, uint64_t seed,
                                   bool blanks)
{
    Oracle o = oracle_of(rs);
    Router *all = router_new(rs, blanks), *one = router_new(rs, blanks);
    Decoder *dec = decoder_new(&rs->fields, DECODE_MAX_DEPTH);
    EvalScratch *scratch = expr_scratch_new();
    ck_assert(all && one && dec && scratch);
    size_t n = rs->n_rules, turned_away = 0;
    size_t *order = calloc(n, sizeof *order);
    RouteResult *res = calloc(n, sizeof *res);
    const RouteKey **keys = calloc(n, sizeof *keys);
    RouteResult *want = calloc(n, sizeof *want);
    ck_assert(order && res && keys && want);
    Buf line = BUF_INIT;
    for (size_t e = 0; e < n_events; e++) {
        Event *ev = random_event(dec, &seed, &line);
        size_t admitted = router_route_all(all, ev, scratch, order, res, keys);
        for (size_t i = 0; i < n; i++)
            want[i] = expected(&o, rs, i, ev, scratch, blanks);
        route_one_by_one(one, rs, ev, scratch, want, e, line.data);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
            const CompiledRule *cr = &rs->rules[i];
            if ((want[i] == ROUTE_FILTERED &&
                 (!cr->filter || expr_test(cr->filter, &ctx, scratch))) ||
                want[i] == ROUTE_BLANK)
                turned_away++;
            if (want[i] == ROUTE_FILTERED)
                continue;
            ck_assert_msg(k < admitted && order[k] == i, "rule %s, event %s not listed",
                          cr->name, line.data);
            ck_assert_int_eq(res[i], want[i]);
            if (route_keyed(want[i])) {
                RouteKey key;
                router_begin(one);
                ck_assert_int_eq(router_route(one, i, ev, scratch, &key), want[i]);
                ck_assert_uint_eq(keys[i]->hash, key.hash);
            }
            k++;
        }
        ck_assert_uint_eq(k, admitted);
        event_release(ev);
        expr_scratch_reset(scratch);
    }
    buf_free(&line);
    free(order);
    free(res);
    free(keys);
    free(want);
    expr_scratch_free(scratch);
    decoder_free(dec);
    router_free(all);
    router_free(one);
    ruleset_free(o.filters);
    return turned_away;
}

START_TEST(router_admits_exactly_filter_and_relevance)
{
    CompiledRuleSet *rs = test_rules_compile(ROUTED, NULL);
    ck_assert_str_eq(relevance_of(rs, "gt4"), "700 < amount");
    ck_assert_str_eq(relevance_of(rs, "none"), "-");
    /* a strict rule's irrelevant events come as blanks (ROUTE_BLANK), with their key */
    ck_assert_str_eq(relevance_of(rs, "strict"), "amount > 500");
    ck_assert(!rule_named(rs, "strict")->relaxed);
    ck_assert_uint_gt(route_against_oracle(rs, 3000, 42, true), 500);
    /* without blanks strict rules are keyed, and the relaxed rules that share a
     * strict one's relevance text (gt1 that of strict0, which comes first) keep it */
    ck_assert_str_eq(relevance_of(rs, "strict0"), relevance_of(rs, "gt1"));
    ck_assert_uint_gt(route_against_oracle(rs, 3000, 42, false), 500);
    ruleset_free(rs);
}
END_TEST

/* More rules than a 64-bit word holds: ladders and trees whose rules span words. */
START_TEST(router_over_several_words)
{
    Buf text = BUF_INIT;
    static const char *const ops[] = {">", ">=", "<", "<="};
    for (int i = 0; i < 150; i++)
        buf_printf(&text, "rule r%d { %s key %s; begin a where amount %s %d%s; "
                          "followed_by b where amount %s %d; }\n",
                   i, i % 3 ? "filter type == \"tx\";" : "", i % 5 ? "user" : "card",
                   ops[i % 4], (i * 37) % 800, i % 7 ? "" : " or type == \"order\"",
                   ops[i % 4], (i * 37) % 800);
    CompiledRuleSet *rs = test_rules_compile(text.data, NULL);
    ck_assert_uint_gt(route_against_oracle(rs, 2000, 7, true), 1000);
    ruleset_free(rs);
    buf_free(&text);
}
END_TEST

/* ---- missing keys through the engine -------------------------------------------- */

static void no_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)rule, (void)key, (void)n_key, (void)r, (void)scratch;
    ++*(size_t *)user;
}

/* An event the filter passes without a key counts as a missing key whether or not it
 * is relevant; one with a key that is irrelevant counts nothing. */
START_TEST(missing_keys_still_count)
{
    CompiledRuleSet *rs = test_rules_compile(
        "time ts;\n"
        "rule big { filter type == \"tx\"; key user; begin a where amount > 500;\n"
        "  followed_by b where amount > 500; within 1m; on match alert \"m\"; }\n",
        NULL);
    ck_assert_str_eq(relevance_of(rs, "big"), "amount > 500");
    size_t alerts = 0;
    Engine *e = test_engine_new(rs, (EngineSink){no_alert, NULL, NULL, &alerts}, 0, 1);
    static const char *const lines[] = {
        "{\"ts\":1,\"type\":\"tx\",\"amount\":10}",          /* missing, irrelevant */
        "{\"ts\":2,\"type\":\"tx\",\"amount\":900}",         /* missing, relevant */
        "{\"ts\":3,\"type\":\"tx\",\"amount\":10,\"user\":null}",
        "{\"ts\":4,\"type\":\"login\",\"amount\":10}",       /* filtered */
        "{\"ts\":5,\"type\":\"tx\",\"amount\":10,\"user\":\"u\"}",
        "{\"ts\":6,\"type\":\"tx\",\"amount\":600,\"user\":\"u\"}",
        "{\"ts\":7,\"type\":\"tx\",\"amount\":6,\"user\":\"u\"}",
        "{\"ts\":8,\"type\":\"tx\",\"amount\":700,\"user\":\"u\"}",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_int_eq(engine_line(e, lines[i], strlen(lines[i]), "t", i + 1, 0), 0);
    ck_assert_int_eq(engine_finish(e), 0);
    EngineRuleStats st;
    engine_rule_stats(e, 0, &st);
    ck_assert_uint_eq(st.missing_key, 3);
    ck_assert_uint_eq(st.matches, 1);
    ck_assert_uint_eq(alerts, 1);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

static Suite *relevance_suite(void)
{
    Suite *s = suite_create("relevance");
    TCase *tc = tcase_create("analysis");
    tcase_add_test(tc, relaxed_by_step_kind_and_quantifier);
    tcase_add_test(tc, blanks_only_where_no_take_holds_without_a_condition);
    tcase_add_test(tc, relevance_is_the_or_of_the_event_only_conjuncts);
    tcase_add_test(tc, a_condition_without_event_only_conjunct_switches_it_off);
    tcase_add_test(tc, the_switch_turns_it_off_and_a_reload_keeps_it);
    tcase_add_test(tc, the_plan_keeps_only_what_the_trees_test);
    suite_add_tcase(s, tc);
    tc = tcase_create("router");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, router_admits_exactly_filter_and_relevance);
    tcase_add_test(tc, router_over_several_words);
    tcase_add_test(tc, missing_keys_still_count);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(relevance_suite());
}
