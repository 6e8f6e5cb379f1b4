/* runtime/workers.c — worker threads, batches and queues (see workers.h). */
#include "runtime/workers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/lines.h"
#include "runtime/shard.h"

#define BATCH_ITEMS 256
#define QUEUE_BATCHES 16
/* A queue is bounded by the events it holds (a batch with none counts as one), not by
 * its batches: a decoding job's split sends smaller batches, one per owner. */
#define QUEUE_ITEMS (QUEUE_BATCHES * BATCH_ITEMS)
/* Backpressure marks: a send that leaves a queue this full asks the reader to stop
 * reading (workers_backlogged) well before the sender would block at QUEUE_ITEMS;
 * reading resumes once every queue is down to the low mark. */
#define QUEUE_HIGH (QUEUE_ITEMS / 2)
#define QUEUE_LOW (QUEUE_ITEMS / 4)
/* Emptied batches a worker keeps for reuse: as many as can be queued, since a decoding
 * job's split (WorkerSplit) sends a batch per owner for every batch of lines. */
#define SPARE_BATCHES (QUEUE_BATCHES + 4)
/* A thread about to wait for another yields its core this many times first: on two
 * cores three busy threads take turns, and a sleep and wake-up (futex, context
 * switches on both sides) cost more than the wait usually lasts. Measured on scenario
 * 1 with two workers: no yields 2.50-2.62 s wall, 16 yields 2.24-2.29 s, 64 yields
 * about the same with more CPU. */
#define WAIT_YIELDS 16
/* Events no worker takes (every filter refused them) go back to the worker that
 * decoded them this many at a time. */
#define UNROUTED_BATCH 64
/* A worker fetches the events of a batch it matches ahead: an event's first line this
 * many items ahead, and its next three (the values its rules' conditions read, in
 * events of a few fields) half as far. */
#define WORKER_PREFETCH 8
/* Freed event memory a worker keeps for its decoding (EventCache): more than the
 * events of the batches out for decoding at a time (runtime/engine.c), which the
 * releases of the batches it matches refill. */
#define WORKER_CACHE_BYTES ((size_t)1 << 20)

typedef struct Item {
    Event *ev;                 /* one reference, owned by the item; NULL: a blank
                                  (ROUTE_BLANK), of which the rule needs only the time */
    size_t rule;
    uint64_t hash;
    size_t key_off, key_len;   /* into Batch.keys */
    union {
        size_t seq;            /* Batch.id_base set: the event's id is id_base + seq */
        int64_t time_ms;       /* a blank's time */
    };
} Item;

typedef enum { BATCH_EVENTS, BATCH_PAUSE, BATCH_END } BatchKind;

typedef struct Batch {
    struct Batch *next;
    BatchKind kind;
    bool fire_timeouts;        /* BATCH_END: end of input (true) or stop (false) */
    Buf keys;                  /* key bytes of the items */
    int64_t upto;              /* fire deadlines up to this time after the items */
    uint64_t id_base;          /* 0, or the items' ids are id_base + seq (WorkerSplit) */
    size_t after;              /* a claimed own part: matched after this many queued batches */
    size_t n, cap;
    Item items[];              /* cap >= the number of rules: one event always fits */
} Batch;

typedef struct Worker {
    _Alignas(LINES_ALIGN) Workers *owner;   /* each worker's lines its own (base/lines.h) */
    Shard *shard;              /* touched only by the worker thread while it runs */
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t nonempty, nonfull;
    Batch *head, *tail;        /* the queue, under lock */
    WorkerJob *jobs, *jobs_tail;   /* jobs, under lock; they go before batches */
    Batch *spare;              /* emptied batches back for reuse, under lock, so that
                                  batches rarely cross threads to be freed */
    size_t n_spare;
    /* Freed event memory this worker's decoding allocates from: the events it
     * matched last (release_items), and those the sending thread gives back, the
     * ones it decoded that no rule took (workers_reclaim). Past WORKER_CACHE_BYTES, and
     * for an event a partial match held last, glibc's free takes it, on this thread
     * whichever allocated it. */
    EventCache *cache;         /* the worker's */
    Event **returns;           /* under lock: given back, not yet taken */
    size_t n_returns, cap_returns;
    Event **draining;          /* the worker's: the returns it is freeing */
    size_t n_draining, at_draining, cap_draining;
    size_t queued;             /* under lock: the queue's load (queue_load) */
    size_t n_batches;          /* under lock: batches in the queue */
    /* The worker's own parts of splits delivered by its job (workers_split_deliver),
     * in order, each to be matched right after the job, once the first `after`
     * batches of its queue (everything routed to it before) are; the worker's. */
    Batch *own, *own_tail;
    Batch *filling;            /* owned by the sending thread */
    Batch *end;                /* the closing batch, allocated up front: ending never fails */
    int64_t sent_upto;
    uint64_t pending;          /* partial matches left at a stop; read after join */
} Worker;

struct Workers {
    const CompiledRuleSet *rs;
    size_t n;
    bool processing_time;
    bool finished;
    Worker *w;                 /* n of them */
    EvalScratch *scratch;      /* the sending thread's */
    Router *router;            /* the sending thread's filter/key evaluation */
    uint64_t *missing_key;     /* per rule, counted by the sending thread */
    Event **copies;            /* per worker: this event's copy for it, during dispatch */
    atomic_bool backlogged;    /* a queue reached QUEUE_HIGH (a decoding job's sends too) */
    bool failed;
    size_t home;               /* during a dispatch: the worker that allocated the event */
    Event **unrouted;          /* per worker, UNROUTED_BATCH events no worker took that it
                                  allocated, to give back; the sending thread's */
    size_t *n_unrouted;
    /* the sending thread waiting for a job (workers_job_wait) */
    pthread_mutex_t job_lock;
    pthread_cond_t job_cond;
    atomic_bool job_waiting;   /* set under job_lock; read without it by the workers */
    /* pausing every worker between two events (hot reload) */
    pthread_mutex_t pause_lock;
    pthread_cond_t pause_cond;
    size_t paused;
    uint64_t resume_gen;
    bool pause_ready;
};

/* ---- batches and queues ----------------------------------------------------- */

static Batch *batch_new(BatchKind kind, size_t n_rules)
{
    size_t cap = n_rules > BATCH_ITEMS ? n_rules : BATCH_ITEMS;
    Batch *b = malloc(sizeof *b + cap * sizeof(Item));
    if (!b)
        return NULL;
    b->cap = cap;
    b->next = NULL;
    b->kind = kind;
    b->fire_timeouts = false;
    b->n = 0;
    Buf empty = BUF_INIT;
    b->keys = empty;
    b->upto = INT64_MIN;
    b->id_base = 0;
    return b;
}

static void batch_free(Batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        event_release(b->items[i].ev);
    buf_free(&b->keys);
    free(b);
}

/* Hands events allocated by worker `home` back to it (caller: another worker). */
static void give_back(Worker *home, Event **evs, size_t n)
{
    pthread_mutex_lock(&home->lock);
    if (home->n_returns + n > home->cap_returns) {
        size_t cap = home->cap_returns ? home->cap_returns : 1024;
        while (cap < home->n_returns + n)
            cap *= 2;
        Event **g = realloc(home->returns, cap * sizeof *g);
        if (g) {
            home->returns = g;
            home->cap_returns = cap;
        }
    }
    bool fits = home->n_returns + n <= home->cap_returns;
    if (fits) {
        memcpy(home->returns + home->n_returns, evs, n * sizeof *evs);
        home->n_returns += n;
    }
    pthread_mutex_unlock(&home->lock);
    for (size_t i = 0; !fits && i < n; i++)
        event_release(evs[i]);   /* no room: freed here after all */
}

/* Takes the events given back for freeing, once the previous ones are all freed
 * (worker thread). */
static void take_returns(Worker *wk)
{
    if (wk->at_draining < wk->n_draining)
        return;
    pthread_mutex_lock(&wk->lock);
    Event **evs = wk->returns;
    size_t cap = wk->cap_returns;
    wk->n_draining = wk->n_returns;
    wk->at_draining = 0;
    wk->returns = wk->draining;
    wk->cap_returns = wk->cap_draining;
    wk->n_returns = 0;
    wk->draining = evs;
    wk->cap_draining = cap;
    pthread_mutex_unlock(&wk->lock);
}

static void free_returns(Worker *wk)
{
    for (;;) {
        take_returns(wk);
        if (wk->at_draining == wk->n_draining)
            return;
        while (wk->at_draining < wk->n_draining)
            event_cache_release(wk->cache, wk->draining[wk->at_draining++]);
    }
}

void workers_reclaim(Workers *ws, size_t worker)
{
    free_returns(&ws->w[worker]);
}

EventCache *workers_event_cache(Workers *ws, size_t worker)
{
    return ws->w[worker].cache;
}

/* Drops the items' references (worker thread). An event whose last reference this is
 * goes to this worker's cache, whichever worker decoded it: its lines were just read
 * here, so this core's next decoding reuses them without fetching them from another.
 * (Sending it back to the worker that decoded it, as before, made that worker's
 * decoding write memory last written on this core: on a 2-vCPU Xeon under KVM,
 * scenario 1 with two workers took 4.93 -> 4.41 CPU s, 2.75 -> 2.39 s wall, medians
 * of 6 in turns. Both workers decode and match about half the events, so neither
 * cache runs over for long; past WORKER_CACHE_BYTES a release is a free.) */
static void release_items(Worker *wk, Batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->items[i].ev)
            event_cache_release(wk->cache, b->items[i].ev);
        b->items[i].ev = NULL;
    }
}

/* An emptied event batch goes back to its sender for reuse (worker thread). */
static void batch_recycle(Worker *wk, Batch *b)
{
    release_items(wk, b);
    b->n = 0;
    buf_clear(&b->keys);
    b->upto = INT64_MIN;
    b->id_base = 0;
    pthread_mutex_lock(&wk->lock);
    bool keep = wk->n_spare < SPARE_BATCHES;
    if (keep) {
        b->next = wk->spare;
        wk->spare = b;
        wk->n_spare++;
    }
    pthread_mutex_unlock(&wk->lock);
    if (!keep) {
        buf_free(&b->keys);
        free(b);
    }
}

/* An empty event batch for worker wk: a recycled one if it has room for every rule. */
static Batch *batch_get(Worker *wk, size_t n_rules)
{
    pthread_mutex_lock(&wk->lock);
    Batch *b = wk->spare;
    if (b) {
        wk->spare = b->next;
        wk->n_spare--;
    }
    pthread_mutex_unlock(&wk->lock);
    if (b && b->cap >= n_rules) {
        b->next = NULL;
        return b;
    }
    if (b)
        batch_free(b);
    return batch_new(BATCH_EVENTS, n_rules);
}

static size_t queue_load(const Batch *b)
{
    return b->n ? b->n : 1;
}

/* Returns the queue's load after this batch went in. Only the sending thread waits
 * for room: a worker that waited for another could wait for one that waits for it. */
static size_t queue_push_as(Worker *wk, Batch *b, bool may_wait)
{
    pthread_mutex_lock(&wk->lock);
    while (may_wait && wk->queued >= QUEUE_ITEMS)
        pthread_cond_wait(&wk->nonfull, &wk->lock);
    if (wk->tail)
        wk->tail->next = b;
    else
        wk->head = b;
    wk->tail = b;
    wk->n_batches++;
    size_t queued = wk->queued += queue_load(b);
    pthread_cond_signal(&wk->nonempty);
    pthread_mutex_unlock(&wk->lock);
    return queued;
}

/* Under wk->lock, with a batch queued. */
static Batch *queue_unlink_head(Worker *wk)
{
    Batch *b = wk->head;
    wk->head = b->next;
    if (!wk->head)
        wk->tail = NULL;
    wk->n_batches--;
    wk->queued -= queue_load(b);
    /* Its waiters (a send with room to wait for, a drain) are all on the sending
     * thread today, so one at a time; broadcast keeps that from being a rule. */
    pthread_cond_broadcast(&wk->nonfull);
    return b;
}

static size_t queue_push(Worker *wk, Batch *b)
{
    return queue_push_as(wk, b, true);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for the next job or batch (jobs first: the sending thread waits for them);
 * on processing time fires the shard's timers meanwhile. A job comes back in *job,
 * with NULL returned. */
static Batch *queue_pop(Worker *wk, WorkerJob **job)
{
    pthread_mutex_lock(&wk->lock);
    while (!wk->head && !wk->jobs) {
        if (wk->n_returns || wk->at_draining < wk->n_draining) {
            /* nothing to decode soon: free what was given back before sleeping */
            pthread_mutex_unlock(&wk->lock);
            free_returns(wk);
            pthread_mutex_lock(&wk->lock);
            continue;
        }
        int64_t due = wk->owner->processing_time ? shard_next_deadline(wk->shard) : INT64_MAX;
        if (due == INT64_MAX) {
            /* under a steady stream the next batch is close: yield a while first */
            for (int spin = 0; spin < WAIT_YIELDS && !wk->head && !wk->jobs; spin++) {
                pthread_mutex_unlock(&wk->lock);
                sched_yield();
                pthread_mutex_lock(&wk->lock);
            }
            if (!wk->head && !wk->jobs)
                pthread_cond_wait(&wk->nonempty, &wk->lock);
            continue;
        }
        struct timespec at = {(time_t)(due / 1000), (long)(due % 1000) * 1000000L};
        if (pthread_cond_timedwait(&wk->nonempty, &wk->lock, &at) != 0 && !wk->head &&
            !wk->jobs) {
            pthread_mutex_unlock(&wk->lock);
            shard_fire_due(wk->shard, wall_ms());
            pthread_mutex_lock(&wk->lock);
        }
    }
    if (wk->jobs) {
        *job = wk->jobs;
        wk->jobs = (*job)->next;
        if (!wk->jobs)
            wk->jobs_tail = NULL;
        pthread_mutex_unlock(&wk->lock);
        return NULL;
    }
    Batch *b = queue_unlink_head(wk);
    pthread_mutex_unlock(&wk->lock);
    return b;
}

/* Tells the sender this worker is between two events, and waits to be let go. */
static void pause_here(Workers *ws)
{
    pthread_mutex_lock(&ws->pause_lock);
    uint64_t gen = ws->resume_gen;
    ws->paused++;
    pthread_cond_broadcast(&ws->pause_cond);
    while (ws->resume_gen == gen)
        pthread_cond_wait(&ws->pause_cond, &ws->pause_lock);
    pthread_mutex_unlock(&ws->pause_lock);
}

/* The three lines after an event's first, without reading its header (which may not
 * have arrived yet: reading where its values end stalled there instead of in the
 * conditions). A prefetch past the event's end costs a line, never a fault. Scenario 1,
 * two workers, 5M lines, perf at 4 kHz: expr_truth (the first read of a value) and
 * match_batch 856-895 -> 324-370 samples of about 12,600; all samples -1.6 to -2.9 %. */
static inline void prefetch_values(const Event *ev)
{
    if (!ev)
        return;
    const char *p = (const char *)ev;
    __builtin_prefetch(p + 64, 0);
    __builtin_prefetch(p + 128, 0);
    __builtin_prefetch(p + 192, 0);
}

/* The items from `first` on that carry the same event (a batch holds an event's
 * rules side by side, in rule order). */
static size_t same_event_run(const Batch *b, size_t first)
{
    size_t end = first + 1;
    while (end < b->n && b->items[end].ev == b->items[first].ev)
        end++;
    return end - first;
}

/* The items of an event batch, then its deadlines (worker thread). */
static void match_batch(Worker *wk, const Batch *b)
{
    for (size_t i = 0; i < b->n;) {
        const Item *it = &b->items[i];
        /* the events were written on another core: start fetching the next ones */
        if (i + WORKER_PREFETCH < b->n)
            __builtin_prefetch(b->items[i + WORKER_PREFETCH].ev, 1);
        if (i + WORKER_PREFETCH / 2 < b->n)
            prefetch_values(b->items[i + WORKER_PREFETCH / 2].ev);
        if (!it->ev) {
            shard_routed_blank(wk->shard, it->rule, it->time_ms, b->keys.data + it->key_off,
                               it->key_len, it->hash);
            i++;
            continue;
        }
        if (b->id_base)
            it->ev->id = b->id_base + it->seq;
        /* the event's rules together, so that they share its conditions and records */
        size_t n = same_event_run(b, i);
        shard_routed_begin(wk->shard, it->ev);
        for (size_t j = 0; j < n; j++, it++)
            shard_routed_rule(wk->shard, it->rule, b->keys.data + it->key_off, it->key_len,
                              it->hash, n - 1 - j);
        shard_routed_end(wk->shard);
        i += n;
    }
    if (b->upto != INT64_MIN)
        shard_fire_due(wk->shard, b->upto);
}

/* The part claimed by the job just run, after the batches queued before the claim
 * (event batches: the claim checked). The job is already marked done, so the sending
 * thread goes on meanwhile; what it queues from then on comes after both. */
static void match_own(Worker *wk)
{
    size_t popped = 0;
    while (wk->own) {
        Batch *own = wk->own;
        for (; popped < own->after; popped++) {
            pthread_mutex_lock(&wk->lock);
            Batch *b = queue_unlink_head(wk);
            pthread_mutex_unlock(&wk->lock);
            match_batch(wk, b);
            batch_recycle(wk, b);
        }
        wk->own = own->next;
        own->next = NULL;
        match_batch(wk, own);
        batch_recycle(wk, own);
    }
    wk->own_tail = NULL;
}

/* The lock only when the sender waits: done and job_waiting are both sequentially
 * consistent, so either the sender sees done before it sleeps, or this sees it
 * waiting and wakes it under the lock (after it went to sleep). */
static void run_job(Workers *ws, WorkerJob *job, size_t worker)
{
    job->run(job->arg, worker);
    atomic_store(&job->done, true);
    if (atomic_load(&ws->job_waiting)) {
        pthread_mutex_lock(&ws->job_lock);
        pthread_cond_broadcast(&ws->job_cond);
        pthread_mutex_unlock(&ws->job_lock);
    }
    match_own(&ws->w[worker]);
}

static void *worker_main(void *arg)
{
    Worker *wk = arg;
    for (;;) {
        WorkerJob *job = NULL;
        Batch *b = queue_pop(wk, &job);
        take_returns(wk);
        if (job) {
            run_job(wk->owner, job, (size_t)(wk - wk->owner->w));
            continue;
        }
        if (b->kind == BATCH_PAUSE) {
            batch_free(b);
            pause_here(wk->owner);
            continue;
        }
        match_batch(wk, b);
        if (b->kind == BATCH_EVENTS) {
            batch_recycle(wk, b);
            continue;
        }
        if (b->fire_timeouts)
            shard_advance_all(wk->shard);
        else
            wk->pending = shard_partials_live(wk->shard);
        batch_free(b);
        return NULL;
    }
}

/* ---- setup ------------------------------------------------------------------ */

Workers *workers_new(const CompiledRuleSet *rs, size_t n, const NfaLimits *limits,
                     const EngineHooks *hooks, bool processing_time)
{
    Workers *ws = calloc(1, sizeof *ws);
    if (!ws) {
        errno = ENOMEM;
        return NULL;
    }
    ws->rs = rs;
    ws->n = n;
    ws->processing_time = processing_time;
    atomic_init(&ws->backlogged, false);
    ws->w = lines_calloc(n * sizeof *ws->w);
    ws->copies = lines_calloc_n(n, sizeof *ws->copies);
    ws->missing_key = lines_calloc_n(rs->n_rules ? rs->n_rules : 1, sizeof *ws->missing_key);
    ws->unrouted = lines_calloc_n(n * UNROUTED_BATCH, sizeof *ws->unrouted);
    ws->n_unrouted = lines_calloc_n(n, sizeof *ws->n_unrouted);
    ws->scratch = expr_scratch_new();
    ws->router = router_new(rs, true);
    if (!ws->w || !ws->copies || !ws->missing_key || !ws->scratch || !ws->router ||
        !ws->unrouted || !ws->n_unrouted) {
        ws->finished = true;
        workers_free(ws);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&ws->pause_lock, NULL);
    pthread_cond_init(&ws->pause_cond, NULL);
    pthread_mutex_init(&ws->job_lock, NULL);
    atomic_init(&ws->job_waiting, false);
    pthread_cond_init(&ws->job_cond, NULL);
    ws->pause_ready = true;
    for (size_t i = 0; i < n; i++) {
        Worker *wk = &ws->w[i];
        wk->owner = ws;
        wk->sent_upto = INT64_MIN;
        pthread_mutex_init(&wk->lock, NULL);
        pthread_cond_init(&wk->nonempty, NULL);
        pthread_cond_init(&wk->nonfull, NULL);
        wk->shard = shard_new(rs, limits, hooks);
        wk->end = batch_new(BATCH_END, 0);
        wk->cache = event_cache_new(WORKER_CACHE_BYTES);
        int rc = !wk->shard || !wk->end || !wk->cache
                     ? ENOMEM : pthread_create(&wk->thread, NULL, worker_main, wk);
        if (rc != 0) {
            workers_free(ws);
            errno = rc;
            return NULL;
        }
        wk->started = true;
    }
    return ws;
}

/* ---- jobs ------------------------------------------------------------------- */

void workers_submit(Workers *ws, WorkerJob *job, size_t worker)
{
    size_t i = worker % ws->n;
    Worker *wk = &ws->w[i];
    job->worker = i;
    job->next = NULL;
    atomic_store_explicit(&job->done, false, memory_order_relaxed);
    pthread_mutex_lock(&wk->lock);
    if (wk->jobs_tail)
        wk->jobs_tail->next = job;
    else
        wk->jobs = job;
    wk->jobs_tail = job;
    pthread_cond_signal(&wk->nonempty);
    pthread_mutex_unlock(&wk->lock);
}

void workers_job_wait(Workers *ws, WorkerJob *job)
{
    /* the job is usually a few microseconds from done: yielding the core to the
     * threads that run it costs less than sleeping and being woken */
    for (int spin = 0; spin < WAIT_YIELDS; spin++) {
        if (workers_job_done(job))
            return;
        sched_yield();
    }
    pthread_mutex_lock(&ws->job_lock);
    atomic_store(&ws->job_waiting, true);
    while (!atomic_load(&job->done))
        pthread_cond_wait(&ws->job_cond, &ws->job_lock);
    atomic_store(&ws->job_waiting, false);
    pthread_mutex_unlock(&ws->job_lock);
}

/* ---- sending ---------------------------------------------------------------- */

static void send_filling(Worker *wk)
{
    Batch *b = wk->filling;
    wk->filling = NULL;
    if (b->upto > wk->sent_upto)
        wk->sent_upto = b->upto;
    if (queue_push(wk, b) >= QUEUE_HIGH)
        atomic_store_explicit(&wk->owner->backlogged, true, memory_order_relaxed);
}

/* The event object worker `i` gets: the original for the first worker, copies for others. */
static Event *event_for(Workers *ws, size_t i, Event *ev, bool *original_used)
{
    if (ws->copies[i]) {
        event_retain(ws->copies[i]);
        return ws->copies[i];
    }
    Event *e = *original_used ? event_clone(ev) : ev;
    if (!e)
        return NULL;
    if (e == ev) {
        *original_used = true;
        event_retain(ev);
    }
    ws->copies[i] = e;
    return e;
}

/* By the key alone, as Flink assigns key groups: every rule's state for a key's bytes
 * is on one worker, in one record (shard.h), and an event goes to as many workers as
 * it has distinct keys, not rules (scenario 4, 100 rules over two keys, with the
 * rule mixed in as well: 2.7x the CPU of one worker, every event copied to both).
 * A rule without a key has one partition, the empty key: those spread by the rule's
 * fingerprint, not its index, since a hot reload that keeps a rule's state may move
 * the rule to another index, and its state must stay on the worker that holds it.
 * Multiplicative (Fibonacci) hashing: the product's high bits depend on every bit of
 * the key's hash (FNV-1a's own high bits mix its last bytes poorly), and scaling them
 * to n takes a multiply, not a division (the 64-bit division was most of a split's
 * cost per item); the partitions then index by the hash's low bits, which this leaves
 * independent of the worker. */
size_t workers_pick(const Workers *ws, size_t rule, uint64_t hash)
{
    const CompiledRule *r = &ws->rs->rules[rule];
    uint64_t mixed = (r->n_keys ? hash : hash ^ r->fingerprint) * UINT64_C(0x9E3779B97F4A7C15);
#ifdef __SIZEOF_INT128__
    return (size_t)(((unsigned __int128)mixed * ws->n) >> 64);
#else
    return (size_t)((mixed >> 32) * ws->n >> 32);   /* n < 2^32 */
#endif
}

/* An item for rule ri with this key: ev itself (blank false), or a blank at its time. */
static int add_item(Workers *ws, size_t ri, const RouteKey *key, Event *ev, bool blank,
                    bool *original_used)
{
    const char *kb = key->bytes;
    size_t klen = key->len;
    uint64_t h = key->hash;
    size_t i = workers_pick(ws, ri, h);
    Worker *wk = &ws->w[i];
    if (!wk->filling && !(wk->filling = batch_get(wk, ws->rs->n_rules)))
        return -1;
    Batch *b = wk->filling;
    Event *mine = blank ? NULL : event_for(ws, i, ev, original_used);
    if (!blank && !mine)
        return -1;
    size_t off = b->keys.len;
    buf_append_inline(&b->keys, kb, klen);
    if (b->keys.failed) {
        if (mine)
            event_release(mine);
        return -1;
    }
    Item *it = &b->items[b->n++];
    *it = (Item){mine, ri, h, off, klen, {0}};
    if (blank)
        it->time_ms = ev->time_ms;
    b->upto = ev->time_ms;
    return 0;
}

/* Room for every rule first: a batch is never sent while an event is being routed
 * (see dispatch_end). */
static void dispatch_begin(Workers *ws)
{
    for (size_t i = 0; i < ws->n; i++)
        if (ws->w[i].filling && ws->w[i].filling->n + ws->rs->n_rules > ws->w[i].filling->cap)
            send_filling(&ws->w[i]);
    memset(ws->copies, 0, ws->n * sizeof *ws->copies);
}

static void dispatch_one(Workers *ws, size_t ri, RouteResult res, const RouteKey *key,
                         Event *ev, bool *original_used)
{
    switch (res) {
    case ROUTE_FILTERED:
        break;
    case ROUTE_NO_KEY:
        ws->missing_key[ri]++;
        break;
    case ROUTE_FAILED:
        ws->failed = true;
        break;
    case ROUTE_KEYED:
    case ROUTE_BLANK:
        if (add_item(ws, ri, key, ev, res == ROUTE_BLANK, original_used) < 0)
            ws->failed = true;
        break;
    }
}

static int dispatch_end(Workers *ws, Event *ev)
{
    /* Every reference change of this event happens before any batch holding it is
     * sent: from then on only its worker touches it. */
    if (ev->refs > 1 || ws->home == SIZE_MAX) {
        event_release(ev);
        return ws->failed ? -1 : 0;
    }
    /* no batch holds it: the worker that allocated it frees it */
    Event **stash = &ws->unrouted[ws->home * UNROUTED_BATCH];
    stash[ws->n_unrouted[ws->home]++] = ev;
    if (ws->n_unrouted[ws->home] == UNROUTED_BATCH) {
        give_back(&ws->w[ws->home], stash, UNROUTED_BATCH);
        ws->n_unrouted[ws->home] = 0;
    }
    return ws->failed ? -1 : 0;
}

int workers_dispatch(Workers *ws, Event *ev, size_t home)
{
    bool original_used = false;
    dispatch_begin(ws);
    ws->home = home < ws->n ? home : SIZE_MAX;
    router_begin(ws->router);
    /* A filter or key that ran out of memory gave null, not its value; atoms' truths
     * are shared across rules, so the count is taken once for the event. */
    uint64_t oom_before = expr_scratch_out_of_memory(ws->scratch);
    for (size_t ri = 0; ri < ws->rs->n_rules && !ws->failed; ri++) {
        RouteKey key;
        RouteResult res = router_route(ws->router, ri, ev, ws->scratch, &key);
        if (expr_scratch_out_of_memory(ws->scratch) != oom_before)
            res = ROUTE_FAILED;
        dispatch_one(ws, ri, res, &key, ev, &original_used);
    }
    expr_scratch_reset(ws->scratch);
    return dispatch_end(ws, ev);
}

int workers_dispatch_routed(Workers *ws, Event *ev, const WorkerRoute *routes, size_t n,
                            const char *key_base, size_t home)
{
    bool original_used = false;
    dispatch_begin(ws);
    ws->home = home < ws->n ? home : SIZE_MAX;
    for (size_t i = 0; i < n && !ws->failed; i++) {
        const WorkerRoute *r = &routes[i];
        RouteKey key = {key_base + r->key_off, r->key_len, r->hash, NULL};
        dispatch_one(ws, r->rule, r->res, &key, ev, &original_used);
    }
    return dispatch_end(ws, ev);
}

/* ---- batches split by a decoding job ---------------------------------------- */

struct WorkerSplit {
    size_t n_workers;
    size_t home;               /* the worker whose job built it */
    Batch **sub;               /* per owner worker: its items in input order, or NULL */
    Event **copies;            /* per owner worker: the current event's object for it */
    Event **unrouted;          /* events no rule takes: one reference each */
    size_t n_unrouted, cap_unrouted;
    bool *delivered;           /* per owner: it got a part from workers_split_deliver */
    int64_t delivered_upto;
};

WorkerSplit *workers_split_new(const Workers *ws)
{
    /* written for every line, by whichever worker decodes its batch, while the other
     * batches' splits are written on other cores (base/lines.h) */
    WorkerSplit *s = lines_calloc(sizeof *s);
    if (!s)
        return NULL;
    s->n_workers = ws->n;
    s->sub = lines_calloc(ws->n * sizeof *s->sub);
    s->copies = lines_calloc(ws->n * sizeof *s->copies);
    s->delivered = lines_calloc(ws->n * sizeof *s->delivered);
    if (!s->sub || !s->copies || !s->delivered) {
        workers_split_free(s);
        return NULL;
    }
    return s;
}

void workers_split_clear(WorkerSplit *s)
{
    for (size_t i = 0; i < s->n_workers; i++) {
        Batch *b = s->sub[i];
        for (size_t j = 0; b && j < b->n; j++)
            if (b->items[j].ev)
                event_release(b->items[j].ev);
        if (b) {
            b->n = 0;
            buf_clear(&b->keys);
        }
    }
    for (size_t j = 0; j < s->n_unrouted; j++)
        event_release(s->unrouted[j]);
    s->n_unrouted = 0;
}

void workers_split_free(WorkerSplit *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->sub && i < s->n_workers; i++)
        if (s->sub[i])
            batch_free(s->sub[i]);
    for (size_t j = 0; j < s->n_unrouted; j++)
        event_release(s->unrouted[j]);
    free(s->sub);
    free(s->copies);
    free(s->delivered);
    free(s->unrouted);
    free(s);
}

/* Owner w's sub-batch with room for one more item. A new one comes from the splitting
 * worker's own spares (batches it matched last, so in its cache), not the owner's:
 * the items are then written here without taking their cache lines from the other
 * core first, and cross once, to be read by the owner (whose spares they join). */
static Batch *split_room(Workers *ws, WorkerSplit *s, size_t w)
{
    Batch *b = s->sub[w];
    if (!b && !(b = s->sub[w] = batch_get(&ws->w[s->home], ws->rs->n_rules)))
        return NULL;
    if (b->n < b->cap)
        return b;
    size_t cap = b->cap * 2;
    Batch *g = realloc(b, sizeof *g + cap * sizeof(Item));
    if (!g)
        return NULL;
    g->cap = cap;
    s->sub[w] = g;
    return g;
}

/* The object owner w gets, with a reference for its item: the original for the first
 * owner (its first item takes over the caller's reference), a copy (made here, on the
 * event's home thread, from its cache, to which it comes back) for each other one. */
static Event *split_event_for(Worker *home, WorkerSplit *s, size_t w, Event *ev,
                              bool *original_used)
{
    Event *mine = s->copies[w];
    if (mine) {
        event_retain(mine);
        return mine;
    }
    if (*original_used) {
        mine = event_clone_cached(home->cache, ev);
    } else {
        mine = ev;
        *original_used = true;
    }
    s->copies[w] = mine;
    return mine;
}

/* Takes over the caller's reference on success. */
static bool split_keep_unrouted(WorkerSplit *s, Event *ev)
{
    if (s->n_unrouted == s->cap_unrouted) {
        size_t cap = s->cap_unrouted ? s->cap_unrouted * 2 : UNROUTED_BATCH;
        Event **g = realloc(s->unrouted, cap * sizeof *g);
        if (!g)
            return false;
        s->unrouted = g;
        s->cap_unrouted = cap;
    }
    s->unrouted[s->n_unrouted++] = ev;
    return true;
}

/* The key bytes the last route of an event put in an owner's batch. Rules keyed alike
 * share their key's bytes (one copy for their routes, engine.c) and, keyed alike, one
 * owner: each owner's batch holds a key once per event, not once per rule, and the
 * worker tells the rules' keys apart by a pointer compare. */
typedef struct LastKey {
    size_t from, len;          /* its bytes among the routes' (from SIZE_MAX: none); the
                                  length too, since an empty key (a rule without one)
                                  has the offset of the key after it */
    size_t worker, at;         /* its offset in that worker's batch */
} LastKey;

/* Where route r's key bytes are in b, worker w's batch: appended unless they were just
 * put there; SIZE_MAX on allocation failure. */
static size_t split_key_at(LastKey *last, Batch *b, size_t w, const WorkerRoute *r,
                           const char *key_base)
{
    if (last->from == r->key_off && last->len == r->key_len && last->worker == w)
        return last->at;
    size_t at = b->keys.len;
    buf_append_inline(&b->keys, key_base + r->key_off, r->key_len);
    if (b->keys.failed)
        return SIZE_MAX;
    *last = (LastKey){r->key_off, r->key_len, w, at};
    return at;
}

int workers_split_add(Workers *ws, WorkerSplit *s, size_t home, Event *ev, int64_t time_ms,
                      const WorkerRoute *routes, size_t n, const char *key_base, size_t seq)
{
    s->home = home;
    memset(s->copies, 0, s->n_workers * sizeof *s->copies);
    bool original_used = false;
    LastKey last = {SIZE_MAX, 0, 0, 0};
    size_t i = 0;
    for (; i < n; i++) {
        const WorkerRoute *r = &routes[i];
        if (!route_keyed(r->res))
            break;   /* counted by the sending thread: not for a split */
        size_t w = workers_pick(ws, r->rule, r->hash);
        Batch *b = split_room(ws, s, w);
        if (!b)
            break;
        size_t off = split_key_at(&last, b, w, r, key_base);
        if (off == SIZE_MAX)
            break;
        Item *it = &b->items[b->n];
        *it = (Item){NULL, r->rule, r->hash, off, r->key_len, {seq}};
        if (r->res == ROUTE_BLANK)
            it->time_ms = time_ms;
        else if (!ev || !(it->ev = split_event_for(&ws->w[home], s, w, ev, &original_used)))
            break;
        b->n++;
    }
    if (i == n && (original_used || !ev || split_keep_unrouted(s, ev)))
        return 0;
    if (original_used)
        event_retain(ev);   /* the caller keeps its reference after all */
    return -1;
}

/* Worker wk's own part, to be matched right after the job that delivers it, after the
 * batches queued to it now; false if one of those is a pause or the end. */
static bool claim_own(Worker *wk, Batch *b)
{
    pthread_mutex_lock(&wk->lock);
    bool events_only = true;
    for (const Batch *q = wk->head; q && events_only; q = q->next)
        events_only = q->kind == BATCH_EVENTS;
    size_t before = wk->n_batches;
    pthread_mutex_unlock(&wk->lock);
    if (!events_only)
        return false;
    b->after = before;
    b->next = NULL;
    if (wk->own_tail)
        wk->own_tail->next = b;
    else
        wk->own = b;
    wk->own_tail = b;
    return true;
}

bool workers_split_deliver(Workers *ws, WorkerSplit *s, size_t worker, uint64_t id_base,
                           int64_t upto)
{
    Batch *mine = s->sub[worker];
    if (mine && mine->n) {
        mine->id_base = id_base;
        mine->upto = upto;
        if (!claim_own(&ws->w[worker], mine))
            return false;
        s->sub[worker] = NULL;
        s->delivered[worker] = true;
    }
    for (size_t i = 0; i < ws->n; i++) {
        Batch *b = s->sub[i];
        if (!b || !b->n)
            continue;
        s->sub[i] = NULL;
        s->delivered[i] = true;
        /* the ids are set here, where the events were just written, so that the
         * owner's first touch of an event is a read (the prefetch in match_batch),
         * not a write that must take the line from this core's cache */
        for (size_t j = 0; j < b->n; j++)
            if (b->items[j].ev)
                b->items[j].ev->id = id_base + b->items[j].seq;
        b->upto = upto;
        /* never waits: the sending thread, seeing the backlog, stops reading, and the
         * batches out for decoding bound what passes QUEUE_ITEMS */
        if (queue_push_as(&ws->w[i], b, false) >= QUEUE_HIGH)
            atomic_store_explicit(&ws->backlogged, true, memory_order_relaxed);
    }
    s->delivered_upto = upto;
    if (s->n_unrouted) {
        give_back(&ws->w[s->home], s->unrouted, s->n_unrouted);
        s->n_unrouted = 0;
    }
    return true;
}

void workers_split_delivered(Workers *ws, WorkerSplit *s)
{
    for (size_t i = 0; i < ws->n; i++) {
        if (s->delivered[i] && s->delivered_upto > ws->w[i].sent_upto)
            ws->w[i].sent_upto = s->delivered_upto;
        s->delivered[i] = false;
    }
}

void workers_split_send(Workers *ws, WorkerSplit *s, uint64_t id_base, int64_t upto)
{
    for (size_t i = 0; i < ws->n; i++) {
        Batch *b = s->sub[i];
        if (!b || !b->n)
            continue;
        Worker *wk = &ws->w[i];
        if (wk->filling && wk->filling->n)
            send_filling(wk);   /* its events came first */
        s->sub[i] = NULL;
        b->id_base = id_base;
        b->upto = upto;
        if (upto > wk->sent_upto)
            wk->sent_upto = upto;
        if (queue_push(wk, b) >= QUEUE_HIGH)
            atomic_store_explicit(&ws->backlogged, true, memory_order_relaxed);
    }
    if (s->n_unrouted) {
        give_back(&ws->w[s->home], s->unrouted, s->n_unrouted);
        s->n_unrouted = 0;
    }
}

void workers_flush(Workers *ws)
{
    for (size_t i = 0; i < ws->n; i++)
        if (ws->w[i].filling && ws->w[i].filling->n)
            send_filling(&ws->w[i]);
}

void workers_publish(Workers *ws, int64_t upto)
{
    for (size_t i = 0; i < ws->n; i++) {
        Worker *wk = &ws->w[i];
        if (!wk->filling && upto > wk->sent_upto)
            wk->filling = batch_get(wk, ws->rs->n_rules);   /* time progress only */
        if (!wk->filling)
            continue;
        if (upto > wk->filling->upto)
            wk->filling->upto = upto;
        send_filling(wk);
    }
}

bool workers_backlogged(const Workers *ws)
{
    return atomic_load_explicit(&ws->backlogged, memory_order_relaxed);
}

/* Waits until worker wk's queue is down to QUEUE_LOW or the time `until` passes. */
static bool queue_drained(Worker *wk, const struct timespec *until)
{
    pthread_mutex_lock(&wk->lock);
    while (wk->queued > QUEUE_LOW &&
           pthread_cond_timedwait(&wk->nonfull, &wk->lock, until) == 0)
        ;
    bool drained = wk->queued <= QUEUE_LOW;
    pthread_mutex_unlock(&wk->lock);
    return drained;
}

bool workers_drain(Workers *ws, int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    bool drained = true;
    for (size_t i = 0; i < ws->n && drained; i++)
        drained = queue_drained(&ws->w[i], &until);
    if (drained)
        atomic_store_explicit(&ws->backlogged, false, memory_order_relaxed);
    return drained;
}

/* ---- the end ---------------------------------------------------------------- */

int workers_finish(Workers *ws, bool fire_timeouts, uint64_t *pending)
{
    if (!ws->finished) {
        ws->finished = true;
        for (size_t i = 0; i < ws->n; i++) {
            Worker *wk = &ws->w[i];
            if (!wk->started)
                continue;
            if (wk->filling)
                send_filling(wk);
            Batch *end = wk->end;
            wk->end = NULL;
            end->fire_timeouts = fire_timeouts;
            queue_push(wk, end);
        }
        for (size_t i = 0; i < ws->n; i++)
            if (ws->w[i].started) {
                pthread_join(ws->w[i].thread, NULL);
                ws->w[i].started = false;
            }
    }
    if (!ws->w)
        return -1;
    uint64_t left = 0;
    for (size_t i = 0; i < ws->n; i++)
        left += ws->w[i].pending;
    if (pending)
        *pending = left;
    return workers_failed(ws) ? -1 : 0;
}

/* ---- hot reload ------------------------------------------------------------- */

/* Sends what was routed and a pause to every worker, then waits until all paused.
 * -1 (nothing sent) if the pause batches cannot be allocated. */
static int pause_all(Workers *ws)
{
    Batch **pauses = calloc(ws->n, sizeof *pauses);
    bool ok = pauses != NULL;
    for (size_t i = 0; ok && i < ws->n; i++)
        ok = (pauses[i] = batch_new(BATCH_PAUSE, 0)) != NULL;
    if (!ok) {
        for (size_t i = 0; pauses && i < ws->n; i++)
            if (pauses[i])
                batch_free(pauses[i]);
        free(pauses);
        return -1;
    }
    for (size_t i = 0; i < ws->n; i++) {
        if (ws->w[i].filling)
            send_filling(&ws->w[i]);
        queue_push(&ws->w[i], pauses[i]);
    }
    free(pauses);
    pthread_mutex_lock(&ws->pause_lock);
    while (ws->paused < ws->n)
        pthread_cond_wait(&ws->pause_cond, &ws->pause_lock);
    pthread_mutex_unlock(&ws->pause_lock);
    return 0;
}

static void resume_all(Workers *ws)
{
    pthread_mutex_lock(&ws->pause_lock);
    ws->paused = 0;
    ws->resume_gen++;
    pthread_cond_broadcast(&ws->pause_cond);
    pthread_mutex_unlock(&ws->pause_lock);
}

int workers_pause(Workers *ws)
{
    return ws->finished ? 0 : pause_all(ws);
}

void workers_resume(Workers *ws)
{
    if (!ws->finished)
        resume_all(ws);
}

bool workers_failed(const Workers *ws)
{
    if (ws->failed)
        return true;
    for (size_t i = 0; i < ws->n; i++)
        if (ws->w[i].shard && shard_failed(ws->w[i].shard))
            return true;
    return false;
}

int workers_reload(Workers *ws, const CompiledRuleSet *next, const size_t *from,
                   void (*swap)(void *user), void *user)
{
    if (ws->finished || pause_all(ws) < 0)
        return -1;
    /* the workers are paused: their shards are ours until resume_all */
    ShardSwap **swaps = calloc(ws->n, sizeof *swaps);
    uint64_t *missing = lines_calloc_n(next->n_rules ? next->n_rules : 1, sizeof *missing);
    Router *router = router_new(next, true);
    bool ok = swaps && missing && router;
    for (size_t i = 0; ok && i < ws->n; i++)
        ok = (swaps[i] = shard_swap_prepare(ws->w[i].shard, next)) != NULL;
    if (!ok) {
        for (size_t i = 0; swaps && i < ws->n; i++)
            shard_swap_abort(swaps[i]);
        free(swaps);
        free(missing);
        router_free(router);
        resume_all(ws);
        return -1;
    }
    for (size_t i = 0; i < ws->n; i++)
        shard_swap_commit(ws->w[i].shard, swaps[i], from);
    for (size_t j = 0; j < next->n_rules; j++)
        missing[j] = from[j] == SIZE_MAX ? 0 : ws->missing_key[from[j]];
    free(ws->missing_key);
    router_free(ws->router);
    ws->missing_key = missing;
    ws->router = router;
    ws->rs = next;
    free(swaps);
    if (swap)
        swap(user);
    resume_all(ws);
    return 0;
}

void workers_rule_stats(const Workers *ws, size_t rule, EngineRuleStats *acc)
{
    acc->missing_key += ws->missing_key[rule];
    for (size_t i = 0; i < ws->n; i++)
        if (ws->w[i].shard)
            shard_add_rule_stats(ws->w[i].shard, rule, acc);
}

uint64_t workers_regex_limit_hits(const Workers *ws, bool paused)
{
    uint64_t n = expr_scratch_regex_limit_hits(ws->scratch);
    for (size_t i = 0; (paused || ws->finished) && i < ws->n; i++)
        if (ws->w[i].shard)
            n += shard_regex_limit_hits(ws->w[i].shard);
    return n;
}

size_t workers_count(const Workers *ws)
{
    return ws->n;
}

Shard *workers_shard(Workers *ws, size_t i)
{
    return ws->w[i].shard;
}

void workers_free(Workers *ws)
{
    if (!ws)
        return;
    workers_finish(ws, false, NULL);
    for (size_t i = 0; ws->w && i < ws->n; i++) {
        Worker *wk = &ws->w[i];
        while (wk->head) {
            Batch *b = wk->head;
            wk->head = b->next;
            batch_free(b);
        }
        if (wk->filling)
            batch_free(wk->filling);
        while (wk->spare) {
            Batch *b = wk->spare;
            wk->spare = b->next;
            batch_free(b);
        }
        for (size_t j = 0; j < wk->n_returns; j++)
            event_release(wk->returns[j]);
        for (size_t j = wk->at_draining; j < wk->n_draining; j++)
            event_release(wk->draining[j]);
        free(wk->returns);
        free(wk->draining);
        event_cache_free(wk->cache);
        if (wk->end)
            batch_free(wk->end);
        shard_free(wk->shard);
        if (wk->owner) {
            pthread_mutex_destroy(&wk->lock);
            pthread_cond_destroy(&wk->nonempty);
            pthread_cond_destroy(&wk->nonfull);
        }
    }
    if (ws->pause_ready) {
        pthread_mutex_destroy(&ws->pause_lock);
        pthread_cond_destroy(&ws->pause_cond);
        pthread_mutex_destroy(&ws->job_lock);
        pthread_cond_destroy(&ws->job_cond);
    }
    for (size_t i = 0; ws->n_unrouted && i < ws->n; i++)
        for (size_t j = 0; j < ws->n_unrouted[i]; j++)
            event_release(ws->unrouted[i * UNROUTED_BATCH + j]);
    free(ws->unrouted);
    free(ws->n_unrouted);
    free(ws->w);
    free(ws->copies);
    free(ws->missing_key);
    router_free(ws->router);
    if (ws->scratch)
        expr_scratch_free(ws->scratch);
    free(ws);
}
