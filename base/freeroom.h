/* base/freeroom.h — telling the memory checkers about free room a pool keeps.
 *
 * Pools that carve objects from their own blocks (match nodes and cached events in
 * nfa/event.c, partition entries in runtime/partition.c) keep released memory
 * addressable, so by itself a use after release goes unseen. Hiding free room from
 * AddressSanitizer (when built with it) and, when run under it, from valgrind's
 * memcheck makes such a use an error there as it would be with malloc and free.
 * A pool asks under_memcheck() once, when it is made, and passes the answer here.
 * Header-only: every function is a few instructions, or nothing in a plain build. */
#ifndef VIGIL_BASE_FREEROOM_H
#define VIGIL_BASE_FREEROOM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/memcheck.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define FREE_ROOM_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define FREE_ROOM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FREE_ROOM_POISON(p, n) ((void)(p), (void)(n))
#define FREE_ROOM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Free room: no access until it is handed out. */
static inline void free_room_hide(bool memcheck, void *a, size_t n)
{
    FREE_ROOM_POISON(a, n);
#ifdef VIGIL_HAVE_MEMCHECK
    if (memcheck)
        (void)VALGRIND_MAKE_MEM_NOACCESS(a, n);
#else
    (void)memcheck;
#endif
}

/* Room handed out (or about to be read for the link a pool keeps in it). Defined,
 * not undefined: a released object's link is read when it is taken back. */
static inline void free_room_show(bool memcheck, void *a, size_t n)
{
    FREE_ROOM_UNPOISON(a, n);
#ifdef VIGIL_HAVE_MEMCHECK
    if (memcheck)
        (void)VALGRIND_MAKE_MEM_DEFINED(a, n);
#else
    (void)memcheck;
#endif
}

#endif
