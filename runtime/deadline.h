/* runtime/deadline.h — per-rule timer heap: partition entries by their next deadline.
 *
 * Owns: an indexed binary min-heap of (deadline, entry) slots; the entries are
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

#endif
