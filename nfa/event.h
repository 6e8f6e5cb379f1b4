/* nfa/event.h — decoded events, the field table, and match chains.
 *
 * FieldTable: every field path the loaded rules read, interned to a slot number at
 * compile time. The decoder (runtime/) fills one Value per slot, once per event, so
 * evaluation never looks a name up.
 *
 * Event: one input line, decoded. Reference-counted: the input owns the first
 * reference and every MatchNode holding the event owns one more; the event is freed
 * when the last reference goes. One allocation holds the struct, its slots, the line
 * text and, only for strings that had escapes, their decoded bytes (the "string
 * room", between the slots and the line, so its size is implied), rounded up to
 * malloc's size class (see EventCache); strings without escapes point into the line.
 * A held event thus costs about its line plus 56 + 32 bytes per slot.
 *
 * MatchNode: one (step, event) element of a partial match, linked to its
 * predecessor. Partial matches that share a prefix share nodes (the shared-buffer
 * idea of Flink/SASE+): memory grows with the events retained, not with the number
 * of partial matches times their length. Nodes are reference-counted too. */
#ifndef VIGIL_NFA_EVENT_H
#define VIGIL_NFA_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsl/ast.h"
#include "nfa/value.h"

/* ---- field table ---------------------------------------------------------- */

typedef struct FieldPath {
    PathSeg *segs;        /* heap copies (names heap strings), owned by the table */
    size_t n_segs;
    char *text;           /* "payload.card.bin", "items[0].sku"; heap, owned */
} FieldPath;

typedef struct FieldTable {
    FieldPath *paths;     /* slot i reads paths[i]; heap, owned */
    size_t n, cap;
} FieldTable;

void field_table_init(FieldTable *ft);
void field_table_free(FieldTable *ft);
/* Slot for a path, adding it if new; -1 on allocation failure. */
int field_table_intern(FieldTable *ft, const PathSeg *segs, size_t n_segs);

/* ---- events --------------------------------------------------------------- */

typedef struct Event {
    uint64_t id;          /* identity: position in the input (sequence number); also the
                             handle a later changelog input uses to retract the event */
    int64_t time_ms;      /* event time (or arrival time on processing time) */
    const char *origin;   /* input name for messages ("-", a path, a client address); borrowed
                             from the input, which outlives its events */
    uint64_t origin_line; /* line number within that input */
    const char *line;     /* the JSON object text, verbatim, NUL-terminated; in this
                             allocation, after the slots and the string room */
    size_t line_len;
    uint32_t refs;
    uint32_t n_slots;
    Value slots[];        /* n_slots values */
} Event;

/* One allocation holding the struct, the slots (all V_MISSING) and a copy of the line;
 * no string room. refs = 1. NULL on allocation failure. */
Event *event_new(const char *line, size_t line_len, size_t n_slots);
/* The same with `room` bytes of string room (event_room). */
Event *event_new_room(const char *line, size_t line_len, size_t n_slots, size_t room);
/* Where decoded strings go: after the slots, up to the line. */
static inline char *event_room(Event *ev) { return (char *)(ev->slots + ev->n_slots); }
static inline size_t event_room_len(const Event *ev)
{
    return (size_t)(ev->line - (const char *)(ev->slots + ev->n_slots));
}
/* Bytes of the event's allocation: the line and its NUL come last. */
static inline size_t event_alloc_size(const Event *ev)
{
    return (size_t)(ev->line + ev->line_len + 1 - (const char *)ev);
}
/* A private copy (refs = 1) with the same id, time, origin, line and values, its
 * values re-pointed into the copy: for another thread, since refs are not atomic.
 * NULL on allocation failure. */
Event *event_clone(const Event *ev);
static inline void event_retain(Event *ev) { ev->refs++; }
void event_release(Event *ev);

/* ---- event caches ------------------------------------------------------------ */

/* A thread's cache of freed event allocations, so that a thread allocating an event
 * per line reuses the memory of the events it (or, handed back to it, another thread)
 * freed without a malloc and a free per event: with workers, events are allocated in
 * bursts on one thread and often freed on another, which glibc serves slowly. Not
 * thread-safe: one thread uses a cache at a time. Memory still follows the live
 * events: a cached allocation is one malloc chunk as large as malloc would have made
 * it (event_new_room rounds every event up to its size class), the cache holds at most
 * max_bytes, beyond which releases go to free(), and any event, cached or not, may
 * still be freed anywhere by event_release. */
typedef struct EventCache EventCache;
/* NULL on allocation failure. */
EventCache *event_cache_new(size_t max_bytes);
/* Frees the cache and what it holds. NULL is ignored. */
void event_cache_free(EventCache *cache);
/* Bytes of the allocations it holds. */
size_t event_cache_bytes(const EventCache *cache);
/* event_new_room, reusing a cached allocation of the size class if there is one;
 * cache NULL: event_new_room. */
Event *event_cache_new_room(EventCache *cache, const char *line, size_t line_len,
                            size_t n_slots, size_t room);
/* event_clone from the cache (NULL: event_clone). */
Event *event_clone_cached(EventCache *cache, const Event *ev);
/* event_release, keeping the allocation in the cache (NULL: event_release) when this
 * was the last reference and the cache has room. */
void event_cache_release(EventCache *cache, Event *ev);

/* ---- match chains --------------------------------------------------------- */

/* The running aggregates of one (step, field) over a chain up to a node, so that
 * count/sum/avg/min/max/first/last cost O(1) per evaluation (nfa/expr.h,
 * expr_agg_fold). Only nodes of rules whose conditions use aggregates carry them.
 * The pointers point into events the chain holds references on. */
typedef struct AggAcc {
    uint32_t events;          /* nodes of the step */
    uint32_t nonnull;         /* of them, with a non-null value */
    uint32_t nums;            /* of them, with a number */
    double sum;               /* of the numbers, oldest first */
    const Value *min, *max;   /* NULL: none yet */
    const Value *first, *last;/* oldest / newest node's value; NULL: the slot is missing */
} AggAcc;

typedef struct MatchNode {
    struct MatchNode *prev;   /* earlier element of the partial match, or NULL; one reference */
    Event *event;             /* one reference */
    uint32_t refs : 31;
    uint32_t pooled : 1;      /* from a NodePool (goes back there), else from malloc */
    uint16_t step;            /* pattern step index (Rule.steps) this event was taken for */
    uint16_t n_acc;           /* entries in acc (0 for rules without aggregates) */
    AggAcc acc[];             /* running aggregates up to this node, by the Nfa's AggKey index */
} MatchNode;

/* A node for (step, event) after prev; takes new references on prev and event.
 * NULL on allocation failure. refs = 1, n_acc = 0. */
MatchNode *match_node_new(MatchNode *prev, Event *event, uint16_t step);
/* The same with room for n_acc accumulators, copied from prev when it has as many,
 * else zeroed; the caller folds in the new event (expr_agg_fold). */
MatchNode *match_node_new_acc(MatchNode *prev, Event *event, uint16_t step, uint16_t n_acc);
static inline void match_node_retain(MatchNode *n) { n->refs++; }
/* match_node_release's rare half: frees n, whose last reference went, and releases
 * its event and prev. */
void match_node_free(MatchNode *n);
/* Drops one reference; frees the node (and releases its event and prev) at zero.
 * Inline: a node shared by branches or rules (a first node often is) only counts
 * down, without a call. */
static inline void match_node_release(MatchNode *n)
{
    if (n && --n->refs == 0)
        match_node_free(n);
}

/* ---- node pools ------------------------------------------------------------- */

/* Plain nodes (no accumulators) without a malloc header each: 24 bytes instead of
 * malloc's 32-byte chunk, and no allocator call on the matcher's common path. Nodes
 * are carved from 16 KiB slabs aligned to their size, so a node finds its pool from
 * its own address and match_node_release needs no pool argument. Released nodes are
 * reused first; a slab whose nodes are all released goes back to malloc, except one
 * empty spare, so a pool holds at most two slabs when no node is held.
 * node_pool_free lets go of the pool, which then keeps only the slabs holding nodes
 * and goes away with its last node, so nodes may outlive the owner that made them (a
 * rule-set swap).
 *
 * Threads. Nothing here is atomic: a node, its chain, its event and its pool belong
 * to one thread at a time, and every retain and release of a pooled node touches its
 * pool (the slab's lists, the pool's counts). The runtime keeps this so: each worker
 * thread has its own NfaWork, hence pool; its keys' nodes hold only events it alone
 * references (a copy per worker, event_clone); results are rendered synchronously
 * inside the emit callback, which keeps no node. Another thread may create, retain,
 * release or read nodes of a worker's pool only while that worker is stopped with a
 * happens-before edge both ways (the pause of a reload, checkpoint or restore, or
 * after pthread_join at shutdown). A node never links to another thread's nodes. */
typedef struct NodePool NodePool;
/* NULL on allocation failure. */
NodePool *node_pool_new(void);
/* The owner lets go; the pool is freed now if no node of it is held, else when the
 * last one is released. NULL is ignored. */
void node_pool_free(NodePool *pool);
/* match_node_new from the pool (n_acc = 0), with one new reference for the caller.
 * A first node (no prev) equal to the pool's newest first node still held (same
 * event and step) is that node: the rules of a thread that start partial matches on
 * one event share their first node, as branches share prefixes. NULL on allocation
 * failure. */
MatchNode *node_pool_take(NodePool *pool, MatchNode *prev, Event *event, uint16_t step);
/* Nodes of the pool held now. */
size_t node_pool_live(const NodePool *pool);
/* Slabs the pool holds now (16 KiB each); also of a pool let go of, while its
 * nodes are held. */
size_t node_pool_slabs(const NodePool *pool);

#endif
