/* nfa/nfa_internal.h — the layout of a compiled Nfa, shared by the compiler
 * (compile.c), the matcher (match.c), explain (explain.c) and white-box tests.
 *
 * An Nfa is a flat, immutable graph: states index a contiguous edge array, edges
 * name their condition in a condition pool. Conditions are tiny trees over the
 * step's compiled `where` and `until` expressions (true / where / until / not / and),
 * because Flink's construction combines them (e.g. `not until and where`).
 * Everything is owned by the Nfa and freed by nfa_free. */
#ifndef VIGIL_NFA_NFA_INTERNAL_H
#define VIGIL_NFA_NFA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsl/ast.h"
#include "nfa/expr.h"
#include "nfa/nfa.h"

#define NFA_NONE UINT32_MAX

typedef enum {
    NFA_ST_NORMAL,    /* a partial match may wait here */
    NFA_ST_FINAL,     /* reaching it completes a match */
    NFA_ST_STOP,      /* reaching it (via proceed) kills the branch: a `not_` step matched */
    NFA_ST_PENDING,   /* trailing not_followed_by: completes when its within elapses */
} NfaStateKind;

typedef enum { NFA_TAKE, NFA_IGNORE, NFA_PROCEED } NfaAction;

typedef enum { NFA_C_TRUE, NFA_C_WHERE, NFA_C_UNTIL, NFA_C_NOT, NFA_C_AND } NfaCondKind;

typedef struct NfaCond {
    uint8_t kind;          /* NfaCondKind */
    uint32_t step;         /* NFA_C_WHERE / NFA_C_UNTIL */
    uint32_t a, b;         /* operands (NOT: a; AND: a, b), indices into Nfa.conds */
} NfaCond;

typedef struct NfaEdge {
    uint8_t action;        /* NfaAction */
    uint32_t source;       /* state the edge leaves (a TAKE records the source's step) */
    uint32_t target;
    uint32_t cond;         /* index into Nfa.conds */
} NfaEdge;

typedef struct NfaState {
    uint8_t kind;          /* NfaStateKind */
    bool proceeds_to_final; /* some proceed path (ignoring conditions) reaches a final state */
    uint32_t step;         /* the pattern step the state belongs to (NFA_NONE for the end) */
    uint32_t first_edge, n_edges;
    int64_t within_ms;     /* the step's own within (gap from the previous event), or DURATION_NONE */
    char *label;           /* "a", "a#2", ...; heap, owned */
} NfaState;

typedef struct NfaStep {
    char *name;            /* heap copy */
    CExpr *where;          /* owned; NULL accepts every event */
    CExpr *until;          /* owned; NULL if none */
    bool where_iter, until_iter;   /* the expression reads the partial match */
    char *where_text;      /* canonical text for explain; heap, owned, may be NULL */
    char *until_text;
} NfaStep;

struct Nfa {
    char *rule_name;       /* heap copy */
    NfaStep *steps;
    size_t n_steps;
    NfaState *states;
    size_t n_states;
    NfaEdge *edges;
    size_t n_edges;
    NfaCond *conds;
    size_t n_conds;
    uint32_t start;
    int64_t within_ms;     /* rule within, or DURATION_NONE */
    SkipKind skip;
    int skip_step;         /* to_first / to_last */
    size_t max_collect;    /* most edges one decision (a state plus its proceed closure) yields */
};

/* All states, breadth-first from the start (unreachable ones last): the order
 * explain prints them in and labels are numbered in. */
void nfa_state_order(const Nfa *nfa, uint32_t *order);

/* Name of a state kind / action, for explain and tests. */
const char *nfa_state_kind_name(NfaStateKind k);
const char *nfa_action_name(NfaAction a);

#endif
