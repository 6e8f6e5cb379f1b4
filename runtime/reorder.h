/* runtime/reorder.h — the event-time reorder buffer (RUNTIME.md 3).
 *
 * Owns: a min-heap of buffered items ordered by (time, arrival sequence). The
 * watermark is `max time seen - lateness`; an item is released once its time is
 * <= the watermark, ties in arrival order. An item older than the watermark is late
 * and refused. The items themselves are opaque: the buffer holds the pointers the
 * caller pushed and hands them back on release (the caller owns what they point to;
 * reorder_free hands remaining ones to a callback). Not thread-safe. */
#ifndef VIGIL_RUNTIME_REORDER_H
#define VIGIL_RUNTIME_REORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ReorderItem {
    int64_t time_ms;
    uint64_t seq;          /* arrival order: breaks ties */
    void *item;
} ReorderItem;

typedef struct Reorder {
    ReorderItem *heap;     /* heap storage, owned */
    size_t n, cap;
    int64_t lateness_ms;
    int64_t max_seen;      /* INT64_MIN before the first item */
    int64_t watermark;     /* INT64_MIN before the first item; INT64_MAX after flush */
    uint64_t next_seq;
} Reorder;

typedef enum { REORDER_ACCEPTED, REORDER_LATE, REORDER_NOMEM } ReorderStatus;

void reorder_init(Reorder *r, int64_t lateness_ms);
/* Buffers an item, or refuses it as late (time < watermark) or on allocation
 * failure; on refusal the caller keeps the item. Advances the watermark. */
ReorderStatus reorder_push(Reorder *r, int64_t time_ms, void *item);
/* The usual case of ordered input: true if an item of this time, pushed now, would be
 * released at once as the only ready item (the buffer is empty and its time is not
 * after the watermark it brings); the watermark and arrival count then move exactly as
 * push and pop would, and the caller releases the item itself. False (nothing
 * changed): push it. */
bool reorder_pass(Reorder *r, int64_t time_ms);
/* reorder_pass for n >= 1 items of nondecreasing times first .. last, all at once:
 * true if each would pass in turn (the state then moves as n passes would); false,
 * with nothing changed, otherwise. */
bool reorder_pass_sorted(Reorder *r, int64_t first, int64_t last, size_t n);
/* The next item whose time is <= the watermark (removed from the buffer), or NULL. */
void *reorder_pop_ready(Reorder *r, int64_t *time_ms);
/* The buffer is full: the oldest item (removed), released before the watermark
 * reaches it. The watermark moves up to its time, so releases stay in time order and
 * anything older that arrives later is late. NULL if empty. */
void *reorder_pop_oldest(Reorder *r, int64_t *time_ms);
/* Time of the next buffered item (ready or not); INT64_MAX if empty. */
int64_t reorder_peek_time(const Reorder *r);
/* That item itself, left in the buffer; NULL if empty. */
static inline void *reorder_peek(const Reorder *r)
{
    return r->n ? r->heap[0].item : NULL;
}
/* A new lateness (hot reload) for the next items; the watermark never moves back. */
void reorder_set_lateness(Reorder *r, int64_t lateness_ms);
/* End of input: the watermark moves to +infinity, so everything becomes ready. */
void reorder_flush(Reorder *r);
static inline int64_t reorder_watermark(const Reorder *r) { return r->watermark; }
static inline size_t reorder_size(const Reorder *r) { return r->n; }
/* Checkpoint restore into an empty buffer: the watermark, the highest time seen and
 * the next arrival number as they were, then `items` (any order; their seq kept). The
 * buffer takes the item pointers. -1 on allocation failure (nothing changed). */
int reorder_restore(Reorder *r, int64_t max_seen, int64_t watermark, uint64_t next_seq,
                    const ReorderItem *items, size_t n);
/* Frees the buffer; each item still held is passed to drop (may be NULL). */
void reorder_free(Reorder *r, void (*drop)(void *item));

#endif
