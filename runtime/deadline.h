/* runtime/deadline.h — timers: partition entries by their next deadline.
 *
 * Owns: a few sorted rings and a 4-ary heap of entry slots, and the cached earliest
 * entry; the entries are borrowed. A slot is the entry's address alone (8 bytes per
 * key): the entry holds its deadline (PartEntry.deadline), which the order reads
 * there. Each entry records where its slot is (heap_pos), so a key's deadline is
 * updated or removed without leaving stale copies behind; each entry appears at most
 * once.
 *
 * Why rings: a rule arms its keys at (event time + a fixed duration: its window, a
 * step's window, its suppression), so the deadlines of a shard's records mostly
 * arrive in increasing order, one stream per such duration of a rule. Such a deadline
 * is appended to a ring that it does not precede, which stays sorted; a ring's
 * earliest is at its head; a removed one leaves a hole (a slot without entry) that is
 * skipped when it reaches either end, or squeezed out when holes outnumber the rest.
 * Firing, arming and dropping a key then touch only that key's entry and one ring
 * slot, where a heap's sift writes the position of one cold entry per level.
 * DEADLINE_RINGS rings take as many interleaved streams; of the rings it can extend, a
 * deadline goes to the one with the latest end (the others stay open to earlier ones),
 * else to an empty ring. A deadline that fits no ring (a key whose oldest partial
 * match completed, a restored checkpoint, a late event) goes to the heap. The earliest
 * of the heads is the top.
 *
 * Order: by deadline, then by the length of the key bytes, then by the bytes. It is a
 * total order on the records of one table (one record per key bytes), so the order in
 * which timers fire never depends on the history of the structure: a run restored
 * from a checkpoint fires them, and writes their alerts, exactly as the original
 * would. */
#ifndef VIGIL_RUNTIME_DEADLINE_H
#define VIGIL_RUNTIME_DEADLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/partition.h"

/* An entry (borrowed), or NULL: a hole in a ring. */
typedef PartEntry *DeadlineSlot;

/* Slots in increasing (deadline, key) order, holes aside. (Aligned to 64 bytes, a
 * cache line each, the core from aligned_alloc, so that finding a ring takes a shift:
 * scenario 4's 1M lines took 8,323.8M instructions against 8,330.0M, -0.07%; not
 * kept.) */
typedef struct DeadlineRing {
    size_t live;           /* entries in the ring */
    int64_t first, last;   /* the deadlines at head and tail - 1, when live: choosing
                              a ring and the top compares these, not the slots */
    size_t head, tail;     /* sequence numbers; head and tail - 1 are never holes */
    DeadlineSlot *s;       /* owned; cap (a power of two) slots; the ones from head to
                              tail (exclusive) are in use, slot seq at s[seq & (cap-1)] */
    size_t cap;
} DeadlineRing;

#define DEADLINE_RINGS 8

/* Kept out of line, so that the shard state that embeds a DeadlineHeap stays small:
 * the shard reads other fields of it on every event. */
typedef struct DeadlineCore {
    unsigned ring_mask;    /* bit i: ring[i] is not empty (a rule set with one
                              duration uses one ring: the others are then not even
                              read) */
    unsigned latest;       /* while a ring is not empty: the one whose last slot is
                              latest, which most new deadlines extend */
    DeadlineSlot *h;       /* owned: a 4-ary heap of the deadlines no ring could take */
    size_t hn, hcap;
    DeadlineRing ring[DEADLINE_RINGS];
} DeadlineCore;

typedef struct DeadlineHeap {
    PartEntry *top;        /* the earliest entry (borrowed), NULL when n == 0 */
    int64_t top_deadline;  /* its deadline, INT64_MAX when n == 0 */
    size_t n;              /* entries held */
    DeadlineCore *core;    /* owned; NULL until the first deadline is set */
} DeadlineHeap;

void deadline_init(DeadlineHeap *d);
/* Frees the storage; every entry still held is marked as not held (heap_pos:
 * PART_NOT_TIMED). */
void deadline_free(DeadlineHeap *d);
/* The out-of-line parts of deadline_set; callers use deadline_set. deadline_change
 * is the general move; deadline_add is for an entry not held and a deadline below
 * INT64_MAX (a new key: a third of the calls), deadline_drop for an entry held (a key
 * that fired or went idle: another third). The two common cases each do only their
 * half of the work, and each has a path that calls nothing, so saves no registers:
 * a deadline that extends the latest ring, which has room; a removal that leaves its
 * ring's end where it was and the ring not sparse. */
int deadline_change(DeadlineHeap *d, PartEntry *e, int64_t deadline);
int deadline_add(DeadlineHeap *d, PartEntry *e, int64_t deadline);
void deadline_drop(DeadlineHeap *d, PartEntry *e);
/* Sets the entry's deadline (stored in entry->deadline); INT64_MAX removes it.
 * Any value below INT64_MAX is allowed, earlier or later than any set before.
 * -1 on allocation failure (the entry is then not held). Inline because most re-arms
 * after an event leave a key's deadline as it was (its oldest partial match still
 * decides it): that case then costs a compare, not a call. */
static inline int deadline_set(DeadlineHeap *d, PartEntry *e, int64_t deadline)
{
    if (e->heap_pos == PART_NOT_TIMED)
        return deadline == INT64_MAX ? 0 : deadline_add(d, e, deadline);
    if (deadline == e->deadline)
        return 0;
    if (deadline == INT64_MAX) {
        deadline_drop(d, e);
        return 0;
    }
    return deadline_change(d, e, deadline);
}
static inline void deadline_remove(DeadlineHeap *d, PartEntry *e)
{
    (void)deadline_set(d, e, INT64_MAX);
}
/* The entry with the earliest deadline, or NULL if none is held. */
static inline PartEntry *deadline_top(const DeadlineHeap *d) { return d->top; }
static inline int64_t deadline_next(const DeadlineHeap *d) { return d->top_deadline; }
/* The entry `ahead` places after the top in the top's ring, or NULL (a hole, past
 * the ring's end, or a top from the heap). Reads the top entry and one ring slot:
 * it names, cheaply, keys likely to come due soon, for prefetching. */
PartEntry *deadline_peek(const DeadlineHeap *d, size_t ahead);
/* deadline_peek for several distances at once (out[i] for ahead[i]): the top and its
 * ring are found once. (Inline in this header, with the ring's tail, mask and slots in
 * locals, it was measured: scenario 4's 1M lines took 8,753.2M instructions against
 * 8,772.1M, -0.2%, too little to expose the layout of heap_pos here; not kept.) */
void deadline_peek_many(const DeadlineHeap *d, const size_t *ahead, PartEntry **out, size_t n);
/* Tells the timers that the entry they held as `was` is now e (part_regrow moved it;
 * e->heap_pos and e->deadline are was's). */
void deadline_moved(DeadlineHeap *d, const PartEntry *was, PartEntry *e);
/* For tests: true if e is held where its heap_pos says, under its current deadline. */
bool deadline_holds(const DeadlineHeap *d, const PartEntry *e);
/* For tests: checks every internal invariant (the rings' order and ends, the heap's
 * order, positions, counts, the cached top). Returns NULL, or what is wrong. */
const char *deadline_verify(const DeadlineHeap *d);

#endif
