/* tests/oomwrap.h — making one allocation fail, for the out-of-memory tests. A test
 * program built with OOM_WRAP_FLAGS (tests/local.mk: GNU ld's --wrap for malloc, calloc
 * and realloc) and OOM_SOURCES has every allocation of libvigil.a, and of its own
 * code, go through tests/oomwrap.c, which counts them from oom_count_begin and makes
 * the chosen one return NULL. One thread only: the count is the program's own. */
#ifndef VIGIL_TESTS_OOMWRAP_H
#define VIGIL_TESTS_OOMWRAP_H

#include <stddef.h>

/* Counts allocations from 0 again; allocation number `fail` of the count (from 1)
 * returns NULL; 0: none fails. */
void oom_count_begin(size_t fail);

/* No allocation fails any more; returns how many were made since oom_count_begin. */
size_t oom_count_end(void);

#endif
