/* tests/recordrun.h — a scripted engine run for the record layout's tests: events as
 * JSON lines fed one by one (inline, no workers: deterministic), a checkpoint and
 * restore wherever the script says, and every alert kept as a line that also names
 * the input line during which it was delivered. Comparing those lines between a rule
 * set and each of its rules alone shows whether sharing records changed what a rule
 * gives, and when. */
#ifndef VIGIL_TESTS_RECORDRUN_H
#define VIGIL_TESTS_RECORDRUN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"

/* A script is an array of lines ending with NULL. A line "T USER TYPE [V]" is the event
 * {"ts":RR_BASE+T,"user":"USER","type":"TYPE","v":V} (V 0 if absent); the line
 * RR_RESTART checkpoints the engine and restores it into a new one. */
#define RR_RESTART "restart"

/* The times of scripts are milliseconds after RR_BASE (the `ts` field, epoch_ms). */
#define RR_BASE 1767225600000LL

typedef struct RecordRun {
    CompiledRuleSet *rs;      /* owned */
    Engine *e;                /* owned */
    EngineLimits limits;      /* set on every engine the run makes */
    size_t line;              /* input lines fed so far */
    Buf alerts;               /* "RULE KIND KEY TIME [STEP:ID...] @LINE\n" each, in order */
} RecordRun;

/* Compiles `rules` (a whole rule file) and starts an engine with `max_memory` (0:
 * none). Fails the running test on any error. */
void rr_open(RecordRun *r, const char *rules, size_t max_memory);
void rr_close(RecordRun *r);
/* Feeds one script line. */
void rr_feed(RecordRun *r, const char *line);
/* Feeds script lines from `from` up to the NULL or to index `to`, whichever first. */
void rr_feed_script(RecordRun *r, const char *const *script, size_t from, size_t to);
/* engine_finish. */
void rr_finish(RecordRun *r);
/* The counters of the rule named `name`. */
EngineRuleStats rr_stats(const RecordRun *r, const char *name);
uint64_t rr_memory(const RecordRun *r);
/* The alerts of rule `name` for key `key`, in delivery order, one per line (heap). */
char *rr_alerts_of(const RecordRun *r, const char *name, const char *key);

/* Runs `script` through the whole set `rules` and through each of its rules alone
 * (a rule per line of `rules`, after the first line, which is the `time` declaration),
 * and fails the test unless each rule's alerts for each of `keys` (NULL-terminated)
 * are the same lines in the same order, delivered during the same input line, and its
 * counters at the end (matches, timeouts, alerts, suppressed, partials_live,
 * keys_live) are the same. */
void rr_assert_as_if_alone(const char *rules, const char *const *script,
                           const char *const *keys, size_t max_memory);

#endif
