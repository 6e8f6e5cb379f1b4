/* tests/oomwrap.c — see oomwrap.h. */
#include "tests/oomwrap.h"

#include <stdbool.h>

/* The state lives in globals because a wrapper has no other way to reach it; only
 * the wrappers and the two functions below touch it. */
static size_t fail_at;   /* which allocation from the start of the count fails; 0 none */
static size_t counted;   /* allocations since the count started */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static bool this_one_fails(void)
{
    return ++counted == fail_at;
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

void oom_count_begin(size_t fail)
{
    counted = 0;
    fail_at = fail;
}

size_t oom_count_end(void)
{
    fail_at = 0;
    return counted;
}
