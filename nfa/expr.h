/* nfa/expr.h — compiled expressions: conditions, keys, alert fields and templates.
 *
 * expr_compile turns a resolved AST expression (dsl_check has run) into a compact
 * program: field paths become slots of the FieldTable, constants are folded, regexes
 * are compiled once with PCRE2 (JIT where available) with match and depth limits.
 * Evaluation does no name lookup and no malloc: produced strings go to the caller's
 * EvalScratch, which also holds the PCRE2 match data (one per thread).
 *
 * Iterative conditions (`STEP.field`, aggregates, `time(STEP)`) read the partial
 * match given in EvalCtx.match: its chain of (step, event) nodes, newest first. */
#ifndef VIGIL_NFA_EXPR_H
#define VIGIL_NFA_EXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "dsl/ast.h"
#include "nfa/event.h"
#include "nfa/value.h"

typedef struct CExpr CExpr;           /* compiled expression; immutable after compile */

/* Per-thread evaluation scratch. Strings produced during an evaluation stay valid
 * until the caller calls expr_scratch_reset. */
typedef struct EvalScratch EvalScratch;
EvalScratch *expr_scratch_new(void);
void expr_scratch_reset(EvalScratch *s);
void expr_scratch_free(EvalScratch *s);
/* A byte buffer that lives as long as the scratch, for text its thread builds over
 * and over (alert records): the caller clears it before use; expr_scratch_reset
 * leaves it alone. Never NULL. */
struct Buf;
struct Buf *expr_scratch_text(EvalScratch *s);
/* Regex matches that hit PCRE2's match or depth limit (counted, then treated as no match). */
uint64_t expr_scratch_regex_limit_hits(const EvalScratch *s);
/* Allocations of evaluations with this scratch that failed (a built string, regex
 * match data, an aggregate's table...), since it was made; expr_scratch_reset keeps
 * the count. Such an evaluation gave null, or a condition false, in place of its
 * value: a caller that sees the count grow over an evaluation must not use what it
 * gave (out of memory, not an answer). */
uint64_t expr_scratch_out_of_memory(const EvalScratch *s);

typedef struct EvalCtx {
    const Event *event;        /* the current event; NULL in actions, where bare fields read
                                  the last event of `match` */
    const MatchNode *match;    /* partial match so far (newest first), or NULL */
    const Value *key;          /* key values of the partition (actions: key.NAME), or NULL */
    size_t n_key;
    int64_t time_ms;           /* time(): the current event's time (actions: the alert's time) */
} EvalCtx;

typedef struct ExprEnv {
    FieldTable *fields;        /* slots are interned here */
    const Rule *rule;          /* for step and key names; NULL for rule-less expressions */
} ExprEnv;

/* Compiles `e`. On failure returns NULL and sets *err to a heap message (caller frees)
 * saying what is wrong with the expression, or to NULL when memory ran out (an
 * allocation failed, there or in what it calls): so a caller tells that apart from an
 * error of the rule. */
CExpr *expr_compile(const Expr *e, const ExprEnv *env, char **err);
void expr_free(CExpr *ce);

Value expr_eval(const CExpr *ce, const EvalCtx *ctx, EvalScratch *s);
/* A condition holds only if it evaluates to boolean true. */
bool expr_test(const CExpr *ce, const EvalCtx *ctx, EvalScratch *s);
/* The condition's truth in three-valued logic: 1 true, 0 false, -1 unknown (null or
 * not a boolean); expr_test is expr_truth == 1. For callers that combine conditions
 * themselves with the same logic as `and`/`or`/`not`. */
int expr_truth(const CExpr *ce, const EvalCtx *ctx, EvalScratch *s);
/* True if the expression reads the partial match (STEP.x, aggregates, time(STEP)). */
bool expr_is_iterative(const CExpr *ce);

/* ---- thresholds -------------------------------------------------------------
 * A condition `FIELD OP NUMBER` (or `NUMBER OP FIELD`) with OP one of < <= > >= is
 * true on an event exactly when the field holds a number v and
 * expr_number_holds(op, v, number) with op as written `FIELD OP NUMBER`, and false
 * otherwise (never unknown). A caller testing many such conditions on one field
 * reads the field once and, the result being monotone in the number, searches. */
typedef struct ExprThreshold {
    int32_t slot;              /* the field */
    int op;                    /* BIN_LT, BIN_LE, BIN_GT or BIN_GE, the field on the left */
    double number;
} ExprThreshold;

/* Is ce such a condition? Then *out describes it. */
bool expr_threshold(const CExpr *ce, ExprThreshold *out);

/* Numbers compared as doubles (NaN: only != holds), as every comparison of two
 * numbers in an expression. */
static inline bool expr_number_holds(int op, double v, double number)
{
    switch (op) {
    case BIN_EQ: return v == number;
    case BIN_NE: return v != number;
    case BIN_LT: return v < number;
    case BIN_LE: return v <= number;
    case BIN_GT: return v > number;
    case BIN_GE: return v >= number;
    default: return false;
    }
}

/* The number slot `slot` of ev holds; false when it holds anything else. */
static inline bool expr_slot_number(const Event *ev, int32_t slot, double *v)
{
    if (slot < 0 || (uint32_t)slot >= ev->n_slots || ev->slots[slot].type != V_NUM)
        return false;
    *v = ev->slots[slot].num;
    return true;
}

/* ---- string equalities ------------------------------------------------------
 * A condition `FIELD == "text"` (or `"text" == FIELD`) is true on an event exactly
 * when the field holds a string of the same bytes, and false otherwise (never
 * unknown). A caller testing many such conditions on one field reads it once. */
typedef struct ExprStringEq {
    int32_t slot;              /* the field */
    const char *s;             /* the text, borrowed from the expression */
    size_t len;
} ExprStringEq;

/* Is ce such a condition? Then *out describes it. */
bool expr_string_eq(const CExpr *ce, ExprStringEq *out);

/* ---- fields -----------------------------------------------------------------
 * An expression that is one field of the event (`user`, `a.b`), as keys mostly are:
 * evaluated on an event, its value is the event's slot, or missing when the event
 * has none (slot out of its range). A caller reading many such keys reads the slot. */
bool expr_field_slot(const CExpr *ce, int32_t *slot);

/* ---- running aggregates ---------------------------------------------------
 * A rule's compiler binds the count/sum/avg/min/max/first/last aggregates of its
 * conditions to (step, field) keys; its matcher then keeps one AggAcc per key in
 * every MatchNode (match_node_new_acc + expr_agg_fold), and evaluation reads the
 * newest node's accumulator instead of walking the chain. Unbound expressions, and
 * chains whose nodes carry no accumulators, walk the chain with the same fold, so
 * both paths give identical results (sums are taken oldest first in both). */
typedef struct AggKey {
    int32_t step;
    int32_t slot;            /* -1: count(STEP), the events themselves */
} AggKey;

/* Gives each such aggregate of ce the index of its key in *keys, appending new keys
 * (the array is heap, owned by the caller). False on allocation failure or when
 * there would be more than UINT16_MAX keys (then ce is left unbound: still correct). */
bool expr_bind_aggregates(CExpr *ce, AggKey **keys, size_t *n_keys);
/* Folds the event of a node of key->step into acc. */
void expr_agg_fold(AggAcc *acc, const AggKey *key, const Event *ev);

#endif
