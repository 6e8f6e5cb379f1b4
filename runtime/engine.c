/* runtime/engine.c — the engine's front: decode, time, reorder and release, then
 * matching inline (one Shard) or on worker threads (runtime/workers.h), which then
 * decode the lines too (parallel decoding, below), and on one regular file read them
 * too (reading on the workers, FeedReader). */
#include "runtime/engine.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/lines.h"
#include "nfa/snapshot.h"
#include "runtime/budget.h"
#include "runtime/checkpoint.h"
#include "runtime/decode.h"
#include "runtime/evtime.h"
#include "runtime/partition.h"
#include "runtime/reorder.h"
#include "runtime/shard.h"
#include "runtime/workers.h"

/* ---- parallel decoding (--workers N) --------------------------------------------
 * Decoding (JSON scan, number and time parsing) is most of the work per event. With
 * workers, the lines are gathered into batches that the worker threads decode (each
 * with its own decoder) while this thread goes on: where the input read them, whose
 * buffer the batch holds until it is taken (engine_input_line), else copied; the decoded batches then come
 * back here strictly in input order, and everything after decoding (the clock, dead
 * letters, lateness, reordering, routing) runs exactly as inline. Every entry point
 * that observes or changes the state first processes the lines handed in so far
 * (feed_flush), so nothing outside sees the delay; a tick only those of earlier
 * turns (feed_tick). A batch of only good events in time order is also split by owner
 * worker while decoding; if the reorder buffer passes it whole, the parts go to their
 * owners without this thread touching an event (split_batch, feed_take_split). Usually
 * the decoding job itself decides that and hands them on, when every batch before its
 * own went out already (feed_deliver, FeedChain): this thread then only counts it.
 * While a batch is in order so far, a line that only blanks take (route.h) gives its
 * event back right after routing, for the next line to decode into (Decoded.freed).
 * Each batch slot's jobs go to one worker (slot mod N), so that a slot's arrays stay
 * in that core's cache. */

/* A batch closes at this many lines or bytes. Since lines are no longer copied, 512
 * lines measured a few per cent fewer perf samples than 256 on scenario 1 (fewer
 * hand-offs and context switches); 1024 no better than 512. Each batch's events are
 * allocated in one burst, within the workers' event caches. */
#define FEED_BATCH_LINES 512
#define FEED_BATCH_BYTES (64u << 10)
/* Batches out for decoding at most, per worker: the lines decoded ahead. */
#define FEED_BATCHES_PER_WORKER 4
/* Decoded events fetched this many lines ahead of the one being taken. */
#define FEED_PREFETCH 4
/* Inline matching frees most events right after matching them: a few batches' worth
 * of freed events to reuse (EventCache) is plenty. */
#define ENGINE_CACHE_BYTES ((size_t)256 << 10)

/* What decoding made of one line: the event (NULL: err says why) and, on event
 * time, its time (timed false: the time field is missing or unparsable). A failed
 * line needs only err, a good one only its time and routes, so they share room.
 * Written only by the decoding thread, in an array of its own (FeedBatch.out), so
 * that the reading thread's writes of the next lines never share its cache lines. */
typedef struct Decoded {
    Event *ev;                 /* one reference, owned until handed to take_decoded */
    union {
        DecodeError err;       /* ev NULL */
        struct {
            int64_t time_ms;   /* timed */
            uint32_t route_first, n_routes;   /* routed: its routes in FeedBatch.routes */
        };
    };
    bool timed;
    bool routed;               /* routed by the decoding thread (event time) */
    bool freed;                /* routed to blanks only (or to no rule) in a batch in order
                                  so far: its event went back to the decoding worker's
                                  cache at once, for the next line, since a split needs
                                  only its time; decoded again (feed_redecode) if the
                                  batch is taken line by line after all */
} Decoded;

/* A line's bytes in the batch (feed_text): all that the reading thread writes per
 * line. A batch's text stays below 4 GiB (feed_add refuses a line that would pass it:
 * the line is then taken on the engine's thread), so 32-bit offsets do. */
typedef struct FeedText {
    uint32_t off, len;
} FeedText;

/* The reading thread fills a batch with consecutive lines of one origin that arrived
 * at one now_ms (another line closes the batch first), so where each line came from
 * is written once per batch, not once per line. */
typedef struct FeedBatch {
    /* batches out at once are decoded on different cores, each writing its own for
     * every line: their lines are their own (base/lines.h) */
    _Alignas(LINES_ALIGN) WorkerJob job;
    struct Engine *e;          /* its decoders and rules; they change only with no batch out */
    const char *origin;        /* the lines' origin, */
    uint64_t first_line;       /* the first line's number (line i is first_line + i) */
    int64_t now_ms;            /* and arrival time */
    bool rejected;             /* its one line is from engine_reject: its reason,
                                  NUL-terminated, follows the line's bytes in text */
    /* The lines lie where the input read them (engine_input_line: no copy), in `kept`
     * from `lent` on, or (kept NULL) were copied into text. */
    InputText *kept;           /* one reference while the batch holds lines, or NULL */
    const char *lent;
    Buf text;                  /* the lines' bytes, owned, reused */
    FeedText *lines;           /* owned, reused; written by the reading thread */
    Decoded *out;              /* owned, reused; written by the decoding thread */
    size_t n, cap;             /* lines and out have cap entries */
    WorkerRoute *routes;       /* the lines' routes, owned, reused */
    size_t n_routes, routes_cap;
    Buf keys;                  /* the routes' key bytes, owned, reused */
    WorkerSplit *split;        /* owned: the events split by owner worker (fast path) */
    bool split_ok;             /* the job split every line: the lines' events are then
                                  borrowed from the split, which holds them */
    uint64_t seq;              /* the batch's number in input order */
    atomic_uint_least64_t decoded;   /* seq + 1 once its job decoded and split it (release) */
    bool delivered;            /* under FeedChain.lock: the job delivered the split itself
                                  (feed_deliver); the engine's thread only counts it */
    bool eof;                  /* reading job: the input ended at or before this batch */
} FeedBatch;

/* What a decoding thread needs to route events as well (filters and keys, on event
 * time, where an event's time is known once decoded): the router_route_all arrays. */
typedef struct FeedRouter {
    Router *router;
    EvalScratch *scratch;
    size_t *order;             /* n_rules each */
    RouteResult *res;
    const RouteKey **key;      /* the router's */
} FeedRouter;

/* Where the fast path stands, so that a decoding job can take its batch's fast path
 * itself (feed_deliver) when every batch before has been delivered: the batch `seq`
 * comes next, and what the reorder buffer and the ids would be by then. The engine's
 * thread sets it when it takes a batch the job did not deliver (and when it submits
 * one with none out), a job when it delivers its batch. */
typedef struct FeedChain {
    pthread_mutex_t lock;      /* jobs only try it: they never wait for the engine's thread */
    uint64_t seq;
    bool ok;                   /* nothing buffered, nothing routed but not yet queued */
    Reorder reorder;           /* a copy of the scalars: its heap is never touched */
    uint64_t next_id;
} FeedChain;

/* Reading on the workers (engine_read_start): with one regular file on event time a
 * reading job takes the reader's lock, reads the next chunk into its batch after the
 * partial line the previous chunk left, frames and numbers the lines and takes the
 * next seq, then decodes and routes them as any job, on the same core. The engine's
 * thread only hands out jobs and takes the batches back in seq order (input order): a
 * batch's slot in the ring says nothing of its place, so `out` says which are out. */
typedef struct FeedReader {
    pthread_mutex_t lock;
    int fd;                    /* borrowed */
    const char *origin;        /* borrowed */
    char overlong[64];         /* the reason an over-long line is rejected with */
    /* under lock, by the jobs: */
    uint64_t next_seq;         /* of the next chunk read */
    uint64_t line_no;          /* lines started so far */
    uint64_t bytes;            /* read so far */
    Buf carry;                 /* the partial line after the last chunk read */
    InputFramer frame;         /* max_line, and whether an over-long line is being skipped */
    bool eof;                  /* read() returned 0 or failed */
    int error;                 /* errno of the failed read, or 0 */
    bool failed;               /* out of memory: the reading stopped */
    /* the engine's thread only: */
    bool *out;                 /* per ring slot: its reading job is out */
    uint64_t *order;           /* per ring slot: when it was handed out */
    size_t n_out;
    uint64_t handed, take;     /* jobs handed out so far; seq of the next batch to take */
    bool ended;                /* the batch that met the end was taken */
} FeedReader;

/* A reading job's chunk: read() at most this much. Each job costs its worker and the
 * engine's thread a few wake-ups: on a VM that halts idle vCPUs (the Xeon of
 * docs/perf/workers.md) scenario 1 with two workers made 133k context switches with
 * 40 KiB and 42k with 128 KiB, and took CPU 3.94 -> 3.815 s and 4.195 -> 3.82 s
 * (medians of 8 rounds in turns, two sets). On the AMD VM, before lines that only
 * blanks take were freed at once, 40 KiB had measured best (64 KiB with 8 batches per
 * worker clearly worse, 24 KiB the same). */
#define FEED_READ_BYTES (128u << 10)

/* A ring of batches: ring[oldest] .. the next in_flight are out for decoding, the
 * one after them is being filled (so in_flight < n_ring). The newest `fresh` of
 * those out were sent since the last tick. */
typedef struct Feed {
    FeedBatch *ring;
    size_t n_ring, oldest, in_flight, fresh;
    uint64_t next_seq;         /* of the next batch submitted */
    FeedChain chain;
    bool chain_ready;          /* its lock is initialised */
    Decoder **decoders;        /* per worker; owned */
    FeedRouter *routers;       /* per worker; owned */
    FeedReader *reader;        /* owned: the workers read the input (engine_read_start), or NULL */
    size_t max_line;           /* lines longer are over-long dead letters: only when reading
                                  (FeedReader.frame), else SIZE_MAX */
    int read_error;            /* errno of the reader's failed read, once it ended */
    uint64_t read_bytes;       /* what it read, once it ended */
} Feed;

struct Engine {
    const CompiledRuleSet *rs;
    EngineHooks hooks;         /* the caller's sink and warning hook */
    NfaLimits limits;
    Decoder *decoder;
    EventCache *cache;         /* inline matching: the freed events decoding reuses */
    Reorder reorder;
    Shard *shard;              /* inline matching (one worker), or NULL */
    Workers *workers;          /* N > 1 workers, or NULL */
    Buf reason;                /* scratch for dead-letter reasons */
    EngineStats stats;
    uint64_t next_id;
    int64_t clock_ms;          /* latest processing time handed out (never goes back) */
    int64_t released_ms;       /* time of the latest released event */
    size_t n_workers;
    MemBudget budget;          /* --max-memory: every thread's state; hooks.budget points here */
    MemShare mem;              /* the reorder buffer's part */
    int64_t buffered_bytes;    /* of which the reorder buffer's events (charge_buffered) */
    int64_t buffer_warned_ms;  /* last "buffer fills the budget" warning (monotonic), or INT64_MIN */
    size_t max_buffered;
    uint64_t early_warned;     /* stats.released_early at the last warning */
    int64_t early_warned_ms;   /* when (monotonic), or INT64_MIN */
    bool draining;             /* a backpressure pause is on (counted once) */
    bool failed;               /* an allocation failed: the run must end with an error */
    char **origins;            /* origin strings of restored events (engine_restore); heap */
    size_t n_origins;
    Feed feed;                 /* with workers: lines out for decoding */
    Event *pre_ev;             /* the decoded event take_decoded handles, until released: */
    const FeedBatch *pre_batch;   /* its batch (the worker that allocated it) */
    const Decoded *pre_out;       /* and what its line decoded to (its routes, if routed) */
};

static char *dup_message(const char *msg)
{
    char *s = malloc(strlen(msg) + 1);
    if (s)
        strcpy(s, msg);
    return s;
}

/* One per worker, each allocating from its worker's event cache. */
static Decoder **decoders_new(const CompiledRuleSet *rs, Workers *workers, size_t n)
{
    Decoder **d = calloc(n, sizeof *d);
    for (size_t i = 0; d && i < n; i++) {
        if (!(d[i] = decoder_new(&rs->fields, DECODE_MAX_DEPTH))) {
            while (i--)
                decoder_free(d[i]);
            free(d);
            return NULL;
        }
        decoder_set_cache(d[i], workers_event_cache(workers, i));
    }
    return d;
}

static void decoders_free(Decoder **d, size_t n)
{
    for (size_t i = 0; d && i < n; i++)
        decoder_free(d[i]);
    free(d);
}

static void routers_free(FeedRouter *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++) {
        router_free(r[i].router);
        if (r[i].scratch)
            expr_scratch_free(r[i].scratch);
        free(r[i].order);
        free(r[i].res);
        free(r[i].key);
    }
    free(r);
}

static FeedRouter *routers_new(const CompiledRuleSet *rs, size_t n)
{
    FeedRouter *r = calloc(n, sizeof *r);
    size_t rules = rs->n_rules ? rs->n_rules : 1;
    bool ok = r != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        r[i].router = router_new(rs, true);
        r[i].scratch = expr_scratch_new();
        r[i].order = lines_calloc_n(rules, sizeof *r[i].order);
        r[i].res = lines_calloc_n(rules, sizeof *r[i].res);
        r[i].key = lines_calloc_n(rules, sizeof *r[i].key);
        ok = r[i].router && r[i].scratch && r[i].order && r[i].res && r[i].key;
    }
    if (!ok) {
        routers_free(r, n);
        return NULL;
    }
    return r;
}

static void decode_line(Decoder *d, const CompiledRuleSet *rs, const char *text, size_t len,
                        Decoded *out)
{
    out->err = (DecodeError){0};
    out->ev = decoder_decode(d, text, len, &out->err);
    out->timed = out->ev && rs->event_time &&
                 evtime_parse(&out->ev->slots[rs->time_slot], rs->time_format, &out->time_ms);
}

/* Where the batch's lines are: FeedText.off counts from here. */
static inline const char *feed_text(const FeedBatch *b)
{
    return b->kept ? b->lent : b->text.data;
}

/* The batch holds no line any more: ready to be filled again. */
static void feed_empty(FeedBatch *b)
{
    b->n = 0;
    buf_clear(&b->text);
    input_text_release(b->kept);
    b->kept = NULL;
}

/* buf_reserve for the batches' buffers, without a call per line when the room is
 * there (their `failed` is never left set: a failed reserve resets it). */
static inline bool feed_reserve(Buf *b, size_t extra)
{
    return b->cap - b->len > extra || buf_reserve(b, extra);
}

/* Filters and keys of every rule for a decoded, timed line; without memory for its
 * routes, or for evaluating a filter or key (whose result is then not the
 * expression's), the line stays unrouted (the engine's thread routes it). */
static void route_line(FeedBatch *b, FeedRouter *fr, Decoded *o)
{
    Event *ev = o->ev;
    ev->time_ms = o->time_ms;   /* time() in filters and keys */
    uint64_t oom_before = expr_scratch_out_of_memory(fr->scratch);
    size_t n = router_route_all(fr->router, ev, fr->scratch, fr->order, fr->res, fr->key);
    if (expr_scratch_out_of_memory(fr->scratch) != oom_before) {
        expr_scratch_reset(fr->scratch);
        return;
    }
    size_t key_bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (route_keyed(fr->res[fr->order[i]]))
            key_bytes += fr->key[fr->order[i]]->len;
    if (b->n_routes + n > b->routes_cap) {
        size_t cap = b->routes_cap ? b->routes_cap : FEED_BATCH_LINES;
        while (cap < b->n_routes + n)
            cap *= 2;
        WorkerRoute *g = realloc(b->routes, cap * sizeof *g);
        if (g) {
            b->routes = g;
            b->routes_cap = cap;
        }
    }
    if (b->n_routes + n > b->routes_cap || b->n_routes + n > UINT32_MAX
        || !feed_reserve(&b->keys, key_bytes)) {
        b->keys.failed = false;
        expr_scratch_reset(fr->scratch);
        return;
    }
    o->route_first = (uint32_t)b->n_routes;
    o->n_routes = (uint32_t)n;
    /* rules keyed alike share the router's RouteKey, and mostly come one after the
     * other: their routes share one copy of its bytes, which the split and the worker
     * then tell apart by offset and by pointer */
    const RouteKey *last = NULL;
    size_t last_off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ri = fr->order[i];
        WorkerRoute *r = &b->routes[b->n_routes++];
        *r = (WorkerRoute){.rule = ri, .res = fr->res[ri]};
        if (!route_keyed(r->res))
            continue;
        const RouteKey *k = fr->key[ri];
        r->key_len = k->len;
        r->hash = k->hash;
        if (k != last) {
            last = k;
            last_off = b->keys.len;
            buf_append_inline(&b->keys, k->bytes, r->key_len);
        }
        r->key_off = last_off;
    }
    expr_scratch_reset(fr->scratch);
    o->routed = true;
}

/* The fast path's half on the decoding thread: a batch of only timed, routed events in
 * time order (decode_batch checked it while decoding) is split by owner worker here,
 * so that, if the reorder buffer passes its times (feed_take), the engine's thread
 * hands on sub-batches without touching an event. The lines' references go to the
 * split. */
static bool split_batch(FeedBatch *b, size_t worker)
{
    for (size_t i = 0; i < b->n; i++) {
        const Decoded *o = &b->out[i];
        if (workers_split_add(b->e->workers, b->split, worker, o->ev, o->time_ms,
                              &b->routes[o->route_first], o->n_routes, b->keys.data, i) < 0) {
            for (size_t k = 0; k < i; k++)   /* the lines split so far own theirs again */
                if (b->out[k].ev)
                    event_retain(b->out[k].ev);
            workers_split_clear(b->split);
            return false;
        }
    }
    return true;
}

/* Does a routed line need its event past the split: a route other than a blank? */
static bool needs_event(const FeedBatch *b, const Decoded *o)
{
    for (uint32_t k = 0; k < o->n_routes; k++)
        if (b->routes[o->route_first + k].res != ROUTE_BLANK)
            return true;
    return false;
}

/* The freed lines' events again, with d, for a batch taken line by line after all (its
 * split failed, or the reorder buffer holds events): the same decoding of the same
 * text, its time and routes kept. A line that finds no memory now carries decoding's
 * "out of memory", which fails the run when taken. */
static void feed_redecode(FeedBatch *b, Decoder *d, const CompiledRuleSet *rs)
{
    if (b->rejected)
        return;   /* its one line was never decoded (its out entry is not set) */
    const char *text = feed_text(b);
    for (size_t i = 0; i < b->n; i++) {
        Decoded *o = &b->out[i];
        if (!o->freed)
            continue;
        Decoded again;
        decode_line(d, rs, text + b->lines[i].off, b->lines[i].len, &again);
        o->freed = false;
        o->ev = again.ev;
        if (!o->ev) {
            o->err = again.err;
            continue;
        }
        o->ev->origin = b->origin;
        o->ev->origin_line = b->first_line + i;
        o->ev->time_ms = o->time_ms;
    }
}

/* The batch numbered seq, which follows b in input order, if it is decoded; else NULL.
 * Batches go out in ring order, except reading jobs, which number theirs as they read. */
static FeedBatch *feed_decoded_after(Feed *f, FeedBatch *b, uint64_t seq)
{
    if (!f->reader) {
        size_t next = (size_t)(b - f->ring) + 1;
        b = &f->ring[next < f->n_ring ? next : 0];
        return atomic_load_explicit(&b->decoded, memory_order_acquire) == seq + 1 ? b : NULL;
    }
    for (size_t i = 0; i < f->n_ring; i++)
        if (atomic_load_explicit(&f->ring[i].decoded, memory_order_acquire) == seq + 1)
            return &f->ring[i];
    return NULL;
}

/* The fast path on the decoding thread, when every batch before this one went out
 * already: the same decision as the engine's thread would make (feed_take_split),
 * from the same state; then this job hands the parts to their owners itself, and this
 * worker matches its own part right after, while its events are in its cache. The
 * batches after it that were decoded meanwhile go out the same way. If the engine's
 * thread holds the chain, or a batch before is not out yet, the engine's thread takes
 * this one as usual. */
static void feed_deliver(FeedBatch *b, size_t worker)
{
    Feed *f = &b->e->feed;
    FeedChain *c = &f->chain;
    if (pthread_mutex_trylock(&c->lock) != 0)
        return;
    /* no batch from c->seq on can be taken (nor its slot reused) while this holds the lock */
    while (c->seq == b->seq && c->ok && b->split_ok) {
        int64_t first = b->out[0].time_ms, last = b->out[b->n - 1].time_ms;
        Reorder r = c->reorder;
        if (!reorder_pass_sorted(&r, first, last, b->n) ||
            !workers_split_deliver(b->e->workers, b->split, worker, c->next_id + 1, last))
            break;
        c->reorder = r;
        c->next_id += b->n;
        c->seq++;
        b->delivered = true;
        if (!(b = feed_decoded_after(f, b, c->seq)))
            break;   /* not decoded yet (or not submitted): its own job goes on */
    }
    pthread_mutex_unlock(&c->lock);
}

static inline bool feed_room(FeedBatch *b);

static int64_t wall_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Line [off, off + len) of b->text as the next line; a line over max_line keeps its
 * length there, which marks it over-long (reader locked). False without memory. */
static bool read_line(FeedBatch *b, FeedReader *r, size_t off, size_t len)
{
    if (b->n == b->cap && !feed_room(b))
        return false;
    b->lines[b->n++] = (FeedText){(uint32_t)off, (uint32_t)len};
    r->line_no++;
    return true;
}

/* Frames b->text into lines with the input layer's framer (runtime/input.h), the
 * first `scanned` bytes known to hold no newline: the partial line at its end goes to
 * the reader's carry, or is the last line at the end of the input; an over-long line
 * keeps its length, which marks it (read_line). Reader locked; false without memory. */
static bool read_frame(FeedBatch *b, FeedReader *r, size_t scanned, bool end)
{
    const char *data = b->text.data, *stop = data + b->text.len;
    const char *p = data, *scan = data + scanned;
    size_t len;
    InputFrameKind kind;
    while ((kind = input_frame_next(&r->frame, p, scan, stop, &len)) != INPUT_FRAME_NONE) {
        if (kind != INPUT_FRAME_SKIP && !read_line(b, r, (size_t)(p - data), len))
            return false;
        p = scan = p + len + 1;
    }
    size_t rest = (size_t)(stop - p);
    kind = input_frame_rest(&r->frame, rest);
    if (kind == INPUT_FRAME_SKIP || !rest)
        return true;
    if (kind == INPUT_FRAME_OVERLONG || end)
        return read_line(b, r, (size_t)(p - data), rest);
    buf_append(&r->carry, p, rest);
    return !r->carry.failed;
}

/* A reading job's read: the next chunk of the input into b, after the carry, in turn.
 * Once the input ended (or failed) every later batch is empty and says so. */
static void feed_read(FeedBatch *b, FeedReader *r, bool event_time)
{
    b->n = 0;
    b->rejected = false;
    b->kept = NULL;
    b->origin = r->origin;
    b->now_ms = event_time ? 0 : wall_clock_ms();   /* arrival, after a reload to it */
    buf_clear(&b->text);
    pthread_mutex_lock(&r->lock);
    b->seq = r->next_seq++;
    b->first_line = r->line_no + 1;
    if (!r->eof && !feed_reserve(&b->text, r->carry.len + FEED_READ_BYTES)) {
        b->text.failed = false;
        r->failed = r->eof = true;
    }
    if (!r->eof) {
        size_t carried = r->carry.len;   /* holds no newline */
        if (carried)
            memcpy(b->text.data, r->carry.data, carried);
        b->text.len = carried;
        buf_clear(&r->carry);
        ssize_t got;
        do
            got = read(r->fd, b->text.data + b->text.len, FEED_READ_BYTES);
        while (got < 0 && errno == EINTR);
        if (got < 0)
            r->error = errno;
        else
            b->text.len += (size_t)got;
        r->bytes += got > 0 ? (uint64_t)got : 0;
        r->eof = got <= 0;
        if (!read_frame(b, r, carried, got == 0))   /* a failed read's partial line is lost */
            r->failed = r->eof = true;
    }
    b->eof = r->eof;
    pthread_mutex_unlock(&r->lock);
}

/* The job, on worker `worker`. */
static void decode_batch(void *arg, size_t worker)
{
    FeedBatch *b = arg;
    const Engine *e = b->e;
    if (e->feed.reader)
        feed_read(b, e->feed.reader, e->rs->event_time);
    Decoder *d = e->feed.decoders[worker];
    FeedRouter *fr = &e->feed.routers[worker];
    b->n_routes = 0;
    buf_clear(&b->keys);
    workers_reclaim(e->workers, worker);   /* the memory this batch's events reuse */
    const char *text = feed_text(b);
    EventCache *cache = workers_event_cache(e->workers, worker);
    /* so far every line timed, routed and in time order: the batch may be split */
    bool in_order = b->split && e->rs->event_time && !b->rejected;
    int64_t prev = INT64_MIN;
    for (size_t i = 0; i < b->n && !b->rejected; i++) {
        Decoded *o = &b->out[i];
        o->routed = o->freed = false;
        if (b->lines[i].len > e->feed.max_line) {
            o->ev = NULL;   /* over-long: a dead letter when taken */
            in_order = false;
            continue;
        }
        decode_line(d, e->rs, text + b->lines[i].off, b->lines[i].len, o);
        if (o->ev) {   /* while it is in the cache (the fast path needs them) */
            o->ev->origin = b->origin;
            o->ev->origin_line = b->first_line + i;
        }
        if (o->ev && o->timed)
            route_line(b, fr, o);
        in_order = in_order && o->routed && o->time_ms >= prev;
        if (!in_order)
            continue;
        prev = o->time_ms;
        if (!needs_event(b, o)) {
            event_cache_release(cache, o->ev);
            o->ev = NULL;
            o->freed = true;
        }
    }
    b->split_ok = b->n && in_order && split_batch(b, worker);
    if (!b->split_ok)
        feed_redecode(b, d, e->rs);
    atomic_store_explicit(&b->decoded, b->seq + 1, memory_order_release);
    feed_deliver(b, worker);
}

static int feed_init(Engine *e)
{
    Feed *f = &e->feed;
    f->n_ring = e->n_workers * FEED_BATCHES_PER_WORKER;
    f->max_line = SIZE_MAX;
    f->ring = lines_calloc(f->n_ring * sizeof *f->ring);
    f->decoders = decoders_new(e->rs, e->workers, e->n_workers);
    f->routers = routers_new(e->rs, e->n_workers);
    if (!f->ring || !f->decoders || !f->routers || pthread_mutex_init(&f->chain.lock, NULL))
        return -1;
    f->chain_ready = true;
    for (size_t i = 0; i < f->n_ring; i++) {
        f->ring[i].e = e;
        f->ring[i].job.run = decode_batch;
        f->ring[i].job.arg = &f->ring[i];
        atomic_init(&f->ring[i].job.done, false);
        atomic_init(&f->ring[i].decoded, 0);
        if (!(f->ring[i].split = workers_split_new(e->workers)))
            return -1;
    }
    return 0;
}

/* The lines of a split batch own their events again; the split is empty. */
static void feed_unsplit(FeedBatch *b)
{
    if (!b->split_ok)
        return;
    if (b->delivered) {   /* only when the engine ends without taking it: drop it */
        for (size_t i = 0; i < b->n; i++)
            b->out[i].ev = NULL;   /* their owners have them */
        b->split_ok = b->delivered = false;
        return;
    }
    for (size_t i = 0; i < b->n; i++)
        if (b->out[i].ev)
            event_retain(b->out[i].ev);
    workers_split_clear(b->split);
    b->split_ok = false;
    feed_redecode(b, b->e->decoder, b->e->rs);
}

/* The events of a decoded batch not taken. */
static void feed_drop_decoded(FeedBatch *b)
{
    feed_unsplit(b);
    for (size_t j = 0; j < b->n && !b->rejected; j++)
        if (b->out[j].ev)
            event_release(b->out[j].ev);
}

static void reader_free(FeedReader *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    buf_free(&r->carry);
    free(r->out);
    free(r->order);
    free(r);
}

/* Call with every job run (the workers joined, or every batch processed): the
 * batches out are decoded, the one being filled never was. */
static void feed_free(Engine *e)
{
    Feed *f = &e->feed;
    for (size_t k = 0; f->ring && k < f->in_flight; k++)
        feed_drop_decoded(&f->ring[(f->oldest + k) % f->n_ring]);
    for (size_t i = 0; f->reader && i < f->n_ring; i++)
        if (f->reader->out[i])
            feed_drop_decoded(&f->ring[i]);
    reader_free(f->reader);
    for (size_t i = 0; f->ring && i < f->n_ring; i++) {
        FeedBatch *b = &f->ring[i];
        workers_split_free(b->split);
        input_text_release(b->kept);
        buf_free(&b->text);
        free(b->lines);
        free(b->out);
        free(b->routes);
        buf_free(&b->keys);
    }
    free(f->ring);
    if (f->chain_ready)
        pthread_mutex_destroy(&f->chain.lock);
    decoders_free(f->decoders, e->n_workers);
    routers_free(f->routers, e->n_workers);
}

Engine *engine_new(const CompiledRuleSet *rs, const EngineOptions *opts,
                   const EngineSink *sink, char **err)
{
    Engine *e = calloc(1, sizeof *e);
    if (!e)
        goto oom;
    e->rs = rs;
    e->hooks.sink = *sink;
    e->limits.max_partials = opts && opts->max_partials ? opts->max_partials
                                                         : ENGINE_DEFAULT_MAX_PARTIALS;
    e->clock_ms = INT64_MIN;
    e->released_ms = INT64_MIN;
    atomic_init(&e->budget.used, 0);
    e->hooks.budget = &e->budget;
    e->mem.budget = &e->budget;
    e->max_buffered = ENGINE_DEFAULT_MAX_BUFFERED;
    e->early_warned_ms = INT64_MIN;
    e->buffer_warned_ms = INT64_MIN;
    reorder_init(&e->reorder, rs->event_time ? rs->lateness_ms : 0);
    e->decoder = decoder_new(&rs->fields, DECODE_MAX_DEPTH);
    if (!e->decoder)
        goto oom;
    e->n_workers = opts && opts->workers > 1 ? opts->workers : 1;
    if (e->n_workers > 1) {
        e->workers = workers_new(rs, e->n_workers, &e->limits, &e->hooks, !rs->event_time);
        if (!e->workers && errno != ENOMEM) {
            char msg[128];
            snprintf(msg, sizeof msg, "cannot start the worker threads: %s", strerror(errno));
            engine_free(e);
            *err = dup_message(msg);
            return NULL;
        }
        if (!e->workers || feed_init(e) < 0)
            goto oom;
    } else if (!(e->shard = shard_new(rs, &e->limits, &e->hooks)) ||
               !(e->cache = event_cache_new(ENGINE_CACHE_BYTES))) {
        goto oom;
    }
    decoder_set_cache(e->decoder, e->cache);
    return e;
oom:
    engine_free(e);
    *err = dup_message("out of memory while starting the engine");
    return NULL;
}

static void drop_event(void *item)
{
    event_release(item);
}

void engine_free(Engine *e)
{
    if (!e)
        return;
    workers_free(e->workers);   /* joins the workers: every job they had has run */
    feed_free(e);
    shard_free(e->shard);
    reorder_free(&e->reorder, drop_event);
    buf_free(&e->reason);
    if (e->decoder)
        decoder_free(e->decoder);
    event_cache_free(e->cache);
    for (size_t i = 0; i < e->n_origins; i++)
        free(e->origins[i]);
    free(e->origins);
    free(e);
}

void engine_set_warn(Engine *e, void (*warn)(void *user, const char *msg), void *user)
{
    e->hooks.warn = warn;
    e->hooks.warn_user = user;
}

void engine_set_limits(Engine *e, const EngineLimits *limits)
{
    e->budget.limit = limits->max_memory <= INT64_MAX ? (int64_t)limits->max_memory : 0;
    e->max_buffered = limits->max_buffered ? limits->max_buffered : ENGINE_DEFAULT_MAX_BUFFERED;
}

static bool engine_failed(const Engine *e)
{
    return e->failed || (e->shard && shard_failed(e->shard));
}

/* ---- released events -------------------------------------------------------- */

/* The event likely to be matched after the one being matched, for the shard to load
 * its keys' records meanwhile: the reorder buffer's oldest (released next unless an
 * older one arrives first), or NULL. Where nothing waits (in-order input without
 * lateness, processing time) the next line is not decoded ahead for this: its event
 * would go cold in the cache while the current one is matched (scenario 4: 20 % more
 * L1 misses, 5 % more CPU time), which costs more than the lookup's misses. */
static const Event *expected_next(const Engine *e)
{
    return reorder_peek(&e->reorder);
}

/* Takes over the reference to ev. */
static void match_event(Engine *e, Event *ev)
{
    e->released_ms = ev->time_ms;
    if (e->workers) {
        int rc;
        const Decoded *o = ev == e->pre_ev ? e->pre_out : NULL;
        size_t home = o ? e->pre_batch->job.worker : SIZE_MAX;
        if (o)
            e->pre_ev = NULL;
        if (o && o->routed)
            rc = workers_dispatch_routed(e->workers, ev, &e->pre_batch->routes[o->route_first],
                                         o->n_routes, e->pre_batch->keys.data, home);
        else
            rc = workers_dispatch(e->workers, ev, home);
        if (rc < 0)
            e->failed = true;
        return;
    }
    shard_event_ahead(e->shard, ev, expected_next(e));
    event_cache_release(e->cache, ev);
}

/* Every reorder buffer charge goes through here, so the buffer's share of the budget
 * is known when it alone spends it (warn_buffer_over_budget). */
static void charge_buffered(Engine *e, int64_t delta)
{
    e->buffered_bytes += delta;
    budget_add(&e->mem, delta);
}

static void release_ready(Engine *e)
{
    Event *ev;
    while ((ev = reorder_pop_ready(&e->reorder, NULL))) {
        charge_buffered(e, -(int64_t)budget_event_bytes(ev));
        match_event(e, ev);
    }
}

/* Events released early lose their lateness: later ones older than them are late. */
static void warn_released_early(Engine *e)
{
    if (e->stats.released_early == e->early_warned || !e->hooks.warn)
        return;
    if (!clock_period_passed(&e->early_warned_ms, SHARD_CAP_WARN_PERIOD_MS))
        return;
    char msg[256];
    snprintf(msg, sizeof msg, "reorder buffer full (%zu events): %llu events released before "
             "the watermark (%llu so far); raise --max-buffered or lower the lateness",
             e->max_buffered, (unsigned long long)(e->stats.released_early - e->early_warned),
             (unsigned long long)e->stats.released_early);
    e->early_warned = e->stats.released_early;
    e->hooks.warn(e->hooks.warn_user, msg);
}

/* The reorder buffer is part of the --max-memory budget (docs/run.md), and with event
 * time it fills before the first event reaches any key: events wait out the
 * lateness. When it alone spends the budget every new key is refused however few
 * keys there are, which the refusal warning cannot explain, so say it here. */
static void warn_buffer_over_budget(Engine *e)
{
    if (!e->budget.limit || e->buffered_bytes < e->budget.limit || !e->hooks.warn)
        return;
    if (!clock_period_passed(&e->buffer_warned_ms, SHARD_CAP_WARN_PERIOD_MS))
        return;
    char msg[320];
    snprintf(msg, sizeof msg, "the reorder buffer alone (%zu events waiting out the lateness, "
             "about %lld bytes) fills --max-memory (%lld bytes): new keys are refused; raise "
             "--max-memory above it or lower the lateness",
             reorder_size(&e->reorder), (long long)e->buffered_bytes,
             (long long)e->budget.limit);
    e->hooks.warn(e->hooks.warn_user, msg);
}

/* A full buffer releases its oldest events early rather than drop or refuse any. */
static void release_overflow(Engine *e)
{
    while (reorder_size(&e->reorder) > e->max_buffered) {
        Event *ev = reorder_pop_oldest(&e->reorder, NULL);
        charge_buffered(e, -(int64_t)budget_event_bytes(ev));
        e->stats.released_early++;
        match_event(e, ev);
    }
    warn_released_early(e);
}

/* ---- input ------------------------------------------------------------------ */

static void dead_letter(Engine *e, const char *text, size_t len, const char *origin,
                        uint64_t line_no, const char *reason)
{
    e->stats.malformed++;
    if (e->hooks.sink.dead_letter)
        e->hooks.sink.dead_letter(e->hooks.sink.user, origin, line_no, reason, text, len);
}

static void reject_with(Engine *e, const char *text, size_t len, const char *origin,
                        uint64_t line_no, const char *fallback)
{
    dead_letter(e, text, len, origin, line_no, e->reason.failed ? fallback : e->reason.data);
}

/* One decoded line, in input order: takes over d->ev. */
static int take_decoded(Engine *e, Decoded *d, const char *text, size_t len,
                        const char *origin, uint64_t line_no, int64_t now_ms)
{
    e->stats.lines++;
    Event *ev = d->ev;
    d->ev = NULL;
    if (!ev) {
        if (d->err.reason && !strcmp(d->err.reason, "out of memory"))
            return -1;   /* not the line's fault: never a dead letter */
        buf_clear(&e->reason);
        buf_printf(&e->reason, "%s at byte %zu", d->err.reason ? d->err.reason : "invalid JSON",
                   d->err.offset + 1);
        reject_with(e, text, len, origin, line_no, "invalid JSON");
        return 0;
    }
    int64_t t;
    if (e->rs->event_time) {
        if (!d->timed) {
            buf_clear(&e->reason);
            buf_printf(&e->reason, "missing or unparsable time field '%s'",
                       e->rs->fields.paths[e->rs->time_slot].text);
            reject_with(e, text, len, origin, line_no, "missing or unparsable time field");
            event_release(ev);
            return 0;
        }
        t = d->time_ms;
    } else {
        if (now_ms > e->clock_ms)
            e->clock_ms = now_ms;   /* processing time never goes back */
        t = e->clock_ms;
    }
    ev->id = ++e->next_id;
    ev->time_ms = t;
    ev->origin = origin;
    ev->origin_line = line_no;
    e->stats.events++;
    if (!e->rs->event_time || reorder_pass(&e->reorder, t)) {
        match_event(e, ev);   /* processing time, or released as soon as buffered */
        return engine_failed(e) ? -1 : 0;
    }
    switch (reorder_push(&e->reorder, t, ev)) {
    case REORDER_ACCEPTED:
        break;
    case REORDER_LATE:
        e->stats.late++;
        if (e->hooks.sink.late)
            e->hooks.sink.late(e->hooks.sink.user, ev, reorder_watermark(&e->reorder));
        event_release(ev);
        return 0;
    case REORDER_NOMEM:
        event_release(ev);
        return -1;
    }
    charge_buffered(e, (int64_t)budget_event_bytes(ev));
    warn_buffer_over_budget(e);
    release_overflow(e);
    release_ready(e);
    return engine_failed(e) ? -1 : 0;
}

static int take_inline(Engine *e, const char *text, size_t len, const char *origin,
                       uint64_t line_no, int64_t now_ms)
{
    Decoded d;
    decode_line(e->decoder, e->rs, text, len, &d);
    return take_decoded(e, &d, text, len, origin, line_no, now_ms);
}

static void take_rejected(Engine *e, const char *text, size_t len, const char *origin,
                          uint64_t line_no, const char *reason)
{
    e->stats.lines++;
    dead_letter(e, text, len, origin, line_no, reason);
}

/* A split batch whose times the reorder buffer passes: every line is an event
 * released at once, in order, so its ids, counters and clock move for the batch as a
 * whole and its owners get their sub-batches. */
static bool feed_take_split(Engine *e, FeedBatch *b)
{
    if (!b->split_ok)
        return false;
    int64_t first = b->out[0].time_ms, last = b->out[b->n - 1].time_ms;
    if (!reorder_pass_sorted(&e->reorder, first, last, b->n)) {
        if (b->delivered)
            e->failed = true;   /* cannot happen: the job decided from this state */
        else
            return false;
    }
    e->stats.lines += b->n;
    e->stats.events += b->n;
    if (b->delivered)
        workers_split_delivered(e->workers, b->split);
    else
        workers_split_send(e->workers, b->split, e->next_id + 1, last);
    e->next_id += b->n;
    e->released_ms = last;
    b->split_ok = false;   /* the lines' events were the split's: nothing left to drop */
    b->delivered = false;
    return true;
}

/* The lines of a decoded batch, in order; the batch is then empty for reuse. */
static void feed_take_lines(Engine *e, FeedBatch *b)
{
    if (b->n && feed_take_split(e, b)) {
        feed_empty(b);
        return;
    }
    feed_unsplit(b);
    if (b->rejected) {
        const char *text = b->text.data + b->lines[0].off;   /* always copied */
        take_rejected(e, text, b->lines[0].len, b->origin, b->first_line,
                      text + b->lines[0].len);
        b->n = 0;
    }
    for (size_t i = 0; i < b->n; i++) {
        Decoded *o = &b->out[i];
        const char *text = feed_text(b) + b->lines[i].off;
        if (b->lines[i].len > e->feed.max_line) {   /* the input layer's excerpt and reason */
            take_rejected(e, text, b->lines[i].len < INPUT_OVERLONG_EXCERPT
                          ? b->lines[i].len : INPUT_OVERLONG_EXCERPT, b->origin,
                          b->first_line + i, e->feed.reader->overlong);
            continue;
        }
        /* the events were written on another core: start fetching the next ones */
        if (i + FEED_PREFETCH < b->n && b->out[i + FEED_PREFETCH].ev)
            __builtin_prefetch(b->out[i + FEED_PREFETCH].ev, 1);
        /* its routes serve if it is released at once (not held by the reorder buffer) */
        e->pre_ev = o->ev;
        e->pre_batch = b;
        e->pre_out = o;
        if (take_decoded(e, o, text, b->lines[i].len, b->origin, b->first_line + i,
                         b->now_ms) < 0)
            e->failed = true;
        e->pre_ev = NULL;
    }
    feed_empty(b);
}

/* The chain continues at batch `seq` from this thread's state (chain lock held). */
static void feed_chain_set(Engine *e, uint64_t seq)
{
    FeedChain *c = &e->feed.chain;
    c->seq = seq;
    c->ok = !e->failed && reorder_size(&e->reorder) == 0;
    if (c->ok)
        workers_flush(e->workers);   /* what was routed before goes before a job's parts */
    c->reorder = e->reorder;
    c->next_id = e->next_id;
}

/* A decoded batch, in order: a job delivered it (counted here), or this thread takes
 * it, and the chain goes on after it. */
static void feed_take(Engine *e, FeedBatch *b)
{
    FeedChain *c = &e->feed.chain;
    pthread_mutex_lock(&c->lock);
    bool delivered = b->delivered;
    feed_take_lines(e, b);
    if (!delivered)
        feed_chain_set(e, b->seq + 1);
    pthread_mutex_unlock(&c->lock);
}

/* Takes the decoded batches in order, waiting for them until at most `left` are
 * still out; then goes on with those already decoded. */
static void feed_retire(Engine *e, size_t left)
{
    Feed *f = &e->feed;
    while (f->in_flight) {
        FeedBatch *b = &f->ring[f->oldest];
        if (!workers_job_done(&b->job)) {
            if (f->in_flight <= left)
                return;
            workers_job_wait(e->workers, &b->job);
        }
        feed_take(e, b);
        f->oldest = (f->oldest + 1) % f->n_ring;
        f->in_flight--;
    }
    if (f->fresh > f->in_flight)
        f->fresh = f->in_flight;
}

static FeedBatch *feed_filling(Engine *e)
{
    Feed *f = &e->feed;
    size_t i = f->oldest + f->in_flight;   /* both below n_ring: no division per line */
    return &f->ring[i < f->n_ring ? i : i - f->n_ring];
}

/* Sends the batch being filled for decoding and keeps one batch free to fill. */
static void feed_submit(Engine *e)
{
    FeedBatch *b = feed_filling(e);
    if (!b->n)
        return;
    Feed *f = &e->feed;
    b->seq = f->next_seq++;
    b->delivered = false;
    if (!f->in_flight) {   /* the state may have changed since the last batch */
        pthread_mutex_lock(&f->chain.lock);
        feed_chain_set(e, b->seq);
        pthread_mutex_unlock(&f->chain.lock);
    }
    workers_submit(e->workers, &b->job, (size_t)(b - f->ring));   /* see read_hand_out */
    /* every batch out and the oldest not decoded yet: reading waits for the workers
     * (decoding goes before matching on them, so this is where a slow rule set holds
     * the reader back, and the input with it) */
    f->fresh++;
    if (++f->in_flight == f->n_ring && !workers_job_done(&f->ring[f->oldest].job))
        e->stats.backpressure_pauses++;
    feed_retire(e, f->n_ring - 1);
}

/* ---- reading on the workers: the engine's thread ---- */

/* The batch the reader numbered `take`, once its job is done (its slot can be reused). */
static FeedBatch *read_next(Feed *f)
{
    FeedReader *r = f->reader;
    for (size_t i = 0; i < f->n_ring; i++)
        if (r->out[i] && workers_job_done(&f->ring[i].job) &&
            atomic_load_explicit(&f->ring[i].decoded, memory_order_acquire) == r->take + 1)
            return &f->ring[i];
    return NULL;
}

/* Takes the next batch read if its job is done; false if it is not. */
static bool read_take_next(Engine *e)
{
    Feed *f = &e->feed;
    FeedReader *r = f->reader;
    FeedBatch *b = read_next(f);
    if (!b)
        return false;
    r->ended |= b->eof;
    feed_take(e, b);
    r->out[b - f->ring] = false;
    r->n_out--;
    r->take++;
    workers_publish(e->workers, e->released_ms);
    return true;
}

/* Takes the batches read, in input order, as far as their jobs are done. */
static void read_take_ready(Engine *e)
{
    while (read_take_next(e))
        continue;
}

/* Waits for the job out longest (reads go in turn, so it is the likeliest next). */
static void read_wait(Engine *e)
{
    Feed *f = &e->feed;
    FeedReader *r = f->reader;
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < f->n_ring; i++)
        if (r->out[i] && !workers_job_done(&f->ring[i].job) &&
            (first == SIZE_MAX || r->order[i] < r->order[first]))
            first = i;
    if (first != SIZE_MAX)
        workers_job_wait(e->workers, &f->ring[first].job);
}

/* A reading job to every free batch, until the end was met. */
static void read_hand_out(Engine *e)
{
    Feed *f = &e->feed;
    FeedReader *r = f->reader;
    for (size_t i = 0; i < f->n_ring && !r->ended; i++) {
        if (r->out[i])
            continue;
        if (!r->n_out) {   /* the state may have changed since the last batch */
            pthread_mutex_lock(&f->chain.lock);
            feed_chain_set(e, r->take);
            pthread_mutex_unlock(&f->chain.lock);
        }
        r->out[i] = true;
        r->order[i] = r->handed++;
        r->n_out++;
        f->ring[i].delivered = false;
        /* a slot's jobs always on the same worker: its lines, decoded results, routes
         * and keys (about 160 KiB a job) stay in that core's cache */
        workers_submit(e->workers, &f->ring[i].job, i);
    }
}

/* feed_flush when reading: every batch out is taken; no job goes out meanwhile. */
static void read_retire(Engine *e)
{
    FeedReader *r = e->feed.reader;
    while (r->n_out) {
        read_take_ready(e);
        if (r->n_out)
            read_wait(e);
    }
}

/* A turn of the read loop: the lines of earlier turns are taken (waiting for them if
 * need be: the workers are then behind), those of this turn as far as decoded. So a
 * line is matched at the latest on the turn after the one that read it, and reading
 * does not wait for the decoding of what it just read (a socket brings a few dozen
 * lines per turn). */
static void feed_tick(Engine *e)
{
    if (!e->workers)
        return;
    if (e->feed.reader) {
        read_take_ready(e);
        return;
    }
    feed_submit(e);
    Feed *f = &e->feed;
    if (f->in_flight > f->fresh && !workers_job_done(&f->ring[f->oldest].job))
        e->stats.backpressure_pauses++;
    feed_retire(e, f->fresh);
    f->fresh = 0;
}

/* Every line handed in so far is processed: call before anything that observes or
 * changes the state. */
static void feed_flush(Engine *e)
{
    if (!e->workers)
        return;
    if (e->feed.reader) {
        read_retire(e);
        return;
    }
    feed_submit(e);
    feed_retire(e, 0);
}

/* Whether a line can join the batch being filled: the next line of its origin,
 * read at its time, copied like the others or lying in the same input buffer within
 * 4 GiB of the first; a rejected line goes alone. */
static bool feed_joins(const FeedBatch *b, const char *text, size_t len, const char *origin,
                       uint64_t line_no, int64_t now_ms, bool rejected, const InputText *keep)
{
    return !b->n || (!b->rejected && !rejected && origin == b->origin &&
                     line_no == b->first_line + b->n && now_ms == b->now_ms &&
                     keep == b->kept && (!keep || (size_t)(text + len - b->lent) <= UINT32_MAX));
}

/* Room in the batch's arrays for one more line. */
static inline bool feed_room(FeedBatch *b)
{
    if (b->n < b->cap)
        return true;
    size_t cap = b->cap ? b->cap * 2 : FEED_BATCH_LINES;
    FeedText *lines = realloc(b->lines, cap * sizeof *lines);
    if (lines)
        b->lines = lines;   /* cap stays until out has grown too */
    Decoded *out = lines ? realloc(b->out, cap * sizeof *out) : NULL;
    if (!out)
        return false;
    b->out = out;
    b->cap = cap;
    return true;
}

/* Queues a line (reason NULL) or a rejected line, where it lies in the input's buffer
 * `keep` (then held until the batch is taken) or (keep NULL) copied; false on
 * allocation failure, with nothing queued. */
static bool feed_add(Engine *e, const char *text, size_t len, const char *origin,
                     uint64_t line_no, int64_t now_ms, const char *reason, InputText *keep)
{
    FeedBatch *b = feed_filling(e);
    if (!feed_joins(b, text, len, origin, line_no, now_ms, reason != NULL, keep)) {
        feed_submit(e);
        b = feed_filling(e);
    }
    size_t reason_len = reason ? strlen(reason) + 1 : 0;
    size_t copied = keep ? 0 : len + reason_len;
    if (len > UINT32_MAX || copied > UINT32_MAX - b->text.len || !feed_room(b))
        return false;
    if (!feed_reserve(&b->text, copied)) {
        b->text.failed = false;   /* nothing was appended: the batch stays whole */
        return false;
    }
    if (!b->n) {
        b->origin = origin;
        b->first_line = line_no;
        b->now_ms = now_ms;
        b->rejected = reason != NULL;
        b->kept = keep;
        b->lent = text;
        if (keep)
            input_text_retain(keep);
        /* the decoding worker read these last: take their cache lines over at once */
        for (size_t i = 0; i < b->cap; i += 64 / sizeof *b->lines)
            __builtin_prefetch(&b->lines[i], 1);
    }
    FeedText *l = &b->lines[b->n++];
    l->len = (uint32_t)len;
    if (keep) {
        l->off = (uint32_t)(text - b->lent);
        if (b->n >= FEED_BATCH_LINES || (size_t)(text + len - b->lent) >= FEED_BATCH_BYTES)
            feed_submit(e);
        return true;
    }
    /* reserved above: copy without buf_append's second check */
    l->off = (uint32_t)b->text.len;
    memcpy(b->text.data + b->text.len, text, len);
    if (reason)
        memcpy(b->text.data + b->text.len + len, reason, reason_len);
    b->text.len += len + reason_len;
    b->text.data[b->text.len] = '\0';
    if (b->n >= FEED_BATCH_LINES || b->text.len >= FEED_BATCH_BYTES)
        feed_submit(e);
    return true;
}

/* Lines [i, n) of a run that lie in the input's buffer: the first through feed_add,
 * then as many as join it in the batch being filled, without feed_add's checks per
 * line (one origin, consecutive, one buffer, one arrival time). How many went in; 0 on
 * allocation failure. */
static size_t feed_add_run(Engine *e, const InputLines *l, size_t i, int64_t now_ms)
{
    size_t len;
    const char *text = input_lines_at(l, i, &len);
    if (!feed_add(e, text, len, l->origin, l->line_no + i, now_ms, NULL, l->keep))
        return 0;
    FeedBatch *b = feed_filling(e);
    if (!b->n)
        return 1;   /* that line closed its batch */
    size_t last = i + (FEED_BATCH_LINES - b->n < b->cap - b->n ? FEED_BATCH_LINES - b->n
                                                                : b->cap - b->n);
    if (last > l->n - 1)
        last = l->n - 1;
    size_t k = i;
    size_t span = 0;
    while (k < last && span < FEED_BATCH_BYTES) {
        k++;
        const char *t = l->text + l->ends[k - 1] + 1;
        span = (size_t)(l->text + l->ends[k] - b->lent);
        FeedText *ft = &b->lines[b->n++];
        ft->off = (uint32_t)(t - b->lent);
        ft->len = (uint32_t)(l->text + l->ends[k] - t);
    }
    if (b->n >= FEED_BATCH_LINES || span >= FEED_BATCH_BYTES)
        feed_submit(e);
    return k - i + 1;
}

static inline int line_kept(Engine *e, const char *text, size_t len, const char *origin,
                     uint64_t line_no, int64_t now_ms, InputText *keep)
{
    if (e->workers && feed_add(e, text, len, origin, line_no, now_ms, NULL, keep))
        return e->failed ? -1 : 0;
    feed_flush(e);   /* no memory to queue it: this thread decodes it, in its turn */
    return take_inline(e, text, len, origin, line_no, now_ms);
}

int engine_line(Engine *e, const char *text, size_t len, const char *origin,
                uint64_t line_no, int64_t now_ms)
{
    return line_kept(e, text, len, origin, line_no, now_ms, NULL);
}

int engine_input_line(Engine *e, const InputLine *line, int64_t now_ms)
{
    return line_kept(e, line->text, line->len, line->origin, line->line_no, now_ms,
                     line->keep);
}

size_t engine_input_lines(Engine *e, const InputLines *lines, int64_t now_ms, bool *failed)
{
    size_t i = 0;
    while (i < lines->n) {
        size_t took = e->workers && lines->keep ? feed_add_run(e, lines, i, now_ms) : 0;
        if (!took) {   /* one worker, or no memory to queue it: as engine_input_line */
            size_t len;
            const char *text = input_lines_at(lines, i, &len);
            if (line_kept(e, text, len, lines->origin, lines->line_no + i, now_ms,
                          lines->keep) < 0)
                *failed = true;
            took = 1;
        }
        i += took;
        if (e->failed)
            *failed = true;
        if (engine_backlogged(e))
            break;
    }
    return i;
}

void engine_reject(Engine *e, const char *text, size_t len, const char *origin,
                   uint64_t line_no, const char *reason)
{
    if (e->workers && feed_add(e, text, len, origin, line_no, 0, reason, NULL))
        return;
    feed_flush(e);
    take_rejected(e, text, len, origin, line_no, reason);
}

/* ---- the workers read ------------------------------------------------------- */

int engine_read_start(Engine *e, int fd, const char *origin, size_t max_line)
{
    Feed *f = &e->feed;
    if (!e->workers || !e->rs->event_time || f->reader || !max_line ||
        max_line > UINT32_MAX / 2)
        return -2;
    FeedReader *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    r->out = calloc(f->n_ring, sizeof *r->out);
    r->order = calloc(f->n_ring, sizeof *r->order);
    if (!r->out || !r->order || pthread_mutex_init(&r->lock, NULL)) {
        free(r->out);
        free(r->order);
        free(r);
        return -1;
    }
    feed_flush(e);   /* whatever was handed in before, in its order */
    r->fd = fd;
    r->origin = origin;
    r->frame.max_line = max_line;
    input_overlong_reason(r->overlong, sizeof r->overlong, max_line);
    r->next_seq = r->take = f->next_seq;
    f->oldest = f->in_flight = f->fresh = 0;
    f->max_line = max_line;
    f->reader = r;
    return 0;
}

/* The end was taken: the ring serves engine_line again. */
static int read_end(Engine *e)
{
    Feed *f = &e->feed;
    FeedReader *r = f->reader;
    int rc = r->failed || r->error ? -1 : 0;
    f->read_error = r->error;
    f->read_bytes = r->bytes;
    f->next_seq = r->take;
    f->max_line = SIZE_MAX;
    f->reader = NULL;
    reader_free(r);
    return rc;
}

int engine_read_step(Engine *e, int timeout_ms)
{
    FeedReader *r = e->feed.reader;
    if (!r)
        return 0;
    int64_t until = clock_monotonic_ms() + timeout_ms;
    for (;;) {
        /* a slot taken back goes out again at once: the workers never run short */
        if (!engine_backlogged(e) || engine_drain(e, 0))
            read_hand_out(e);
        bool took = read_take_next(e);
        if (engine_failed(e))
            return -1;
        if (r->ended && !r->n_out)
            return read_end(e);
        int64_t left = until - clock_monotonic_ms();
        if (left <= 0)
            return 1;
        if (took)
            continue;
        if (r->n_out)
            read_wait(e);
        else
            engine_drain(e, (int)left);   /* backlogged: no job went out */
    }
}

uint64_t engine_read_bytes(const Engine *e)
{
    FeedReader *r = e->feed.reader;
    if (!r)
        return e->feed.read_bytes;
    pthread_mutex_lock(&r->lock);
    uint64_t bytes = r->bytes;
    pthread_mutex_unlock(&r->lock);
    return bytes;
}

int engine_read_error(const Engine *e)
{
    return e->feed.read_error;
}

/* ---- time and the end ------------------------------------------------------- */

int engine_tick(Engine *e, int64_t now_ms)
{
    feed_tick(e);
    if (!e->rs->event_time && now_ms > e->clock_ms)
        e->clock_ms = now_ms;
    if (e->workers)
        workers_publish(e->workers, e->released_ms);
    else if (!e->rs->event_time)
        shard_fire_due(e->shard, e->clock_ms);
    return engine_failed(e) ? -1 : 0;
}

bool engine_backlogged(const Engine *e)
{
    return e->workers && workers_backlogged(e->workers);
}

bool engine_drain(Engine *e, int timeout_ms)
{
    if (!engine_backlogged(e))
        return true;
    if (!e->draining)
        e->stats.backpressure_pauses++;
    e->draining = !workers_drain(e->workers, timeout_ms);
    return !e->draining;
}

int64_t engine_next_deadline(const Engine *e)
{
    return e->shard ? shard_next_deadline(e->shard) : INT64_MAX;
}

int engine_finish(Engine *e)
{
    feed_flush(e);
    reorder_flush(&e->reorder);
    release_ready(e);
    if (e->workers) {
        if (workers_finish(e->workers, true, NULL) < 0)
            e->failed = true;
    } else {
        shard_advance_all(e->shard);
    }
    return engine_failed(e) ? -1 : 0;
}

int engine_stop(Engine *e)
{
    feed_flush(e);
    reorder_flush(&e->reorder);
    release_ready(e);
    if (e->workers) {
        /* the timeouts the released events' times reach fire on every worker, as
         * inline, not only on those that got the last events */
        workers_publish(e->workers, e->released_ms);
        if (workers_finish(e->workers, false, &e->stats.pending_at_stop) < 0)
            e->failed = true;
    } else {
        e->stats.pending_at_stop = shard_partials_live(e->shard);
    }
    return engine_failed(e) ? -1 : 0;
}

/* ---- hot reload ------------------------------------------------------------- */

/* The current rule whose state rule j of `next` takes, or SIZE_MAX: same fingerprint,
 * by name first, then any unclaimed one (a renamed rule). */
static void map_rules(const CompiledRuleSet *cur, const CompiledRuleSet *next, size_t *from,
                      bool *claimed, EngineReloadSummary *sum)
{
    memset(sum, 0, sizeof *sum);
    sum->rules = next->n_rules;
    for (size_t j = 0; j < next->n_rules; j++) {
        int i = ruleset_find(cur, next->rules[j].name);
        from[j] = SIZE_MAX;
        if (i >= 0 && cur->rules[i].fingerprint == next->rules[j].fingerprint) {
            from[j] = (size_t)i;
            claimed[i] = true;
        }
    }
    for (size_t j = 0; j < next->n_rules; j++) {
        for (size_t i = 0; from[j] == SIZE_MAX && i < cur->n_rules; i++)
            if (!claimed[i] && cur->rules[i].fingerprint == next->rules[j].fingerprint &&
                ruleset_find(next, cur->rules[i].name) < 0) {
                from[j] = i;
                claimed[i] = true;
            }
        if (from[j] != SIZE_MAX)
            sum->kept++;
        else if (ruleset_find(cur, next->rules[j].name) >= 0)
            sum->changed++;
        else
            sum->added++;
    }
    for (size_t i = 0; i < cur->n_rules; i++)
        if (!claimed[i] && ruleset_find(next, cur->rules[i].name) < 0)
            sum->removed++;
}

/* Buffered events were decoded for the old fields: decode them again so the new
 * rules see every field they read. An event that cannot be decoded again (no memory)
 * stays as it was: reads past its slots are missing values, never out of bounds. */
static void redecode_buffered(Engine *e)
{
    for (size_t i = 0; i < e->reorder.n; i++) {
        Event *old = e->reorder.heap[i].item;
        DecodeError derr;
        Event *ev = decoder_decode(e->decoder, old->line, old->line_len, &derr);
        if (!ev)
            continue;
        ev->id = old->id;
        ev->time_ms = old->time_ms;
        ev->origin = old->origin;
        ev->origin_line = old->origin_line;
        e->reorder.heap[i].item = ev;
        charge_buffered(e, (int64_t)budget_event_bytes(ev) - (int64_t)budget_event_bytes(old));
        event_release(old);
    }
}

static int swap_matching(Engine *e, const CompiledRuleSet *next, const size_t *from,
                         void (*swap)(void *user), void *user)
{
    if (e->workers)
        return workers_reload(e->workers, next, from, swap, user);
    ShardSwap *sw = shard_swap_prepare(e->shard, next);
    if (!sw)
        return -1;
    shard_swap_commit(e->shard, sw, from);
    if (swap)
        swap(user);
    return 0;
}

int engine_reload(Engine *e, const CompiledRuleSet *next, void (*swap)(void *user),
                  void *user, EngineReloadSummary *summary)
{
    size_t *from = malloc((next->n_rules ? next->n_rules : 1) * sizeof *from);
    bool *claimed = calloc(e->rs->n_rules ? e->rs->n_rules : 1, sizeof *claimed);
    Decoder *dec = decoder_new(&next->fields, DECODE_MAX_DEPTH);
    Decoder **feed_dec = e->workers ? decoders_new(next, e->workers, e->n_workers) : NULL;
    FeedRouter *feed_rt = e->workers ? routers_new(next, e->n_workers) : NULL;
    EngineReloadSummary sum;
    int rc = -1;
    if (!from || !claimed || !dec || (e->workers && (!feed_dec || !feed_rt)))
        goto out;
    decoder_set_cache(dec, e->cache);
    feed_flush(e);   /* the lines before the reload are decoded for the current rules */
    map_rules(e->rs, next, from, claimed, &sum);
    if (e->rs->event_time && !next->event_time) {
        /* leaving event time: what waits for the watermark is matched by the old rules */
        reorder_flush(&e->reorder);
        release_ready(e);
    }
    if (swap_matching(e, next, from, swap, user) < 0)
        goto out;
    if (!next->event_time || !e->rs->event_time) {
        reorder_free(&e->reorder, drop_event);   /* empty: a fresh watermark */
        reorder_init(&e->reorder, next->event_time ? next->lateness_ms : 0);
    } else {
        reorder_set_lateness(&e->reorder, next->lateness_ms);
    }
    decoder_free(e->decoder);
    e->decoder = dec;
    dec = NULL;
    if (e->workers) {
        decoders_free(e->feed.decoders, e->n_workers);
        e->feed.decoders = feed_dec;
        feed_dec = NULL;
        routers_free(e->feed.routers, e->n_workers);
        e->feed.routers = feed_rt;
        feed_rt = NULL;
    }
    e->rs = next;
    redecode_buffered(e);
    if (summary)
        *summary = sum;
    rc = 0;
out:
    if (dec)
        decoder_free(dec);
    decoders_free(feed_dec, e->n_workers);
    routers_free(feed_rt, e->n_workers);
    free(from);
    free(claimed);
    return rc;
}

/* ---- statistics ------------------------------------------------------------- */

/* With workers running, theirs count only if `paused` (the caller paused them). */
static void stats_of(const Engine *e, bool paused, EngineStats *out)
{
    *out = e->stats;
    out->buffered = reorder_size(&e->reorder);
    out->regex_limit_hits = e->workers ? workers_regex_limit_hits(e->workers, paused)
                                       : shard_regex_limit_hits(e->shard);
    /* the decoding threads' filters and keys: read with no batch out (settled) */
    for (size_t i = 0; e->workers && e->feed.routers && i < e->n_workers; i++)
        out->regex_limit_hits += expr_scratch_regex_limit_hits(e->feed.routers[i].scratch);
    int64_t used = budget_used(&e->budget) + e->mem.pending;
    out->memory_bytes = used > 0 ? (uint64_t)used : 0;
    out->max_memory = (uint64_t)e->budget.limit;
}

/* The stats count what was handed in: lines still out for decoding are processed
 * first. The engine object is never const itself; only the readers' view is. */
static const Engine *settled(const Engine *e)
{
    feed_flush((Engine *)e);
    return e;
}

void engine_stats(const Engine *e, EngineStats *out)
{
    e = settled(e);
    stats_of(e, false, out);
}

void engine_rule_stats(const Engine *e, size_t rule, EngineRuleStats *out)
{
    e = settled(e);
    memset(out, 0, sizeof *out);
    if (e->workers)
        workers_rule_stats(e->workers, rule, out);
    else
        shard_add_rule_stats(e->shard, rule, out);
}

int engine_all_rule_stats(const Engine *e, EngineRuleStats *out)
{
    e = settled(e);
    if (e->workers && workers_pause(e->workers) < 0)
        return -1;
    for (size_t i = 0; i < e->rs->n_rules; i++)
        engine_rule_stats(e, i, &out[i]);
    if (e->workers)
        workers_resume(e->workers);
    return 0;
}

void engine_stats_json(const Engine *e, Buf *out)
{
    e = settled(e);
    /* workers' counters are theirs while they run; without memory to pause them,
     * the rules are left out rather than read racily */
    bool paused = e->workers && workers_pause(e->workers) == 0;
    EngineStats s;
    stats_of(e, paused, &s);
    buf_printf(out, "{\"lines\":%llu,\"events\":%llu,\"malformed\":%llu,\"late\":%llu,"
               "\"buffered\":%llu,\"pending_at_stop\":%llu,\"regex_limit_hits\":%llu,"
               "\"memory_bytes\":%llu,\"max_memory\":%llu,\"released_early\":%llu,"
               "\"backpressure_pauses\":%llu,\"rules\":{",
               (unsigned long long)s.lines, (unsigned long long)s.events,
               (unsigned long long)s.malformed, (unsigned long long)s.late,
               (unsigned long long)s.buffered, (unsigned long long)s.pending_at_stop,
               (unsigned long long)s.regex_limit_hits, (unsigned long long)s.memory_bytes,
               (unsigned long long)s.max_memory, (unsigned long long)s.released_early,
               (unsigned long long)s.backpressure_pauses);
    uint64_t keys = 0;
    for (size_t i = 0; (!e->workers || paused) && i < e->rs->n_rules; i++) {
        EngineRuleStats r;
        engine_rule_stats(e, i, &r);
        keys += r.keys_live;
        if (i)
            buf_putc(out, ',');
        buf_json_string(out, e->rs->rules[i].name, strlen(e->rs->rules[i].name));
        buf_printf(out, ":{\"matches\":%llu,\"timeouts\":%llu,\"alerts\":%llu,"
                   "\"suppressed\":%llu,\"missing_key\":%llu,\"keys_live\":%llu,"
                   "\"partials_live\":%llu,\"partials_dropped\":%llu,"
                   "\"partials_refused\":%llu,\"cap_hits\":%llu,\"keys_refused\":%llu}",
                   (unsigned long long)r.matches, (unsigned long long)r.timeouts,
                   (unsigned long long)r.alerts, (unsigned long long)r.suppressed,
                   (unsigned long long)r.missing_key, (unsigned long long)r.keys_live,
                   (unsigned long long)r.partials_live,
                   (unsigned long long)r.partials_dropped,
                   (unsigned long long)r.partials_refused, (unsigned long long)r.cap_hits,
                   (unsigned long long)r.keys_refused);
    }
    if (paused)
        workers_resume(e->workers);
    buf_printf(out, "},\"keys_live\":%llu,\"workers\":%zu}", (unsigned long long)keys,
               e->n_workers);
}

/* ---- checkpoints -------------------------------------------------------------
 * The engine section: clock and counters; the origin strings; every event held by a
 * match or the reorder buffer, once (by id: workers hold copies of one event); the
 * reorder buffer; then per rule its fingerprint, name, counters and keys (shard.h). */

typedef struct EventIndex {
    uint64_t *ids;             /* open addressing on the event id (ids start at 1) */
    uint32_t *nums;
    size_t cap;
    const Event **events;      /* by number: what the events table lists */
    size_t n, events_cap;
    const char **origins;      /* distinct origin strings, by number */
    size_t n_origins, origins_cap;
    uint64_t *origin_of;       /* per event number: its origin's number */
    size_t origin_of_cap;
} EventIndex;

static size_t id_slot(const EventIndex *x, uint64_t id)
{
    size_t i = (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (x->cap - 1);
    while (x->ids[i] && x->ids[i] != id)
        i = (i + 1) & (x->cap - 1);
    return i;
}

static bool index_grow(EventIndex *x)
{
    size_t cap = x->cap ? x->cap * 2 : 1024;
    uint64_t *ids = calloc(cap, sizeof *ids);
    uint32_t *nums = calloc(cap, sizeof *nums);
    if (!ids || !nums) {
        free(ids);
        free(nums);
        return false;
    }
    EventIndex g = *x;
    g.ids = ids;
    g.nums = nums;
    g.cap = cap;
    for (size_t i = 0; i < x->cap; i++) {
        if (!x->ids[i])
            continue;
        size_t j = id_slot(&g, x->ids[i]);
        ids[j] = x->ids[i];
        nums[j] = x->nums[i];
    }
    free(x->ids);
    free(x->nums);
    *x = g;
    return true;
}

static bool grow_array(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 256;
    void *g = realloc(*v, nc * size);
    if (!g)
        return false;
    *v = g;
    *cap = nc;
    return true;
}

static uint64_t origin_number(EventIndex *x, const char *origin)
{
    origin = origin ? origin : "";
    for (size_t i = 0; i < x->n_origins; i++)
        if (x->origins[i] == origin || !strcmp(x->origins[i], origin))
            return i;
    if (!grow_array((void **)&x->origins, &x->origins_cap, x->n_origins, sizeof *x->origins))
        return UINT64_MAX;
    x->origins[x->n_origins] = origin;
    return x->n_origins++;
}

static uint64_t index_event(void *user, const Event *ev)
{
    EventIndex *x = user;
    if (x->cap && x->ids[id_slot(x, ev->id)] == ev->id)
        return x->nums[id_slot(x, ev->id)];
    if ((x->n + 1) * 2 > x->cap && !index_grow(x))
        return UINT64_MAX;
    if (!grow_array((void **)&x->events, &x->events_cap, x->n, sizeof *x->events) ||
        !grow_array((void **)&x->origin_of, &x->origin_of_cap, x->n, sizeof *x->origin_of))
        return UINT64_MAX;
    uint64_t origin = origin_number(x, ev->origin);
    if (origin == UINT64_MAX)
        return UINT64_MAX;
    size_t i = id_slot(x, ev->id);
    x->ids[i] = ev->id;
    x->nums[i] = (uint32_t)x->n;
    x->events[x->n] = ev;
    x->origin_of[x->n] = origin;
    return x->n++;
}

static void event_index_free(EventIndex *x)
{
    free(x->ids);
    free(x->nums);
    free(x->events);
    free(x->origins);
    free(x->origin_of);
}

/* The per-rule counters a checkpoint carries, in their order on disk, each with the
 * format version that added it (runtime/checkpoint.h): one list for writing and
 * reading, so that a counter cannot be saved and forgotten on restore. The live
 * counts are not here: restoring the keys rebuilds them. */
static const struct SavedCounter {
    size_t offset;             /* of a uint64_t in EngineRuleStats */
    uint32_t since;
} saved_rule_counters[] = {
    {offsetof(EngineRuleStats, matches), 1},
    {offsetof(EngineRuleStats, timeouts), 1},
    {offsetof(EngineRuleStats, alerts), 1},
    {offsetof(EngineRuleStats, suppressed), 1},
    {offsetof(EngineRuleStats, missing_key), 1},
    {offsetof(EngineRuleStats, partials_dropped), 1},
    {offsetof(EngineRuleStats, partials_refused), 1},
    {offsetof(EngineRuleStats, cap_hits), 1},
    {offsetof(EngineRuleStats, keys_refused), 2},
};

#define N_SAVED_RULE_COUNTERS (sizeof saved_rule_counters / sizeof saved_rule_counters[0])
#define N_LIVE_RULE_COUNTERS 2   /* keys_live, partials_live */

/* A counter added to EngineRuleStats must be saved (above, with a new CKPT_VERSION)
 * or be one more live count: keys_refused was once left out and reset on restart. */
_Static_assert(sizeof(EngineRuleStats) ==
                   (N_SAVED_RULE_COUNTERS + N_LIVE_RULE_COUNTERS) * sizeof(uint64_t),
               "EngineRuleStats has a counter that checkpoints neither save nor rebuild");

static void put_rule_stats(Buf *out, const EngineRuleStats *st)
{
    for (size_t i = 0; i < N_SAVED_RULE_COUNTERS; i++) {
        uint64_t v;
        memcpy(&v, (const char *)st + saved_rule_counters[i].offset, sizeof v);
        snap_put_u64(out, v);
    }
}

/* Counters newer than the checkpoint's format stay 0. */
static void get_rule_stats(SnapReader *r, uint32_t version, EngineRuleStats *st)
{
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < N_SAVED_RULE_COUNTERS; i++) {
        if (saved_rule_counters[i].since > version)
            continue;
        uint64_t v = snap_get_u64(r);
        memcpy((char *)st + saved_rule_counters[i].offset, &v, sizeof v);
    }
}

static size_t shard_count(const Engine *e)
{
    return e->workers ? workers_count(e->workers) : 1;
}

static Shard *shard_at(const Engine *e, size_t i)
{
    return e->workers ? workers_shard(e->workers, i) : e->shard;
}

/* The reorder buffer and every rule's keys into `tail`, numbering their events. */
static int write_state(Engine *e, Buf *tail, EventIndex *x, EngineCheckpointInfo *info)
{
    snap_put_i64(tail, e->reorder.max_seen);
    snap_put_i64(tail, e->reorder.watermark);
    snap_put_u64(tail, e->reorder.next_seq);
    snap_put_u64(tail, e->reorder.n);
    for (size_t i = 0; i < e->reorder.n; i++) {
        const ReorderItem *it = &e->reorder.heap[i];
        uint64_t no = index_event(x, it->item);
        if (no == UINT64_MAX)
            return -1;
        snap_put_i64(tail, it->time_ms);
        snap_put_u64(tail, it->seq);
        snap_put_u64(tail, no);
    }
    info->buffered = e->reorder.n;
    snap_put_u64(tail, e->rs->n_rules);
    Buf keys = BUF_INIT;
    int rc = 0;
    for (size_t ri = 0; ri < e->rs->n_rules && rc == 0; ri++) {
        const CompiledRule *rule = &e->rs->rules[ri];
        EngineRuleStats st;
        engine_rule_stats(e, ri, &st);
        info->keys += st.keys_live;
        info->partials += st.partials_live;
        snap_put_u64(tail, rule->fingerprint);
        snap_put_str(tail, rule->name);
        put_rule_stats(tail, &st);
        buf_clear(&keys);
        for (size_t i = 0; i < shard_count(e) && rc == 0; i++)
            rc = shard_snapshot_keys(shard_at(e, i), ri, &keys, index_event, x);
        snap_put_u64(&keys, 0);
        snap_put_bytes(tail, keys.data, keys.len);
        if (keys.failed)
            rc = -1;
    }
    buf_free(&keys);
    return rc < 0 || tail->failed ? -1 : 0;
}

static void write_events(const Engine *e, Buf *out, const EventIndex *x)
{
    snap_put_u64(out, e->rs->event_time);
    snap_put_u64(out, e->next_id);
    snap_put_i64(out, e->clock_ms);
    snap_put_i64(out, e->released_ms);
    snap_put_u64(out, e->stats.lines);
    snap_put_u64(out, e->stats.events);
    snap_put_u64(out, e->stats.malformed);
    snap_put_u64(out, e->stats.late);
    snap_put_u64(out, x->n_origins);
    for (size_t i = 0; i < x->n_origins; i++)
        snap_put_str(out, x->origins[i]);
    snap_put_u64(out, x->n);
    for (size_t i = 0; i < x->n; i++) {
        const Event *ev = x->events[i];
        snap_put_u64(out, ev->id);
        snap_put_i64(out, ev->time_ms);
        snap_put_u64(out, x->origin_of[i]);
        snap_put_u64(out, ev->origin_line);
        snap_put_bytes(out, ev->line, ev->line_len);
    }
}

int engine_checkpoint(Engine *e, Buf *out, void (*paused)(void *user), void *user,
                      EngineCheckpointInfo *info)
{
    EngineCheckpointInfo local;
    info = info ? info : &local;
    memset(info, 0, sizeof *info);
    feed_flush(e);
    if (e->workers && workers_pause(e->workers) < 0)
        return -1;
    /* After a failed allocation lost an event or a match (the decoded lines taken just
     * now may be the first to say so), a checkpoint would make the loss final: the
     * next run would resume past what was lost. The previous one stays instead. */
    bool failed = engine_failed(e) || (e->workers && workers_failed(e->workers));
    EventIndex x = {0};
    Buf tail = BUF_INIT;
    int rc = failed ? -1 : write_state(e, &tail, &x, info);
    if (rc == 0) {
        /* before the workers go on: the events listed may be theirs to free */
        write_events(e, out, &x);
        buf_append(out, tail.data ? tail.data : "", tail.len);
        info->events = x.n;
    }
    if (paused)
        paused(user);
    if (e->workers)
        workers_resume(e->workers);
    buf_free(&tail);
    event_index_free(&x);
    return rc < 0 || out->failed ? -1 : 0;
}

/* ---- restore ---- */

typedef struct SavedEvent {
    uint64_t id, origin, origin_line;
    int64_t time_ms;
    const char *line;          /* into the checkpoint */
    size_t len;
} SavedEvent;

typedef struct SavedRule {
    uint64_t fingerprint;
    const char *name;
    size_t name_len;
    EngineRuleStats stats;
    const char *keys;
    size_t keys_len;
    size_t to;                 /* the current rule that takes it, or SIZE_MAX */
} SavedRule;

typedef struct Restore {
    Engine *e;
    SavedEvent *events;
    size_t n_events;
    Event **decoded;           /* n_slots x n_events, decoded on first use */
    size_t n_slots, slot;      /* slot: whose copies lookups hand out now */
    SavedRule *rules;
    size_t n_rules;
    const char *why;           /* static text, for *err */
    uint32_t version;          /* the checkpoint's format (runtime/checkpoint.h) */
    Value *key_vals;           /* scratch of canonical_key: the widest key; heap */
    Buf key_text, key_bytes;   /* its strings and its bytes encoded again */
} Restore;

/* Events are decoded per thread (slot): a worker never shares an event object. */
static Event *lookup_event(void *user, uint64_t no)
{
    Restore *c = user;
    if (no >= c->n_events)
        return NULL;
    Event **d = &c->decoded[c->slot * c->n_events + no];
    if (*d)
        return *d;
    const SavedEvent *sv = &c->events[no];
    DecodeError derr;
    Event *ev = decoder_decode(c->e->decoder, sv->line, sv->len, &derr);
    if (!ev) {   /* decode.h: the reason of an allocation failure is "out of memory" */
        c->why = strcmp(derr.reason, "out of memory") ? "a checkpointed event cannot be decoded"
                                                      : "out of memory";
        return NULL;
    }
    ev->id = sv->id;
    ev->time_ms = sv->time_ms;
    ev->origin = c->e->origins[sv->origin];
    ev->origin_line = sv->origin_line;
    return *d = ev;
}

static char *dup_bytes(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int compare_ids(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Ids break ties of time and are how the next checkpoint stores an event once: each
 * restored event needs its own, one the engine handed out (1..next_id, 0 being none).
 * NULL if they are. */
static const char *check_event_ids(const Restore *c, uint64_t next_id)
{
    uint64_t *ids = malloc((c->n_events ? c->n_events : 1) * sizeof *ids);
    if (!ids)
        return "out of memory";
    for (size_t i = 0; i < c->n_events; i++)
        ids[i] = c->events[i].id;
    qsort(ids, c->n_events, sizeof *ids, compare_ids);
    const char *why = NULL;
    for (size_t i = 0; i < c->n_events && !why; i++)
        if (ids[i] == 0 || ids[i] > next_id || (i > 0 && ids[i] == ids[i - 1]))
            why = "an event id is repeated or out of range";
    free(ids);
    return why;
}

static const char *read_events(Restore *c, SnapReader *r)
{
    Engine *e = c->e;
    bool event_time = snap_get_u64(r) != 0;
    if (!r->bad && event_time != e->rs->event_time)
        return event_time ? "the checkpoint ran on event time, the rules now on processing time"
                          : "the checkpoint ran on processing time, the rules now on event time";
    e->next_id = snap_get_u64(r);
    e->clock_ms = snap_get_i64(r);
    e->released_ms = snap_get_i64(r);
    e->stats.lines = snap_get_u64(r);
    e->stats.events = snap_get_u64(r);
    e->stats.malformed = snap_get_u64(r);
    e->stats.late = snap_get_u64(r);
    size_t n = snap_get_count(r, 1);
    /* ids are handed out from next_id on: one near the end of their range would wrap */
    if (r->bad || e->next_id >= (uint64_t)INT64_MAX)
        return "malformed engine header";
    if (!(e->origins = calloc(n ? n : 1, sizeof *e->origins)))
        return "out of memory";
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s = snap_get_bytes(r, &len);
        if (r->bad)
            return "malformed origin";
        if (!(e->origins[i] = dup_bytes(s, len)))
            return "out of memory";
        e->n_origins++;
    }
    c->n_events = snap_get_count(r, 5);
    c->events = calloc(c->n_events ? c->n_events : 1, sizeof *c->events);
    c->decoded = calloc(c->n_slots * (c->n_events ? c->n_events : 1), sizeof *c->decoded);
    if (!c->events || !c->decoded)
        return "out of memory";
    for (size_t i = 0; i < c->n_events && !r->bad; i++) {
        SavedEvent *sv = &c->events[i];
        sv->id = snap_get_u64(r);
        sv->time_ms = snap_get_i64(r);
        sv->origin = snap_get_u64(r);
        sv->origin_line = snap_get_u64(r);
        sv->line = snap_get_bytes(r, &sv->len);
        if (sv->origin >= e->n_origins)
            return "an event names an unknown origin";
    }
    return r->bad ? "malformed event table" : check_event_ids(c, e->next_id);
}

static const char *read_reorder(Restore *c, SnapReader *r)
{
    int64_t max_seen = snap_get_i64(r), watermark = snap_get_i64(r);
    uint64_t next_seq = snap_get_u64(r);
    size_t n = snap_get_count(r, 3);
    if (r->bad)
        return "malformed reorder buffer";
    ReorderItem *items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return "out of memory";
    c->slot = c->n_slots - 1;   /* the engine thread's copies */
    const char *why = NULL;
    size_t got = 0;
    for (; got < n && !why; got++) {
        items[got].time_ms = snap_get_i64(r);
        items[got].seq = snap_get_u64(r);
        Event *ev = r->bad ? NULL : lookup_event(c, snap_get_u64(r));
        if (!ev) {
            why = c->why ? c->why : "malformed reorder buffer";
            break;
        }
        event_retain(ev);
        items[got].item = ev;
        charge_buffered(c->e, (int64_t)budget_event_bytes(ev));
    }
    if (!why && reorder_restore(&c->e->reorder, max_seen, watermark, next_seq, items, n) < 0)
        why = "out of memory";
    if (why)   /* nothing of a failed restore stays charged to the budget */
        for (size_t i = 0; i < got; i++) {
            charge_buffered(c->e, -(int64_t)budget_event_bytes(items[i].item));
            event_release(items[i].item);
        }
    free(items);
    return why;
}

/* Which current rule takes each saved one: the same fingerprint, by name first. */
static const char *map_saved_rules(Restore *c, EngineRestoreSummary *sum)
{
    const CompiledRuleSet *rs = c->e->rs;
    bool *claimed = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *claimed);
    if (!claimed)
        return "out of memory";
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < c->n_rules; i++) {
            SavedRule *sr = &c->rules[i];
            if (pass == 0)
                sr->to = SIZE_MAX;
            for (size_t j = 0; sr->to == SIZE_MAX && j < rs->n_rules; j++) {
                const CompiledRule *cr = &rs->rules[j];
                bool same_name = strlen(cr->name) == sr->name_len &&
                                 !memcmp(cr->name, sr->name, sr->name_len);
                if (!claimed[j] && cr->fingerprint == sr->fingerprint && (pass || same_name)) {
                    sr->to = j;
                    claimed[j] = true;
                }
            }
        }
    }
    for (size_t i = 0; i < c->n_rules; i++) {
        if (c->rules[i].to != SIZE_MAX)
            sum->rules_kept++;
        else
            sum->rules_dropped++;
    }
    sum->rules_empty = rs->n_rules - sum->rules_kept;
    free(claimed);
    return NULL;
}

static const char *read_rules(Restore *c, SnapReader *r)
{
    c->n_rules = snap_get_count(r, 11);
    if (r->bad)
        return "malformed rule list";
    if (!(c->rules = calloc(c->n_rules ? c->n_rules : 1, sizeof *c->rules)))
        return "out of memory";
    for (size_t i = 0; i < c->n_rules && !r->bad; i++) {
        SavedRule *sr = &c->rules[i];
        sr->fingerprint = snap_get_u64(r);
        sr->name = snap_get_bytes(r, &sr->name_len);
        get_rule_stats(r, c->version, &sr->stats);
        sr->keys = snap_get_bytes(r, &sr->keys_len);
    }
    return r->bad ? "malformed rule state" : NULL;
}

/* Key bytes are what the partition table is keyed on and what alerts and the next
 * checkpoint decode the key values from: only the n values that part_key_bytes
 * writes, in its canonical form (another spelling of the same values would be a key
 * that no event finds). NULL if they are. */
static const char *canonical_key(Restore *c, const char *kb, size_t klen, size_t n_keys)
{
    buf_clear(&c->key_bytes);
    if (!part_key_values(kb, klen, c->key_vals, n_keys, &c->key_text))
        return c->key_text.failed ? "out of memory" : "malformed key bytes";
    bool encoded = part_key_bytes(c->key_vals, n_keys, &c->key_bytes);
    if (c->key_bytes.failed)
        return "out of memory";
    /* a rule without `key` has empty bytes: nothing to compare (data may be NULL) */
    if (!encoded || c->key_bytes.len != klen ||
        (klen && memcmp(c->key_bytes.data, kb, klen) != 0))
        return "malformed key bytes";
    return NULL;
}

static const char *restore_keys(Restore *c, const SavedRule *sr, EngineRestoreSummary *sum)
{
    Engine *e = c->e;
    size_t n_keys = e->rs->rules[sr->to].n_keys;
    SnapReader r;
    snap_reader_init(&r, sr->keys, sr->keys_len);
    shard_restore_stats(shard_at(e, 0), sr->to, &sr->stats);
    while (snap_get_u64(&r) == 1 && !r.bad) {
        size_t klen;
        const char *kb = snap_get_bytes(&r, &klen);
        if (r.bad)
            break;
        const char *bad_key = canonical_key(c, kb, klen, n_keys);
        if (bad_key)
            return bad_key;
        size_t w = e->workers ? workers_pick(e->workers, sr->to, part_hash(kb, klen)) : 0;
        c->slot = w;
        const char *why = NULL;
        if (shard_restore_key(shard_at(e, w), sr->to, kb, klen, &r, lookup_event, c, &why) < 0)
            return c->why ? c->why : why;
        sum->keys++;
    }
    return r.bad || !snap_at_end(&r) ? "malformed key list" : NULL;
}

static void restore_free(Restore *c)
{
    for (size_t i = 0; c->decoded && i < c->n_slots * c->n_events; i++)
        if (c->decoded[i])
            event_release(c->decoded[i]);   /* matches and the buffer hold their own */
    free(c->decoded);
    free(c->events);
    free(c->rules);
    free(c->key_vals);
    buf_free(&c->key_text);
    buf_free(&c->key_bytes);
}

int engine_restore(Engine *e, const char *data, size_t len, EngineRestoreSummary *sum,
                   char **err)
{
    return engine_restore_version(e, data, len, CKPT_VERSION, sum, err);
}

int engine_restore_version(Engine *e, const char *data, size_t len, uint32_t version,
                           EngineRestoreSummary *sum, char **err)
{
    EngineRestoreSummary local;
    sum = sum ? sum : &local;
    memset(sum, 0, sizeof *sum);
    if (version < CKPT_OLDEST_VERSION || version > CKPT_VERSION) {
        *err = buf_format("checkpoint state: format version %u, but this vigil reads "
                          "version %d", (unsigned)version, CKPT_VERSION);
        return -1;
    }
    Restore c = {.e = e,
                 .n_slots = e->workers ? workers_count(e->workers) + 1 : 1,
                 .version = version};
    SnapReader r;
    snap_reader_init(&r, data, len);
    bool paused = e->workers && workers_pause(e->workers) == 0;
    const char *why = e->workers && !paused ? "out of memory" : NULL;
    if (!why)
        why = read_events(&c, &r);
    if (!why)
        why = read_reorder(&c, &r);
    if (!why)
        why = read_rules(&c, &r);
    if (!why && !snap_at_end(&r))
        why = "trailing bytes after the engine state";
    if (!why)
        why = map_saved_rules(&c, sum);
    if (!why && !(c.key_vals = calloc(rules_widest_key(e->rs), sizeof *c.key_vals)))
        why = "out of memory";
    for (size_t i = 0; !why && i < c.n_rules; i++)
        if (c.rules[i].to != SIZE_MAX)
            why = restore_keys(&c, &c.rules[i], sum);
    if (!why) {
        EngineStats st;
        engine_stats(e, &st);
        sum->buffered = st.buffered;
        for (size_t i = 0; i < e->rs->n_rules; i++) {
            EngineRuleStats rst;
            engine_rule_stats(e, i, &rst);
            sum->partials += rst.partials_live;
        }
    }
    restore_free(&c);   /* drops references to the workers' events: before they go on */
    if (paused)
        workers_resume(e->workers);
    if (why) {
        size_t n = strlen(why) + 64;
        if ((*err = malloc(n)))
            snprintf(*err, n, "checkpoint state: %s", why);
        return -1;
    }
    return 0;
}
