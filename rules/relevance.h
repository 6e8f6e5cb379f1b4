/* rules/relevance.h — which events can change a rule: the relevance analysis.
 * Private to rules/.
 *
 * A rule is *relaxed* when no step, quantifier or negation acts on an event whose
 * step conditions (`where`, `until`, and those of `not_followed_by` steps) are all
 * false: every state where a partial match waits then ignores such an event into
 * itself, and the start state does nothing with it. Timeouts come from the timers
 * before each event, not from the key's own events. So for a relaxed rule such an
 * event is exactly like one its filter rejects. A strict rule may still act on it
 * (strict contiguity ends partial matches), but only through its conditions being
 * false: such an event is a *blank* (nfa/nfa.h), which the matcher runs with its time
 * alone, so that it reaches the rule without its values (across workers, without the
 * event).
 *
 * Each step condition has a *necessary part*: the conjunction of its top-level `and`
 * conjuncts that read only the current event (no STEP.x, aggregate or time(STEP):
 * expr_is_iterative, as the matcher's shared conditions classify them). The rule's
 * *relevance* is the `or` of the parts: an event for which it is not true fails every
 * condition. A step without a condition, or whose condition has no such conjunct,
 * makes the relevance `true`: nothing to gain, so the rule gets none.
 * nfa/SEMANTICS.md, section "Relevance", gives the argument. */
#ifndef VIGIL_RULES_RELEVANCE_H
#define VIGIL_RULES_RELEVANCE_H

#include <stdbool.h>

#include "dsl/ast.h"
#include "rules/filters.h"

/* Is the rule relaxed (see above)? From its steps and quantifiers alone. */
bool relevance_relaxed(const Rule *rule);

/* Sets cr->relaxed and, when `enabled` and the rule has a relevance other than `true`
 * (for a strict rule, also when its Nfa takes no blank: nfa_takes_no_blank),
 * cr->relevance_root (its tree added to the plan), cr->relevance_text and, for a
 * strict rule, cr->relevance_why (what makes it strict); otherwise
 * cr->relevance_why (why none), and the plan is as before the call.
 * Each conjunct is compiled once, into the plan, which classifies it by its atoms.
 * -1 on failure (allocation, not reported, or a compile error reported to the plan's
 * diagnostics): the rule set's compile fails. */
int relevance_plan(PlanBuilder *pb, CompiledRule *cr, bool enabled);

#endif
