/* alerts/alerts.h — alert records and their delivery to outputs.
 *
 * Owns: the outputs of a rule set (stdout or -o FILE, file with path templates and
 * rotation, exec without a shell, tcp/unix clients with bounded buffers) and the
 * rendering of alert records (RUNTIME.md section 4): byte-exact JSON, valid UTF-8,
 * events echoed verbatim, message templates and `fields` evaluated on the match.
 * A rule with no `on` clause at all alerts on match with its name as the message. */
#ifndef VIGIL_ALERTS_ALERTS_H
#define VIGIL_ALERTS_ALERTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "nfa/nfa.h"
#include "rules/ruleset.h"

typedef struct AlertRouter AlertRouter;

typedef struct AlertOptions {
    const char *stdout_path;   /* -o FILE for the `stdout` output; NULL or "-" for stdout */
} AlertOptions;

/* Opens every output the rule set declares. NULL with *err (heap) on failure. */
AlertRouter *alerts_new(const CompiledRuleSet *rs, const AlertOptions *opts, char **err);
/* Renders one alert record (one line of JSON, no newline) into out. Returns 0, or -1
 * on allocation failure. `key` holds the partition's key values (n_key of them). */
int alert_render(const CompiledRule *rule, const CompiledAction *action,
                 const Value *key, size_t n_key, const NfaResult *r,
                 EvalScratch *scratch, Buf *out);
/* Renders every action of the rule that fits r->kind and sends each record to its outputs. */
void alerts_deliver(AlertRouter *ar, const CompiledRule *rule,
                    const Value *key, size_t n_key, const NfaResult *r, EvalScratch *scratch);
/* Flushes buffered output (end of input, SIGTERM). Returns 0, or -1 if an output failed. */
int alerts_flush(AlertRouter *ar);
/* Appends a JSON object with per-output counters and health to out. */
void alerts_stats(const AlertRouter *ar, Buf *out);
void alerts_free(AlertRouter *ar);

#endif
