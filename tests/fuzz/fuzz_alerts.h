/* tests/fuzz/fuzz_alerts.h — the alerts of one result as the fuzz targets render them:
 * the actions alerts_deliver would pick (the default action for a match of a rule
 * without any `on` clause), each record checked to be valid JSON. Header-only: each
 * target is one source file in its build fragment. */
#ifndef VIGIL_TESTS_FUZZ_ALERTS_H
#define VIGIL_TESTS_FUZZ_ALERTS_H

#include <stdbool.h>
#include <stdio.h>

#include "alerts/alerts.h"
#include "base/buf.h"
#include "runtime/decode.h"

/* A record nests echoed events (up to DECODE_MAX_DEPTH deep) a few levels down. */
#define FUZZ_RECORD_MAX_DEPTH (DECODE_MAX_DEPTH + 8)

/* Renders each action of `rule` that fits r into `record` (cleared first each time)
 * and hands every valid record to seen(user, record) (seen may be NULL). A record
 * that cannot be rendered for lack of memory is skipped. False, with the record and
 * the error on stderr, as soon as one is not valid JSON. */
static inline bool fuzz_render_alerts(const CompiledRule *rule, const Value *key, size_t n_key,
                                      const NfaResult *r, EvalScratch *scratch, Buf *record,
                                      void (*seen)(void *user, const Buf *record), void *user)
{
    bool match = r->kind == NFA_MATCH;
    const CompiledAction *actions = match ? rule->on_match : rule->on_timeout;
    size_t n = match ? rule->n_on_match : rule->n_on_timeout;
    bool use_default = match && n == 0 && rule->ast->n_on == 0;
    for (size_t i = 0; i < (use_default ? 1 : n); i++) {
        buf_clear(record);
        if (alert_render(rule, use_default ? NULL : &actions[i], key, n_key, r, scratch,
                         record) < 0 || record->failed)
            continue;
        DecodeError err;
        if (!json_validate(record->data, record->len, FUZZ_RECORD_MAX_DEPTH, &err)) {
            fprintf(stderr, "record: %s\nerror at %zu: %s\n", record->data, err.offset,
                    err.reason);
            return false;
        }
        if (seen)
            seen(user, record);
    }
    return true;
}

#endif
