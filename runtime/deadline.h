/* runtime/deadline.h — per-rule timer heap: partition entries by their next deadline.
 *
 * Owns: an indexed binary min-heap of PartEntry pointers (borrowed; each entry records
 * its position, so a key's deadline is updated or removed in O(log n) instead of
 * leaving stale copies behind). Each entry appears at most once. */
#ifndef VIGIL_RUNTIME_DEADLINE_H
#define VIGIL_RUNTIME_DEADLINE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/partition.h"

typedef struct DeadlineHeap {
    PartEntry **h;     /* heap storage, owned; the entries are borrowed */
    size_t n, cap;
} DeadlineHeap;

void deadline_init(DeadlineHeap *d);
void deadline_free(DeadlineHeap *d);
/* Sets the entry's deadline; INT64_MAX removes it from the heap. -1 on allocation
 * failure (the entry is then not in the heap). */
int deadline_set(DeadlineHeap *d, PartEntry *e, int64_t deadline);
static inline void deadline_remove(DeadlineHeap *d, PartEntry *e)
{
    (void)deadline_set(d, e, INT64_MAX);
}
/* The entry with the earliest deadline, or NULL if the heap is empty. */
static inline PartEntry *deadline_top(const DeadlineHeap *d) { return d->n ? d->h[0] : NULL; }
static inline int64_t deadline_next(const DeadlineHeap *d)
{
    return d->n ? d->h[0]->deadline : INT64_MAX;
}

#endif
