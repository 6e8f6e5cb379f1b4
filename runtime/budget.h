/* runtime/budget.h — the `--max-memory` budget: an approximate count of the bytes the
 * engine's state holds (partition entries, matchers, the events their partial matches
 * hold, the reorder buffer), shared by the engine's thread and the workers.
 *
 * Owns only the counter. The sizes are estimates from the measured layout
 * (nfa/SEMANTICS.md 10), charged where the runtime creates, runs and frees state, not
 * allocator measurements. Each thread (MemShare) adds its changes to a private
 * pending amount and publishes it to the shared atomic total once it reaches
 * BUDGET_BATCH bytes either way, in whole steps of it, so the shared cache line is
 * written rarely; the total is off by less than BUDGET_BATCH per thread, and exact
 * when every thread has given back all it charged. */
#ifndef VIGIL_RUNTIME_BUDGET_H
#define VIGIL_RUNTIME_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfa/event.h"

#define BUDGET_BATCH (64 * 1024)

typedef struct MemBudget {
    _Atomic int64_t used;      /* published bytes of every thread */
    int64_t limit;             /* 0: no limit (the count is still kept, for --stats) */
} MemBudget;

/* One thread's part of the budget. */
typedef struct MemShare {
    MemBudget *budget;         /* borrowed; NULL: nothing is counted */
    int64_t pending;           /* counted here, not yet published */
} MemShare;

static inline void budget_add(MemShare *m, int64_t delta)
{
    if (!m->budget)
        return;
    m->pending += delta;
    if (m->pending >= BUDGET_BATCH || m->pending <= -BUDGET_BATCH) {
        /* Whole steps only, the rest stays pending: what a share ever published is
         * then a multiple of BUDGET_BATCH, so once everything it charged is given back
         * its pending (less than a step) cancels that exactly and the total is exact.
         * Publishing the whole pending amount left up to a step unaccounted for. */
        int64_t whole = m->pending / BUDGET_BATCH * BUDGET_BATCH;
        atomic_fetch_add_explicit(&m->budget->used, whole, memory_order_relaxed);
        m->pending -= whole;
    }
}

static inline int64_t budget_used(const MemBudget *b)
{
    return atomic_load_explicit(&b->used, memory_order_relaxed);
}

/* Is the budget spent, as far as this thread knows? */
static inline bool budget_full(const MemShare *m)
{
    return m->budget && m->budget->limit &&
           budget_used(m->budget) + m->pending >= m->budget->limit;
}

/* An event as allocated (nfa/event.c: struct, slots, string room, line) plus the
 * allocator's header and rounding. */
static inline size_t budget_event_bytes(const Event *ev)
{
    return event_alloc_size(ev) + 16;
}

#endif
