/* runtime/evtime.h — event time values to milliseconds since the epoch.
 * ISO-8601 strings (date, `T` or space, time, optional fraction, `Z` or ±hh:mm),
 * epoch seconds (fractions allowed) and epoch milliseconds; TIME_AUTO takes a string
 * as ISO-8601 and a number as epoch seconds (LANGUAGE.md 3). */
#ifndef VIGIL_RUNTIME_EVTIME_H
#define VIGIL_RUNTIME_EVTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "dsl/ast.h"
#include "nfa/value.h"

/* False if the value is missing or cannot be read in that format. */
bool evtime_parse(const Value *v, TimeFormat fmt, int64_t *out_ms);
/* Parses ISO-8601 text; false if malformed. */
bool evtime_parse_iso(const char *s, size_t len, int64_t *out_ms);

#endif
