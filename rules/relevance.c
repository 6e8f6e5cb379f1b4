/* rules/relevance.c — the relevance analysis (see relevance.h): which rules are
 * relaxed, and the condition an event must meet to be able to change one. */
#include "rules/relevance.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/grow.h"
#include "dsl/fmt.h"
#include "nfa/nfa.h"

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

/* A distinct necessary part: its canonical text, and whether it is the `and` of
 * several conjuncts (then it takes parentheses inside an `or`). */
typedef struct Part {
    char *text;
    bool compound;
} Part;

/* The necessary parts found so far, whose `or` is the plan's node `tree` (-1 before
 * the first), and the conjuncts of the part being built. */
typedef struct Parts {
    Part *parts;
    size_t n, cap;
    int64_t tree;
    const Expr **conj;
    size_t n_conj, cap_conj;
    /* when a condition's part is `true`: its step, and whether it is the `until` */
    const Step *blocker;
    bool blocker_until;
} Parts;

static void parts_free(Parts *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->parts[i].text);
    free(p->parts);
    free(p->conj);
}

static bool push_conjunct(Parts *p, const Expr *e)
{
    const Expr **conj = grow_for_one(p->conj, &p->cap_conj, p->n_conj, sizeof *conj);
    if (!conj)
        return false;
    p->conj = conj;
    p->conj[p->n_conj++] = e;
    return true;
}

/* Adds to the plan the top-level conjuncts of e that read only the current event,
 * `and`ed to *part (-1: none yet), and lists them in p->conj. Each conjunct is
 * compiled once, into the plan's atoms, and classified by them, as the matcher
 * classifies the conditions it may share across rules; one that reads the partial
 * match is rolled back. -1 on failure. */
static int keep_conjuncts(PlanBuilder *pb, Parts *p, const Rule *rule, const Expr *e,
                          int64_t *part, int depth)
{
    if (depth < MAX_AND_DEPTH && e->kind == EX_BINARY && e->u.binary.op == BIN_AND) {
        if (keep_conjuncts(pb, p, rule, e->u.binary.lhs, part, depth + 1) < 0)
            return -1;
        return keep_conjuncts(pb, p, rule, e->u.binary.rhs, part, depth + 1);
    }
    PlanMark mark = plan_mark(pb);
    int64_t node = plan_split(pb, rule, e);
    if (node < 0)
        return -1;
    if (!plan_event_only_since(pb, mark)) {
        plan_rollback(pb, mark);
        return 0;
    }
    if (*part >= 0 && (node = plan_join(pb, FILTER_AND, (uint32_t)*part, (uint32_t)node)) < 0)
        return -1;
    *part = node;
    return push_conjunct(p, e) ? 0 : -1;
}

static bool is_or(const Expr *e)
{
    return e->kind == EX_BINARY && e->u.binary.op == BIN_OR;
}

/* Canonical text of the `and` of the conjuncts in p->conj, NULL on allocation
 * failure. */
static char *conjunction_text(const Parts *p)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < p->n_conj; i++) {
        char *t = dsl_fmt_expr(p->conj[i]);
        if (!t) {
            buf_free(&b);
            return NULL;
        }
        bool paren = is_or(p->conj[i]) && p->n_conj > 1;
        buf_printf(&b, "%s%s%s%s", i ? " and " : "", paren ? "(" : "", t, paren ? ")" : "");
        free(t);
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

static bool known_part(const Parts *p, const char *text)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->parts[i].text, text))
            return true;
    return false;
}

static bool push_part(Parts *p, Part part)
{
    Part *parts = grow_for_one(p->parts, &p->cap, p->n, sizeof *parts);
    if (!parts)
        return false;
    p->parts = parts;
    p->parts[p->n++] = part;
    return true;
}

/* Adds the necessary part of condition `cond` to the plan and `or`s it into
 * p->tree. 1 when added (or written alike in another step: then kept once), 0 when
 * it is `true` (no conjunct reads only the event), -1 on failure. */
static int add_part(PlanBuilder *pb, Parts *p, const Rule *rule, const Expr *cond)
{
    PlanMark mark = plan_mark(pb);
    int64_t part = -1;
    p->n_conj = 0;
    if (cond && keep_conjuncts(pb, p, rule, cond, &part, 0) < 0)
        return -1;
    if (part < 0)
        return 0;
    Part kept = {conjunction_text(p), p->n_conj > 1};
    if (!kept.text)
        return -1;
    if (known_part(p, kept.text)) {
        free(kept.text);
        plan_rollback(pb, mark);
        return 1;
    }
    if (!push_part(p, kept)) {
        free(kept.text);
        return -1;
    }
    if (p->tree >= 0 &&
        (part = plan_join(pb, FILTER_OR, (uint32_t)p->tree, (uint32_t)part)) < 0)
        return -1;
    p->tree = part;
    return 1;
}

/* Every step condition's part, `or`ed into p->tree: 1 when all have one, 0 when one
 * is `true` (p->blocker says which), -1 on failure. A step without `where` takes
 * every event; a negated one forbids every event. */
static int collect_parts(PlanBuilder *pb, Parts *p, const Rule *rule)
{
    for (size_t i = 0; i < rule->n_steps; i++) {
        const Step *s = &rule->steps[i];
        p->blocker = s;
        p->blocker_until = false;
        int rc = add_part(pb, p, rule, s->where);
        if (rc <= 0)
            return rc;
        if (s->quant.until) {
            p->blocker_until = true;
            if ((rc = add_part(pb, p, rule, s->quant.until)) <= 0)
                return rc;
        }
    }
    p->blocker = NULL;
    return 1;
}

static bool step_negated(const Step *s)
{
    return s->kind == STEP_NOT_NEXT || s->kind == STEP_NOT_FOLLOWED_BY;
}

/* What makes the rule strict, "step NAME CONSTRUCT", or NULL for a relaxed rule. NULL
 * on allocation failure too: check relevance_relaxed first. */
static char *strict_why(const Rule *rule)
{
    for (size_t i = 0; i < rule->n_steps; i++) {
        const char *strict = strict_construct(&rule->steps[i]);
        if (strict)
            return buf_format("step %s %s", rule->steps[i].name, strict);
    }
    return NULL;
}

/* Why the rule gets no relevance (see CompiledRule.relevance_why); p: its parts as
 * collected, if they were. NULL on allocation failure. */
static char *why_none(bool enabled, bool takes_blank, const Parts *p)
{
    if (!enabled)
        return buf_format("switched off (all_relevant)");
    if (takes_blank)
        return buf_format("a step takes an event whose conditions are all false");
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
        bool paren = p->n > 1 && p->parts[i].compound;
        buf_printf(&b, "%s%s%s%s", i ? " or " : "", paren ? "(" : "", p->parts[i].text,
                   paren ? ")" : "");
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

int relevance_plan(PlanBuilder *pb, CompiledRule *cr, bool enabled)
{
    cr->relaxed = relevance_relaxed(cr->ast);
    cr->relevance_root = FILTER_NONE;
    PlanMark start = plan_mark(pb);
    Parts p = {.tree = -1};
    int found = enabled && cr->ast->n_steps > 0 ? collect_parts(pb, &p, cr->ast) : 0;
    /* a strict rule's irrelevant events become blanks, which its Nfa must never take */
    bool takes_blank = found > 0 && !cr->relaxed && !nfa_takes_no_blank(cr->nfa);
    if (found == 0 || takes_blank) {
        found = 0;
        plan_rollback(pb, start);
        if (!(cr->relevance_why = why_none(enabled, takes_blank, &p)))
            found = -1;
    } else if (found > 0) {
        if ((cr->relevance_text = relevance_text(&p)) &&
            (cr->relaxed || (cr->relevance_why = strict_why(cr->ast))))
            cr->relevance_root = (uint32_t)p.tree;
        else
            found = -1;
    }
    parts_free(&p);
    return found < 0 ? -1 : 0;
}
