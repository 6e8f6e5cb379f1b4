/* rules/ruleset.h — a loaded rule set, compiled and ready to run.
 *
 * Owns: the AST (RuleSet), the field table, per rule its compiled filter, key
 * expressions, NFA and actions, and every filter again as a tree over atoms shared
 * by the whole set (FilterPlan, rules/filters.c). Immutable once built, so workers
 * share it without locks; hot reload builds a new one and swaps it between two
 * events.
 * Rules are matched with their predecessors across reloads by fingerprint
 * (dsl_rule_fingerprint: the canonical text of filter, key, steps, within, skip). */
#ifndef VIGIL_RULES_RULESET_H
#define VIGIL_RULES_RULESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsl/ast.h"
#include "dsl/diag.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "nfa/nfa.h"

typedef struct CompiledTemplatePart {
    const char *text;          /* literal bytes (borrowed from the AST), or NULL */
    size_t len;
    CExpr *expr;               /* owned, or NULL */
} CompiledTemplatePart;

typedef struct CompiledTemplate {
    CompiledTemplatePart *parts;   /* heap, owned */
    size_t n_parts;
} CompiledTemplate;

typedef struct CompiledAction {
    const Action *ast;
    Severity severity;
    CompiledTemplate message;
    size_t n_fields;
    const char **field_names;  /* heap array of names borrowed from the AST */
    CExpr **field_values;      /* heap array, each owned */
    size_t n_to;
    int *to;                   /* output indices (-1: stdout); heap, owned; n_to == 0 means stdout */
} CompiledAction;

/* Filters as shared atoms. Every rule's filter is split at its `and`, `or` and `not`
 * into atoms (comparisons and any other expression); atoms written alike in any rule
 * (same dsl_fmt_expr text) are compiled once, so that a router can test each at most
 * once per event however many filters contain it (runtime/route.h). The nodes
 * combine atom truths with the three-valued logic of expr.h's `and`/`or`/`not`. */
typedef enum { FILTER_ATOM, FILTER_AND, FILTER_OR, FILTER_NOT } FilterOp;

typedef struct FilterNode {
    FilterOp op;
    uint32_t a;                /* FILTER_ATOM: the atom's index; else the (first) child node */
    uint32_t b;                /* FILTER_AND, FILTER_OR: the second child node */
} FilterNode;

#define FILTER_NONE UINT32_MAX  /* CompiledRule.filter_root of a rule without a filter */

typedef struct FilterPlan {
    CExpr **atoms;             /* heap array, each owned */
    size_t n_atoms;
    FilterNode *nodes;         /* heap, owned */
    size_t n_nodes;
} FilterPlan;

typedef struct CompiledRule {
    const Rule *ast;
    const char *name;
    uint64_t fingerprint;
    CExpr *filter;             /* owned; NULL: every event */
    uint32_t filter_root;      /* the same filter in the rule set's FilterPlan, or FILTER_NONE */
    size_t n_keys;
    const char **key_names;    /* heap array of names borrowed from the AST */
    CExpr **keys;              /* heap array, each owned */
    Nfa *nfa;                  /* owned */
    CompiledAction *on_match;  /* heap array, owned */
    size_t n_on_match;
    CompiledAction *on_timeout;
    size_t n_on_timeout;
    int64_t suppress_ms;       /* DURATION_NONE if none */
    /* Relevance (rules/relevance.h): an event for which the tree at relevance_root (in
     * the FilterPlan, over the same atoms as the filters) is not true fails every step
     * condition of the rule. For a `relaxed` rule (no step, quantifier or negation acts
     * on such an event) it can neither start nor change a partial match, and the
     * router treats it as filtered; for a strict one it still ends partial matches, and
     * the router sends it as a *blank* (nfa_key_blank_in: its time, not its values).
     * FILTER_NONE: every event the filter passes goes to the rule as it is (a step
     * without an event-only condition, or switched off). */
    bool relaxed;
    uint32_t relevance_root;
    char *relevance_text;      /* the relevance's canonical text (heap, owned), or NULL */
    /* For `vigil explain`: with relevance_text, the step and the construct that make
     * the rule strict ("step b is next: ...", NULL for a relaxed rule); without, why it
     * has none: the step whose condition has no part that reads only the event, or
     * "switched off" (heap, owned). */
    char *relevance_why;
} CompiledRule;

/* How a rule set is compiled. All zero is the default. */
typedef struct RuleSetOptions {
    bool all_relevant;         /* no relevance: every event a filter passes reaches its
                                  rule (the tests compare both ways) */
} RuleSetOptions;

typedef struct CompiledRuleSet {
    RuleSet *ast;              /* owned */
    FieldTable fields;         /* every field any rule reads; owned */
    CompiledRule *rules;       /* heap array, owned */
    size_t n_rules;
    bool event_time;           /* a `time` declaration exists */
    int time_slot;             /* slot of the time field, or -1 on processing time */
    TimeFormat time_format;
    int64_t lateness_ms;
    FilterPlan filters;        /* every rule's filter (and relevance) over shared atoms */
    RuleSetOptions opts;       /* as compiled; a reload of this set keeps them */
} CompiledRuleSet;

/* Loads, checks and compiles FILE|DIR arguments. Returns NULL if any error was
 * reported to diags (or on allocation failure, also reported). */
CompiledRuleSet *ruleset_load(const char *const *paths, size_t n_paths, Diags *diags);
/* Compiles an already checked AST; takes ownership of `ast` in every case. */
CompiledRuleSet *ruleset_compile(RuleSet *ast, Diags *diags);
/* The same for a rule set replacing `prev` (hot reload): every field of prev keeps its
 * slot number, so events already held in partial matches of unchanged rules read the
 * same slots under the new rules; new fields get slots after them. */
CompiledRuleSet *ruleset_compile_after(RuleSet *ast, const CompiledRuleSet *prev,
                                       Diags *diags);
/* ruleset_load for hot reload: fields keep the slots they had in prev, and so do the
 * options. */
CompiledRuleSet *ruleset_reload(const char *const *paths, size_t n_paths,
                                const CompiledRuleSet *prev, Diags *diags);
/* The same with options (NULL: prev's, or the defaults without prev). */
CompiledRuleSet *ruleset_compile_with(RuleSet *ast, const CompiledRuleSet *prev,
                                      const RuleSetOptions *opts, Diags *diags);
CompiledRuleSet *ruleset_load_with(const char *const *paths, size_t n_paths,
                                   const CompiledRuleSet *prev, const RuleSetOptions *opts,
                                   Diags *diags);
void ruleset_free(CompiledRuleSet *rs);
/* Index of the rule with this name, or -1. */
int ruleset_find(const CompiledRuleSet *rs, const char *name);

#endif
