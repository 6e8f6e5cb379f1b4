/* tests/oomwrap.h — making one allocation fail, for the out-of-memory tests. A test
 * program built with OOM_WRAP_FLAGS (tests/local.mk: GNU ld's --wrap for malloc, calloc,
 * realloc and aligned_alloc, which base/lines.h uses) and OOM_SOURCES has every allocation of libvigil.a, and of its own
 * code, go through tests/oomwrap.c, which counts them from oom_count_begin and makes
 * the chosen one return NULL. The count is the process's, over every thread (an
 * atomic counter): in a single-threaded program allocation N is always the same one;
 * with threads (vigil run --workers N) it is whichever thread's allocation came Nth,
 * which may differ from one run to the next, so the failed one's call stack can be
 * written out to say which it was. */
#ifndef VIGIL_TESTS_OOMWRAP_H
#define VIGIL_TESTS_OOMWRAP_H

#include <stddef.h>

/* Counts allocations from 0 again; allocation number `fail` of the count (from 1)
 * returns NULL; 0: none fails. Call with no other thread allocating. */
void oom_count_begin(size_t fail);

/* No allocation fails any more; returns how many were made since oom_count_begin. */
size_t oom_count_end(void);

/* From now on the call stack of the allocation made to fail is written to fd as it
 * fails (so that it is there even if the program then crashes), one frame a line as
 * backtrace_symbols_fd gives it (in a PIE program, offsets to look up with
 * `addr2line -f -e PROGRAM`); -1: not written (the start). */
void oom_stack_to(int fd);

#endif
