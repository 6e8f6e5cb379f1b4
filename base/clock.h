/* base/clock.h — the monotonic clock in milliseconds, and the gate that keeps a
 * repeated warning to one per period.
 *
 * Owns nothing: header-only. Monotonic, so timeouts, batching delays and warning
 * periods ignore wall-clock jumps. */
#ifndef VIGIL_BASE_CLOCK_H
#define VIGIL_BASE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static inline int64_t clock_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* True, and *last_ms set to now, when a warning last given at *last_ms (INT64_MIN:
 * never) may be given again: at least period_ms have passed. */
static inline bool clock_period_passed(int64_t *last_ms, int64_t period_ms)
{
    int64_t now = clock_monotonic_ms();
    if (*last_ms != INT64_MIN && now - *last_ms < period_ms)
        return false;
    *last_ms = now;
    return true;
}

#endif
