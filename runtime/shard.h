/* runtime/shard.h — the matching state of one worker: one table of keys whose record
 * holds every rule's state for that key (runtime/partition.h), one set of timers over
 * the records, and per rule its NFA counters and suppression ends, plus the evaluation
 * scratch. With --workers 1 the engine owns one shard and drives it inline; with N
 * workers each thread owns one and sees only the keys hashed to it (workers_pick).
 * Not thread-safe: one thread per shard. Results go to sink.alert on the shard's
 * thread, and so do its warnings. */
#ifndef VIGIL_RUNTIME_SHARD_H
#define VIGIL_RUNTIME_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "nfa/snapshot.h"
#include "runtime/budget.h"
#include "runtime/engine.h"
#include "runtime/route.h"

typedef struct Shard Shard;

/* What the shards report to, owned by the engine (stable address): the caller's sink
 * and the optional warning hook (engine_set_warn). */
typedef struct EngineHooks {
    EngineSink sink;
    void (*warn)(void *user, const char *msg);   /* NULL: no warnings */
    void *warn_user;
    MemBudget *budget;         /* --max-memory: shards count their keys in it and, once it
                                  is spent, refuse new keys; NULL: no accounting */
} EngineHooks;

/* A rule whose partial-match caps were hit, or that refused new keys for want of
 * memory (--max-memory), is warned about at most this often. */
#define SHARD_CAP_WARN_PERIOD_MS 10000

/* The largest number of key expressions of any rule: room for a key's values. */
size_t rules_widest_key(const CompiledRuleSet *rs);

/* Borrows rs, limits and hooks, which must outlive the shard. NULL on allocation failure. */
Shard *shard_new(const CompiledRuleSet *rs, const NfaLimits *limits, const EngineHooks *hooks);
/* Frees every key's state without firing anything. */
void shard_free(Shard *s);
/* One released event through every rule (the inline path): deadlines <= its time
 * fire first, then filter -> key -> partition -> NFA per rule. */
void shard_event(Shard *s, Event *ev);
/* The same, told the event likely to come next (NULL: none known), whose keys'
 * records start loading meanwhile: a hint, which changes nothing but speed. next is
 * only read during the call. */
void shard_event_ahead(Shard *s, Event *ev, const Event *next);
/* An event routed elsewhere (a worker's batch): shard_routed_begin, then
 * shard_routed_rule for each rule it reaches with the key the router computed, in
 * increasing rule order (`after`: how many of its rules come after this one), then
 * shard_routed_end. Deadlines <= its time fire first; what the rules share (step
 * conditions, a key's record) is evaluated and looked up once, as in shard_event. The
 * key bytes must stay as they are until shard_routed_end. */
void shard_routed_begin(Shard *s, Event *ev);
void shard_routed_rule(Shard *s, size_t rule, const char *kbytes, size_t klen, uint64_t hash,
                       size_t after);
void shard_routed_end(Shard *s);
/* A blank (ROUTE_BLANK) at time_ms for one rule and key. */
void shard_routed_blank(Shard *s, size_t rule, int64_t time_ms, const char *kbytes, size_t klen,
                        uint64_t hash);
/* Fires every deadline <= t of every key of every rule, earliest first. */
void shard_fire_due(Shard *s, int64_t t);
/* Time moves to +infinity: every key's pending `within` fires. */
void shard_advance_all(Shard *s);
int64_t shard_next_deadline(const Shard *s);
uint64_t shard_partials_live(const Shard *s);
/* Adds this shard's counters of one rule to acc. */
void shard_add_rule_stats(const Shard *s, size_t rule, EngineRuleStats *acc);
/* An allocation failed: the run must end with an error. */
bool shard_failed(const Shard *s);
/* Regex tests of this shard that hit PCRE2's match or depth limit (nfa/expr.h). */
uint64_t shard_regex_limit_hits(const Shard *s);

/* Checkpoints (runtime/checkpoint.h). A key's record is its key bytes, its key values,
 * its suppression end and its matcher state (nfa/snapshot.h). snapshot_keys appends
 * the byte 1 and a record for every key of rule ri; restore_key reads one record whose
 * key bytes the caller already read (they choose the shard: part_hash, workers_pick),
 * and arms the key's timer. restore_stats sets the rule's cumulative counters (the
 * live ones follow from the restored keys). -1 on allocation failure or, for
 * restore_key, malformed input (*err, static text). */
int shard_snapshot_keys(const Shard *s, size_t ri, Buf *out, SnapEventIndex index, void *user);
int shard_restore_key(Shard *s, size_t ri, const char *kbytes, size_t klen, SnapReader *r,
                      SnapEventLookup lookup, void *user, const char **err);
void shard_restore_stats(Shard *s, size_t ri, const EngineRuleStats *st);

/* Hot reload in two phases, so that a failure leaves every shard unchanged:
 * prepare allocates the state arrays for `next` (NULL on allocation failure), commit
 * (which cannot fail) moves the state of rule from[j] of the current set to rule j of
 * `next` (from[j] == SIZE_MAX: rule j starts empty) and frees the state of every
 * current rule no one takes. abort frees a prepared swap that will not be committed. */
typedef struct ShardSwap ShardSwap;
ShardSwap *shard_swap_prepare(const Shard *s, const CompiledRuleSet *next);
void shard_swap_commit(Shard *s, ShardSwap *swap, const size_t *from);
void shard_swap_abort(ShardSwap *swap);

#endif
