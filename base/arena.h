/* base/arena.h — bump allocator for data that lives and dies together.
 *
 * Owns: a chain of blocks. Everything allocated from an arena is freed at once
 * by arena_free(); there is no per-object free. Used for ASTs (one per rule set)
 * and per-evaluation scratch (reset between events).
 * Allocation failure returns NULL and leaves the arena usable. */
#ifndef VIGIL_BASE_ARENA_H
#define VIGIL_BASE_ARENA_H

#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
    ArenaBlock *head;     /* newest block; allocations come from here */
    size_t block_size;    /* size of the next ordinary block */
    size_t total;         /* bytes obtained from malloc, for stats */
} Arena;

void arena_init(Arena *a, size_t block_size);
void *arena_alloc(Arena *a, size_t size);            /* 16-byte aligned, uninitialised */
void *arena_zalloc(Arena *a, size_t size);           /* zeroed */
char *arena_strndup(Arena *a, const char *s, size_t n); /* NUL-terminated copy */
char *arena_strdup(Arena *a, const char *s);
/* Grow an array held in the arena: returns a copy with room for new_cap items
 * (the old storage is abandoned to the arena). */
void *arena_grow(Arena *a, void *old, size_t old_bytes, size_t new_bytes);
/* Frees every block but the first and rewinds it: cheap per-event scratch. */
void arena_reset(Arena *a);
void arena_free(Arena *a);

#endif
