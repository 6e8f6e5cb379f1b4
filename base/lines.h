/* base/lines.h — zeroed heap memory that owns whole cache lines. Each worker thread
 * writes its own router, decoder, scratch, caches and shard for every event; where two
 * threads' such objects shared a cache line (glibc packs what one thread allocates for
 * several workers side by side), every write took the line from the other core (false
 * sharing). Measured on scenario 1 with two workers: every allocation so padded cut CPU
 * by about a tenth. 128 bytes, since the adjacent-line prefetcher moves lines in pairs.
 * Padding the objects alone is not enough: the arrays they point to are as hot, and
 * the allocator places those small blocks wherever a hole fits, next to another
 * worker's. So every block a worker writes while it decodes, routes or matches comes
 * from here, not only the structs: while the routers' arrays did not, adding --stats to
 * the command line (it changes nothing they do, only the heap's layout) made two
 * workers burn 15 % more CPU on scenario 1 (2.71 -> 2.35 s once they did, 10M events,
 * medians of 5).
 * Free with free(). Header-only. */
#ifndef VIGIL_BASE_LINES_H
#define VIGIL_BASE_LINES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LINES_ALIGN 128

/* size bytes, zeroed, from a LINES_ALIGN boundary, rounded up to a multiple of it (at
 * least one). NULL on allocation failure or overflow. */
static inline void *lines_calloc(size_t size)
{
    if (size > SIZE_MAX - LINES_ALIGN)
        return NULL;
    size_t whole = size ? (size + LINES_ALIGN - 1) / LINES_ALIGN * LINES_ALIGN : LINES_ALIGN;
    void *p = aligned_alloc(LINES_ALIGN, whole);
    if (p)
        memset(p, 0, whole);
    return p;
}

/* lines_calloc of an array of n elements of size bytes; NULL also when n * size
 * overflows. */
static inline void *lines_calloc_n(size_t n, size_t size)
{
    return size && n > SIZE_MAX / size ? NULL : lines_calloc(n * size);
}

#endif
