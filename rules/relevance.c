/* rules/relevance.c — the relevance analysis (see relevance.h): which rules are
 * relaxed, and the condition an event must meet to be able to change one. */
#include "rules/relevance.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/fmt.h"
#include "nfa/expr.h"

/* Deeper `and` nests stay one conjunct (bounds the recursion). */
#define MAX_AND_DEPTH 64

/* What makes a step strict, for `vigil explain`: NULL for a step whose states wait
 * for the events it takes and ignore every other event into themselves
 * (nfa/compile.c): relaxed contiguity, and a quantifier without optional states or
 * loop states (an ignored event moves a partial match out of those). The texts
 * name the construct as the rule language writes it. */
static const char *strict_construct(const Step *s)
{
    const Quantifier *q = &s->quant;
    if (s->kind == STEP_NEXT)
        return "is next: strict contiguity, an event that does not match ends a partial "
               "match";
    if (s->kind == STEP_NOT_NEXT)
        return "is not_next: strict contiguity, the event right after decides";
    if (q->consecutive)
        return "is consecutive: strict contiguity inside its loop";
    if (q->optional)
        return "is optional: an event it ignores branches a partial match";
    if (q->greedy)
        return "is greedy: it rewrites the states after its loop";
    if (!q->looping || (q->min >= 1 && q->max == q->min))
        return NULL;
    if (q->max == QUANT_UNBOUNDED)
        return "loops (one_or_more, times N+): an event it ignores branches a partial "
               "match";
    return "has a range (times N..M, times 0): an event it ignores branches a partial "
           "match";
}

bool relevance_relaxed(const Rule *rule)
{
    for (size_t i = 0; i < rule->n_steps; i++)
        if (strict_construct(&rule->steps[i]))
            return false;
    return rule->n_steps > 0;
}

/* The necessary parts found so far: part p is the `and` of conj[first[p] ..
 * first[p + 1]) (the last part ends at n_conj), written as texts[p]. */
typedef struct Parts {
    const Expr **conj;
    size_t n_conj, cap_conj;
    size_t *first;
    char **texts;
    size_t n, cap;
    bool oom;
    /* when a condition's part is `true`: its step, and whether it is the `until` */
    const Step *blocker;
    bool blocker_until;
} Parts;

static void parts_free(Parts *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->texts[i]);
    free(p->texts);
    free(p->first);
    free(p->conj);
}

static size_t part_end(const Parts *p, size_t part)
{
    return part + 1 < p->n ? p->first[part + 1] : p->n_conj;
}

static void push_conjunct(Parts *p, const Expr *e)
{
    if (p->n_conj == p->cap_conj) {
        size_t cap = p->cap_conj ? 2 * p->cap_conj : 8;
        const Expr **conj = realloc(p->conj, cap * sizeof *conj);
        if (!conj) {
            p->oom = true;
            return;
        }
        p->conj = conj;
        p->cap_conj = cap;
    }
    p->conj[p->n_conj++] = e;
}

/* Does e read only the current event? Decided by its compiled form, as the matcher
 * decides which conditions it may share across rules. */
static bool reads_event_only(const Expr *e, const ExprEnv *env)
{
    char *err = NULL;
    CExpr *ce = expr_compile(e, env, &err);
    free(err);
    bool only = ce && !expr_is_iterative(ce);
    expr_free(ce);
    return only;
}

/* Appends the top-level conjuncts of e that read only the current event. */
static void keep_conjuncts(Parts *p, const Expr *e, const ExprEnv *env, int depth)
{
    if (depth < MAX_AND_DEPTH && e->kind == EX_BINARY && e->u.binary.op == BIN_AND) {
        keep_conjuncts(p, e->u.binary.lhs, env, depth + 1);
        keep_conjuncts(p, e->u.binary.rhs, env, depth + 1);
    } else if (reads_event_only(e, env)) {
        push_conjunct(p, e);
    }
}

static bool is_or(const Expr *e)
{
    return e->kind == EX_BINARY && e->u.binary.op == BIN_OR;
}

/* Canonical text of the `and` of conj[from .. to), NULL on allocation failure. */
static char *conjunction_text(const Expr *const *conj, size_t from, size_t to)
{
    Buf b = BUF_INIT;
    for (size_t i = from; i < to; i++) {
        char *t = dsl_fmt_expr(conj[i]);
        if (!t) {
            buf_free(&b);
            return NULL;
        }
        bool paren = is_or(conj[i]) && to - from > 1;
        buf_printf(&b, "%s%s%s%s", i > from ? " and " : "", paren ? "(" : "", t,
                   paren ? ")" : "");
        free(t);
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* Adds the necessary part of condition `cond`. False when it is `true` (no conjunct
 * reads only the event) or on allocation failure (p->oom). */
static bool add_part(Parts *p, const Expr *cond, const ExprEnv *env)
{
    size_t from = p->n_conj;
    if (cond)
        keep_conjuncts(p, cond, env, 0);
    if (p->oom || p->n_conj == from)
        return false;
    char *text = conjunction_text(p->conj, from, p->n_conj);
    if (!text) {
        p->oom = true;
        return false;
    }
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->texts[i], text)) {   /* written alike in another step: once */
            free(text);
            p->n_conj = from;
            return true;
        }
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 4;
        size_t *first = realloc(p->first, cap * sizeof *first);
        if (first)
            p->first = first;
        char **texts = realloc(p->texts, cap * sizeof *texts);
        if (texts)
            p->texts = texts;
        if (!first || !texts) {
            free(text);
            p->oom = true;
            return false;
        }
        p->cap = cap;
    }
    p->first[p->n] = from;
    p->texts[p->n++] = text;
    return true;
}

/* Every step condition's part: false when one is `true` (or on p->oom). A step
 * without `where` takes every event; a negated one forbids every event. */
static bool collect_parts(Parts *p, const Rule *rule, const ExprEnv *env)
{
    for (size_t i = 0; i < rule->n_steps; i++) {
        const Step *s = &rule->steps[i];
        p->blocker = s;
        p->blocker_until = false;
        if (!add_part(p, s->where, env))
            return false;
        p->blocker_until = true;
        if (s->quant.until && !add_part(p, s->quant.until, env))
            return false;
    }
    p->blocker = NULL;
    return true;
}

static bool step_negated(const Step *s)
{
    return s->kind == STEP_NOT_NEXT || s->kind == STEP_NOT_FOLLOWED_BY;
}

/* Why the rule gets no relevance (see CompiledRule.relevance_why); p: its parts as
 * collected, when it is relaxed. NULL on allocation failure. */
static char *why_none(const Rule *rule, bool enabled, const Parts *p)
{
    if (!enabled)
        return buf_format("switched off (all_relevant)");
    for (size_t i = 0; i < rule->n_steps; i++) {
        const char *strict = strict_construct(&rule->steps[i]);
        if (strict)
            return buf_format("step %s %s", rule->steps[i].name, strict);
    }
    const Step *s = p->blocker;
    if (!s)
        return buf_format("the rule has no steps");
    if (!s->where && !p->blocker_until)
        return buf_format(step_negated(s) ? "step %s has no condition: every event ends a "
                                            "partial match"
                                          : "step %s has no where: it takes every event",
                          s->name);
    return buf_format("no conjunct of step %s's %s reads only the event (STEP.x, "
                      "aggregates and time(STEP) read the partial match)",
                      s->name, p->blocker_until ? "until" : "where");
}

/* The relevance's text: the parts joined by `or`. */
static char *relevance_text(const Parts *p)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < p->n; i++) {
        bool paren = p->n > 1 && part_end(p, i) - p->first[i] > 1;
        buf_printf(&b, "%s%s%s%s", i ? " or " : "", paren ? "(" : "", p->texts[i],
                   paren ? ")" : "");
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* The tree of the parts, -1 on failure. */
static int64_t build_tree(PlanBuilder *pb, const Rule *rule, const Parts *p)
{
    int64_t tree = -1;
    for (size_t i = 0; i < p->n; i++) {
        int64_t part = -1;
        for (size_t c = p->first[i]; c < part_end(p, i); c++) {
            int64_t node = plan_split(pb, rule, p->conj[c]);
            if (node < 0)
                return -1;
            part = part < 0 ? node : plan_join(pb, FILTER_AND, (uint32_t)part, (uint32_t)node);
            if (part < 0)
                return -1;
        }
        tree = tree < 0 ? part : plan_join(pb, FILTER_OR, (uint32_t)tree, (uint32_t)part);
        if (tree < 0)
            return -1;
    }
    return tree;
}

int relevance_plan(PlanBuilder *pb, CompiledRule *cr, FieldTable *fields, bool enabled)
{
    cr->relaxed = relevance_relaxed(cr->ast);
    cr->relevance_root = FILTER_NONE;
    ExprEnv env = {fields, cr->ast};
    Parts p = {0};
    int rc = 0;
    if (!enabled || !cr->relaxed || !collect_parts(&p, cr->ast, &env) || p.n == 0) {
        if (!p.oom && !(cr->relevance_why = why_none(cr->ast, enabled, &p)))
            rc = -1;
    } else {
        int64_t root = build_tree(pb, cr->ast, &p);
        cr->relevance_text = relevance_text(&p);
        if (root < 0 || !cr->relevance_text)
            rc = -1;
        else
            cr->relevance_root = (uint32_t)root;
    }
    if (p.oom)
        rc = -1;
    parts_free(&p);
    return rc;
}
