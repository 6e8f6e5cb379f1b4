/* base/arena.c — bump allocator; see arena.h. */
#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16

struct ArenaBlock {
    ArenaBlock *next;
    size_t size;   /* usable bytes in data[] */
    size_t used;
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void arena_init(Arena *a, size_t block_size)
{
    a->head = NULL;
    a->block_size = block_size ? block_size : 4096;
    a->total = 0;
}

static ArenaBlock *block_new(Arena *a, size_t min)
{
    size_t size = a->block_size > min ? a->block_size : min;
    ArenaBlock *b = malloc(sizeof *b + size);
    if (!b)
        return NULL;
    b->size = size;
    b->used = 0;
    b->next = a->head;
    a->head = b;
    a->total += sizeof *b + size;
    return b;
}

void *arena_alloc(Arena *a, size_t size)
{
    size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (need < size)
        return NULL; /* overflow */
    ArenaBlock *b = a->head;
    if (!b || b->size - b->used < need) {
        /* Large requests get a block of their own so the current block keeps its room. */
        if (b && need > a->block_size / 4) {
            ArenaBlock *big = malloc(sizeof *big + need);
            if (!big)
                return NULL;
            big->size = need;
            big->used = need;
            big->next = b->next;
            b->next = big;
            a->total += sizeof *big + need;
            return big->data;
        }
        b = block_new(a, need);
        if (!b)
            return NULL;
    }
    void *p = b->data + b->used;
    b->used += need;
    return p;
}

void *arena_zalloc(Arena *a, size_t size)
{
    void *p = arena_alloc(a, size);
    if (p)
        memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

void *arena_grow(Arena *a, void *old, size_t old_bytes, size_t new_bytes)
{
    void *p = arena_alloc(a, new_bytes);
    if (p && old && old_bytes)
        memcpy(p, old, old_bytes < new_bytes ? old_bytes : new_bytes);
    return p;
}

void arena_reset(Arena *a)
{
    ArenaBlock *keep = NULL;
    /* Keep the oldest ordinary block: it is the one a steady workload refills. */
    for (ArenaBlock *b = a->head; b;) {
        ArenaBlock *next = b->next;
        if (!next && b->size >= a->block_size) {
            keep = b;
        } else {
            a->total -= sizeof *b + b->size;
            free(b);
        }
        b = next;
    }
    if (keep)
        keep->used = 0;
    a->head = keep;
}

void arena_free(Arena *a)
{
    for (ArenaBlock *b = a->head; b;) {
        ArenaBlock *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}
