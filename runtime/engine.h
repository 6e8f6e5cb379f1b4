/* runtime/engine.h — the event loop core: lines in, NFA results out.
 *
 * Owns: the decoder, the reorder buffer (bounded: EngineLimits.max_buffered), the
 * --max-memory budget (runtime/budget.h) shared with the shards, and per rule the
 * partition table, the deadline heap, counters and suppression state. Borrows the CompiledRuleSet, which
 * must outlive the engine. One pass per event whatever the number of rules: decode
 * once, read the time, reorder (event time), then before each released time t fire
 * every deadline <= t of every key of every rule, then per rule filter -> key ->
 * partition -> NFA. Results that make alerts (after `suppress`) go to the sink; the
 * engine never renders alerts itself (runtime/ is upstream of alerts/).
 * Threads: call the engine from one thread. With one worker every sink call happens
 * on that thread; with N workers (runtime/workers.h) sink.alert is called from the
 * worker threads (one key's results always from the same one, in order), the other
 * sink calls from the caller's thread. With N workers the lines are also decoded on
 * the workers, in batches, and taken back in input order on the caller's thread (so
 * dead letters, late events and counters are as with one); on one regular file they may
 * read it too (engine_read_start); every function below that
 * reads or changes the state takes the lines handed in so far first, except
 * engine_tick (see there). */
#ifndef VIGIL_RUNTIME_ENGINE_H
#define VIGIL_RUNTIME_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "nfa/nfa.h"
#include "rules/ruleset.h"
#include "runtime/input.h"

#define ENGINE_DEFAULT_MAX_PARTIALS 10000
#define ENGINE_DEFAULT_MAX_BUFFERED 1000000

typedef struct EngineSink {
    /* A result of rule `rule` that makes alerts. key/r/scratch are valid during the call. */
    void (*alert)(void *user, size_t rule, const Value *key, size_t n_key,
                  const NfaResult *r, EvalScratch *scratch);
    /* A rejected input line (dead letter): reason is readable text. */
    void (*dead_letter)(void *user, const char *origin, uint64_t line_no,
                        const char *reason, const char *text, size_t len);
    /* An event older than the watermark (event time only). */
    void (*late)(void *user, const Event *ev, int64_t watermark_ms);
    void *user;
} EngineSink;

typedef struct EngineOptions {
    size_t max_partials;       /* per key; 0 means ENGINE_DEFAULT_MAX_PARTIALS */
    size_t workers;            /* matching threads; 0 or 1: inline, fully deterministic */
} EngineOptions;

/* Resource limits beyond EngineOptions (vigil run --max-memory, --max-buffered). */
typedef struct EngineLimits {
    size_t max_memory;         /* bytes of state (approximate, runtime/budget.h); once
                                  reached new keys are refused; 0: no limit */
    size_t max_buffered;       /* events in the reorder buffer; when full the oldest is
                                  released early; 0 means ENGINE_DEFAULT_MAX_BUFFERED */
} EngineLimits;

typedef struct EngineRuleStats {
    uint64_t matches, timeouts;   /* every result the NFA produced */
    uint64_t alerts;              /* results delivered to the sink */
    uint64_t suppressed;          /* results dropped by `suppress` */
    uint64_t missing_key;         /* events that passed the filter without a key */
    uint64_t keys_live;
    uint64_t partials_live, partials_dropped;
    uint64_t partials_refused;    /* not started: the per-rule cap */
    uint64_t cap_hits;            /* events at which a cap dropped or refused something */
    uint64_t keys_refused;        /* new keys not started: --max-memory was reached */
} EngineRuleStats;

typedef struct EngineStats {
    uint64_t lines;               /* every line seen, good or bad */
    uint64_t events;              /* lines accepted as events */
    uint64_t malformed;           /* dead letters */
    uint64_t late;
    uint64_t buffered;            /* events waiting in the reorder buffer */
    uint64_t pending_at_stop;     /* partial matches not fired because of a stop signal */
    uint64_t regex_limit_hits;    /* regex tests that hit PCRE2's match or depth limit (no
                                     match); engine_stats counts running workers' only in
                                     engine_stats_json, which pauses them */
    uint64_t memory_bytes;        /* the state's estimated size (runtime/budget.h) */
    uint64_t max_memory;          /* the budget, 0: none */
    uint64_t released_early;      /* events released before the watermark: buffer full */
    uint64_t backpressure_pauses; /* times reading waited for the workers to catch up */
} EngineStats;

typedef struct Engine Engine;

/* NULL with *err (heap) on failure. */
Engine *engine_new(const CompiledRuleSet *rs, const EngineOptions *opts,
                   const EngineSink *sink, char **err);
/* Frees all state without firing anything. */
void engine_free(Engine *e);
/* Warnings (a rule hitting its partial-match caps, rate-limited per rule) go to
 * warn(user, msg); with workers it is called from their threads. Call before the
 * first line. */
void engine_set_warn(Engine *e, void (*warn)(void *user, const char *msg), void *user);
/* Sets the resource limits; call before the first line. Without it: no memory
 * budget (the state's size is still estimated, for --stats) and
 * ENGINE_DEFAULT_MAX_BUFFERED. */
void engine_set_limits(Engine *e, const EngineLimits *limits);
/* One input line from `origin` (borrowed; must outlive the engine). now_ms is the
 * arrival wall-clock time, used on processing time. -1 on a fatal (allocation) error;
 * with workers it may show on a later line, or on engine_tick, finish or stop. */
int engine_line(Engine *e, const char *text, size_t len, const char *origin,
                uint64_t line_no, int64_t now_ms);
/* engine_line for a line the input framed. With workers a line whose buffer the input
 * lends (line->keep) is decoded where it lies, without a copy: the engine holds the
 * buffer until the line is taken. */
int engine_input_line(Engine *e, const InputLine *line, int64_t now_ms);
/* engine_input_line for a run of lines (input_poll_runs). Takes them from the first
 * and stops early once the workers are backlogged (engine_backlogged): returns how many
 * it took, and the caller should pause the input for the rest. *failed is set on a
 * fatal (allocation) error, as engine_line's -1. */
size_t engine_input_lines(Engine *e, const InputLines *lines, int64_t now_ms, bool *failed);
/* A line the input layer refused (over-long, unterminated): a dead letter. */
void engine_reject(Engine *e, const char *text, size_t len, const char *origin,
                   uint64_t line_no, const char *reason);

/* The workers read the input themselves (--workers N on one regular file): fd
 * (borrowed; a regular file, read from where it stands, to its end) is read in chunks
 * by the workers' decoding jobs, its lines numbered from 1 with `origin` (borrowed;
 * must outlive the engine) and framed as the input layer does (runtime/input.h: a
 * trailing \r is kept, the last line needs no newline, a line over max_line bytes is
 * a dead letter with an excerpt and the rest of it is skipped). Results are those of
 * handing the same lines to engine_input_lines. Only with workers on event time: -2
 * otherwise (read the input with an InputSet), -1 on allocation failure. Then call
 * engine_read_step until it returns 0; the other entry points may be called between
 * steps (each takes every batch read so far first, as with lines handed in). */
int engine_read_start(Engine *e, int fd, const char *origin, size_t max_line);
/* Hands reading jobs out (none while the workers are backlogged) and takes the batches
 * read back in input order, for about timeout_ms at most (one batch's decoding may
 * pass it). 1 while the file goes on, 0 once every line was taken (reading is over),
 * -1 on an allocation failure or a failed read (engine_read_error). */
int engine_read_step(Engine *e, int timeout_ms);
/* Bytes the workers read so far (for a progress line). */
uint64_t engine_read_bytes(const Engine *e);
/* The errno of the read that failed, once engine_read_step returned -1; else 0. */
int engine_read_error(const Engine *e);
/* Backpressure (--workers N): true once the workers fall behind (a queue half full);
 * the caller should stop reading (input_pause: sockets then push back through flow
 * control, files and stdin simply wait) and call engine_drain until it returns true.
 * Always false with one worker, which matches on the caller's thread. */
bool engine_backlogged(const Engine *e);
/* Waits at most timeout_ms for the workers to catch up; true when they have (or were
 * not behind). Each wait that begins counts one `backpressure_pauses`. */
bool engine_drain(Engine *e, int timeout_ms);
/* Call when the input is idle or between reads: on processing time fires every
 * deadline <= now_ms; with workers, takes the lines handed in before the previous
 * tick (waiting for their decoding) and those since as far as decoded, and sends the
 * workers the events routed so far. */
int engine_tick(Engine *e, int64_t now_ms);
/* Earliest pending deadline (processing time timers); INT64_MAX if none, and always
 * with workers, which keep their own timers. */
int64_t engine_next_deadline(const Engine *e);
/* End of input: time moves to +infinity; every buffered event is processed and
 * every pending `within` fires. */
int engine_finish(Engine *e);
/* Stop signal: processes every buffered event in time order but fires no pending
 * timeout; the partial matches left are counted in pending_at_stop. */
int engine_stop(Engine *e);

typedef struct EngineReloadSummary {
    size_t rules;       /* rules in the new set */
    size_t changed;     /* same name, new matching definition: empty state */
    size_t added;       /* new name and definition: empty state */
    size_t removed;     /* gone: state freed */
    size_t kept;        /* same matching definition (fingerprint): state kept */
} EngineReloadSummary;

/* Hot reload (RUNTIME.md 5), between two events. Rule j of `next` keeps the partial
 * matches, timers, suppression and counters of the current rule with the same
 * fingerprint (same name preferred; a renamed rule keeps its state too); other rules
 * start empty; rules no one takes are freed. `next` should come from ruleset_reload
 * against the current set, so held events keep their field slots; events still in the
 * reorder buffer are decoded again for the new fields. swap(user) (may be NULL) is
 * called once no thread uses the current set any more and before any result of the
 * new one: the caller switches its outputs there. The current set must stay valid
 * until engine_reload returns; `next` must outlive the engine (or the next reload).
 * -1 on allocation failure: nothing changed. */
int engine_reload(Engine *e, const CompiledRuleSet *next, void (*swap)(void *user),
                  void *user, EngineReloadSummary *summary);

/* ---- checkpoints (vigil run --state; see runtime/checkpoint.h) ---- */

typedef struct EngineCheckpointInfo {
    uint64_t keys, partials;      /* partition entries and partial matches written */
    uint64_t events;              /* distinct events written (held by matches or buffered) */
    uint64_t buffered;            /* of which waiting in the reorder buffer */
} EngineCheckpointInfo;

/* Appends the engine's whole state to out: counters, event-time clock, the reorder
 * buffer, and per rule (by fingerprint) every key's partial matches, held-back
 * matches, timers and suppression window; each event once, as its line text, id, time
 * and origin. Call between two events. With workers they are paused for it, and
 * paused(user) (may be NULL) is called while they are, so that the caller can
 * capture its outputs at exactly this point (processing-time timers of workers cannot
 * fire meanwhile). -1 on allocation failure, now or earlier in the run: an engine
 * that lost an event or a match to one takes no checkpoint (it would make the loss
 * final). */
int engine_checkpoint(Engine *e, Buf *out, void (*paused)(void *user), void *user,
                      EngineCheckpointInfo *info);

typedef struct EngineRestoreSummary {
    size_t rules_kept;            /* state restored (same fingerprint) */
    size_t rules_empty;           /* current rules without state in the checkpoint */
    size_t rules_dropped;         /* checkpointed rules the current set no longer has */
    uint64_t keys, partials, buffered;
} EngineRestoreSummary;

/* Restores what engine_checkpoint wrote, into an engine that has seen no line yet.
 * Rules are matched by fingerprint (the same name preferred, as in reload); a rule
 * whose fingerprint changed starts empty. Events are decoded again with the current
 * field table. The worker count may differ from the checkpointing run's. -1 with
 * *err (heap) on malformed data or allocation failure; the engine must then be freed. */
int engine_restore(Engine *e, const char *data, size_t len, EngineRestoreSummary *sum,
                   char **err);
/* engine_restore of a checkpoint written in format `version` (CkptLoaded.version,
 * runtime/checkpoint.h): counters an older format did not save start at 0. A version
 * this vigil does not read is refused like malformed data. */
int engine_restore_version(Engine *e, const char *data, size_t len, uint32_t version,
                           EngineRestoreSummary *sum, char **err);

void engine_stats(const Engine *e, EngineStats *out);
void engine_rule_stats(const Engine *e, size_t rule, EngineRuleStats *out);
/* The counters of every rule of the current set into out[0..n_rules-1], read safely
 * while running (workers are paused between two events). -1 if the workers could not
 * be paused (no memory): out is then left untouched. */
int engine_all_rule_stats(const Engine *e, EngineRuleStats *out);
/* Appends {"lines":..,...,"rules":{"NAME":{...}}} to out. Safe while running: with
 * workers they are paused between two events for the reading. */
void engine_stats_json(const Engine *e, Buf *out);

#endif
