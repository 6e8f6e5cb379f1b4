/* runtime/workers.h — `--workers N` (N > 1): shards matching over threads.
 *
 * Owns: N worker threads, each with its own Shard (runtime/shard.h) and a bounded
 * queue of batches from the engine's thread, plus a list of jobs (WorkerJob: the
 * engine's decoding, which goes before matching). Each released event's filter and
 * key per rule (evaluated by the engine's thread, or already by a decoding job) send
 * (rule, event, key) to the worker chosen by the hash of the key (workers_pick), so
 * every key's events reach one worker in release order and that key's alerts keep
 * their order.
 * Queues have their own locks (no global lock); a full queue blocks the sending
 * thread (a decoding job that hands parts on never waits: workers_split_deliver), and
 * a half-full one asks the reader to stop reading (workers_backlogged) before that
 * happens. Events are
 * reference-counted without atomics, so an event needed by several workers is
 * copied: each event object is only ever touched by one thread at a time. Each
 * worker has an event cache (nfa/event.h) that its decoding allocates from; an event
 * a worker matched goes into that worker's cache when its batch lets it go (its lines
 * are in that core's cache then), one that no rule took back to its decoder's. Each
 * worker fires its own timers: before each of its events, after each batch (up to
 * the latest released time) and, on processing time, on a real timer. */
#ifndef VIGIL_RUNTIME_WORKERS_H
#define VIGIL_RUNTIME_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/engine.h"
#include "runtime/shard.h"

typedef struct Workers Workers;

/* Work the sending thread hands to a worker it names, outside the per-key order
 * (the engine's decoding of line batches): run(arg, i) is called once on worker i's
 * thread, before that worker's next batch of events. The job is the caller's; it must
 * stay valid until done. (The caller does not take queued jobs back to run them
 * itself while it waits: measured, that made the sending thread, already the
 * bottleneck, allocate events that the workers free, which cost more than the wait.) */
typedef struct WorkerJob {
    void (*run)(void *arg, size_t worker);
    void *arg;
    struct WorkerJob *next;    /* the workers' queue link */
    size_t worker;             /* the worker it was queued on */
    atomic_bool done;          /* set once run returned (release) */
} WorkerJob;

/* Starts n threads. rs, limits and hooks are borrowed and must outlive the workers;
 * hooks->sink.alert and hooks->warn are called from the worker threads. NULL on
 * failure, with errno ENOMEM if memory ran out, else pthread_create's error. */
Workers *workers_new(const CompiledRuleSet *rs, size_t n, const NfaLimits *limits,
                     const EngineHooks *hooks, bool processing_time);
/* Routes one released event; takes over the caller's reference. home: the worker
 * whose job allocated ev, or SIZE_MAX (another thread): if no rule takes it, it goes
 * back to that one's cache. -1 on allocation failure. */
int workers_dispatch(Workers *w, Event *ev, size_t home);
/* Queues a job on worker `worker` (modulo the number of workers); never blocks,
 * cannot fail. */
void workers_submit(Workers *w, WorkerJob *job, size_t worker);
/* True once the job has run (acquire: its results are visible). */
static inline bool workers_job_done(const WorkerJob *job)
{
    return atomic_load_explicit(&job->done, memory_order_acquire);
}
/* Worker `worker`'s event cache: its decoding jobs allocate events from it (and only
 * they, on that worker's thread); the events it matched last go back to it, and
 * those it decoded that no rule took. */
EventCache *workers_event_cache(Workers *w, size_t worker);
/* Called by a job on worker `worker` before it allocates: the events given back to
 * that worker since go into its cache. */
void workers_reclaim(Workers *w, size_t worker);
/* Waits until the job has run. */
void workers_job_wait(Workers *w, WorkerJob *job);
/* A rule's routing of an event done elsewhere (the engine's decoding jobs run the
 * filters and keys on the workers): res is ROUTE_NO_KEY, ROUTE_KEYED or ROUTE_BLANK
 * (the key's bytes at key_base + key_off) or ROUTE_FAILED; rules the filter refused are
 * left out. */
typedef struct WorkerRoute {
    size_t rule;
    RouteResult res;
    size_t key_off, key_len;
    uint64_t hash;
} WorkerRoute;

/* workers_dispatch for an event already routed by the current rule set: routes[0..n)
 * in rule order. -1 on allocation failure. */
int workers_dispatch_routed(Workers *w, Event *ev, const WorkerRoute *routes, size_t n,
                            const char *key_base, size_t home);
/* A decoded batch split by owner worker on the decoding thread (the engine's fast
 * path for a batch of timed, routed events in time order): sub-batches of items, each
 * item holding its own reference (the original event for its first owner, copies for
 * the others, made on the decoding thread), built by a job and sent whole by the
 * sending thread, so that thread never touches the events. Owned by the caller. */
typedef struct WorkerSplit WorkerSplit;

WorkerSplit *workers_split_new(const Workers *w);
/* On worker `home`'s job: adds ev (its time, time_ms, and origin set) with its routes
 * (all with a key, else -1) as the seq-th line of the batch, taking over the caller's
 * reference. A blank's owner gets only its time and key; an event without routes
 * other than blanks is kept too, to be freed by home; ev may be NULL for such a line
 * (the caller freed it). -1 on
 * allocation failure or a route that is not keyed: the caller keeps its reference (the
 * split may hold more, and must be cleared with workers_split_clear). */
int workers_split_add(Workers *w, WorkerSplit *s, size_t home, Event *ev, int64_t time_ms,
                      const WorkerRoute *routes, size_t n, const char *key_base, size_t seq);
/* On a job of worker `worker` (usually the one that split the batch), once it is known
 * that the batch's events are released in order now, with ids id_base + seq, and that
 * everything routed to any worker before them is queued already (the engine's fast
 * path, decided without the sending thread): queues each other owner's part, and
 * keeps the worker's own to match right after the job, while its events are still in
 * its cache (after what is queued to it now). The sending thread then only calls
 * workers_split_delivered. False, with nothing done, if a pause or the end is queued
 * to the worker: the sending thread takes the batch as usual. */
bool workers_split_deliver(Workers *w, WorkerSplit *s, size_t worker, uint64_t id_base,
                           int64_t upto);
/* The sending thread's bookkeeping for a split delivered by its job. */
void workers_split_delivered(Workers *w, WorkerSplit *s);
/* Drops every reference the split holds (any thread that owns the events). */
void workers_split_clear(WorkerSplit *s);
/* The sending thread, when the batch's events are released in order: each owner gets
 * what the sending thread routed to it before, then its sub-batch, whose events get
 * the ids id_base + seq and after which deadlines up to `upto` fire; the split is empty
 * again. Blocks while an owner's queue is full, as a send does. */
void workers_split_send(Workers *w, WorkerSplit *s, uint64_t id_base, int64_t upto);
void workers_split_free(WorkerSplit *s);
/* Backpressure: true once a send left a worker's queue half full, until workers_drain
 * succeeds. The reader should then stop reading (input_pause) rather than let the
 * sends block. */
bool workers_backlogged(const Workers *w);
/* Waits at most timeout_ms until every queue is down to a quarter; true then (and
 * workers_backlogged is false again). Call from the sending thread. */
bool workers_drain(Workers *w, int timeout_ms);
/* Sends the batches being filled that hold events. */
void workers_flush(Workers *w);
/* Sends the batches being filled, and time progress up to `upto` to idle workers. */
void workers_publish(Workers *w, int64_t upto);
/* Ends the workers (joins them): with fire_timeouts every pending `within` fires
 * first (end of input); otherwise the partial matches left are counted in *pending.
 * -1 if a worker hit an allocation failure. Idempotent. */
int workers_finish(Workers *w, bool fire_timeouts, uint64_t *pending);
/* Hot reload between two events: sends what was routed, waits until every worker has
 * matched it and paused, swaps every shard to `next` (shard.h: rule j of next takes the
 * state of current rule from[j]) and the router's rules, calls swap(user) (may be
 * NULL) while the workers are still paused, and lets them go. -1 on allocation failure,
 * with nothing changed. */
int workers_reload(Workers *w, const CompiledRuleSet *next, const size_t *from,
                   void (*swap)(void *user), void *user);
/* Pauses every worker between two events (after what was routed), so their counters
 * can be read; -1 on allocation failure (nothing paused). Resume with workers_resume. */
int workers_pause(Workers *w);
void workers_resume(Workers *w);
/* While paused or finished: whether an allocation failed in dispatching or in a
 * worker's matching, so that something (an event, a partial match) was lost. */
bool workers_failed(const Workers *w);
/* Counters of one rule summed over the workers: read them paused or finished. */
void workers_rule_stats(const Workers *w, size_t rule, EngineRuleStats *acc);
/* Regex tests that hit PCRE2's limits: the sending thread's (filters and keys), plus
 * the workers' own if `paused` (the caller paused them) or once they finished. */
uint64_t workers_regex_limit_hits(const Workers *w, bool paused);
/* Checkpoints: the number of workers, worker i's shard (touch it only while the
 * workers are paused, or before they get any event), and the worker that owns
 * (rule, key hash): the key's, for every rule with a key. */
size_t workers_count(const Workers *w);
Shard *workers_shard(Workers *w, size_t i);
size_t workers_pick(const Workers *w, size_t rule, uint64_t hash);
/* Finishes without firing if still running, then frees everything. */
void workers_free(Workers *w);

#endif
