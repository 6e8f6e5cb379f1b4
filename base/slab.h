/* base/slab.h — slabs: aligned blocks that objects of one size are carved from.
 *
 * Owns: the slab blocks (SLAB_BYTES each, aligned to their size), their headers and
 * free lists, the lists of slabs with room, the one empty spare slab a SlabSource
 * keeps, and the 2 MiB regions a large source carves its slabs from. Serves the
 * partition entries (runtime/partition.c: a list per size class) and the match nodes
 * (nfa/event.c: one size, a current slab, pools that outlive their owner); the policy
 * of which slab serves the next object stays with them.
 *
 * Why: no allocator header per object, and the churn of objects that come and go
 * reuses freed room at once. An object finds its slab by rounding its address down
 * to SLAB_BYTES (slab_of), so a release needs no size or pool argument.
 *
 * Invariants of a slab:
 *   - its header sits at its start; objects start at SLAB_HEAD (a cache line), at
 *     multiples of `size` bytes, cap of them;
 *   - live objects are handed out; the others are either on `free` (released, linked
 *     through their first word) or past `carved` (never handed out: a new slab touches
 *     only the memory it hands out);
 *   - room not handed out is hidden from AddressSanitizer and valgrind (base/freeroom.h),
 *     so a use after release is caught although the memory stays with the slab;
 *   - it is on at most one SlabList; which slabs are listed is the owner's rule.
 *
 * Regions (why: a large state touched at random pays a TLB miss per touch and a page
 * fault per 4 KiB; on a huge page it pays neither): while a source holds fewer than
 * SLAB_REGION_AFTER slabs, each new slab is its own aligned_alloc, so small runs and
 * tests keep a small footprint. Past that, new slabs are carved from regions of
 * SLAB_REGION_BYTES, mapped 2 MiB-aligned with mmap and advised MADV_HUGEPAGE. Policy:
 *   - a source's empty slabs are one list (SlabSource.spare, linked through their
 *     headers): its spare, if it keeps one, and every free slab of its regions (given
 *     back, or the next never handed out of each region that has one). The next slab
 *     comes from that list first, newest first, whatever the source's count; a new
 *     region or block only when it is empty;
 *   - a region's free slabs are not counted in SlabSource.slabs, and their header is
 *     marked (cap 0); their room stays hidden, their header shown (it holds the links);
 *   - a region whose slabs are all back is unmapped at once, its free slabs leaving the
 *     list (the source's spare already absorbs an object that dies and comes back), so
 *     memory follows the live state in steps of a region. Nothing else names a region:
 *     a source whose owner destroyed every slab holds no region;
 *   - mmap failing, or a region's bookkeeping failing to allocate, falls back to
 *     aligned_alloc (NULL only if that fails too); madvise failing (THP off or `never`,
 *     an old kernel) is ignored: the region then works on 4 KiB pages.
 * Not thread-safe: a slab, its list and its source belong to one thread at a time. */
#ifndef VIGIL_BASE_SLAB_H
#define VIGIL_BASE_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/freeroom.h"

/* 16 KiB: an aligned request of twice that stays below malloc's mmap threshold, so the
 * alignment slack goes back to the heap, and the headers all sit at the same offset of
 * a page, so fewer of them contend for the cache's sets. */
#define SLAB_BYTES ((size_t)1 << 14)
/* Objects start at a cache line: those of 64 bytes sit in one line each. */
#define SLAB_HEAD ((size_t)64)
#define SLAB_ROOM (SLAB_BYTES - SLAB_HEAD)
/* A region: one transparent huge page on x86-64 and arm64 (4 KiB base pages). */
#define SLAB_REGION_BYTES ((size_t)1 << 21)
#define SLAB_REGION_SLABS ((uint32_t)(SLAB_REGION_BYTES / SLAB_BYTES))
/* Slabs a source holds (512 KiB) before it maps regions, so that a small run keeps
 * its small footprint (scenario 1 holds at most 8 per source, a `vigil test` case a
 * few) while a large state's hot structures get onto huge pages early. */
#define SLAB_REGION_AFTER ((uint32_t)32)

struct SlabRegion;

typedef struct Slab {
    struct Slab *prev, *next; /* in a SlabList while listed, or in its source's empty
                                 list */
    void *free;               /* released objects, linked through their first word */
    void *owner;              /* the owner's to set and read (a node finds its pool);
                                 NULL when the slab is made */
    uint32_t size;            /* bytes per object: at least a pointer, multiple of 8 */
    uint32_t cap;             /* objects it holds */
    uint32_t live;            /* objects handed out and not released */
    uint32_t carved;          /* objects ever handed out from the unused end */
    struct SlabRegion *region; /* the region it was carved from (slab.c's); NULL: its
                                  own aligned_alloc */
} Slab;

_Static_assert(sizeof(Slab) <= SLAB_HEAD, "a slab's header fits before its objects");

/* Where slabs come from and go: the one empty spare, which the next slab of any size
 * reuses, so that an object that dies and comes back costs no allocation, and the free
 * slabs of the source's regions. One per pool. 16 bytes: every partition table embeds
 * a source, and a shard embeds a table per rule (at 24, scenario 4 ran 0.4 % more
 * instructions and 5 % more D1 misses in callgrind from that layout alone). */
typedef struct SlabSource {
    Slab *spare;              /* the empty slabs, a list: the spare (empty, its room
                                 hidden, counted, at most one, pushed only onto an
                                 empty list) and the regions' free slabs (cap 0); NULL:
                                 none; owned */
    uint32_t slabs;           /* slabs made and not yet freed, the spare included, a
                                 region's free slabs not */
    bool memcheck;            /* running under valgrind (under_memcheck) */
} SlabSource;

_Static_assert(sizeof(SlabSource) <= 16, "a source stays two words");

/* A doubly linked list of slabs (the owner's: those with room, say). */
typedef struct SlabList {
    Slab *head;
} SlabList;

/* The functions below run once per slab, not per object: kept out of the hot code
 * (cold), so that the callers' object paths stay compact in the instruction cache. */
#define SLAB_RARE __attribute__((cold))

SLAB_RARE void slab_source_init(SlabSource *src);
/* An empty slab for objects of `size` bytes (8..SLAB_ROOM/2, a multiple of 8): the
 * newest of the source's empty slabs if it has one, else a new block (from a new
 * region once the source holds SLAB_REGION_AFTER slabs). Not listed. NULL on
 * allocation failure. */
SLAB_RARE Slab *slab_obtain(SlabSource *src, size_t size);
/* A slab whose last object went, not listed: kept as the spare if the source has no
 * empty slab, else freed (slab_destroy). */
SLAB_RARE void slab_retire(SlabSource *src, Slab *s);
/* Frees a slab (live or not) and its room, whatever the spare: back to malloc, or to
 * its region (unmapped when that was its last slab out). */
SLAB_RARE void slab_destroy(SlabSource *src, Slab *s);
/* Frees the spare, if any: what is left of a source once its owner has destroyed or
 * retired every other slab (or keeps taking no more objects). */
SLAB_RARE void slab_drop_spare(SlabSource *src);

static inline Slab *slab_of(const void *obj)
{
    return (Slab *)((uintptr_t)obj & ~(uintptr_t)(SLAB_BYTES - 1));
}

static inline bool slab_full(const Slab *s)
{
    return s->live == s->cap;
}

/* Room for one object (shown to the memory checkers): a released one first (LIFO: it
 * is likely still in the cache), else the next never used. The slab must not be full. */
static inline void *slab_take(Slab *s, bool memcheck)
{
    void *obj = s->free;
    if (obj) {
        free_room_show(memcheck, obj, s->size);   /* before reading the link in it */
        memcpy(&s->free, obj, sizeof s->free);
    } else {
        obj = (char *)s + SLAB_HEAD + (size_t)s->carved++ * s->size;
        free_room_show(memcheck, obj, s->size);
    }
    s->live++;
    return obj;
}

/* Gives obj's room back to its slab s (slab_of(obj)) and hides it. The owner then
 * relists or retires s as its rule says (it was full if live is now cap - 1, it is
 * empty if live is 0). */
static inline void slab_put(Slab *s, void *obj, bool memcheck)
{
    memcpy(obj, &s->free, sizeof s->free);
    free_room_hide(memcheck, obj, s->size);
    s->free = obj;
    s->live--;
}

static inline void slab_list_push(SlabList *l, Slab *s)
{
    s->prev = NULL;
    s->next = l->head;
    if (s->next)
        s->next->prev = s;
    l->head = s;
}

static inline void slab_list_unlink(SlabList *l, Slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        l->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

#endif
