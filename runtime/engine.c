/* runtime/engine.c — the engine's front: decode, time, reorder and release, then
 * matching inline (one Shard) or on worker threads (runtime/workers.h). */
#include "runtime/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/decode.h"
#include "runtime/evtime.h"
#include "runtime/reorder.h"
#include "runtime/shard.h"
#include "runtime/workers.h"

struct Engine {
    const CompiledRuleSet *rs;
    EngineHooks hooks;         /* the caller's sink and warning hook */
    NfaLimits limits;
    Decoder *decoder;
    Reorder reorder;
    Shard *shard;              /* inline matching (one worker), or NULL */
    Workers *workers;          /* N > 1 workers, or NULL */
    Buf reason;                /* scratch for dead-letter reasons */
    EngineStats stats;
    uint64_t next_id;
    int64_t clock_ms;          /* latest processing time handed out (never goes back) */
    int64_t released_ms;       /* time of the latest released event */
    size_t n_workers;
    bool failed;               /* an allocation failed: the run must end with an error */
};

static char *dup_message(const char *msg)
{
    char *s = malloc(strlen(msg) + 1);
    if (s)
        strcpy(s, msg);
    return s;
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
    reorder_init(&e->reorder, rs->event_time ? rs->lateness_ms : 0);
    e->decoder = decoder_new(&rs->fields, DECODE_MAX_DEPTH);
    if (!e->decoder)
        goto oom;
    e->n_workers = opts && opts->workers > 1 ? opts->workers : 1;
    if (e->n_workers > 1) {
        e->workers = workers_new(rs, e->n_workers, &e->limits, &e->hooks, !rs->event_time);
        if (!e->workers) {
            engine_free(e);
            *err = dup_message("cannot start the worker threads");
            return NULL;
        }
    } else if (!(e->shard = shard_new(rs, &e->limits, &e->hooks))) {
        goto oom;
    }
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
    workers_free(e->workers);
    shard_free(e->shard);
    reorder_free(&e->reorder, drop_event);
    buf_free(&e->reason);
    if (e->decoder)
        decoder_free(e->decoder);
    free(e);
}

void engine_set_warn(Engine *e, void (*warn)(void *user, const char *msg), void *user)
{
    e->hooks.warn = warn;
    e->hooks.warn_user = user;
}

static bool engine_failed(const Engine *e)
{
    return e->failed || (e->shard && shard_failed(e->shard));
}

/* ---- released events -------------------------------------------------------- */

/* Takes over the reference to ev. */
static void match_event(Engine *e, Event *ev)
{
    e->released_ms = ev->time_ms;
    if (e->workers) {
        if (workers_dispatch(e->workers, ev) < 0)
            e->failed = true;
        return;
    }
    shard_event(e->shard, ev);
    event_release(ev);
}

static void release_ready(Engine *e)
{
    Event *ev;
    while ((ev = reorder_pop_ready(&e->reorder, NULL)))
        match_event(e, ev);
}

/* ---- input ------------------------------------------------------------------ */

static void dead_letter(Engine *e, const char *text, size_t len, const char *origin,
                        uint64_t line_no, const char *reason)
{
    e->stats.malformed++;
    if (e->hooks.sink.dead_letter)
        e->hooks.sink.dead_letter(e->hooks.sink.user, origin, line_no, reason, text, len);
}

void engine_reject(Engine *e, const char *text, size_t len, const char *origin,
                   uint64_t line_no, const char *reason)
{
    e->stats.lines++;
    dead_letter(e, text, len, origin, line_no, reason);
}

static bool event_time_of(Engine *e, const Event *ev, int64_t now_ms, int64_t *t)
{
    if (!e->rs->event_time) {
        if (now_ms > e->clock_ms)
            e->clock_ms = now_ms;
        *t = e->clock_ms;
        return true;
    }
    return evtime_parse(&ev->slots[e->rs->time_slot], e->rs->time_format, t);
}

static void reject_with(Engine *e, const char *text, size_t len, const char *origin,
                        uint64_t line_no, const char *fallback)
{
    dead_letter(e, text, len, origin, line_no, e->reason.failed ? fallback : e->reason.data);
}

int engine_line(Engine *e, const char *text, size_t len, const char *origin,
                uint64_t line_no, int64_t now_ms)
{
    e->stats.lines++;
    DecodeError derr = {0};
    Event *ev = decoder_decode(e->decoder, text, len, &derr);
    if (!ev) {
        if (derr.reason && !strcmp(derr.reason, "out of memory"))
            return -1;   /* not the line's fault: never a dead letter */
        buf_clear(&e->reason);
        buf_printf(&e->reason, "%s at byte %zu", derr.reason ? derr.reason : "invalid JSON",
                   derr.offset + 1);
        reject_with(e, text, len, origin, line_no, "invalid JSON");
        return 0;
    }
    int64_t t;
    if (!event_time_of(e, ev, now_ms, &t)) {
        buf_clear(&e->reason);
        buf_printf(&e->reason, "missing or unparsable time field '%s'",
                   e->rs->fields.paths[e->rs->time_slot].text);
        reject_with(e, text, len, origin, line_no, "missing or unparsable time field");
        event_release(ev);
        return 0;
    }
    ev->id = ++e->next_id;
    ev->time_ms = t;
    ev->origin = origin;
    ev->origin_line = line_no;
    e->stats.events++;
    if (!e->rs->event_time) {
        match_event(e, ev);
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
    release_ready(e);
    return engine_failed(e) ? -1 : 0;
}

/* ---- time and the end ------------------------------------------------------- */

int engine_tick(Engine *e, int64_t now_ms)
{
    if (!e->rs->event_time && now_ms > e->clock_ms)
        e->clock_ms = now_ms;
    if (e->workers)
        workers_publish(e->workers, e->released_ms);
    else if (!e->rs->event_time)
        shard_fire_due(e->shard, e->clock_ms);
    return engine_failed(e) ? -1 : 0;
}

int64_t engine_next_deadline(const Engine *e)
{
    return e->shard ? shard_next_deadline(e->shard) : INT64_MAX;
}

int engine_finish(Engine *e)
{
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
    reorder_flush(&e->reorder);
    release_ready(e);
    if (e->workers) {
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
    EngineReloadSummary sum;
    int rc = -1;
    if (!from || !claimed || !dec)
        goto out;
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
    e->rs = next;
    redecode_buffered(e);
    if (summary)
        *summary = sum;
    rc = 0;
out:
    if (dec)
        decoder_free(dec);
    free(from);
    free(claimed);
    return rc;
}

/* ---- statistics ------------------------------------------------------------- */

void engine_stats(const Engine *e, EngineStats *out)
{
    *out = e->stats;
    out->buffered = reorder_size(&e->reorder);
}

void engine_rule_stats(const Engine *e, size_t rule, EngineRuleStats *out)
{
    memset(out, 0, sizeof *out);
    if (e->workers)
        workers_rule_stats(e->workers, rule, out);
    else
        shard_add_rule_stats(e->shard, rule, out);
}

int engine_all_rule_stats(const Engine *e, EngineRuleStats *out)
{
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
    EngineStats s;
    engine_stats(e, &s);
    buf_printf(out, "{\"lines\":%llu,\"events\":%llu,\"malformed\":%llu,\"late\":%llu,"
               "\"buffered\":%llu,\"pending_at_stop\":%llu,\"rules\":{",
               (unsigned long long)s.lines, (unsigned long long)s.events,
               (unsigned long long)s.malformed, (unsigned long long)s.late,
               (unsigned long long)s.buffered, (unsigned long long)s.pending_at_stop);
    uint64_t keys = 0;
    /* workers' counters are theirs while they run; without memory to pause them,
     * the rules are left out rather than read racily */
    bool paused = e->workers && workers_pause(e->workers) == 0;
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
                   "\"partials_refused\":%llu,\"cap_hits\":%llu}",
                   (unsigned long long)r.matches, (unsigned long long)r.timeouts,
                   (unsigned long long)r.alerts, (unsigned long long)r.suppressed,
                   (unsigned long long)r.missing_key, (unsigned long long)r.keys_live,
                   (unsigned long long)r.partials_live,
                   (unsigned long long)r.partials_dropped,
                   (unsigned long long)r.partials_refused, (unsigned long long)r.cap_hits);
    }
    if (paused)
        workers_resume(e->workers);
    buf_printf(out, "},\"keys_live\":%llu,\"workers\":%zu}", (unsigned long long)keys,
               e->n_workers);
}
