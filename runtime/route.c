/* runtime/route.c — grouped filter and key evaluation (see route.h). */
#include "runtime/route.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"
#include "dsl/fmt.h"
#include "runtime/partition.h"

/* How a filter is tested: most are one atom, or two joined by `and` or `or`, which
 * are tested without walking the FilterPlan's nodes. */
typedef enum {
    SHAPE_NONE,                /* no filter: every event */
    SHAPE_ATOM,                /* atom a */
    SHAPE_AND,                 /* atom a and atom b */
    SHAPE_OR,                  /* atom a or atom b */
    SHAPE_TREE,                /* FilterPlan node a */
    SHAPE_EXPR,                /* the rule's own compiled filter (no plan) */
} ShapeKind;

typedef struct FilterShape {
    ShapeKind kind;
    uint32_t a, b;
} FilterShape;

#define NOT_TESTED 2   /* atom_truth of an atom not tested for this event yet */

struct Router {
    const CompiledRuleSet *rs;
    size_t n, widest;
    size_t *filter_group;      /* per rule: the first rule with the same filter text */
    size_t *key_group;         /* per rule: the first rule with the same key text */
    /* router_route_all: the distinct filters, and per filter a bit per rule that has
     * it (`words` words each), so that a filter that passes admits its rules with a
     * few ORs and one that fails costs nothing more */
    size_t n_filters, words;
    size_t *filter_rule;       /* per distinct filter: its first rule */
    uint64_t *filter_rules;    /* n_filters * words */
    uint64_t *passed;          /* words: this event's admitted rules */
    /* the distinct filters in test order: those that start with the same atom (`a`
     * or `a and b`) one after the other, so that when that atom fails the whole run
     * is skipped (run_end: where the run of test_order[k] ends) */
    size_t *test_order;
    size_t *run_end;
    /* the distinct keys: per key group its first rule, and a bit per rule that has
     * it, so that each key the admitted rules need is computed before they are
     * listed, without a test per rule */
    size_t n_keys;
    size_t *key_rule;
    uint64_t *key_rules;       /* n_keys * words */
    uint64_t gen;              /* the current event */
    /* this event's truth of each atom of the rule set's FilterPlan (1, 0, -1), or
     * NOT_TESTED: an atom shared by several filters is tested once per event */
    size_t n_atoms;
    CExpr *const *atoms;
    int8_t *atom_truth;
    FilterShape *shape;        /* per rule */
    /* cache, indexed by a group's first rule */
    uint64_t *filter_gen;
    bool *filter_pass;
    uint64_t *key_gen;
    RouteResult *key_res;
    RouteKey *key_of;          /* on ROUTE_KEYED: bytes, hash and values */
    Buf *key_bytes;
    Value *key_vals;           /* n * widest */
};

/* Canonical text of a rule's filter ("" without one) or of its key tuple; NULL on OOM. */
static char *filter_text(const Rule *r)
{
    if (!r->filter) {
        char *s = malloc(1);
        if (s)
            *s = '\0';
        return s;
    }
    return dsl_fmt_expr(r->filter);
}

static char *key_text(const Rule *r)
{
    Buf b = BUF_INIT;
    buf_printf(&b, "%zu", r->n_keys);
    for (size_t k = 0; k < r->n_keys; k++) {
        char *t = dsl_fmt_expr(r->keys[k].expr);
        if (!t) {
            buf_free(&b);
            return NULL;
        }
        buf_putc(&b, '\x1f');
        buf_puts(&b, t);
        free(t);
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* group[i] = the first j <= i whose text equals rule i's (i itself if the text cannot
 * be made: such a rule simply shares nothing). */
static bool build_groups(const CompiledRuleSet *rs, char *(*text_of)(const Rule *),
                         size_t *group)
{
    size_t n = rs->n_rules;
    char **texts = calloc(n ? n : 1, sizeof *texts);
    uint64_t *hashes = calloc(n ? n : 1, sizeof *hashes);
    bool ok = texts && hashes;
    for (size_t i = 0; ok && i < n; i++) {
        texts[i] = text_of(rs->rules[i].ast);
        group[i] = i;
        if (!texts[i])
            continue;
        hashes[i] = hash_bytes(HASH_SEED, texts[i], strlen(texts[i]));
        for (size_t j = 0; j < i; j++)
            if (texts[j] && hashes[j] == hashes[i] && !strcmp(texts[j], texts[i])) {
                group[i] = group[j];
                break;
            }
    }
    for (size_t i = 0; texts && i < n; i++)
        free(texts[i]);
    free(texts);
    free(hashes);
    return ok;
}

/* The distinct filters and the rules of each, from the groups. False on OOM. */
static bool index_filters(Router *r)
{
    size_t n = r->n ? r->n : 1;
    r->words = (n + 63) / 64;
    r->filter_rule = calloc(n, sizeof *r->filter_rule);
    r->filter_rules = calloc(n * r->words, sizeof *r->filter_rules);
    r->passed = calloc(r->words, sizeof *r->passed);
    if (!r->filter_rule || !r->filter_rules || !r->passed)
        return false;
    size_t *index = r->filter_group;   /* a group's first rule comes before its others */
    r->n_filters = 0;
    for (size_t i = 0; i < r->n; i++) {
        size_t f;
        if (index[i] == i) {
            f = r->n_filters++;
            r->filter_rule[f] = i;
        } else {
            for (f = 0; r->filter_rule[f] != index[i]; f++)
                ;
        }
        r->filter_rules[f * r->words + i / 64] |= (uint64_t)1 << (i % 64);
    }
    return true;
}

static FilterShape shape_of(const CompiledRuleSet *rs, const CompiledRule *cr)
{
    const FilterPlan *plan = &rs->filters;
    if (!cr->filter)
        return (FilterShape){SHAPE_NONE, 0, 0};
    if (cr->filter_root >= plan->n_nodes)
        return (FilterShape){SHAPE_EXPR, 0, 0};
    const FilterNode *root = &plan->nodes[cr->filter_root];
    if (root->op == FILTER_ATOM)
        return (FilterShape){SHAPE_ATOM, root->a, 0};
    if (root->op == FILTER_AND || root->op == FILTER_OR) {
        const FilterNode *a = &plan->nodes[root->a], *b = &plan->nodes[root->b];
        if (a->op == FILTER_ATOM && b->op == FILTER_ATOM)
            return (FilterShape){root->op == FILTER_AND ? SHAPE_AND : SHAPE_OR, a->a, b->a};
    }
    return (FilterShape){SHAPE_TREE, cr->filter_root, 0};
}

/* key_rule and key_rules (see struct Router), from the key groups. False on OOM. */
static bool index_keys(Router *r)
{
    size_t n = r->n ? r->n : 1;
    r->key_rule = calloc(n, sizeof *r->key_rule);
    r->key_rules = calloc(n * r->words, sizeof *r->key_rules);
    if (!r->key_rule || !r->key_rules)
        return false;
    size_t *slot_of = calloc(n, sizeof *slot_of);   /* per group's first rule */
    if (!slot_of)
        return false;
    r->n_keys = 0;
    for (size_t i = 0; i < r->n; i++) {
        size_t g = r->key_group[i];   /* a group's first rule comes before its others */
        if (g == i) {
            slot_of[i] = r->n_keys;
            r->key_rule[r->n_keys++] = i;
        }
        r->key_rules[slot_of[g] * r->words + i / 64] |= (uint64_t)1 << (i % 64);
    }
    free(slot_of);
    return true;
}

/* The atom a filter needs before anything else, or NO_GUARD. */
#define NO_GUARD UINT32_MAX

static uint32_t guard_of(const FilterShape *sh)
{
    return sh->kind == SHAPE_ATOM || sh->kind == SHAPE_AND ? sh->a : NO_GUARD;
}

typedef struct GuardedFilter {
    uint32_t guard;
    size_t filter;
} GuardedFilter;

static int by_guard(const void *x, const void *y)
{
    const GuardedFilter *a = x, *b = y;
    if (a->guard != b->guard)
        return a->guard < b->guard ? -1 : 1;
    return a->filter < b->filter ? -1 : a->filter > b->filter;
}

/* test_order and run_end (see struct Router). False on OOM. */
static bool order_tests(Router *r)
{
    size_t nf = r->n_filters ? r->n_filters : 1;
    GuardedFilter *gf = calloc(nf, sizeof *gf);
    r->test_order = calloc(nf, sizeof *r->test_order);
    r->run_end = calloc(nf, sizeof *r->run_end);
    if (!gf || !r->test_order || !r->run_end) {
        free(gf);
        return false;
    }
    for (size_t f = 0; f < r->n_filters; f++)
        gf[f] = (GuardedFilter){guard_of(&r->shape[r->filter_rule[f]]), f};
    qsort(gf, r->n_filters, sizeof *gf, by_guard);
    for (size_t k = r->n_filters; k-- > 0;) {
        r->test_order[k] = gf[k].filter;
        bool run_goes_on = k + 1 < r->n_filters && gf[k].guard != NO_GUARD &&
                           gf[k + 1].guard == gf[k].guard;
        r->run_end[k] = run_goes_on ? r->run_end[k + 1] : k + 1;
    }
    free(gf);
    return true;
}

Router *router_new(const CompiledRuleSet *rs)
{
    Router *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    size_t n = rs->n_rules ? rs->n_rules : 1;
    r->rs = rs;
    r->n = rs->n_rules;
    r->widest = 1;
    for (size_t i = 0; i < rs->n_rules; i++)
        if (rs->rules[i].n_keys > r->widest)
            r->widest = rs->rules[i].n_keys;
    r->gen = 1;
    r->filter_group = calloc(n, sizeof *r->filter_group);
    r->key_group = calloc(n, sizeof *r->key_group);
    r->filter_gen = calloc(n, sizeof *r->filter_gen);
    r->filter_pass = calloc(n, sizeof *r->filter_pass);
    r->key_gen = calloc(n, sizeof *r->key_gen);
    r->key_res = calloc(n, sizeof *r->key_res);
    r->key_of = calloc(n, sizeof *r->key_of);
    r->key_bytes = calloc(n, sizeof *r->key_bytes);
    r->key_vals = calloc(n * r->widest, sizeof *r->key_vals);
    size_t n_atoms = rs->filters.n_atoms ? rs->filters.n_atoms : 1;
    r->n_atoms = rs->filters.n_atoms;
    r->atoms = rs->filters.atoms;
    r->atom_truth = calloc(n_atoms, sizeof *r->atom_truth);
    r->shape = calloc(n, sizeof *r->shape);
    if (!r->atom_truth || !r->shape ||
        !r->filter_group || !r->key_group || !r->filter_gen || !r->filter_pass ||
        !r->key_gen || !r->key_res || !r->key_of || !r->key_bytes || !r->key_vals ||
        !build_groups(rs, filter_text, r->filter_group) ||
        !build_groups(rs, key_text, r->key_group) || !index_filters(r)) {
        router_free(r);
        return NULL;
    }
    for (size_t i = 0; i < rs->n_rules; i++)
        r->shape[i] = shape_of(rs, &rs->rules[i]);
    memset(r->atom_truth, NOT_TESTED, r->n_atoms);
    if (!order_tests(r) || !index_keys(r)) {
        router_free(r);
        return NULL;
    }
    return r;
}

void router_free(Router *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->key_bytes && i < r->n; i++)
        buf_free(&r->key_bytes[i]);
    free(r->filter_group);
    free(r->key_group);
    free(r->filter_gen);
    free(r->filter_pass);
    free(r->key_gen);
    free(r->key_res);
    free(r->key_of);
    free(r->key_bytes);
    free(r->key_vals);
    free(r->filter_rule);
    free(r->filter_rules);
    free(r->passed);
    free(r->atom_truth);
    free(r->shape);
    free(r->test_order);
    free(r->run_end);
    free(r->key_rule);
    free(r->key_rules);
    free(r);
}

void router_begin(Router *r)
{
    r->gen++;
    memset(r->atom_truth, NOT_TESTED, r->n_atoms);
}

static inline int atom_truth(Router *r, uint32_t atom, const EvalCtx *ctx,
                             EvalScratch *scratch)
{
    int t = r->atom_truth[atom];
    if (t == NOT_TESTED)
        r->atom_truth[atom] = (int8_t)(t = expr_truth(r->atoms[atom], ctx, scratch));
    return t;
}

/* Truth of a FilterPlan node: the three-valued logic of expr_truth, with each atom
 * tested at most once per event. */
static int node_truth(Router *r, uint32_t node, const EvalCtx *ctx, EvalScratch *scratch)
{
    const FilterNode *fn = &r->rs->filters.nodes[node];
    int a, b;
    switch (fn->op) {
    case FILTER_ATOM:
        return atom_truth(r, fn->a, ctx, scratch);
    case FILTER_AND:
        if ((a = node_truth(r, fn->a, ctx, scratch)) == 0 ||
            (b = node_truth(r, fn->b, ctx, scratch)) == 0)
            return 0;
        return a == 1 && b == 1 ? 1 : -1;
    case FILTER_OR:
        if ((a = node_truth(r, fn->a, ctx, scratch)) == 1 ||
            (b = node_truth(r, fn->b, ctx, scratch)) == 1)
            return 1;
        return a == 0 && b == 0 ? 0 : -1;
    case FILTER_NOT:
        a = node_truth(r, fn->a, ctx, scratch);
        return a < 0 ? -1 : !a;
    }
    return -1;
}

/* The filter of rule `rule` (a group's first rule): through the shared atoms when
 * the rule set has them, else the rule's own compiled filter. `and`/`or` of two
 * atoms hold exactly when the three-valued result is true, so their unknowns need
 * no tracking here. */
static bool filter_holds(Router *r, size_t rule, const EvalCtx *ctx, EvalScratch *scratch)
{
    const FilterShape *sh = &r->shape[rule];
    switch (sh->kind) {
    case SHAPE_NONE:
        return true;
    case SHAPE_ATOM:
        return atom_truth(r, sh->a, ctx, scratch) == 1;
    case SHAPE_AND:
        return atom_truth(r, sh->a, ctx, scratch) == 1 && atom_truth(r, sh->b, ctx, scratch) == 1;
    case SHAPE_OR:
        return atom_truth(r, sh->a, ctx, scratch) == 1 || atom_truth(r, sh->b, ctx, scratch) == 1;
    case SHAPE_TREE:
        return node_truth(r, sh->a, ctx, scratch) == 1;
    case SHAPE_EXPR:
        break;
    }
    return expr_test(r->rs->rules[rule].filter, ctx, scratch);
}

static bool filter_passes(Router *r, size_t rule, const EvalCtx *ctx, EvalScratch *scratch)
{
    size_t g = r->filter_group[rule];
    if (!r->rs->rules[g].filter)
        return true;
    if (r->filter_gen[g] != r->gen) {
        r->filter_pass[g] = filter_holds(r, g, ctx, scratch);
        r->filter_gen[g] = r->gen;
    }
    return r->filter_pass[g];
}

static void compute_key(Router *r, size_t g, const EvalCtx *ctx, EvalScratch *scratch)
{
    const CompiledRule *rule = &r->rs->rules[g];
    Value *vals = &r->key_vals[g * r->widest];
    Buf *kb = &r->key_bytes[g];
    for (size_t k = 0; k < rule->n_keys; k++)
        vals[k] = expr_eval(rule->keys[k], ctx, scratch);
    buf_clear(kb);
    if (!part_key_bytes(vals, rule->n_keys, kb)) {
        r->key_res[g] = ROUTE_NO_KEY;
        return;
    }
    if (!kb->data)
        buf_puts(kb, "");   /* the global partition: empty, but not NULL */
    if (kb->failed) {
        r->key_res[g] = ROUTE_FAILED;
        return;
    }
    r->key_of[g] = (RouteKey){kb->data, kb->len, part_hash(kb->data, kb->len), vals};
    r->key_res[g] = ROUTE_KEYED;
}

RouteResult router_route(Router *r, size_t rule, const Event *ev, EvalScratch *scratch,
                         RouteKey *key)
{
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    if (!filter_passes(r, rule, &ctx, scratch))
        return ROUTE_FILTERED;
    size_t g = r->key_group[rule];
    if (r->key_gen[g] != r->gen) {
        compute_key(r, g, &ctx, scratch);
        r->key_gen[g] = r->gen;
    }
    if (r->key_res[g] == ROUTE_KEYED)
        *key = r->key_of[g];
    return r->key_res[g];
}

size_t router_route_all(Router *r, const Event *ev, EvalScratch *scratch, size_t *order,
                        RouteResult *res, RouteKey *key)
{
    router_begin(r);
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    memset(r->passed, 0, r->words * sizeof *r->passed);
    for (size_t k = 0; k < r->n_filters;) {
        size_t f = r->test_order[k], first = r->filter_rule[f];
        uint32_t guard = guard_of(&r->shape[first]);
        if (guard != NO_GUARD && atom_truth(r, guard, &ctx, scratch) != 1) {
            k = r->run_end[k];
            continue;
        }
        k++;
        if (!filter_holds(r, first, &ctx, scratch))
            continue;
        const uint64_t *rules = &r->filter_rules[f * r->words];
        for (size_t w = 0; w < r->words; w++)
            r->passed[w] |= rules[w];
    }
    for (size_t k = 0; k < r->n_keys; k++) {
        const uint64_t *rules = &r->key_rules[k * r->words];
        for (size_t w = 0; w < r->words; w++)
            if (rules[w] & r->passed[w]) {
                size_t g = r->key_rule[k];
                compute_key(r, g, &ctx, scratch);
                r->key_gen[g] = r->gen;   /* for router_route on the same event */
                break;
            }
    }
    size_t n = 0;
    for (size_t w = 0; w < r->words; w++)
        for (uint64_t bits = r->passed[w]; bits; bits &= bits - 1) {
            size_t rule = w * 64 + (size_t)__builtin_ctzll(bits);
            size_t g = r->key_group[rule];
            order[n++] = rule;
            res[rule] = r->key_res[g];
            key[rule] = r->key_of[g];   /* read only on ROUTE_KEYED */
        }
    return n;
}
