/* base/isotime.h — ISO-8601 UTC text of a millisecond time, without printf.
 *
 * Owns: time_format_iso, the one formatter of times in alerts, dead letters, late
 * events and message templates. snprintf was an eighth of all instructions of a run
 * that alerts on half of its events, so the common range (years 1970..9999) takes a
 * short unsigned path; every other int64 value formats too, as printf's "%04d" year
 * would. Uses only its arguments (any thread). */
#ifndef VIGIL_BASE_ISOTIME_H
#define VIGIL_BASE_ISOTIME_H

#include <stddef.h>
#include <stdint.h>

/* Writes "2026-01-01T00:09:00.000Z" and a NUL to out; returns the length (24 for
 * years 0..9999, at most 30). */
size_t time_format_iso(int64_t ms, char out[32]);

#endif
