/* dsl/check.h — semantic checks and name resolution (LANGUAGE.md section 7).
 *
 * Resolves every path (field / step / key), function, output reference and skip
 * step in place, and reports whatever would fail at run time: duplicate names,
 * unknown steps / outputs / functions (with "did you mean"), wrong arity,
 * aggregates over missing steps, patterns not starting with `begin`, `not_` steps
 * in first place, a trailing `not_followed_by` without `within`, `until` on a
 * closed loop, `times 0`, N..M with M < N, invalid regexes (PCRE2's message, offset
 * mapped into the rule file), `on timeout` without any `within`, a `times` count
 * above DSL_MAX_TIMES, more than one
 * `time` declaration, a network output address that cannot be connected to (not
 * HOST:PORT with a port from 1 to 65535, a unix path too long for a socket). Warns
 * about loops and `followed_by_any` with neither `within`
 * nor `until` (state that can grow without bound). */
#ifndef VIGIL_DSL_CHECK_H
#define VIGIL_DSL_CHECK_H

#include "dsl/ast.h"
#include "dsl/diag.h"

/* The largest count `times` may name (N, M of N..M, N of N+). */
#define DSL_MAX_TIMES 10000

/* Returns the number of errors reported. */
int dsl_check(RuleSet *rs, Diags *diags);

/* The parts of a `tcp "HOST:PORT"` address ("[V6]:PORT" for IPv6); host points
 * into the parsed text. */
typedef struct NetAddress {
    const char *host;
    size_t host_len;
    unsigned port;        /* 1..65535 */
} NetAddress;

/* NULL if `text` is such an address (then *out is filled), else why it is not.
 * The output (alerts/) splits with it what the check accepted. */
const char *dsl_parse_host_port(const char *text, NetAddress *out);
/* The longest path a `unix "PATH"` output can connect to. */
size_t dsl_unix_path_max(void);

#endif
