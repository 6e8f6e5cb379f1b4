/* runtime/route.h — filter and key of every rule for one event, sharing the work
 * between rules written alike.
 *
 * Real rule sets repeat themselves: dozens of rules with `filter type == "tx"` and
 * `key user`. The router groups rules whose filter (or key) has the same canonical
 * text (dsl_fmt_expr) and evaluates each group once per event. Different filters
 * share their atoms too (the rule set's FilterPlan: `type == "tx"` inside
 * `type == "tx" and amount > 500` is the atom of `type == "tx"` alone), each tested
 * at most once per event, and filters starting with the same atom are skipped
 * together when it fails; filters that are one threshold on a field (after the same
 * atom: `type == "tx" and amount > 20000`, ...) are settled together by one search
 * of their thresholds. The field that most atoms ask for a text (`type == "tx"`) is
 * read once per event, and its value picks a plan built with the router, in which
 * those atoms and what they settle (filters, relevance, which keys the admitted
 * rules may need) are settled already. Owns: the groups and plans (built once per
 * rule set) and the per-event cache (atom truths; key bytes, hashes and values per
 * group).
 * Not thread-safe: one router per thread. */
#ifndef VIGIL_RUNTIME_ROUTE_H
#define VIGIL_RUNTIME_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfa/event.h"
#include "nfa/expr.h"
#include "rules/ruleset.h"

/* How an event relates to a rule before any matching. ROUTE_BLANK: keyed, but outside
 * the relevance of a strict rule (rules/ruleset.h), so that every step condition is
 * false for it: the rule's matcher needs only its time (nfa_key_blank_in). */
typedef enum { ROUTE_FILTERED, ROUTE_NO_KEY, ROUTE_KEYED, ROUTE_BLANK, ROUTE_FAILED } RouteResult;

/* The results that come with a key. */
static inline bool route_keyed(RouteResult res)
{
    return res == ROUTE_KEYED || res == ROUTE_BLANK;
}

typedef struct RouteKey {
    const char *bytes;         /* canonical key bytes (runtime/partition.h) */
    size_t len;
    uint64_t hash;             /* part_hash of the bytes */
    const Value *vals;         /* the rule's n_keys key values */
} RouteKey;

typedef struct Router Router;

/* Borrows rs. With `blanks` a strict rule's irrelevant events are ROUTE_BLANK; without,
 * the router ignores strict rules' relevance (they get ROUTE_KEYED), which saves
 * testing it where a blank would save little: a blank spares the matcher a few tests,
 * but spares the workers' split sending an event to another core. NULL on allocation
 * failure. */
Router *router_new(const CompiledRuleSet *rs, bool blanks);
void router_free(Router *r);
/* A new event: forgets every cached result. */
void router_begin(Router *r);
/* Filter, then key, then relevance (ruleset.h) of rule `rule` for ev: an event the
 * filter passes without a key is ROUTE_NO_KEY whatever its relevance (the filter
 * alone decides what counts as a missing key); one with a key that cannot change the
 * rule is ROUTE_FILTERED, or ROUTE_BLANK for a strict rule. With a key (route_keyed)
 * *key describes it; it
 * stays valid until router_begin and while scratch is not reset (values may live in
 * it). ev and scratch must be the same for every call between two router_begin.
 * The first call after router_begin routes ev for every rule at once (as
 * router_route_all: groups, shared atoms, ladders) and the others only look up their
 * rule, so asking for each rule of an event costs about what router_route_all does. */
RouteResult router_route(Router *r, size_t rule, const Event *ev, EvalScratch *scratch,
                         RouteKey *key);

/* Every rule at once, for the inline path: a filter group that fails is skipped in
 * one test instead of one lookup per rule. For each rule whose result (as
 * router_route's) is not ROUTE_FILTERED, in rule order, appends its number to `order`
 * and sets res[rule] (and key[rule] with a key: the router's key of the rule's
 * key group, valid as for router_route; rules keyed alike get the same pointer);
 * returns how many. Starts a new event itself (router_begin). order, res and key have
 * room for every rule. */
size_t router_route_all(Router *r, const Event *ev, EvalScratch *scratch, size_t *order,
                        RouteResult *res, const RouteKey **key);

#endif
