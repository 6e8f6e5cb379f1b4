/* bench/flat.h — what the hand-written floors (floor_fraud.c, floor_s4.c) share for
 * their flat open-addressing tables: the key hash and the rehash when a table grows.
 * A table is an array of slots whose first field is that hash (uint64_t), 0 marking
 * an empty slot, probed linearly from hash & (cap - 1); cap is a power of two.
 * Header-only: the hash runs on every event and must inline into each program. */
#ifndef VIGIL_BENCH_FLAT_H
#define VIGIL_BENCH_FLAT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a of the key bytes, never 0: 0 is the empty slot's mark. */
static inline uint64_t flat_hash(const char *s, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(0x100000001b3);
    return h | 1;
}

/* The table doubled (from first_cap slots when it has none): a new zeroed array of
 * *cap * 2 slots of `size` bytes holding old's occupied slots, each where probing
 * finds it there; old is freed and *cap updated. NULL when out of memory (old and
 * *cap are left as they were). Growing is rare: the slots are copied as bytes,
 * whatever their type. */
static inline void *flat_grow(void *old, size_t *cap, size_t first_cap, size_t size)
{
    size_t new_cap = *cap ? *cap * 2 : first_cap;
    char *slots = calloc(new_cap, size);
    if (!slots)
        return NULL;
    for (size_t i = 0; i < *cap; i++) {
        const char *from = (const char *)old + i * size;
        uint64_t hash;
        memcpy(&hash, from, sizeof hash);
        if (!hash)
            continue;
        size_t j = hash & (new_cap - 1);
        for (;;) {
            uint64_t taken;
            memcpy(&taken, slots + j * size, sizeof taken);
            if (!taken)
                break;
            j = (j + 1) & (new_cap - 1);
        }
        memcpy(slots + j * size, from, size);
    }
    free(old);
    *cap = new_cap;
    return slots;
}

#endif
