/* rules/filters.c — a rule set's filters as trees over shared atoms (see filters.h).
 *
 * Rule sets repeat conditions inside different filters: `type == "tx"` alone in
 * sixty rules and next to `amount > N` in ten more. Whole-filter grouping shares
 * only the first kind; splitting at the logic operators shares the atom itself.
 * The rules' relevance trees (rules/relevance.c) are built over the same atoms. */
#include "rules/filters.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hash.h"
#include "dsl/fmt.h"
#include "rules/relevance.h"

/* Deeper and/or/not nests stay whole atoms: bounds the recursion of the split and
 * of the router's evaluation. */
#define MAX_SPLIT_DEPTH 64

/* An atom's canonical text (heap) and its hash, to find it again. */
typedef struct AtomName {
    char *text;
    uint64_t hash;
} AtomName;

struct PlanBuilder {
    CompiledRuleSet *rs;
    ExprEnv env;
    Diags *diags;
    AtomName *names;           /* per atom of rs->filters */
    size_t cap_atoms, cap_names, cap_nodes;
};

static bool room_for_node(PlanBuilder *sp)
{
    FilterPlan *plan = &sp->rs->filters;
    FilterNode *nodes = grow_for_one(plan->nodes, &sp->cap_nodes, plan->n_nodes, sizeof *nodes);
    if (nodes)
        plan->nodes = nodes;
    return nodes != NULL;
}

static bool room_for_atom(PlanBuilder *sp)
{
    FilterPlan *plan = &sp->rs->filters;
    CExpr **atoms = grow_for_one(plan->atoms, &sp->cap_atoms, plan->n_atoms, sizeof *atoms);
    if (atoms)
        plan->atoms = atoms;
    AtomName *names = grow_for_one(sp->names, &sp->cap_names, plan->n_atoms, sizeof *names);
    if (names)
        sp->names = names;
    return atoms && names;
}

/* Index of the atom written as `e`, compiling it the first time; -1 on failure. */
static int64_t atom_of(PlanBuilder *sp, const Expr *e)
{
    FilterPlan *plan = &sp->rs->filters;
    char *text = dsl_fmt_expr(e);
    if (!text)
        return -1;
    uint64_t h = hash_bytes(HASH_SEED, text, strlen(text));
    for (size_t i = 0; i < plan->n_atoms; i++)
        if (sp->names[i].hash == h && !strcmp(sp->names[i].text, text)) {
            free(text);
            return (int64_t)i;
        }
    if (!room_for_atom(sp)) {
        free(text);
        return -1;
    }
    char *err = NULL;
    CExpr *ce = expr_compile(e, &sp->env, &err);
    if (!ce) {   /* no message: out of memory, which the caller reports */
        if (err)
            diag_report(sp->diags, DIAG_ERROR, e->span, "%s", err);
        free(err);
        free(text);
        return -1;
    }
    plan->atoms[plan->n_atoms] = ce;
    sp->names[plan->n_atoms] = (AtomName){text, h};
    return (int64_t)plan->n_atoms++;
}

static int64_t add_node(PlanBuilder *sp, FilterNode node)
{
    FilterPlan *plan = &sp->rs->filters;
    if (!room_for_node(sp))
        return -1;
    plan->nodes[plan->n_nodes] = node;
    return (int64_t)plan->n_nodes++;
}

/* The node testing `e`; -1 on failure. */
static int64_t split(PlanBuilder *sp, const Expr *e, int depth)
{
    FilterNode node = {FILTER_ATOM, 0, 0};
    int64_t a, b;
    if (depth < MAX_SPLIT_DEPTH && e->kind == EX_BINARY &&
        (e->u.binary.op == BIN_AND || e->u.binary.op == BIN_OR)) {
        if ((a = split(sp, e->u.binary.lhs, depth + 1)) < 0 ||
            (b = split(sp, e->u.binary.rhs, depth + 1)) < 0)
            return -1;
        node.op = e->u.binary.op == BIN_AND ? FILTER_AND : FILTER_OR;
        node.b = (uint32_t)b;
    } else if (depth < MAX_SPLIT_DEPTH && e->kind == EX_UNARY && e->u.unary.op == UN_NOT) {
        if ((a = split(sp, e->u.unary.operand, depth + 1)) < 0)
            return -1;
        node.op = FILTER_NOT;
    } else if ((a = atom_of(sp, e)) < 0) {
        return -1;
    }
    node.a = (uint32_t)a;
    return add_node(sp, node);
}

int64_t plan_split(PlanBuilder *pb, const Rule *rule, const Expr *e)
{
    pb->env.rule = rule;
    int64_t node = split(pb, e, 0);
    return node >= 0 && (uint64_t)node < FILTER_NONE ? node : -1;
}

int64_t plan_join(PlanBuilder *pb, FilterOp op, uint32_t a, uint32_t b)
{
    int64_t node = add_node(pb, (FilterNode){op, a, b});
    return node >= 0 && (uint64_t)node < FILTER_NONE ? node : -1;
}

PlanMark plan_mark(const PlanBuilder *pb)
{
    return (PlanMark){pb->rs->filters.n_atoms, pb->rs->filters.n_nodes};
}

void plan_rollback(PlanBuilder *pb, PlanMark mark)
{
    FilterPlan *plan = &pb->rs->filters;
    for (size_t i = mark.atoms; i < plan->n_atoms; i++) {
        expr_free(plan->atoms[i]);
        free(pb->names[i].text);
    }
    plan->n_atoms = mark.atoms;
    plan->n_nodes = mark.nodes;
}

bool plan_event_only_since(const PlanBuilder *pb, PlanMark mark)
{
    const FilterPlan *plan = &pb->rs->filters;
    for (size_t i = mark.nodes; i < plan->n_nodes; i++)
        if (plan->nodes[i].op == FILTER_ATOM &&
            expr_is_iterative(plan->atoms[plan->nodes[i].a]))
            return false;
    return true;
}

int filters_plan(CompiledRuleSet *rs, Diags *diags)
{
    PlanBuilder sp = {.rs = rs, .env = {&rs->fields, NULL}, .diags = diags};
    int rc = 0;
    for (size_t i = 0; i < rs->n_rules && rc == 0; i++) {
        CompiledRule *cr = &rs->rules[i];
        cr->filter_root = FILTER_NONE;
        cr->relevance_root = FILTER_NONE;
        if (!cr->ast->filter)
            continue;
        int64_t root = plan_split(&sp, cr->ast, cr->ast->filter);
        if (root < 0)
            rc = -1;
        else
            cr->filter_root = (uint32_t)root;
    }
    for (size_t i = 0; i < rs->n_rules && rc == 0; i++)
        if (relevance_plan(&sp, &rs->rules[i], !rs->opts.all_relevant) < 0)
            rc = -1;
    for (size_t i = 0; i < rs->filters.n_atoms; i++)
        free(sp.names[i].text);
    free(sp.names);
    return rc;
}

void filters_free(FilterPlan *plan)
{
    for (size_t i = 0; i < plan->n_atoms; i++)
        expr_free(plan->atoms[i]);
    free(plan->atoms);
    free(plan->nodes);
    memset(plan, 0, sizeof *plan);
}
