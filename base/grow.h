/* base/grow.h — room for one more item in a heap array that doubles when full: the
 * growth step that array builders would otherwise each write out. Header-only. */
#ifndef VIGIL_BASE_GROW_H
#define VIGIL_BASE_GROW_H

#include <stdint.h>
#include <stdlib.h>

#define GROW_FIRST_CAP 8   /* items in an array's first allocation */

/* items: a heap array (or NULL) with room for *cap items of `size` bytes, n in use.
 * Returns an array with room for item n: items itself while n < *cap, else items
 * reallocated to twice *cap (GROW_FIRST_CAP when 0) and *cap updated. NULL on
 * allocation failure or size overflow; items is then unchanged and still the
 * caller's. */
static inline void *grow_for_one(void *items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return items;
    if (*cap > SIZE_MAX / 2 / size)
        return NULL;
    size_t new_cap = *cap ? *cap * 2 : GROW_FIRST_CAP;
    void *grown = realloc(items, new_cap * size);
    if (grown)
        *cap = new_cap;
    return grown;
}

#endif
