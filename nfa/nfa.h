/* nfa/nfa.h — a rule's pattern compiled to an NFA, and the per-key matcher.
 *
 * The compiler builds states with take / ignore / proceed edges in the manner of
 * Flink's NFACompiler, for every step kind and quantifier, rule and step `within`,
 * and the five after-match skip strategies. The matcher runs one NfaKey per
 * partition key. Semantics are Flink CEP's Pattern API (see nfa/SEMANTICS.md).
 *
 * The matcher is driven by two calls, independent of I/O:
 *     nfa_key_advance(nfa, &key, T, ...)  time moves to T: partial matches whose
 *                                         within elapsed (t - t_first >= within) die and
 *                                         yield timeouts (or matches, for a trailing
 *                                         not_followed_by);
 *     nfa_key_event(nfa, &key, ev, ...)   process one event at ev->time_ms (it calls
 *                                         advance(ev->time_ms) first).
 * Results go to a sink in release order. An NfaKey lives either in the caller's
 * storage (nfa_key_init, the *_in calls, nfa_key_idle, nfa_key_clear: a partition
 * entry holds its key's matcher inline, one allocation and one cache miss fewer) or
 * on the heap behind an NfaKey * (the pointer calls), which is freed and set to NULL
 * when the key holds nothing. Either way an idle key holds no memory beyond itself. */
#ifndef VIGIL_NFA_NFA_H
#define VIGIL_NFA_NFA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dsl/ast.h"
#include "nfa/event.h"
#include "nfa/expr.h"

typedef struct Nfa Nfa;          /* immutable after compile; shared by all keys and threads */
typedef struct NfaKey NfaKey;    /* one key's partial matches; owned by the caller's partition */

/* Compiles the pattern of `rule` (filter and keys are not part of it). Conditions are
 * compiled with expr_compile against env->fields. NULL with *err (heap) on failure;
 * *err NULL when it failed because memory ran out (as expr_compile's). */
Nfa *nfa_compile(const Rule *rule, const ExprEnv *env, char **err);
void nfa_free(Nfa *nfa);
/* Human-readable states and edges, or Graphviz when dot is true. 0, or -1 when out
 * of memory, with nothing written to out. */
int nfa_explain(const Nfa *nfa, FILE *out, bool dot);

typedef enum { NFA_MATCH, NFA_TIMEOUT } NfaResultKind;

typedef struct NfaResult {
    NfaResultKind kind;
    int64_t time_ms;          /* a match's last event time; a timeout's expiry time; for a
                                 trailing not_followed_by, the expiry time */
    const MatchNode *last;    /* the events matched (so far), newest first; valid during emit */
} NfaResult;

typedef struct NfaSink {
    void (*emit)(void *user, const NfaResult *r);
    void *user;
} NfaSink;

#define NFA_DEFAULT_MAX_PARTIALS_PER_RULE 1000000

typedef struct NfaLimits {
    size_t max_partials;      /* per key; when hit, the oldest partial match is dropped */
    size_t max_partials_per_rule; /* per NfaCounters (one rule on one thread); 0 means
                                     NFA_DEFAULT_MAX_PARTIALS_PER_RULE; when reached, the
                                     start state starts no new partial match */
} NfaLimits;

typedef struct NfaCounters {
    uint64_t partials_dropped;  /* by either cap or an allocation failure (refused included) */
    uint64_t partials_live;     /* current, summed over keys (maintained by the matcher) */
    uint64_t partials_refused;  /* new partial matches not started: the per-rule cap */
    uint64_t cap_hits;          /* events at which a cap dropped or refused something; the
                                   runtime warns (rate-limited) when this grows */
    uint64_t takes;             /* events taken into partial matches, a node each, made or
                                   shared (nfa/event.h): what a key's --max-memory estimate
                                   follows, since a shared node adds no event reference */
    uint64_t out_of_memory;     /* partial or held-back matches lost to a failed allocation
                                   (counted in partials_dropped too): results may be
                                   missing, so the runtime fails the run when it grows */
} NfaCounters;

/* ---- one key's state. The layout is public only so that a caller can embed an
 * NfaKey (sizeof); its fields belong to the matcher. */

/* A partial match, or (in the done/fresh lists) a completed one. */
typedef struct NfaRun {   /* Run in nfa_internal.h */
    MatchNode *last;       /* one reference; never NULL */
    const Event *start;    /* the event of the first node of last's chain (held through
                              last): its time and input id order release and pruning
                              (Flink's EventId), and the rule's within counts from that
                              time; one pointer where the two took 16 bytes, to the
                              event itself, so that fetching it waits for no node */
    union {
        uint32_t state;    /* partial: where it waits (its newest event's time is
                              last->event->time_ms, so it is not stored) */
        int64_t time;      /* completed: the result time */
    };
} NfaRun;

typedef struct NfaRunList {   /* RunList in nfa_internal.h */
    NfaRun *v;
    size_t n, cap;
} NfaRunList;

/* A key's runs when it has more than one partial match or completed matches held
 * back (NfaKeyMore in nfa_internal.h). */
struct NfaKeyMore;

/* Only what persists between events: per-event scratch lives in the NfaWork. Most
 * keys hold one partial match and nothing held back, so that one is inline and the
 * key is 32 bytes with no other allocation. Its deadline is not stored: it follows
 * from the runs (nfa_key_deadline). */
struct NfaKey {   /* fields are the matcher's (nfa_internal.h reads them) */
    uint32_t n_live;       /* partial matches, oldest start first */
    uint32_t cap_live;     /* 1: at most the one inline run and nothing held back;
                              more: live.more (heap) holds the runs, room for cap_live */
    union {
        NfaRun one;
        struct NfaKeyMore *more;
    } live;
};

/* Conditions shared across rules. Rule sets repeat step conditions (`where ok ==
 * false` in twenty login rules); a condition that reads only the current event
 * (no STEP.x, aggregate or time(STEP)) has the same result in every rule, so rules
 * whose condition has the same canonical text share one result per event.
 *   NfaCondShare: built once per rule set from its Nfas (immutable; any thread);
 *   NfaCondCache: one per thread, told about each new event.
 * In NfaRunCtx, set cond_cache and cond_ids = nfa_cond_share_ids(share, rule) to use
 * them (both NULL: every rule evaluates its own conditions). */
typedef struct NfaCondShare NfaCondShare;
typedef struct NfaCondCache NfaCondCache;

/* Groups the shareable conditions of nfas[0..n), which must outlive the share.
 * Conditions `FIELD OP NUMBER` (OP one of > >= < <=) that differ only in the number
 * form ladders: for one event their results are monotone in the number, so the cache
 * evaluates a few by binary search and knows them all (40 rules with `amount > 500`,
 * `amount > 600`, ... cost about 6 evaluations per event instead of 40). NULL on
 * allocation failure. */
NfaCondShare *nfa_cond_share_new(const Nfa *const *nfas, size_t n);
void nfa_cond_share_free(NfaCondShare *share);
/* Condition texts that occur in more than one place or stand on a ladder. */
size_t nfa_cond_share_groups(const NfaCondShare *share);
/* Ladders (at least three different numbers each). */
size_t nfa_cond_share_ladders(const NfaCondShare *share);
/* The per-rule table for NfaRunCtx.cond_ids (owned by the share). */
const uint32_t *nfa_cond_share_ids(const NfaCondShare *share, size_t rule);
/* The rule's wake test for NfaRunCtx.gate (owned by the share): nfa_key_wakes then
 * answers from the cache without looking into the Nfa. */
typedef struct NfaWakeGate NfaWakeGate;
const NfaWakeGate *nfa_cond_share_gate(const NfaCondShare *share, size_t rule);
/* NULL on allocation failure. */
NfaCondCache *nfa_cond_cache_new(const NfaCondShare *share);
void nfa_cond_cache_free(NfaCondCache *cache);
/* Call before each event (before the first nfa_key_event of any rule for it). */
void nfa_cond_cache_next_event(NfaCondCache *cache);
/* Evaluations saved so far (a result reused by another rule). */
uint64_t nfa_cond_cache_hits(const NfaCondCache *cache);

/* The matcher's per-event scratch (next generation, completed matches, decision
 * edges, condition memo) and a few idle keys for reuse: one per thread, shared by
 * every key of the Nfas it was made for, so a key holds only what persists.
 * nfa_work_new sizes it for nfas[0..n) (which it does not keep); NULL on allocation
 * failure. Keys it keeps for reuse are freed with it.
 * It also owns the pool the keys' MatchNodes come from (nfa/event.h, node pools), so
 * a key run with a work is the work's thread's: run, clear, free and snapshot it only
 * there, or from another thread while that one is stopped (a pause with a
 * happens-before edge both ways, or after joining it). nfa_work_free may come before
 * the keys are cleared (a reload hands them to a new work): the pool lives on until
 * their last node is released, on the thread that then runs them. */
typedef struct NfaWork NfaWork;
NfaWork *nfa_work_new(const Nfa *const *nfas, size_t n);
void nfa_work_free(NfaWork *work);

typedef struct NfaRunCtx {
    NfaWork *work;                /* required: made for (at least) this Nfa */
    EvalScratch *scratch;
    const NfaLimits *limits;
    NfaCounters *counters;
    NfaSink sink;
    NfaCondCache *cond_cache;     /* optional: shared condition results of this event */
    const uint32_t *cond_ids;     /* this rule's table in the share; with cond_cache */
    const NfaWakeGate *gate;      /* optional, with cond_cache: nfa_cond_share_gate */
} NfaRunCtx;

/* ---- a key in the caller's storage. Such a key never moves by itself; the caller
 * may move it (a plain struct copy) between calls. */

/* Makes *key an idle key (no partial match, no pending result). Inline: the runtime
 * makes one for every new key. */
static inline void nfa_key_init(NfaKey *key)
{
    key->n_live = 0;
    key->cap_live = 1;
}
/* Nothing live and nothing held back: the caller may drop the storage without
 * nfa_key_clear (an idle key owns no memory). */
static inline bool nfa_key_idle(const NfaKey *key)
{
    return key->n_live == 0 && key->cap_live == 1;
}
/* Releases a key's state without emitting anything and leaves it idle. */
void nfa_key_clear(NfaKey *key, NfaCounters *counters);
void nfa_key_event_in(const Nfa *nfa, NfaKey *key, Event *ev, NfaRunCtx *ctx);
/* The same, for a caller that knows nothing of the key is due at ev's time (its
 * nfa_key_deadline is later): the advance to that time, which would only find so, is
 * skipped, and with it reading each partial match's first event for its deadline. */
void nfa_key_event_in_undue(const Nfa *nfa, NfaKey *key, Event *ev, NfaRunCtx *ctx);
void nfa_key_advance_in(const Nfa *nfa, NfaKey *key, int64_t time_ms, NfaRunCtx *ctx);
/* Moves the state of a heap key (from the pointer calls or nfa_key_restore; may be
 * NULL) into caller storage `into` (idle before), and frees the heap key. */
void nfa_key_move_in(NfaKey *into, NfaKey *from);

/* A *blank* is an event for which every `where` and `until` of the rule is false
 * (the caller knows it without the event: rules/relevance.h). For a rule whose Nfa
 * takes no blank into a partial match (nfa_takes_no_blank), a blank only moves or
 * ends partial matches (strict contiguity) and times them out, so the matcher needs
 * only its time: nfa_key_blank_in gives the results nfa_key_event_in gives for such an
 * event, without one. Call it only for such rules. */
bool nfa_takes_no_blank(const Nfa *nfa);
void nfa_key_blank_in(const Nfa *nfa, NfaKey *key, int64_t time_ms, NfaRunCtx *ctx);

/* ---- a key on the heap: NULL is idle */

void nfa_key_event(const Nfa *nfa, NfaKey **key, Event *ev, NfaRunCtx *ctx);
/* Might an idle key (NULL) start anything on ev? False only when certain: the start
 * state only takes or ignores under `where` conditions of the event, and none holds.
 * Most events leave most keys of most rules idle; this answers them in a few
 * instructions (from the shared cache when it has them) instead of a whole
 * nfa_key_event. Either way nfa_key_event gives the same results. */
static inline bool nfa_key_wakes(const Nfa *nfa, Event *ev, NfaRunCtx *ctx);
/* nfa_key_wakes from the gate's i-th condition on (the part that may evaluate). */
bool nfa_key_wakes_from(const Nfa *nfa, Event *ev, NfaRunCtx *ctx, size_t i);
void nfa_key_advance(const Nfa *nfa, NfaKey **key, int64_t time_ms, NfaRunCtx *ctx);

/* The gate and the cache are laid out here only so that the wake test, asked for
 * every idle rule on every event, inlines its common case (every answer already in
 * the cache); their fields belong to the matcher. */

/* Most start states act on an event iff one of a few `where` conditions holds. */
#define NFA_GATE_MAX 4

/* A rule's answer to nfa_key_wakes from the cache alone; with times_known, also the
 * first deadline of a key it starts (52 bytes: the wake test reads the gates of many
 * rules per event, so they are packed). */
struct NfaWakeGate {
    bool simple;           /* false: the start state is not of that shape */
    uint8_t n;
    bool start_take;       /* simple, n == 1, and that edge a take into a state that
                              neither completes nor proceeds, of a rule without
                              aggregates: an idle key's start needs nothing more of the
                              Nfa than the take_ fields below, which sit in the line the
                              wake test has just read */
    bool take_pending;     /* with start_take: take_target is a pending state */
    uint16_t take_step;    /* the step of the start's node */
    bool times_known;      /* start_take, and both withins below fit */
    uint32_t take_target;  /* the state its partial match waits in */
    uint32_t group[NFA_GATE_MAX];
    uint32_t slot[NFA_GATE_MAX];
    int32_t within_ms;     /* with times_known: the rule's within (<= 0: none) */
    int32_t take_within_ms;   /* with times_known: take_target's step within (<= 0: none) */
};

struct NfaCondCache {
    const NfaCondShare *share;
    uint64_t event;        /* the current event's number; seen[g] == event: vals[g] holds */
    uint64_t *seen;
    int8_t *vals;
    uint64_t hits;
};

static inline bool nfa_key_wakes(const Nfa *nfa, Event *ev, NfaRunCtx *ctx)
{
    const NfaWakeGate *gate = ctx->gate;
    NfaCondCache *c = ctx->cond_cache;
    if (!gate || !c || !gate->simple)
        return nfa_key_wakes_from(nfa, ev, ctx, 0);
    for (size_t i = 0; i < gate->n; i++) {
        uint32_t g = gate->group[i];
        if (c->seen[g] != c->event)
            return nfa_key_wakes_from(nfa, ev, ctx, i);
        c->hits++;
        if (c->vals[g] == 1)
            return true;
    }
    return false;
}

/* When a `within` of within_ms counted from time_ms runs out, saturating; INT64_MAX
 * for none (<= 0). The one rule for every deadline the matcher and its callers compute. */
static inline int64_t nfa_due_after(int64_t time_ms, int64_t within_ms)
{
    if (within_ms <= 0 || time_ms > INT64_MAX - within_ms)
        return INT64_MAX;
    return time_ms + within_ms;
}

/* For a key that was idle before an event at time_ms and holds after it just what the
 * gate's start gives (one partial match waiting in take_target): its nfa_key_deadline
 * and nfa_key_end_only_timeouts from the gate alone, which the wake test has just
 * read, where the Nfa is mostly cold. False, with nothing set, when the key is not so
 * (then ask those two). */
static inline bool nfa_key_started_by_gate(const NfaWakeGate *gate, const NfaKey *key,
                                           int64_t time_ms, int64_t *deadline,
                                           bool *only_timeouts)
{
    if (!gate || !gate->times_known || key->cap_live != 1 || key->n_live != 1 ||
        key->live.one.state != gate->take_target)
        return false;
    /* the run's first and newest event are the one it started on */
    int64_t d_first = nfa_due_after(time_ms, gate->within_ms);
    int64_t d_step = nfa_due_after(time_ms, gate->take_within_ms);
    *deadline = d_first < d_step ? d_first : d_step;
    *only_timeouts = !gate->take_pending;
    return true;
}

/* Earliest time at which advance would produce something or prune state; INT64_MAX if
 * none (also for NULL). Computed from the live runs (a loop over them). */
int64_t nfa_key_deadline(const Nfa *nfa, const NfaKey *key);
/* What the end of input (time moving to INT64_MAX, at once or through the key's
 * deadlines) gives a key, told without running it, so that a caller can drop keys
 * whose end shows nothing in bulk. nfa_key_end_only_timeouts: false when a match may
 * come out (one held back by a skip strategy, or a trailing not_followed_by that
 * completes when its within elapses); else every result is a timeout and nothing is
 * pruned. nfa_key_end_timeouts: the partial matches with a deadline, which is how many
 * timeouts such a key gives (those without one are dropped silently at the end; and
 * they outlive the key's deadlines). NULL: true and 0. */
bool nfa_key_end_only_timeouts(const Nfa *nfa, const NfaKey *key);
size_t nfa_key_end_timeouts(const Nfa *nfa, const NfaKey *key);
/* Frees a key's state without emitting anything (shutdown, removed rules). */
void nfa_key_free(NfaKey *key, NfaCounters *counters);
/* Number of live partial matches of one key (NULL: none). Inline: the runtime asks
 * on every run of a key, for its --max-memory charge. */
static inline size_t nfa_key_partials(const NfaKey *key)
{
    return key ? key->n_live : 0;
}
/* Starts loading what the matcher touches first of a key (NULL: nothing): the newest
 * node of its oldest partial match and that match's first event (this reads the key),
 * and with `deep` the node's event and previous node too (this reads the node, so
 * prefetch it first). A caller
 * with many keys to run calls it for several of them ahead, so that their cache
 * misses overlap instead of queueing. */
void nfa_key_prefetch(const NfaKey *key, bool deep);
/* (Inline here for a key with its run inline, it was measured on scenario 4's 1M
 * lines: 8,496.7M instructions against 8,536.0M, -0.46%, but CPU time rose, median
 * 1.39 -> 1.41 s in 15 runs each in turns; not kept.) */

/* Step metadata, for alerts: names in pattern order. */
size_t nfa_step_count(const Nfa *nfa);
const char *nfa_step_name(const Nfa *nfa, size_t step);

#endif
