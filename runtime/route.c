/* runtime/route.c — grouped filter and key evaluation (see route.h). */
#include "runtime/route.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"
#include "base/lines.h"
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
} ShapeKind;

typedef struct FilterShape {
    ShapeKind kind;
    uint32_t a, b;
} FilterShape;

/* Threshold atoms (`amount > 500`, nfa/expr.h) on the same field with the same
 * operator: rules written with 40 different thresholds would cost 40 tests per event;
 * the thresholds sorted in the order in which they stop holding as the number grows
 * (or falls), one read of the field and a binary search settle every rule on them.
 * Two kinds: relevance trees that are one such atom (the rules an event cannot change
 * are those of the rungs it does not reach), and filters that are one such atom,
 * alone or after the same guard atom (`type == "tx" and amount > 20000`: the rules
 * admitted are those of the rungs it reaches). */
typedef struct Ladder {
    int32_t slot;
    /* a rung holds on a number v when sign * v > its number (>= unless strict): `<`
     * and `<=` compare the negated number with negated thresholds, exactly, so that
     * the search tests no operator */
    double sign;
    bool strict;
    uint32_t guard;            /* filters: the atom that must be true first, or NO_GUARD */
    size_t n;                  /* rungs */
    double *numbers;           /* per rung, times sign: ascending, those that hold first */
    uint64_t *rules;           /* (n + 1) * words: [k] = relevance: the rules of rungs
                                  k .. n-1; filters: those of rungs 0 .. k-1 */
} Ladder;

/* The atom a filter needs before anything else, or NO_GUARD. */
#define NO_GUARD UINT32_MAX

#define NOT_TESTED 2   /* atom_truth of an atom not tested for this event yet */

#define NOT_A_FIELD INT32_MIN   /* Router.key_slot of a key evaluated as an expression */

/* The texts of a switch (below) are compared one by one: more would cost an event
 * more in compares than the tests they save. */
#define MAX_CASES 16

/* A filter an event must still be tested against: when `guard` is not true the run
 * of tests up to run_end (those with the same guard) is skipped. */
typedef struct FilterTest {
    uint32_t guard;            /* or NO_GUARD */
    uint32_t run_end;
    FilterShape shape;
    const uint64_t *rules;     /* the filter's rules (Router.filter_rules) */
} FilterTest;

/* Work wanted only when one of some rules passed the event's filters: `need` names
 * them, or is NULL when the plan already passes one of them. */
typedef struct Needed {
    size_t index;              /* a relevance ladder, tree or key group (Router's) */
    const uint64_t *need;
} Needed;

/* What routing an event leaves to do once the value of the switch field is known
 * (see route_event): the atoms, filters and relevance trees the value settles are
 * settled when the router is built, and what the passed rules cannot need is left out.
 * Owns its arrays. */
typedef struct AtomTruth {
    uint32_t atom;
    int8_t truth;              /* or NOT_TESTED */
} AtomTruth;

typedef struct Plan {
    AtomTruth *starts;         /* the atoms its open work reads, each with the truth the
                                  value settles or NOT_TESTED: what it resets per event */
    size_t n_starts;
    uint64_t *passed;          /* words: the rules whose filter it settles true */
    uint64_t *irrelevant;      /* words: the rules whose relevance it settles not true */
    FilterTest *tests;         /* the filters it leaves open, in test order */
    size_t n_tests;
    size_t *filter_ladders;    /* those whose guard it does not settle as not true */
    size_t n_filter_ladders;
    Needed *ladders;           /* the relevance ladders the passed rules may need */
    size_t n_ladders;
    Needed *trees;             /* the relevance trees it leaves open that they may need */
    size_t n_trees;
    Needed *keys;              /* the key groups they may need */
    size_t n_keys;
} Plan;

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
     * is skipped (FilterTest.run_end); each plan keeps those it leaves open, in this
     * order */
    size_t *test_order;
    size_t n_test_order;       /* the filters tested one by one: those on no ladder */
    /* the filters on ladders, settled through them */
    Ladder *filter_ladders;
    size_t n_filter_ladders;
    /* the distinct keys: per key group its first rule, and a bit per rule that has
     * it, so that each key the admitted rules need is computed before they are
     * listed, without a test per rule */
    size_t n_keys;
    size_t *key_rule;
    uint64_t *key_rules;       /* n_keys * words */
    /* the distinct relevance trees (CompiledRule.relevance_root, grouped by text):
     * per tree its shape and a bit per rule that has it. A tree is tested only when
     * one of its rules' filters passed; when it is not true, its rules' bits go into
     * `irrelevant`, and those of them with a key are not listed (ROUTE_FILTERED),
     * unless they are strict (`blanks`: ROUTE_BLANK) */
    size_t n_rel;
    FilterShape *rel_shape;
    uint64_t *rel_rules;       /* n_rel * words */
    uint64_t *blanks;          /* words: the strict rules with a relevance (router_new's
                                  `blanks`; else none, and no strict rule's tree) */
    bool any_blanks;
    uint64_t *irrelevant;      /* words: this event's */
    uint64_t *keyed;           /* words: the rules whose key this event has */
    /* the trees on ladders are settled through the ladders, the others (`tested`) one
     * by one */
    Ladder *ladders;
    size_t n_ladders;
    size_t *tested;
    size_t n_tested;
    /* router_route: the current event has been routed (the bitmaps above hold its
     * results for every rule) */
    bool routed;
    /* this event's truth (1, 0, -1) of each atom of the rule set's FilterPlan that its
     * plan reads, or NOT_TESTED: an atom shared by several filters is tested once per
     * event. The others' are left from earlier events, and not read. */
    size_t n_atoms;
    CExpr *const *atoms;
    int8_t *atom_truth;
    FilterShape *shape;        /* per rule */
    /* the switch: most filters of a rule set ask which kind an event is (`type ==
     * "tx"`), one text at a time. The field that the most such atoms read is read once
     * per event and its value picks a plan (n_cases + 1: one per text in `cases`, the
     * last for any other value), in which those atoms, and what they settle, are
     * settled already. Without such atoms switch_slot is -1 and the one plan settles
     * nothing. */
    int32_t switch_slot;
    size_t n_cases;
    ExprStringEq cases[MAX_CASES];   /* texts borrowed from the atoms */
    Plan *plans;
    /* this event's keys, indexed by a key group's first rule; set for the groups of
     * the rules whose filter passed */
    RouteResult *key_res;
    RouteKey *key_of;          /* on ROUTE_KEYED: bytes, hash and values */
    Buf *key_bytes;
    Value *key_vals;           /* n * widest */
    int32_t *key_slot;         /* n * widest: per key of a rule, the slot of the event
                                  field it is (most keys), else NOT_A_FIELD */
};

/* Canonical text of a rule's filter ("" without one) or of its key tuple; NULL on OOM. */
static char *filter_text(const CompiledRule *cr)
{
    const Rule *r = cr->ast;
    if (!r->filter) {
        char *s = malloc(1);
        if (s)
            *s = '\0';
        return s;
    }
    return dsl_fmt_expr(r->filter);
}

static char *key_text(const CompiledRule *cr)
{
    const Rule *r = cr->ast;
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
static bool build_groups(const CompiledRuleSet *rs, char *(*text_of)(const CompiledRule *),
                         size_t *group)
{
    size_t n = rs->n_rules;
    char **texts = calloc(n ? n : 1, sizeof *texts);
    uint64_t *hashes = calloc(n ? n : 1, sizeof *hashes);
    bool ok = texts && hashes;
    for (size_t i = 0; ok && i < n; i++) {
        texts[i] = text_of(&rs->rules[i]);
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
    r->passed = lines_calloc_n(r->words, sizeof *r->passed);
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

/* The shape of the tree at `node` of the plan. */
static FilterShape shape_at(const FilterPlan *plan, uint32_t node)
{
    const FilterNode *root = &plan->nodes[node];
    if (root->op == FILTER_ATOM)
        return (FilterShape){SHAPE_ATOM, root->a, 0};
    if (root->op == FILTER_AND || root->op == FILTER_OR) {
        const FilterNode *a = &plan->nodes[root->a], *b = &plan->nodes[root->b];
        if (a->op == FILTER_ATOM && b->op == FILTER_ATOM)
            return (FilterShape){root->op == FILTER_AND ? SHAPE_AND : SHAPE_OR, a->a, b->a};
    }
    return (FilterShape){SHAPE_TREE, node, 0};
}

/* Every filter of a rule set that compiled is in its plan (filters_plan fails the
 * set otherwise), so a rule's filter_root is FILTER_NONE exactly when it has none. */
static FilterShape shape_of(const CompiledRuleSet *rs, const CompiledRule *cr)
{
    if (cr->filter_root == FILTER_NONE)
        return (FilterShape){SHAPE_NONE, 0, 0};
    return shape_at(&rs->filters, cr->filter_root);
}

/* A copy of the relevance's text, or "" for a rule without one (not used). */
static char *relevance_text_of(const CompiledRule *cr)
{
    return strdup(cr->relevance_text ? cr->relevance_text : "");
}

typedef struct Rung {
    uint32_t guard;            /* NO_GUARD for relevance trees */
    size_t group;              /* its rules: bitmap `group` of the ladder's base */
    ExprThreshold th;
} Rung;

/* Same guard, field and operator together, then in ladder order. */
static int by_ladder(const void *x, const void *y)
{
    const Rung *a = x, *b = y;
    if (a->guard != b->guard)
        return a->guard < b->guard ? -1 : 1;
    if (a->th.slot != b->th.slot)
        return a->th.slot < b->th.slot ? -1 : 1;
    if (a->th.op != b->th.op)
        return a->th.op < b->th.op ? -1 : 1;
    if (a->th.number != b->th.number) {
        bool rising = a->th.op == BIN_GT || a->th.op == BIN_GE;
        return (a->th.number < b->th.number) == rising ? -1 : 1;
    }
    return a->group < b->group ? -1 : a->group > b->group;
}

static bool same_ladder(const Rung *a, const Rung *b)
{
    return a->guard == b->guard && a->th.slot == b->th.slot && a->th.op == b->th.op;
}

/* One ladder from rungs[0 .. n), whose rules are the bitmaps `base` (words each) of
 * their groups: a relevance ladder's sets hold the rungs not reached, a filter
 * ladder's (`reached`) those reached. False on OOM. */
static bool build_ladder(Router *r, Ladder *l, const Rung *rungs, size_t n,
                         const uint64_t *base, bool reached)
{
    int op = rungs[0].th.op;
    *l = (Ladder){rungs[0].th.slot, op == BIN_LT || op == BIN_LE ? -1.0 : 1.0,
                  op == BIN_LT || op == BIN_GT, rungs[0].guard, n, NULL, NULL};
    l->numbers = calloc(n, sizeof *l->numbers);
    l->rules = calloc((n + 1) * r->words, sizeof *l->rules);
    if (!l->numbers || !l->rules)
        return false;
    for (size_t k = 0; k < n; k++)
        l->numbers[k] = l->sign * rungs[k].th.number;
    for (size_t i = 0; i < n; i++) {
        size_t k = reached ? i : n - 1 - i;   /* each set grows from the previous one */
        size_t from = reached ? k : k + 1, to = reached ? k + 1 : k;
        const uint64_t *rules = &base[rungs[k].group * r->words];
        for (size_t w = 0; w < r->words; w++)
            l->rules[to * r->words + w] = l->rules[from * r->words + w] | rules[w];
    }
    return true;
}

/* Ladders from sorted rungs (runs of the same guard, field and operator of at least
 * `min_rungs`) into ladders[*n_ladders ...]; a rung of a shorter run goes to
 * `left_out` (may be NULL) instead. False on OOM. */
static bool build_ladders_from(Router *r, const Rung *rungs, size_t n_rungs, size_t min_rungs,
                               const uint64_t *base, bool reached, Ladder *ladders,
                               size_t *n_ladders, size_t *left_out, size_t *n_left_out)
{
    for (size_t i = 0; i < n_rungs;) {
        size_t j = i + 1;
        while (j < n_rungs && same_ladder(&rungs[j], &rungs[i]))
            j++;
        if (j - i < min_rungs) {
            for (size_t k = i; k < j; k++)
                left_out[(*n_left_out)++] = rungs[k].group;
        } else if (!build_ladder(r, &ladders[(*n_ladders)++], &rungs[i], j - i, base,
                                 reached)) {
            return false;
        }
        i = j;
    }
    return true;
}

/* Ladders from the trees that are one threshold atom; the other trees go to `tested`.
 * False on OOM. */
static bool build_ladders(Router *r)
{
    size_t n = r->n_rel ? r->n_rel : 1;
    Rung *rungs = calloc(n, sizeof *rungs);
    r->tested = calloc(n, sizeof *r->tested);
    r->ladders = calloc(n, sizeof *r->ladders);
    bool ok = rungs && r->tested && r->ladders;
    size_t n_rungs = 0;
    for (size_t g = 0; ok && g < r->n_rel; g++) {
        const FilterShape *sh = &r->rel_shape[g];
        if (sh->kind == SHAPE_ATOM && expr_threshold(r->atoms[sh->a], &rungs[n_rungs].th)) {
            rungs[n_rungs].guard = NO_GUARD;
            rungs[n_rungs++].group = g;
        } else {
            r->tested[r->n_tested++] = g;
        }
    }
    if (ok)
        qsort(rungs, n_rungs, sizeof *rungs, by_ladder);
    ok = ok && build_ladders_from(r, rungs, n_rungs, 1, r->rel_rules, false, r->ladders,
                                  &r->n_ladders, NULL, NULL);
    free(rungs);
    return ok;
}

/* The relevance trees (see struct Router), strict rules' only with `blanks`. False on
 * OOM. */
static bool index_relevance(Router *r, bool blanks)
{
    const CompiledRuleSet *rs = r->rs;
    size_t n = r->n ? r->n : 1;
    size_t *group = calloc(n, sizeof *group);
    size_t *tree_of = malloc(n * sizeof *tree_of);   /* per group's first rule */
    r->rel_shape = calloc(n, sizeof *r->rel_shape);
    r->rel_rules = calloc(n * r->words, sizeof *r->rel_rules);
    r->irrelevant = lines_calloc_n(r->words, sizeof *r->irrelevant);
    r->blanks = calloc(r->words, sizeof *r->blanks);
    r->keyed = lines_calloc_n(r->words, sizeof *r->keyed);
    bool ok = group && tree_of && r->rel_shape && r->rel_rules && r->irrelevant &&
              r->blanks && r->keyed && build_groups(rs, relevance_text_of, group);
    r->n_rel = 0;
    for (size_t i = 0; ok && i < r->n; i++)
        tree_of[i] = SIZE_MAX;
    for (size_t i = 0; ok && i < r->n; i++) {
        const CompiledRule *cr = &rs->rules[i];
        if (cr->relevance_root >= rs->filters.n_nodes || (!cr->relaxed && !blanks))
            continue;
        /* the group's first rule indexed makes its tree: without blanks that need not
         * be the group's first rule, a strict one with the same relevance text */
        size_t g = group[i];
        if (tree_of[g] == SIZE_MAX) {
            tree_of[g] = r->n_rel;
            r->rel_shape[r->n_rel++] = shape_at(&rs->filters, cr->relevance_root);
        }
        r->rel_rules[tree_of[g] * r->words + i / 64] |= (uint64_t)1 << (i % 64);
        if (!cr->relaxed) {
            r->blanks[i / 64] |= (uint64_t)1 << (i % 64);
            r->any_blanks = true;
        }
    }
    free(group);
    free(tree_of);
    return ok && build_ladders(r);
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

/* A filter that is one threshold atom, alone or after its guard: its rung. */
static bool filter_rung(const Router *r, size_t f, Rung *out)
{
    const FilterShape *sh = &r->shape[r->filter_rule[f]];
    uint32_t atom = sh->kind == SHAPE_ATOM ? sh->a : sh->kind == SHAPE_AND ? sh->b : NO_GUARD;
    if (atom == NO_GUARD || !expr_threshold(r->atoms[atom], &out->th))
        return false;
    out->guard = sh->kind == SHAPE_AND ? sh->a : NO_GUARD;
    out->group = f;
    return true;
}

/* The filter ladders (of two rungs or more: a lone rung is no cheaper), and which
 * filters they settle (laddered, per filter, zeroed by the caller). False on OOM. */
static bool index_filter_ladders(Router *r, bool *laddered)
{
    size_t nf = r->n_filters ? r->n_filters : 1;
    Rung *rungs = calloc(nf, sizeof *rungs);
    size_t *lone = calloc(nf, sizeof *lone);
    r->filter_ladders = calloc(nf, sizeof *r->filter_ladders);
    bool ok = rungs && lone && r->filter_ladders;
    size_t n_rungs = 0, n_lone = 0;
    for (size_t f = 0; ok && f < r->n_filters; f++)
        n_rungs += filter_rung(r, f, &rungs[n_rungs]);
    if (ok)
        qsort(rungs, n_rungs, sizeof *rungs, by_ladder);
    ok = ok && build_ladders_from(r, rungs, n_rungs, 2, r->filter_rules, true,
                                  r->filter_ladders, &r->n_filter_ladders, lone, &n_lone);
    for (size_t i = 0; ok && i < n_rungs; i++)
        laddered[rungs[i].group] = true;
    for (size_t i = 0; ok && i < n_lone; i++)
        laddered[lone[i]] = false;
    free(rungs);
    free(lone);
    return ok;
}

/* test_order (see struct Router) of the filters on no ladder. False on OOM. */
static bool order_tests(Router *r, const bool *laddered)
{
    size_t nf = r->n_filters ? r->n_filters : 1;
    GuardedFilter *gf = calloc(nf, sizeof *gf);
    r->test_order = calloc(nf, sizeof *r->test_order);
    if (!gf || !r->test_order) {
        free(gf);
        return false;
    }
    size_t n = 0;
    for (size_t f = 0; f < r->n_filters; f++)
        if (!laddered[f])
            gf[n++] = (GuardedFilter){guard_of(&r->shape[r->filter_rule[f]]), f};
    qsort(gf, n, sizeof *gf, by_guard);
    for (size_t k = 0; k < n; k++)
        r->test_order[k] = gf[k].filter;
    r->n_test_order = n;
    free(gf);
    return true;
}

/* Both of the above. False on OOM. */
static bool plan_filters(Router *r)
{
    bool *laddered = calloc(r->n_filters ? r->n_filters : 1, sizeof *laddered);
    bool ok = laddered && index_filter_ladders(r, laddered) && order_tests(r, laddered);
    free(laddered);
    return ok;
}

/* ---- plans ------------------------------------------------------------------ */

/* Three-valued `and`/`or`/`not` over truths that may be NOT_TESTED (not settled). */
static int settle_and(int a, int b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a == NOT_TESTED || b == NOT_TESTED)
        return NOT_TESTED;
    return a == 1 && b == 1 ? 1 : -1;
}

static int settle_or(int a, int b)
{
    if (a == 1 || b == 1)
        return 1;
    if (a == NOT_TESTED || b == NOT_TESTED)
        return NOT_TESTED;
    return a == 0 && b == 0 ? 0 : -1;
}

/* The truth of a FilterPlan node given some atoms' truths, as node_truth would find
 * it on every event with those truths; NOT_TESTED when it depends on the others. */
static int settle_node(const Router *r, const int8_t *truth, uint32_t node)
{
    const FilterNode *fn = &r->rs->filters.nodes[node];
    int a;
    switch (fn->op) {
    case FILTER_ATOM:
        return truth[fn->a];
    case FILTER_AND:
        return settle_and(settle_node(r, truth, fn->a), settle_node(r, truth, fn->b));
    case FILTER_OR:
        return settle_or(settle_node(r, truth, fn->a), settle_node(r, truth, fn->b));
    case FILTER_NOT:
        a = settle_node(r, truth, fn->a);
        return a == NOT_TESTED || a < 0 ? a : !a;
    }
    return NOT_TESTED;
}

/* Does the shape hold (1), surely not (0), or is it open (NOT_TESTED)? */
static int settle_shape(const Router *r, const int8_t *truth, const FilterShape *sh)
{
    int t = NOT_TESTED;
    switch (sh->kind) {
    case SHAPE_NONE:
        return 1;
    case SHAPE_ATOM:
        t = truth[sh->a];
        break;
    case SHAPE_AND:
        t = settle_and(truth[sh->a], truth[sh->b]);
        break;
    case SHAPE_OR:
        t = settle_or(truth[sh->a], truth[sh->b]);
        break;
    case SHAPE_TREE:
        t = settle_node(r, truth, sh->a);
        break;
    }
    return t == NOT_TESTED ? t : t == 1;
}

static void or_bits(uint64_t *into, const uint64_t *bits, size_t words)
{
    for (size_t w = 0; w < words; w++)
        into[w] |= bits[w];
}

static bool intersects(const uint64_t *a, const uint64_t *b, size_t words)
{
    for (size_t w = 0; w < words; w++)
        if (a[w] & b[w])
            return true;
    return false;
}

/* The switch field and its cases (see struct Router); case_of[atom]: the case whose
 * text the atom asks for, or MAX_CASES (also for the texts past MAX_CASES, which stay
 * tested one by one). */
static void index_switch(Router *r, uint32_t *case_of)
{
    size_t best = 0;
    r->switch_slot = -1;
    for (size_t a = 0; a < r->n_atoms; a++) {
        ExprStringEq eq, other;
        if (!expr_string_eq(r->atoms[a], &eq))
            continue;
        size_t count = 0;
        for (size_t b = 0; b < r->n_atoms; b++)
            count += expr_string_eq(r->atoms[b], &other) && other.slot == eq.slot;
        if (count > best) {
            best = count;
            r->switch_slot = eq.slot;
        }
    }
    r->n_cases = 0;
    for (size_t a = 0; a < r->n_atoms; a++) {
        ExprStringEq eq;
        case_of[a] = MAX_CASES;
        if (!expr_string_eq(r->atoms[a], &eq) || eq.slot != r->switch_slot)
            continue;
        size_t c = 0;
        while (c < r->n_cases &&
               (r->cases[c].len != eq.len ||
                (eq.len && memcmp(r->cases[c].s, eq.s, eq.len) != 0)))
            c++;
        if (c == MAX_CASES)
            continue;
        if (c == r->n_cases)
            r->cases[r->n_cases++] = eq;
        case_of[a] = (uint32_t)c;
    }
}

static void plan_free(Plan *p)
{
    free(p->starts);
    free(p->passed);
    free(p->irrelevant);
    free(p->tests);
    free(p->filter_ladders);
    free(p->ladders);
    free(p->trees);
    free(p->keys);
}

/* Appends to the plan's `list` the work on `rules` if one of them may pass (`may`),
 * to be done only when one passed unless one surely passes (`passed`). */
static void plan_need(Needed *list, size_t *n, size_t index, const uint64_t *rules,
                      const uint64_t *may, const uint64_t *passed, size_t words)
{
    if (intersects(rules, may, words))
        list[(*n)++] = (Needed){index, intersects(rules, passed, words) ? NULL : rules};
}

/* The filter tests case c leaves open (in test order, runs of one guard together)
 * and the rules it passes; `may` gets the rules that may pass. */
static void plan_tests(const Router *r, Plan *p, const int8_t *truth, uint64_t *may)
{
    for (size_t k = 0; k < r->n_test_order; k++) {
        size_t f = r->test_order[k];
        const FilterShape *sh = &r->shape[r->filter_rule[f]];
        const uint64_t *rules = &r->filter_rules[f * r->words];
        int holds = settle_shape(r, truth, sh);
        if (holds == 1)
            or_bits(p->passed, rules, r->words);
        else if (holds == NOT_TESTED)
            p->tests[p->n_tests++] = (FilterTest){guard_of(sh), 0, *sh, rules};
    }
    for (size_t k = p->n_tests; k-- > 0;) {
        FilterTest *t = &p->tests[k];
        bool run_goes_on = k + 1 < p->n_tests && t->guard != NO_GUARD &&
                           t[1].guard == t->guard;
        t->run_end = run_goes_on ? t[1].run_end : (uint32_t)(k + 1);
        or_bits(may, t->rules, r->words);
    }
    or_bits(may, p->passed, r->words);
    for (size_t i = 0; i < r->n_filter_ladders; i++) {
        const Ladder *l = &r->filter_ladders[i];
        if (l->guard != NO_GUARD && truth[l->guard] != NOT_TESTED && truth[l->guard] != 1)
            continue;
        p->filter_ladders[p->n_filter_ladders++] = i;
        or_bits(may, &l->rules[l->n * r->words], r->words);   /* every rung's */
    }
}

/* The relevance and keys the rules that may pass (`may`) need under plan p. */
static void plan_needs(const Router *r, Plan *p, const int8_t *truth, const uint64_t *may)
{
    for (size_t i = 0; i < r->n_ladders; i++)   /* [0]: every rung's rules */
        plan_need(p->ladders, &p->n_ladders, i, r->ladders[i].rules, may, p->passed, r->words);
    for (size_t i = 0; i < r->n_tested; i++) {
        size_t g = r->tested[i];
        const uint64_t *rules = &r->rel_rules[g * r->words];
        int holds = settle_shape(r, truth, &r->rel_shape[g]);
        if (holds == 0)
            or_bits(p->irrelevant, rules, r->words);
        else if (holds == NOT_TESTED)
            plan_need(p->trees, &p->n_trees, g, rules, may, p->passed, r->words);
    }
    for (size_t k = 0; k < r->n_keys; k++)
        plan_need(p->keys, &p->n_keys, k, &r->key_rules[k * r->words], may, p->passed,
                  r->words);
}

static void mark_node_atoms(const Router *r, uint32_t node, bool *read)
{
    const FilterNode *fn = &r->rs->filters.nodes[node];
    if (fn->op == FILTER_ATOM) {
        read[fn->a] = true;
        return;
    }
    mark_node_atoms(r, fn->a, read);
    if (fn->op != FILTER_NOT)
        mark_node_atoms(r, fn->b, read);
}

static void mark_shape_atoms(const Router *r, const FilterShape *sh, bool *read)
{
    switch (sh->kind) {
    case SHAPE_NONE:
        break;
    case SHAPE_AND:
    case SHAPE_OR:
        read[sh->b] = true;
        /* fall through */
    case SHAPE_ATOM:
        read[sh->a] = true;
        break;
    case SHAPE_TREE:
        mark_node_atoms(r, sh->a, read);
        break;
    }
}

/* p->starts, from the open work of the plan (read: n_atoms, false). */
static void plan_starts(const Router *r, Plan *p, const int8_t *truth, bool *read)
{
    for (size_t k = 0; k < p->n_tests; k++)
        mark_shape_atoms(r, &p->tests[k].shape, read);
    for (size_t i = 0; i < p->n_filter_ladders; i++) {
        uint32_t guard = r->filter_ladders[p->filter_ladders[i]].guard;
        if (guard != NO_GUARD)
            read[guard] = true;
    }
    for (size_t i = 0; i < p->n_trees; i++)
        mark_shape_atoms(r, &r->rel_shape[p->trees[i].index], read);
    for (size_t a = 0; a < r->n_atoms; a++)
        if (read[a])
            p->starts[p->n_starts++] = (AtomTruth){(uint32_t)a, truth[a]};
}

/* The plan of case c (n_cases: any other value). False on OOM. */
static bool build_plan(const Router *r, Plan *p, size_t c, const uint32_t *case_of)
{
    size_t n_atoms = r->n_atoms ? r->n_atoms : 1;
    int8_t *truth = malloc(n_atoms);
    bool *read = calloc(n_atoms, sizeof *read);
    p->starts = calloc(n_atoms, sizeof *p->starts);
    p->passed = calloc(r->words, sizeof *p->passed);
    p->irrelevant = calloc(r->words, sizeof *p->irrelevant);
    p->tests = calloc(r->n_test_order ? r->n_test_order : 1, sizeof *p->tests);
    p->filter_ladders = calloc(r->n_filter_ladders ? r->n_filter_ladders : 1,
                               sizeof *p->filter_ladders);
    p->ladders = calloc(r->n_ladders ? r->n_ladders : 1, sizeof *p->ladders);
    p->trees = calloc(r->n_tested ? r->n_tested : 1, sizeof *p->trees);
    p->keys = calloc(r->n_keys ? r->n_keys : 1, sizeof *p->keys);
    uint64_t *may = calloc(r->words, sizeof *may);
    bool ok = truth && read && p->starts && p->passed && p->irrelevant && p->tests &&
              p->filter_ladders && p->ladders && p->trees && p->keys && may;
    if (ok) {
        for (size_t a = 0; a < r->n_atoms; a++)
            truth[a] = case_of[a] == MAX_CASES ? NOT_TESTED : case_of[a] == c;
        plan_tests(r, p, truth, may);
        plan_needs(r, p, truth, may);
        plan_starts(r, p, truth, read);
    }
    free(truth);
    free(read);
    free(may);
    return ok;
}

/* The switch and its plans. False on OOM. */
static bool build_plans(Router *r)
{
    uint32_t *case_of = calloc(r->n_atoms ? r->n_atoms : 1, sizeof *case_of);
    if (!case_of)
        return false;
    index_switch(r, case_of);
    r->plans = calloc(r->n_cases + 1, sizeof *r->plans);
    bool ok = r->plans != NULL;
    for (size_t c = 0; ok && c <= r->n_cases; c++)
        ok = build_plan(r, &r->plans[c], c, case_of);
    free(case_of);
    return ok;
}

Router *router_new(const CompiledRuleSet *rs, bool blanks)
{
    Router *r = lines_calloc(sizeof *r);   /* written for every event */
    if (!r)
        return NULL;
    size_t n = rs->n_rules ? rs->n_rules : 1;
    r->rs = rs;
    r->n = rs->n_rules;
    r->widest = 1;
    for (size_t i = 0; i < rs->n_rules; i++)
        if (rs->rules[i].n_keys > r->widest)
            r->widest = rs->rules[i].n_keys;
    r->filter_group = calloc(n, sizeof *r->filter_group);
    r->key_group = calloc(n, sizeof *r->key_group);
    r->key_res = lines_calloc_n(n, sizeof *r->key_res);
    r->key_of = lines_calloc_n(n, sizeof *r->key_of);
    r->key_bytes = lines_calloc_n(n, sizeof *r->key_bytes);
    r->key_vals = lines_calloc_n(n * r->widest, sizeof *r->key_vals);
    r->key_slot = calloc(n * r->widest, sizeof *r->key_slot);
    size_t n_atoms = rs->filters.n_atoms ? rs->filters.n_atoms : 1;
    r->n_atoms = rs->filters.n_atoms;
    r->atoms = rs->filters.atoms;
    r->atom_truth = lines_calloc_n(n_atoms, sizeof *r->atom_truth);
    r->shape = calloc(n, sizeof *r->shape);
    if (!r->atom_truth || !r->shape ||
        !r->filter_group || !r->key_group || !r->key_res || !r->key_of || !r->key_bytes ||
        !r->key_vals || !r->key_slot ||
        !build_groups(rs, filter_text, r->filter_group) ||
        !build_groups(rs, key_text, r->key_group) || !index_filters(r)) {
        router_free(r);
        return NULL;
    }
    for (size_t i = 0; i < rs->n_rules; i++) {
        r->shape[i] = shape_of(rs, &rs->rules[i]);
        for (size_t k = 0; k < rs->rules[i].n_keys; k++)
            if (!expr_field_slot(rs->rules[i].keys[k], &r->key_slot[i * r->widest + k]))
                r->key_slot[i * r->widest + k] = NOT_A_FIELD;
    }
    if (!plan_filters(r) || !index_keys(r) || !index_relevance(r, blanks) || !build_plans(r)) {
        router_free(r);
        return NULL;
    }
    return r;
}

static void free_ladders(Ladder *ladders, size_t n)
{
    for (size_t i = 0; ladders && i < n; i++) {
        free(ladders[i].numbers);
        free(ladders[i].rules);
    }
    free(ladders);
}

void router_free(Router *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->key_bytes && i < r->n; i++)
        buf_free(&r->key_bytes[i]);
    free(r->filter_group);
    free(r->key_group);
    free(r->key_res);
    free(r->key_of);
    free(r->key_bytes);
    free(r->key_vals);
    free(r->key_slot);
    free(r->filter_rule);
    free(r->filter_rules);
    free(r->passed);
    free(r->atom_truth);
    free(r->shape);
    free(r->test_order);
    free(r->key_rule);
    free(r->key_rules);
    free(r->rel_shape);
    free(r->rel_rules);
    free(r->irrelevant);
    free(r->blanks);
    free(r->keyed);
    free_ladders(r->ladders, r->n_ladders);
    free_ladders(r->filter_ladders, r->n_filter_ladders);
    free(r->tested);
    for (size_t c = 0; r->plans && c <= r->n_cases; c++)
        plan_free(&r->plans[c]);
    free(r->plans);
    free(r);
}

/* One way to forget an event: its results are overwritten where they are built (the
 * truths of the atoms its plan reads, the passed, irrelevant and keyed bitmaps: see
 * start_plan), and key results are written before they are read; no generation
 * counters. Measured with callgrind on scenario 4's first 100k lines, one worker:
 * stamping each atom with the event's generation instead of clearing the truths costs
 * 1,221.9M instructions against 1,219.0M (router_route_all 1,993 against 1,963 per
 * event): clearing a few dozen bytes once is cheaper than one more load and compare per
 * atom test. The mix this replaced (generations per filter group, key group and tree,
 * memsets for the rest) cost 1,223.3M. */
void router_begin(Router *r)
{
    r->routed = false;
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

/* Is a tree of the plan true? `and`/`or` of two atoms hold exactly when the
 * three-valued result is true, so their unknowns need no tracking here. */
static bool shape_holds(Router *r, const FilterShape *sh, const EvalCtx *ctx,
                        EvalScratch *scratch)
{
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
    }
    return false;
}

static bool any_passed(const Router *r, const uint64_t *rules)
{
    uint64_t reached = 0;
    for (size_t w = 0; w < r->words; w++)
        reached |= rules[w] & r->passed[w];
    return reached != 0;
}

static void add_irrelevant(Router *r, const uint64_t *rules)
{
    or_bits(r->irrelevant, rules, r->words);
}

/* How many of the ascending numbers x is above (or at, unless strict). Inlined
 * with strict constant, so that the search compares without a test of the kind. */
static inline size_t rungs_below(const double *numbers, size_t n, double x, bool strict)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {   /* the first rung that does not hold */
        size_t mid = lo + (hi - lo) / 2;
        if (strict ? x > numbers[mid] : x >= numbers[mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* How many of the ladder's rungs hold on ev: they come first. */
static size_t ladder_reach(const Ladder *l, const Event *ev)
{
    double v;
    if (!expr_slot_number(ev, l->slot, &v))
        return 0;   /* no rung holds */
    double x = l->sign * v;
    return l->strict ? rungs_below(l->numbers, l->n, x, true)
                     : rungs_below(l->numbers, l->n, x, false);
}

/* The rules whose filter is on the filter ladder and holds on the event. */
static void pass_ladder(Router *r, const Ladder *l, const EvalCtx *ctx, EvalScratch *scratch)
{
    if (l->guard != NO_GUARD && atom_truth(r, l->guard, ctx, scratch) != 1)
        return;
    or_bits(r->passed, &l->rules[ladder_reach(l, ctx->event) * r->words], r->words);
}

/* Is the work wanted: did one of the rules that need it pass? */
static bool needed(const Router *r, const Needed *nd)
{
    return !nd->need || any_passed(r, nd->need);
}

/* r->irrelevant: the rules whose relevance is not true (of those whose filter passed;
 * the others' bits do not matter). */
static void mark_irrelevant(Router *r, const Plan *p, const EvalCtx *ctx,
                            EvalScratch *scratch)
{
    for (size_t i = 0; i < p->n_ladders; i++)
        if (needed(r, &p->ladders[i])) {
            const Ladder *l = &r->ladders[p->ladders[i].index];
            add_irrelevant(r, &l->rules[ladder_reach(l, ctx->event) * r->words]);
        }
    for (size_t i = 0; i < p->n_trees; i++) {
        size_t g = p->trees[i].index;
        if (needed(r, &p->trees[i]) && !shape_holds(r, &r->rel_shape[g], ctx, scratch))
            add_irrelevant(r, &r->rel_rules[g * r->words]);
    }
}

/* A key that is a field, as expr_eval gives it (expr_field_slot), without the call. */
static inline Value event_field(const Event *ev, int32_t slot)
{
    return slot >= 0 && (uint32_t)slot < ev->n_slots ? ev->slots[slot] : value_missing();
}

static void compute_key(Router *r, size_t g, const EvalCtx *ctx, EvalScratch *scratch)
{
    const CompiledRule *rule = &r->rs->rules[g];
    Value *vals = &r->key_vals[g * r->widest];
    Buf *kb = &r->key_bytes[g];
    const int32_t *slots = &r->key_slot[g * r->widest];
    for (size_t k = 0; k < rule->n_keys; k++)
        vals[k] = slots[k] != NOT_A_FIELD ? event_field(ctx->event, slots[k])
                                          : expr_eval(rule->keys[k], ctx, scratch);
    uint64_t hash;
    if (!part_key_encode(vals, rule->n_keys, kb, &hash)) {
        r->key_res[g] = ROUTE_NO_KEY;
        return;
    }
    if (!kb->data)
        buf_puts(kb, "");   /* the global partition: empty, but not NULL */
    if (kb->failed) {
        r->key_res[g] = ROUTE_FAILED;
        return;
    }
    r->key_of[g] = (RouteKey){kb->data, kb->len, hash, vals};
    r->key_res[g] = ROUTE_KEYED;
}

/* The 2, 4 or 8 bytes at p, as they lie. */
static inline uint16_t bytes2(const char *p)
{
    uint16_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static inline uint32_t bytes4(const char *p)
{
    uint32_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static inline uint64_t bytes8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* Does the string v hold the case's text? Compared here rather than by memcmp: the
 * texts are a few bytes, which the first and the last word of their length (2, 4 or 8
 * bytes, overlapping) cover without reading past either string, in two compares where
 * a byte loop took one per byte (scenario 4: 3.7 bytes per event). */
static inline bool is_case(const ExprStringEq *c, const Value *v)
{
    size_t n = c->len;
    const char *a = c->s, *b = v->s;
    if (n != v->len)
        return false;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8)
            if (bytes8(a + i) != bytes8(b + i))
                return false;
        return bytes8(a + n - 8) == bytes8(b + n - 8);
    }
    if (n >= 4)
        return bytes4(a) == bytes4(b) && bytes4(a + n - 4) == bytes4(b + n - 4);
    if (n >= 2)
        return bytes2(a) == bytes2(b) && bytes2(a + n - 2) == bytes2(b + n - 2);
    return !n || *a == *b;
}

/* The plan for ev's value of the switch field. */
static const Plan *plan_of(const Router *r, const Event *ev)
{
    int32_t slot = r->switch_slot;
    if (slot >= 0 && (uint32_t)slot < ev->n_slots && ev->slots[slot].type == V_STR) {
        const Value *v = &ev->slots[slot];
        for (size_t c = 0; c < r->n_cases; c++)
            if (is_case(&r->cases[c], v))
                return &r->plans[c];
    }
    return &r->plans[r->n_cases];
}

/* The event's state as its plan starts it: the truths of the atoms its open work
 * reads, not of every atom, and bitmaps of a word or two, where calls to memcpy and
 * memset would cost more than the copies. */
static void start_plan(Router *r, const Plan *p)
{
    for (size_t i = 0; i < p->n_starts; i++)
        r->atom_truth[p->starts[i].atom] = p->starts[i].truth;
    for (size_t w = 0; w < r->words; w++) {
        r->passed[w] = p->passed[w];
        r->irrelevant[w] = p->irrelevant[w];
        r->keyed[w] = 0;
    }
}

/* The filters the plan leaves open, into r->passed. */
static void pass_tests(Router *r, const Plan *p, const EvalCtx *ctx, EvalScratch *scratch)
{
    for (size_t k = 0; k < p->n_tests;) {
        const FilterTest *t = &p->tests[k];
        if (t->guard != NO_GUARD && atom_truth(r, t->guard, ctx, scratch) != 1) {
            k = t->run_end;
            continue;
        }
        k++;
        if (shape_holds(r, &t->shape, ctx, scratch))
            or_bits(r->passed, t->rules, r->words);
    }
    for (size_t i = 0; i < p->n_filter_ladders; i++)
        pass_ladder(r, &r->filter_ladders[p->filter_ladders[i]], ctx, scratch);
}

/* passed, irrelevant, keyed and the keys of the passed rules, for the current event:
 * what its plan leaves to do. */
static void route_event(Router *r, const Event *ev, EvalScratch *scratch)
{
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    const Plan *p = plan_of(r, ev);
    start_plan(r, p);
    pass_tests(r, p, &ctx, scratch);
    mark_irrelevant(r, p, &ctx, scratch);
    /* every key the passed rules need, relevant or not: a missing key counts anyway */
    for (size_t i = 0; i < p->n_keys; i++) {
        if (!needed(r, &p->keys[i]))
            continue;
        size_t k = p->keys[i].index, g = r->key_rule[k];
        compute_key(r, g, &ctx, scratch);
        if (r->key_res[g] == ROUTE_KEYED)
            or_bits(r->keyed, &r->key_rules[k * r->words], r->words);
    }
    r->routed = true;
}

static bool has_bit(const uint64_t *bits, size_t rule)
{
    return bits[rule / 64] >> (rule % 64) & 1;
}

/* Rule `rule`'s result from the bitmaps of an event already routed. */
static inline RouteResult rule_result(const Router *r, size_t rule, RouteKey *key)
{
    if (!has_bit(r->passed, rule))
        return ROUTE_FILTERED;
    size_t g = r->key_group[rule];
    if (r->key_res[g] != ROUTE_KEYED)
        return r->key_res[g];
    *key = r->key_of[g];
    if (!has_bit(r->irrelevant, rule))
        return ROUTE_KEYED;
    return has_bit(r->blanks, rule) ? ROUTE_BLANK : ROUTE_FILTERED;
}

/* The first call for an event: routes it, then answers. Not inlined, so that
 * router_route's common case, a lookup, saves no registers for this call (callgrind,
 * scenario 4 on processing time, --workers 2: 25 instructions per lookup inlined,
 * 16 not). */
__attribute__((noinline)) static RouteResult route_then_answer(Router *r, size_t rule,
                                                               const Event *ev,
                                                               EvalScratch *scratch,
                                                               RouteKey *key)
{
    route_event(r, ev, scratch);
    return rule_result(r, rule, key);
}

/* The first call for an event routes it for every rule, in the few tests per group
 * and ladder of router_route_all; this and the next calls read their rule's bits.
 * The workers' dispatcher asks for every rule of every event, so nothing is wasted. */
RouteResult router_route(Router *r, size_t rule, const Event *ev, EvalScratch *scratch,
                         RouteKey *key)
{
    if (!r->routed)
        return route_then_answer(r, rule, ev, scratch, key);
    return rule_result(r, rule, key);
}

/* The strict rules router_route_all listed though irrelevant: a second pass over the
 * few, not a test per listed rule. */
static void mark_blanks(const Router *r, RouteResult *res)
{
    for (size_t w = 0; w < r->words; w++)
        for (uint64_t bits = r->passed[w] & r->irrelevant[w] & r->keyed[w] & r->blanks[w];
             bits; bits &= bits - 1)
            res[w * 64 + (size_t)__builtin_ctzll(bits)] = ROUTE_BLANK;
}

size_t router_route_all(Router *r, const Event *ev, EvalScratch *scratch, size_t *order,
                        RouteResult *res, const RouteKey **key)
{
    router_begin(r);
    route_event(r, ev, scratch);
    size_t n = 0;
    for (size_t w = 0; w < r->words; w++)
        for (uint64_t bits = r->passed[w] & ~(r->irrelevant[w] & r->keyed[w] & ~r->blanks[w]);
             bits; bits &= bits - 1) {
            size_t rule = w * 64 + (size_t)__builtin_ctzll(bits);
            size_t g = r->key_group[rule];
            order[n++] = rule;
            res[rule] = r->key_res[g];
            key[rule] = &r->key_of[g];   /* read only with a key (route_keyed) */
        }
    if (r->any_blanks)
        mark_blanks(r, res);
    return n;
}
