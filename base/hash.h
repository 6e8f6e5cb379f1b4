/* base/hash.h — the one byte-string hash used for keys, fingerprints and tables.
 * FNV-1a 64: simple, no state, stable across runs (fingerprints are persisted). */
#ifndef VIGIL_BASE_HASH_H
#define VIGIL_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_SEED UINT64_C(0xcbf29ce484222325)

static inline uint64_t hash_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

#endif
