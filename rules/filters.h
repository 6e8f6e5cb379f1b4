/* rules/filters.h — builds a rule set's FilterPlan (ruleset.h): filters split into
 * shared atoms. Private to rules/. */
#ifndef VIGIL_RULES_FILTERS_H
#define VIGIL_RULES_FILTERS_H

#include "rules/ruleset.h"

/* Splits the filter of every rule of rs into rs->filters and sets each rule's
 * filter_root, then adds the rules' relevance (rules/relevance.h) unless
 * rs->opts.all_relevant. Atoms compile with rs->fields (every field they read is interned
 * already, by the rules' own filters). Returns -1 after reporting to diags (or on
 * allocation failure, not reported: the caller reports it). */
int filters_plan(CompiledRuleSet *rs, Diags *diags);
void filters_free(FilterPlan *plan);

/* The plan under construction, for the relevance analysis. */
typedef struct PlanBuilder PlanBuilder;
/* The node testing e, an expression of `rule`, split at and/or/not into shared atoms.
 * -1 on failure (a compile error is reported, allocation failure is not). */
int64_t plan_split(PlanBuilder *pb, const Rule *rule, const Expr *e);
/* A FILTER_AND or FILTER_OR node over nodes a and b; -1 on allocation failure. */
int64_t plan_join(PlanBuilder *pb, FilterOp op, uint32_t a, uint32_t b);

/* How far the plan has grown: a point to roll it back to. */
typedef struct PlanMark {
    size_t atoms, nodes;
} PlanMark;
PlanMark plan_mark(const PlanBuilder *pb);
/* Drops (and frees) the atoms and nodes added since mark: for a tree the caller
 * decided not to keep, before it built anything else on it. */
void plan_rollback(PlanBuilder *pb, PlanMark mark);
/* Do the nodes added since mark test only atoms that read nothing but the current
 * event (no STEP.x, aggregate or time(STEP): expr_is_iterative)? */
bool plan_event_only_since(const PlanBuilder *pb, PlanMark mark);

#endif
