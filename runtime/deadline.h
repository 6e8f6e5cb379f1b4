/* runtime/deadline.h — per-rule timer heap: partition entries by their next deadline,
 * and the clock that says which rule's heap is due first.
 *
 * Owns: an indexed 4-ary min-heap of (deadline, entry) slots; the entries are
 * borrowed. Each entry records its position, so a key's deadline is updated or
 * removed in O(log n) instead of leaving stale copies behind; each entry appears at
 * most once. The deadline is kept in the slot too, so sifting compares without
 * touching the (cache-cold) entries. */
#ifndef VIGIL_RUNTIME_DEADLINE_H
#define VIGIL_RUNTIME_DEADLINE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/partition.h"

typedef struct DeadlineSlot {
    int64_t deadline;
    PartEntry *entry;
} DeadlineSlot;

typedef struct DeadlineHeap {
    DeadlineSlot *h;   /* heap storage, owned */
    size_t n, cap;
} DeadlineHeap;

void deadline_init(DeadlineHeap *d);
void deadline_free(DeadlineHeap *d);
/* Sets the entry's deadline (also stored in entry->deadline); INT64_MAX removes it
 * from the heap. -1 on allocation failure (the entry is then not in the heap). */
int deadline_set(DeadlineHeap *d, PartEntry *e, int64_t deadline);
static inline void deadline_remove(DeadlineHeap *d, PartEntry *e)
{
    (void)deadline_set(d, e, INT64_MAX);
}
/* The entry with the earliest deadline, or NULL if the heap is empty. */
static inline PartEntry *deadline_top(const DeadlineHeap *d) { return d->n ? d->h[0].entry : NULL; }
static inline int64_t deadline_next(const DeadlineHeap *d)
{
    return d->n ? d->h[0].deadline : INT64_MAX;
}

/* Which rule's heap holds the earliest deadline. Finding the next timer among many
 * rules by scanning every rule's heap touches one cold cache line per rule, on every
 * event and every fired timer; this indexed min-heap of rule numbers, ordered by
 * (next deadline, rule number), answers in O(1) and follows a change in O(log rules).
 * Every rule is always in it, at INT64_MAX while its heap is empty. Owns its arrays. */
typedef struct RuleClock {
    int64_t *at;       /* per rule: its next deadline as last told */
    uint32_t *heap;    /* rule numbers */
    uint32_t *pos;     /* per rule: its index in heap */
    size_t n;
} RuleClock;

/* -1 on allocation failure (c is then empty but safe to free). */
int rule_clock_init(RuleClock *c, size_t n_rules);
void rule_clock_free(RuleClock *c);
void rule_clock_move(RuleClock *c, size_t rule, int64_t at);
/* Tells the clock a rule's heap now starts at `at` (deadline_next). */
static inline void rule_clock_set(RuleClock *c, size_t rule, int64_t at)
{
    if (c->at[rule] != at)
        rule_clock_move(c, rule, at);
}
/* The earliest deadline of any rule (INT64_MAX: none) and, if any, its rule. */
static inline int64_t rule_clock_next(const RuleClock *c, size_t *rule)
{
    if (!c->n)
        return INT64_MAX;
    *rule = c->heap[0];
    return c->at[c->heap[0]];
}

#endif
