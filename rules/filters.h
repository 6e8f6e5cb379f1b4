/* rules/filters.h — builds a rule set's FilterPlan (ruleset.h): filters split into
 * shared atoms. Private to rules/. */
#ifndef VIGIL_RULES_FILTERS_H
#define VIGIL_RULES_FILTERS_H

#include "rules/ruleset.h"

/* Splits the filter of every rule of rs into rs->filters and sets each rule's
 * filter_root. Atoms compile with rs->fields (every field they read is interned
 * already, by the rules' own filters). Returns -1 after reporting to diags (or on
 * allocation failure, not reported: the caller reports it). */
int filters_plan(CompiledRuleSet *rs, Diags *diags);
void filters_free(FilterPlan *plan);

#endif
