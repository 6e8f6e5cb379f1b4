/* base/slab.c — slab blocks, the source's empty slabs and the regions: the rare,
 * out-of-line part of base/slab.h (taking and releasing objects is inline there). */
#include "base/slab.h"

#include <stdlib.h>
#include <sys/mman.h>

/* A mapped region's bookkeeping; heap, owned by the region's slabs together (the last
 * one back frees it). It lives outside the region so that no slab of the region is
 * set apart for it. */
typedef struct SlabRegion {
    char *base;               /* SLAB_REGION_BYTES, aligned to them; mapped, owned */
    uint32_t out;             /* slabs handed out and not back (the spare included) */
    uint32_t carved;          /* slabs ever handed out from the start; the next one, if
                                 any, is on the source's empty list */
} SlabRegion;

void slab_source_init(SlabSource *src)
{
    *src = (SlabSource){.spare = NULL, .slabs = 0,
                        .memcheck = under_memcheck()};
}

/* Sets up an empty slab's header for objects of `size`; its room is hidden already. */
static Slab *slab_reset(Slab *s, size_t size, SlabRegion *region)
{
    *s = (Slab){.size = (uint32_t)size, .cap = (uint32_t)(SLAB_ROOM / size),
                .region = region};
    return s;
}

/* ---- the empty list ----------------------------------------------------------- */

static void empty_push(SlabSource *src, Slab *s)
{
    s->prev = NULL;
    s->next = src->spare;
    if (s->next)
        s->next->prev = s;
    src->spare = s;
}

static void empty_unlink(SlabSource *src, Slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        src->spare = s->next;
    if (s->next)
        s->next->prev = s->prev;
}

/* A region's free slab is marked by cap 0: the spare has its last size's cap. */
static bool region_free(const Slab *s)
{
    return s->cap == 0;
}

/* ---- regions ------------------------------------------------------------------ */

static Slab *region_slab(const SlabRegion *r, uint32_t i)
{
    return (Slab *)(r->base + (size_t)i * SLAB_BYTES);
}

/* Lists slab s of region r as free: header shown and marked, room hidden already. */
static void region_list_free(SlabSource *src, SlabRegion *r, Slab *s)
{
    free_room_show(src->memcheck, s, SLAB_HEAD);
    *s = (Slab){.region = r};
    empty_push(src, s);
}

/* SLAB_REGION_BYTES of fresh memory aligned to them, advised onto a huge page; NULL if
 * mmap fails. mmap aligns only to a page: map twice the size and unmap what lies
 * before and after the aligned part. */
static char *region_map(void)
{
    size_t len = 2 * SLAB_REGION_BYTES;
    char *raw =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t mask = (uintptr_t)(SLAB_REGION_BYTES - 1);
    char *base = (char *)(((uintptr_t)raw + mask) & ~mask);
    size_t head = (size_t)(base - raw), tail = len - head - SLAB_REGION_BYTES;
    if (head)
        munmap(raw, head);
    if (tail)
        munmap(base + SLAB_REGION_BYTES, tail);
#ifdef MADV_HUGEPAGE
    /* Only advice: with THP off or unknown to the kernel, 4 KiB pages serve as well. */
    (void)madvise(base, SLAB_REGION_BYTES, MADV_HUGEPAGE);
#endif
    return base;
}

/* Maps a new region, all hidden, and lists its first slab as free; false when it
 * cannot be had (the caller falls back to aligned_alloc). */
static bool region_new(SlabSource *src)
{
    SlabRegion *r = malloc(sizeof *r);
    if (!r)
        return false;
    if (!(r->base = region_map())) {
        free(r);
        return false;
    }
    r->out = r->carved = 0;
    free_room_hide(src->memcheck, r->base, SLAB_REGION_BYTES);
    region_list_free(src, r, region_slab(r, 0));
    return true;
}

/* Region free slab s, off the empty list, is handed out: if it was the region's next
 * never handed out, the one after it (if any) takes its place on the list. */
static void region_take(SlabSource *src, Slab *s)
{
    SlabRegion *r = s->region;
    r->out++;
    if (r->carved < SLAB_REGION_SLABS && s == region_slab(r, r->carved)
        && ++r->carved < SLAB_REGION_SLABS)
        region_list_free(src, r, region_slab(r, r->carved));
}

/* Every slab of the region is back, all on the empty list: they leave it and the
 * region goes. Shown again before unmapping, so that AddressSanitizer's poison does
 * not outlive the mapping onto whatever is mapped there next. */
static void region_unmap(SlabSource *src, SlabRegion *r)
{
    uint32_t listed = r->carved < SLAB_REGION_SLABS ? r->carved + 1 : r->carved;
    for (uint32_t i = 0; i < listed; i++)
        empty_unlink(src, region_slab(r, i));
    free_room_show(src->memcheck, r->base, SLAB_REGION_BYTES);
    munmap(r->base, SLAB_REGION_BYTES);
    free(r);
}

/* Gives region slab s back: its room hidden, listed free; the last one back unmaps
 * the region. */
static void region_put(SlabSource *src, Slab *s)
{
    SlabRegion *r = s->region;
    free_room_hide(src->memcheck, (char *)s + SLAB_HEAD, SLAB_ROOM);
    region_list_free(src, r, s);
    if (--r->out == 0)
        region_unmap(src, r);
}

/* ---- slabs -------------------------------------------------------------------- */

/* A slab of its own from malloc, its room hidden; NULL on allocation failure. */
static Slab *slab_alloc(SlabSource *src)
{
    Slab *s = aligned_alloc(SLAB_BYTES, SLAB_BYTES);
    if (s)
        free_room_hide(src->memcheck, (char *)s + SLAB_HEAD, SLAB_ROOM);
    return s;
}

/* The newest empty slab, off the list and counted; NULL if there is none. */
static Slab *empty_take(SlabSource *src)
{
    Slab *s = src->spare;
    if (!s)
        return NULL;
    empty_unlink(src, s);
    if (region_free(s)) {
        src->slabs++;
        region_take(src, s);
    }
    return s;
}

Slab *slab_obtain(SlabSource *src, size_t size)
{
    Slab *s = empty_take(src);
    if (!s && src->slabs >= SLAB_REGION_AFTER && region_new(src))
        s = empty_take(src);
    if (s)
        return slab_reset(s, size, s->region);
    if (!(s = slab_alloc(src)))
        return NULL;
    src->slabs++;
    return slab_reset(s, size, NULL);
}

void slab_destroy(SlabSource *src, Slab *s)
{
    src->slabs--;
    if (s->region) {
        region_put(src, s);
        return;
    }
    free_room_show(src->memcheck, s, SLAB_BYTES);   /* malloc's again: no longer hidden */
    free(s);
}

void slab_retire(SlabSource *src, Slab *s)
{
    if (src->spare) {
        slab_destroy(src, s);
        return;
    }
    empty_push(src, s);
}

/* The spare was pushed onto an empty list, so it is the oldest: the last one. */
void slab_drop_spare(SlabSource *src)
{
    Slab *s = src->spare;
    while (s && s->next)
        s = s->next;
    if (!s || region_free(s))
        return;
    empty_unlink(src, s);
    slab_destroy(src, s);
}
