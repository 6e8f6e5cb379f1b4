/* nfa/event.c — the field table, reference-counted events and match-chain nodes;
 * see event.h. */
#include "nfa/event.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/freeroom.h"
#include "base/lines.h"
#include "base/slab.h"

/* ---- field table ---------------------------------------------------------- */

void field_table_init(FieldTable *ft)
{
    ft->paths = NULL;
    ft->n = 0;
    ft->cap = 0;
}

static void field_path_free(FieldPath *p)
{
    for (size_t i = 0; i < p->n_segs; i++)
        free((char *)p->segs[i].name);
    free(p->segs);
    free(p->text);
}

void field_table_free(FieldTable *ft)
{
    for (size_t i = 0; i < ft->n; i++)
        field_path_free(&ft->paths[i]);
    free(ft->paths);
    field_table_init(ft);
}

static bool seg_equal(const PathSeg *a, const PathSeg *b)
{
    if (!a->name || !b->name)
        return !a->name && !b->name && a->index == b->index;
    return strcmp(a->name, b->name) == 0;
}

static bool path_equal(const FieldPath *p, const PathSeg *segs, size_t n_segs)
{
    if (p->n_segs != n_segs)
        return false;
    for (size_t i = 0; i < n_segs; i++)
        if (!seg_equal(&p->segs[i], &segs[i]))
            return false;
    return true;
}

/* "payload.card.bin", "items[0].sku"; NULL on allocation failure. */
static char *path_text(const PathSeg *segs, size_t n_segs)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < n_segs; i++) {
        if (segs[i].name) {
            if (i > 0)
                buf_putc(&b, '.');
            buf_puts(&b, segs[i].name);
        } else {
            buf_printf(&b, "[%ld]", segs[i].index);
        }
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* Heap copy of a path (names duplicated); false on allocation failure. */
static bool field_path_copy(FieldPath *dst, const PathSeg *segs, size_t n_segs)
{
    memset(dst, 0, sizeof *dst);
    dst->segs = calloc(n_segs ? n_segs : 1, sizeof *dst->segs);
    dst->text = path_text(segs, n_segs);
    if (!dst->segs || !dst->text) {
        field_path_free(dst);
        return false;
    }
    for (size_t i = 0; i < n_segs; i++) {
        dst->segs[i] = segs[i];
        dst->segs[i].name = NULL;
        dst->n_segs = i + 1;
        if (segs[i].name && !(dst->segs[i].name = strdup(segs[i].name))) {
            field_path_free(dst);
            return false;
        }
    }
    return true;
}

int field_table_intern(FieldTable *ft, const PathSeg *segs, size_t n_segs)
{
    for (size_t i = 0; i < ft->n; i++)
        if (path_equal(&ft->paths[i], segs, n_segs))
            return (int)i;
    if (ft->n >= (size_t)INT32_MAX)
        return -1;
    if (ft->n == ft->cap) {
        size_t cap = ft->cap ? ft->cap * 2 : 16;
        FieldPath *paths = realloc(ft->paths, cap * sizeof *paths);
        if (!paths)
            return -1;
        ft->paths = paths;
        ft->cap = cap;
    }
    if (!field_path_copy(&ft->paths[ft->n], segs, n_segs))
        return -1;
    return (int)ft->n++;
}

/* ---- events --------------------------------------------------------------- */

/* Every event allocation that may be cached is rounded up to what malloc hands out
 * anyway (glibc on 64 bits: chunks of 16-byte steps with an 8-byte header), so that a
 * freed event can serve any later one of its size class (EventCache) without costing
 * a byte more than malloc would; larger ones are allocated as asked and never cached. */
#define CACHE_GRAIN 16
#define CACHE_HEADER 8
#define CACHE_CLASSES 256
#define CACHE_LINE 64

static size_t size_class(size_t bytes)
{
    return (bytes + CACHE_HEADER + CACHE_GRAIN - 1) / CACHE_GRAIN;
}

static size_t class_bytes(size_t cls)
{
    return cls * CACHE_GRAIN - CACHE_HEADER;
}

/* Bytes of an event with this line, slots and string room (0: too large). */
static size_t event_bytes(size_t line_len, size_t n_slots, size_t room)
{
    /* Layout: Event | slots | string room | line + NUL. */
    size_t room_off = offsetof(Event, slots);
    if (n_slots > UINT32_MAX || n_slots > (SIZE_MAX - room_off) / sizeof(Value))
        return 0;
    room_off += n_slots * sizeof(Value);
    if (room > SIZE_MAX - room_off - 1 || line_len > SIZE_MAX - room_off - 1 - room)
        return 0;
    return room_off + room + line_len + 1;
}

/* Fills a fresh allocation of event_bytes(line_len, n_slots, room) bytes or more. */
static Event *event_init(void *mem, const char *line, size_t line_len, size_t n_slots,
                         size_t room)
{
    Event *ev = mem;
    memset(ev, 0, sizeof *ev);
    ev->refs = 1;
    ev->n_slots = (uint32_t)n_slots;
    for (size_t i = 0; i < n_slots; i++)
        ev->slots[i] = value_missing();
    char *text = (char *)(ev->slots + n_slots) + room;
    if (line_len)
        memcpy(text, line, line_len);
    text[line_len] = '\0';
    ev->line = text;
    ev->line_len = line_len;
    return ev;
}

static void *event_alloc(size_t bytes)
{
    size_t cls = size_class(bytes);
    return malloc(cls < CACHE_CLASSES ? class_bytes(cls) : bytes);
}

Event *event_new_room(const char *line, size_t line_len, size_t n_slots, size_t room)
{
    return event_cache_new_room(NULL, line, line_len, n_slots, room);
}

Event *event_new(const char *line, size_t line_len, size_t n_slots)
{
    return event_new_room(line, line_len, n_slots, 0);
}

Event *event_clone(const Event *ev)
{
    return event_clone_cached(NULL, ev);
}

Event *event_clone_cached(EventCache *cache, const Event *ev)
{
    size_t room = event_room_len(ev);
    Event *c = event_cache_new_room(cache, ev->line, ev->line_len, ev->n_slots, room);
    if (!c)
        return NULL;
    c->id = ev->id;
    c->time_ms = ev->time_ms;
    c->origin = ev->origin;
    c->origin_line = ev->origin_line;
    const char *text = (const char *)(ev->slots + ev->n_slots);
    if (room)
        memcpy(event_room(c), text, room);
    /* Room and line are contiguous in both, so one shift moves every pointer. */
    for (size_t i = 0; i < ev->n_slots; i++) {
        c->slots[i] = ev->slots[i];
        value_rebase(&c->slots[i], text, room + ev->line_len + 1, event_room(c));
    }
    return c;
}

/* The last reference went: true, and the caller frees or caches the event. */
static inline bool event_unref(Event *ev)
{
    return ev && --ev->refs == 0;
}

/* Small, so that match_node_free inlines it: a node's release drops an event's
 * reference, and seldom its last. */
void event_release(Event *ev)
{
    if (event_unref(ev))
        free(ev);
}

/* ---- match chains --------------------------------------------------------- */

MatchNode *match_node_new(MatchNode *prev, Event *event, uint16_t step)
{
    return match_node_new_acc(prev, event, step, 0);
}

MatchNode *match_node_new_acc(MatchNode *prev, Event *event, uint16_t step, uint16_t n_acc)
{
    MatchNode *n = malloc(sizeof *n + n_acc * sizeof(AggAcc));
    if (!n)
        return NULL;
    n->prev = prev;
    n->event = event;
    n->refs = 1;
    n->pooled = 0;
    n->step = step;
    n->n_acc = n_acc;
    if (n_acc && prev && prev->n_acc == n_acc)
        memcpy(n->acc, prev->acc, n_acc * sizeof(AggAcc));
    else if (n_acc)
        memset(n->acc, 0, n_acc * sizeof(AggAcc));
    if (prev)
        match_node_retain(prev);
    if (event)
        event_retain(event);
    return n;
}

static void pool_put(MatchNode *n);

void match_node_free(MatchNode *n)
{
    /* A loop, not recursion: one release can free a chain of any length. */
    do {
        MatchNode *prev = n->prev;
        event_release(n->event);
        if (n->pooled)
            pool_put(n);
        else
            free(n);
        n = prev;
    } while (n && --n->refs == 0);
}

/* ---- node pools ------------------------------------------------------------- */

/* Nodes are carved from slabs of one size (base/slab.h), each slab's owner the pool,
 * so that a node finds its pool from its own address. Each slab keeps its own free
 * nodes and count, so that one whose nodes are all released can go back to malloc: a
 * burst of partial matches does not pin its peak for the life of the thread. Slabs
 * are in one of four places: the current one (new nodes come from it, and it stays
 * current when emptied), the list of others with free room (none of them empty), the
 * source's one empty spare, or none (full: a release into it lists it again). */
struct NodePool {
    Slab *cur;              /* where nodes come from; NULL before the first */
    SlabList room;          /* other slabs with free nodes */
    SlabSource src;         /* the slabs' count and the spare */
    MatchNode *root;        /* the newest node taken without prev while it is held (not
                               a reference: releasing it clears this) */
    size_t live;            /* nodes taken and not yet released */
    bool orphaned;          /* node_pool_free was called: go with the last node */
};

_Static_assert(SLAB_HEAD % _Alignof(MatchNode) == 0, "nodes after the header are aligned");

NodePool *node_pool_new(void)
{
    NodePool *p = lines_calloc(sizeof *p);
    if (p)
        slab_source_init(&p->src);
    return p;
}

/* Only when no node is held: every slab left is then the current one or the spare
 * (an emptied slab never stays listed). */
static void pool_destroy(NodePool *p)
{
    if (p->cur)
        slab_destroy(&p->src, p->cur);
    slab_drop_spare(&p->src);
    free(p);
}

void node_pool_free(NodePool *pool)
{
    if (!pool)
        return;
    if (pool->live == 0) {
        pool_destroy(pool);
        return;
    }
    pool->orphaned = true;   /* it takes no more nodes: no spare room is needed */
    slab_drop_spare(&pool->src);
}

size_t node_pool_live(const NodePool *pool)
{
    return pool->live;
}

size_t node_pool_slabs(const NodePool *pool)
{
    return pool->src.slabs;
}

/* The slab new nodes come from once the current one is full: a listed one (reusing
 * released room first), else the spare, else a new one. NULL on allocation failure. */
static Slab *next_slab(NodePool *p)
{
    Slab *s = p->room.head;
    if (s) {
        slab_list_unlink(&p->room, s);
        return s;
    }
    if ((s = slab_obtain(&p->src, sizeof(MatchNode))))
        s->owner = p;
    return s;
}

static MatchNode *pool_alloc(NodePool *p)
{
    if (!p->cur || slab_full(p->cur)) {
        Slab *s = next_slab(p);
        if (!s)
            return NULL;
        p->cur = s;   /* the full one is unlisted: a release lists it again */
    }
    return slab_take(p->cur, p->src.memcheck);
}

MatchNode *node_pool_take(NodePool *pool, MatchNode *prev, Event *event, uint16_t step)
{
    MatchNode *root = pool->root;
    if (!prev && root && root->event == event && root->step == step) {
        match_node_retain(root);   /* nodes are immutable: equal ones may be one */
        return root;
    }
    MatchNode *n = pool_alloc(pool);
    if (!n)
        return NULL;
    if (!prev)
        pool->root = n;
    pool->live++;
    n->prev = prev;
    n->event = event;
    n->refs = 1;
    n->pooled = 1;
    n->step = step;
    n->n_acc = 0;
    if (prev)
        match_node_retain(prev);
    if (event)
        event_retain(event);
    return n;
}

/* A slab whose last node went (not the current one, unless the pool is orphaned):
 * retired to the spare, so an idle pool holds at most two slabs; an orphaned pool
 * keeps none. */
static void slab_emptied(NodePool *p, Slab *s)
{
    if (s == p->cur)
        p->cur = NULL;
    else
        slab_list_unlink(&p->room, s);
    if (p->orphaned)
        slab_destroy(&p->src, s);
    else
        slab_retire(&p->src, s);
}

static void pool_put(MatchNode *n)
{
    Slab *s = slab_of(n);
    NodePool *p = s->owner;
    if (p->root == n)
        p->root = NULL;
    bool was_full = slab_full(s);
    slab_put(s, n, p->src.memcheck);
    if (s->live == 0 && (s != p->cur || p->orphaned))
        slab_emptied(p, s);
    else if (was_full && s != p->cur)
        slab_list_push(&p->room, s);
    if (--p->live == 0 && p->orphaned)
        pool_destroy(p);
}

/* ---- event caches ------------------------------------------------------------ */

struct EventCache {
    void *free[CACHE_CLASSES];   /* per size class: cached allocations, linked through
                                    their first word (an Event is larger than a pointer) */
    size_t bytes, max_bytes;
    bool memcheck;
};

_Static_assert(sizeof(Event) >= sizeof(void *), "a cached event holds its link");


EventCache *event_cache_new(size_t max_bytes)
{
    EventCache *c = lines_calloc(sizeof *c);   /* written for every event */
    if (c) {
        c->max_bytes = max_bytes;
        c->memcheck = under_memcheck();
    }
    return c;
}

void event_cache_free(EventCache *c)
{
    if (!c)
        return;
    for (size_t cls = 0; cls < CACHE_CLASSES; cls++)
        while (c->free[cls]) {
            void *mem = c->free[cls];
            free_room_show(c->memcheck, mem, class_bytes(cls));
            c->free[cls] = *(void **)mem;
            free(mem);
        }
    free(c);
}

size_t event_cache_bytes(const EventCache *c)
{
    return c->bytes;
}

Event *event_cache_new_room(EventCache *c, const char *line, size_t line_len, size_t n_slots,
                            size_t room)
{
    size_t bytes = event_bytes(line_len, n_slots, room);
    if (!bytes)
        return NULL;
    size_t cls = size_class(bytes);
    void *mem = c && cls < CACHE_CLASSES ? c->free[cls] : NULL;
    if (mem) {
        free_room_show(c->memcheck, mem, class_bytes(cls));
        char *next = *(void **)mem;
        c->free[cls] = next;
        c->bytes -= class_bytes(cls);
        /* The next event of this class comes from there, usually freed by another
         * thread: start taking its cache lines over now, not at its first store. */
        for (size_t at = 0; next && at < class_bytes(cls); at += CACHE_LINE)
            __builtin_prefetch(next + at, 1);
    } else if (!(mem = event_alloc(bytes))) {
        return NULL;
    }
    return event_init(mem, line, line_len, n_slots, room);
}

void event_cache_release(EventCache *c, Event *ev)
{
    if (!event_unref(ev))
        return;
    size_t cls = c ? size_class(event_alloc_size(ev)) : CACHE_CLASSES;
    if (cls >= CACHE_CLASSES || c->bytes + class_bytes(cls) > c->max_bytes) {
        free(ev);
        return;
    }
    *(void **)ev = c->free[cls];
    c->free[cls] = ev;
    c->bytes += class_bytes(cls);
    free_room_hide(c->memcheck, ev, class_bytes(cls));
}
