/* alerts/timefmt.h — the alert record's ISO-8601 time without printf.
 *
 * Owns: alert_time_iso, which writes exactly the bytes time_format_iso (nfa/value.h)
 * writes, for every int64 millisecond value (years before 1 and after 9999 included),
 * at a small fraction of the cost: snprintf was an eighth of all instructions of a run
 * that alerts on half of its events. Uses only its arguments (any thread). */
#ifndef VIGIL_ALERTS_TIMEFMT_H
#define VIGIL_ALERTS_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* Writes "2026-01-01T00:09:00.000Z" and a NUL to out; returns the length (24 for
 * years 0..9999, at most 30). */
size_t alert_time_iso(int64_t ms, char out[32]);

#endif
