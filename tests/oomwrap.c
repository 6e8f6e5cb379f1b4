/* tests/oomwrap.c — see oomwrap.h. */
#include "tests/oomwrap.h"

#include <execinfo.h>
#include <stdatomic.h>
#include <stdbool.h>

/* The frames written of the failed allocation's call stack. */
#define STACK_FRAMES 24

/* The state lives in globals because a wrapper has no other way to reach it; only
 * the wrappers and the functions below touch it. Atomic because every thread's
 * allocations go through the wrappers: the count is one sequence for the process.
 * Relaxed is enough: only the counter's own order matters, and the threads that
 * allocate are started and joined between oom_count_begin and oom_count_end. */
static atomic_size_t fail_at;   /* which allocation from the start of the count fails; 0 none */
static atomic_size_t counted;   /* allocations since the count started */
static atomic_int stack_fd = -1;   /* where the failed allocation's call stack goes */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);

/* Not inlined, so that the first two frames of a call stack taken here are always
 * this and the wrapper. backtrace_symbols_fd allocates nothing. */
__attribute__((noinline)) static bool this_one_fails(void)
{
    size_t number = atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed) + 1;
    if (number != atomic_load_explicit(&fail_at, memory_order_relaxed))
        return false;
    int fd = atomic_load_explicit(&stack_fd, memory_order_relaxed);
    if (fd >= 0) {
        void *frames[STACK_FRAMES];
        int depth = backtrace(frames, STACK_FRAMES);
        if (depth > 2)
            backtrace_symbols_fd(frames + 2, depth - 2, fd);
    }
    return true;
}

void *__wrap_malloc(size_t n)
{
    return this_one_fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return this_one_fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return this_one_fails() ? NULL : __real_realloc(p, n);
}

/* base/lines.h's allocations (every worker's per-event arrays) */
void *__wrap_aligned_alloc(size_t align, size_t n)
{
    return this_one_fails() ? NULL : __real_aligned_alloc(align, n);
}

void oom_count_begin(size_t fail)
{
    atomic_store_explicit(&counted, 0, memory_order_relaxed);
    atomic_store_explicit(&fail_at, fail, memory_order_relaxed);
}

size_t oom_count_end(void)
{
    atomic_store_explicit(&fail_at, 0, memory_order_relaxed);
    return atomic_load_explicit(&counted, memory_order_relaxed);
}

void oom_stack_to(int fd)
{
    if (fd >= 0) {
        /* backtrace loads its unwinder on first use: now, not in a failing allocation */
        void *frame;
        backtrace(&frame, 1);
    }
    atomic_store_explicit(&stack_fd, fd, memory_order_relaxed);
}
