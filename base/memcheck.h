/* base/memcheck.h — whether this process runs under valgrind's memcheck.
 *
 * Code that must act differently there asks once: pools hide their free room from it
 * (base/freeroom.h), and regexes are not JIT-compiled under it (nfa/expr.c). Built
 * without valgrind's headers, the answer is always no. */
#ifndef VIGIL_BASE_MEMCHECK_H
#define VIGIL_BASE_MEMCHECK_H

#include <stdbool.h>

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define VIGIL_HAVE_MEMCHECK 1
#endif
#endif

static inline bool under_memcheck(void)
{
#ifdef VIGIL_HAVE_MEMCHECK
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
}

#endif
