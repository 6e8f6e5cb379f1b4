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

/* What the matcher reads for every key comes first, the deadline's two fields in
 * the first 16 bytes (one cache line, whatever malloc's 16-byte alignment gives): a
 * rule's Nfa is mostly cold when one of its keys runs. */
struct Nfa {
    NfaState *states;
    int64_t within_ms;     /* rule within, or DURATION_NONE */
    NfaEdge *edges;
    NfaCond *conds;
    NfaStep *steps;
    size_t n_aggs;         /* 0 when no condition uses aggregates: plain nodes */
    uint32_t start;
    SkipKind skip;
    int skip_step;         /* to_first / to_last */
    AggKey *aggs;          /* running aggregates every MatchNode carries (n_acc); heap, owned */
    char *rule_name;       /* heap copy */
    size_t n_steps;
    size_t n_states;
    size_t n_edges;
    size_t n_conds;
    size_t max_collect;    /* most edges one decision (a state plus its proceed closure) yields */
};

/* ---- matcher state (match.c; read by snapshot.c and white-box tests) ---------- */

/* NfaKey and its runs are in nfa.h (callers embed NfaKey in their own storage). */
typedef NfaRun Run;
typedef NfaRunList RunList;

/* The heap part of a key that branched or holds completed matches back: one block,
 * reallocated as the live runs grow (cap_live of room). */
typedef struct NfaKeyMore {
    RunList done;          /* completed, held back by a skip strategy, in start order */
    Run v[];               /* the live runs */
} NfaKeyMore;

/* The live runs of a key (n_live of them). */
static inline Run *nfa_key_live(NfaKey *k)
{
    return k->cap_live > 1 ? k->live.more->v : &k->live.one;
}
static inline const Run *nfa_key_live_c(const NfaKey *k)
{
    return k->cap_live > 1 ? k->live.more->v : &k->live.one;
}
/* Completed matches held back, or NULL when there are none. */
static inline const Run *nfa_key_done_c(const NfaKey *k)
{
    return k->cap_live > 1 ? k->live.more->done.v : NULL;
}
static inline size_t nfa_key_n_done(const NfaKey *k)
{
    return k->cap_live > 1 ? k->live.more->done.n : 0;
}
/* A run's first event's time and input id (see NfaRun). */
static inline int64_t nfa_run_start_time(const Run *r)
{
    return r->start->time_ms;
}
static inline uint64_t nfa_run_start_id(const Run *r)
{
    return r->start->id;
}
/* The first node of a chain (for a run rebuilt from its newest node). */
static inline const MatchNode *nfa_chain_first(const MatchNode *n)
{
    while (n->prev)
        n = n->prev;
    return n;
}
/* A partial match's newest event time (step within counts from it). */
static inline int64_t nfa_run_time(const Run *r)
{
    return r->last->event->time_ms;
}

/* Per-event scratch of the matcher, sized for the Nfas it was made for: the next
 * generation of partial matches, the completed ones, the decision edges and the
 * condition memo; plus idle NfaKeys kept for reuse, so that keys which live for a
 * few events cost no allocator calls, and the pool their MatchNodes come from. */
struct NfaWork {
    RunList next;
    RunList fresh;
    RunList held;          /* completed matches being released for a key that holds none
                              back yet; a key adopts its array if some stay held */
    uint32_t *edges;       /* max_collect edge indices; heap, owned */
    bool *memo;            /* 2 per step: where/until results of non-iterative conditions,
                              valid where memo_seen[i] == memo_now; heap, owned */
    uint32_t *memo_seen;   /* heap, owned */
    uint32_t memo_now;     /* the current (event, key) */
    size_t max_collect, memo_len;
    NfaKey **spare;        /* idle keys, ready for reuse; heap, owned, as are they */
    size_t n_spare;
    NodePool *nodes;       /* plain MatchNodes of this thread's keys; owned (let go of
                              with the work: nodes still held keep it alive) */
    bool general_only;     /* no fast path: the general one, which tests compare them to */
};

/* Makes the work take the general path where the matcher has a fast one for common
 * shapes (nfa_work_new: off), so that a test can show both give the same. */
static inline void nfa_work_set_general_only(NfaWork *w, bool on)
{
    w->general_only = on;
}

/* An empty key (no runs); NULL on allocation failure. Free with nfa_key_free. */
NfaKey *nfa_key_new_empty(const Nfa *nfa);
/* Gives runs to an empty key: those of *live and *done (their arrays adopted or
 * freed; both are left empty). False on allocation failure (the lists are then
 * unchanged). */
bool nfa_key_adopt(NfaKey *key, RunList *live, RunList *done);
/* The MatchNode for (step, ev) after prev, with the running aggregates the Nfa's
 * conditions need (nfa->aggs; a plain node when there are none). Use it for every
 * node of an Nfa's chains. A prev without accumulators (made by match_node_new) is
 * accepted: the chain is folded once. NULL on allocation failure. */
MatchNode *nfa_node_new(const Nfa *nfa, MatchNode *prev, Event *ev, uint32_t step);

/* All states, breadth-first from the start (unreachable ones last): the order
 * explain prints them in and labels are numbered in. */
void nfa_state_order(const Nfa *nfa, uint32_t *order);

/* Name of a state kind / action, for explain and tests. */
const char *nfa_state_kind_name(NfaStateKind k);
const char *nfa_action_name(NfaAction a);

#endif
