/* base/slab.c — slab blocks and the spare: the rare, out-of-line part of base/slab.h
 * (taking and releasing objects is inline there). */
#include "base/slab.h"

#include <stdlib.h>

void slab_source_init(SlabSource *src)
{
    *src = (SlabSource){.spare = NULL, .slabs = 0, .memcheck = free_room_under_memcheck()};
}

/* Sets up an empty slab's header for objects of `size`; its room is hidden already. */
static Slab *slab_reset(Slab *s, size_t size)
{
    *s = (Slab){.size = (uint32_t)size, .cap = (uint32_t)(SLAB_ROOM / size)};
    return s;
}

Slab *slab_obtain(SlabSource *src, size_t size)
{
    Slab *s = src->spare;
    if (s) {
        src->spare = NULL;
        return slab_reset(s, size);
    }
    if (!(s = aligned_alloc(SLAB_BYTES, SLAB_BYTES)))
        return NULL;
    free_room_hide(src->memcheck, (char *)s + SLAB_HEAD, SLAB_ROOM);
    src->slabs++;
    return slab_reset(s, size);
}

void slab_destroy(SlabSource *src, Slab *s)
{
    free_room_show(src->memcheck, s, SLAB_BYTES);   /* malloc's again: no longer hidden */
    free(s);
    src->slabs--;
}

void slab_retire(SlabSource *src, Slab *s)
{
    if (src->spare)
        slab_destroy(src, s);
    else
        src->spare = s;
}

void slab_drop_spare(SlabSource *src)
{
    if (src->spare)
        slab_destroy(src, src->spare);
    src->spare = NULL;
}
