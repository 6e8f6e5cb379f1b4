/* runtime/engine.c — the engine's single-threaded core (see engine.h). */
#include "runtime/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/deadline.h"
#include "runtime/decode.h"
#include "runtime/evtime.h"
#include "runtime/partition.h"
#include "runtime/reorder.h"

typedef struct RuleState {
    PartTable keys;
    DeadlineHeap timers;
    NfaCounters counters;
    NfaRunCtx ctx;
    EngineRuleStats stats;
} RuleState;

struct Engine {
    const CompiledRuleSet *rs;
    EngineSink sink;
    NfaLimits limits;
    Decoder *decoder;
    EvalScratch *scratch;
    Reorder reorder;
    RuleState *rules;          /* rs->n_rules, heap, owned */
    Value *key_vals;           /* room for the widest key; heap, owned */
    Buf key_bytes;             /* scratch for canonical key bytes */
    Buf reason;                /* scratch for dead-letter reasons */
    EngineStats stats;
    uint64_t next_id;
    int64_t clock_ms;          /* latest processing time handed out (never goes back) */
    bool failed;               /* an allocation failed: the run must end with an error */
    /* the (rule, key) whose NFA is running, for the result callback */
    size_t cur_rule;
    PartEntry *cur_entry;
};

static void on_result(void *user, const NfaResult *r);

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
    e->sink = *sink;
    e->limits.max_partials = opts && opts->max_partials ? opts->max_partials
                                                         : ENGINE_DEFAULT_MAX_PARTIALS;
    e->clock_ms = INT64_MIN;
    reorder_init(&e->reorder, rs->event_time ? rs->lateness_ms : 0);
    e->decoder = decoder_new(&rs->fields, DECODE_MAX_DEPTH);
    e->scratch = expr_scratch_new();
    e->rules = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *e->rules);
    size_t widest = 1;
    for (size_t i = 0; i < rs->n_rules; i++)
        if (rs->rules[i].n_keys > widest)
            widest = rs->rules[i].n_keys;
    e->key_vals = calloc(widest, sizeof *e->key_vals);
    if (!e->decoder || !e->scratch || !e->rules || !e->key_vals)
        goto oom;
    for (size_t i = 0; i < rs->n_rules; i++) {
        RuleState *st = &e->rules[i];
        part_table_init(&st->keys);
        deadline_init(&st->timers);
        st->ctx.scratch = e->scratch;
        st->ctx.limits = &e->limits;
        st->ctx.counters = &st->counters;
        st->ctx.sink.emit = on_result;
        st->ctx.sink.user = e;
    }
    return e;
oom:
    engine_free(e);
    *err = dup_message("out of memory while starting the engine");
    return NULL;
}

static void drop_entry(PartEntry *pe, void *user)
{
    RuleState *st = user;
    if (pe->nfa)
        nfa_key_free(pe->nfa, &st->counters);
    pe->nfa = NULL;
}

static void drop_event(void *item)
{
    event_release(item);
}

void engine_free(Engine *e)
{
    if (!e)
        return;
    if (e->rules)
        for (size_t i = 0; i < e->rs->n_rules; i++) {
            deadline_free(&e->rules[i].timers);
            part_table_free(&e->rules[i].keys, drop_entry, &e->rules[i]);
        }
    reorder_free(&e->reorder, drop_event);
    free(e->rules);
    free(e->key_vals);
    buf_free(&e->key_bytes);
    buf_free(&e->reason);
    if (e->scratch)
        expr_scratch_free(e->scratch);
    if (e->decoder)
        decoder_free(e->decoder);
    free(e);
}

/* ---- results and suppression ---------------------------------------------- */

/* A rule with no `on` clause at all alerts on match (alerts.h). */
static bool rule_alerts_on(const CompiledRule *rule, NfaResultKind kind)
{
    if (kind == NFA_TIMEOUT)
        return rule->n_on_timeout > 0;
    return rule->n_on_match > 0 || rule->n_on_timeout == 0;
}

static int64_t add_saturating(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static void on_result(void *user, const NfaResult *r)
{
    Engine *e = user;
    const CompiledRule *rule = &e->rs->rules[e->cur_rule];
    RuleState *st = &e->rules[e->cur_rule];
    PartEntry *pe = e->cur_entry;
    if (r->kind == NFA_MATCH)
        st->stats.matches++;
    else
        st->stats.timeouts++;
    if (!rule_alerts_on(rule, r->kind))
        return;
    if (rule->suppress_ms != DURATION_NONE && rule->suppress_ms > 0) {
        if (r->time_ms < pe->suppress_until) {
            st->stats.suppressed++;
            return;
        }
        pe->suppress_until = add_saturating(r->time_ms, rule->suppress_ms);
    }
    st->stats.alerts++;
    e->sink.alert(e->sink.user, e->cur_rule, pe->key, pe->n_key, r, e->scratch);
}

/* After the NFA ran for a key at time `now`: drop the entry if the key went idle
 * and holds no suppression, else re-arm its timer (the NFA deadline, or the end of
 * suppression so that the idle entry is collected then). */
static void settle(Engine *e, size_t ri, PartEntry *pe, int64_t now)
{
    RuleState *st = &e->rules[ri];
    if (!pe->nfa && pe->suppress_until <= now) {
        deadline_remove(&st->timers, pe);
        part_remove(&st->keys, pe);
        return;
    }
    int64_t due = pe->nfa ? nfa_key_deadline(pe->nfa) : pe->suppress_until;
    if (due <= now)
        due = add_saturating(now, 1);   /* never re-arm at a handled time: no busy loop */
    if (deadline_set(&st->timers, pe, due) < 0)
        e->failed = true;
}

/* The rule whose next deadline is earliest, if it is <= t. */
static bool next_due(const Engine *e, int64_t t, size_t *rule)
{
    int64_t best = INT64_MAX;
    for (size_t i = 0; i < e->rs->n_rules; i++) {
        int64_t d = deadline_next(&e->rules[i].timers);
        if (d < best) {
            best = d;
            *rule = i;
        }
    }
    return best != INT64_MAX && best <= t;
}

/* Fires every deadline <= t of every key of every rule, earliest first. */
static void fire_due(Engine *e, int64_t t)
{
    size_t ri = 0;
    while (next_due(e, t, &ri)) {
        RuleState *st = &e->rules[ri];
        PartEntry *pe = deadline_top(&st->timers);
        int64_t due = pe->deadline;
        if (pe->nfa) {
            e->cur_rule = ri;
            e->cur_entry = pe;
            nfa_key_advance(e->rs->rules[ri].nfa, &pe->nfa, due, &st->ctx);
        }
        settle(e, ri, pe, due);
    }
}

/* ---- one released event --------------------------------------------------- */

/* Evaluates the rule's key; NULL if the event has none (counted) or on failure. */
static PartEntry *key_entry(Engine *e, size_t ri, const EvalCtx *ctx)
{
    const CompiledRule *rule = &e->rs->rules[ri];
    RuleState *st = &e->rules[ri];
    for (size_t k = 0; k < rule->n_keys; k++)
        e->key_vals[k] = expr_eval(rule->keys[k], ctx, e->scratch);
    buf_clear(&e->key_bytes);
    if (!part_key_bytes(e->key_vals, rule->n_keys, &e->key_bytes)) {
        st->stats.missing_key++;
        return NULL;
    }
    if (e->key_bytes.failed) {
        e->failed = true;
        return NULL;
    }
    const char *kb = e->key_bytes.data ? e->key_bytes.data : "";
    uint64_t h = part_hash(kb, e->key_bytes.len);
    PartEntry *pe = part_lookup(&st->keys, kb, e->key_bytes.len, h);
    if (!pe) {
        pe = part_insert(&st->keys, kb, e->key_bytes.len, h, e->key_vals, rule->n_keys);
        if (!pe)
            e->failed = true;
    }
    return pe;
}

static void rule_event(Engine *e, size_t ri, Event *ev)
{
    const CompiledRule *rule = &e->rs->rules[ri];
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    if (rule->filter && !expr_test(rule->filter, &ctx, e->scratch))
        return;
    PartEntry *pe = key_entry(e, ri, &ctx);
    if (!pe)
        return;
    e->cur_rule = ri;
    e->cur_entry = pe;
    nfa_key_event(rule->nfa, &pe->nfa, ev, &e->rules[ri].ctx);
    settle(e, ri, pe, ev->time_ms);
}

static void process_event(Engine *e, Event *ev)
{
    fire_due(e, ev->time_ms);
    expr_scratch_reset(e->scratch);
    for (size_t ri = 0; ri < e->rs->n_rules; ri++)
        rule_event(e, ri, ev);
    expr_scratch_reset(e->scratch);
}

static void release_ready(Engine *e)
{
    Event *ev;
    while ((ev = reorder_pop_ready(&e->reorder, NULL))) {
        process_event(e, ev);
        event_release(ev);
    }
}

/* ---- input ---------------------------------------------------------------- */

static void dead_letter(Engine *e, const char *text, size_t len, const char *origin,
                        uint64_t line_no, const char *reason)
{
    e->stats.malformed++;
    if (e->sink.dead_letter)
        e->sink.dead_letter(e->sink.user, origin, line_no, reason, text, len);
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

static void reject_time(Engine *e, const char *text, size_t len, const char *origin,
                        uint64_t line_no)
{
    const FieldTable *ft = &e->rs->fields;
    const char *name = ft->paths[e->rs->time_slot].text;
    buf_clear(&e->reason);
    buf_printf(&e->reason, "missing or unparsable time field '%s'", name);
    dead_letter(e, text, len, origin, line_no,
                e->reason.failed ? "missing or unparsable time field" : e->reason.data);
}

int engine_line(Engine *e, const char *text, size_t len, const char *origin,
                uint64_t line_no, int64_t now_ms)
{
    e->stats.lines++;
    DecodeError derr = {0};
    Event *ev = decoder_decode(e->decoder, text, len, &derr);
    if (!ev) {
        buf_clear(&e->reason);
        buf_printf(&e->reason, "%s at byte %zu", derr.reason ? derr.reason : "invalid JSON",
                   derr.offset + 1);
        dead_letter(e, text, len, origin, line_no,
                    e->reason.failed ? "invalid JSON" : e->reason.data);
        return 0;
    }
    int64_t t;
    if (!event_time_of(e, ev, now_ms, &t)) {
        reject_time(e, text, len, origin, line_no);
        event_release(ev);
        return 0;
    }
    ev->id = ++e->next_id;
    ev->time_ms = t;
    ev->origin = origin;
    ev->origin_line = line_no;
    e->stats.events++;
    if (!e->rs->event_time) {
        process_event(e, ev);
        event_release(ev);
        return e->failed ? -1 : 0;
    }
    switch (reorder_push(&e->reorder, t, ev)) {
    case REORDER_ACCEPTED:
        break;
    case REORDER_LATE:
        e->stats.late++;
        if (e->sink.late)
            e->sink.late(e->sink.user, ev, reorder_watermark(&e->reorder));
        event_release(ev);
        return 0;
    case REORDER_NOMEM:
        event_release(ev);
        return -1;
    }
    release_ready(e);
    return e->failed ? -1 : 0;
}

/* ---- time and the end ----------------------------------------------------- */

int engine_tick(Engine *e, int64_t now_ms)
{
    if (e->rs->event_time)
        return 0;
    if (now_ms > e->clock_ms)
        e->clock_ms = now_ms;
    fire_due(e, e->clock_ms);
    expr_scratch_reset(e->scratch);
    return e->failed ? -1 : 0;
}

int64_t engine_next_deadline(const Engine *e)
{
    int64_t best = INT64_MAX;
    for (size_t i = 0; i < e->rs->n_rules; i++) {
        int64_t d = deadline_next(&e->rules[i].timers);
        if (d < best)
            best = d;
    }
    return best;
}

/* Advances every key still holding state to +infinity (deadlines first, in time order). */
static int advance_all(Engine *e)
{
    fire_due(e, INT64_MAX - 1);
    for (size_t ri = 0; ri < e->rs->n_rules; ri++) {
        RuleState *st = &e->rules[ri];
        size_t n = st->keys.count, i = 0, bucket = 0;
        PartEntry **live = malloc((n ? n : 1) * sizeof *live);
        if (!live)
            return -1;
        for (PartEntry *pe = part_next(&st->keys, &bucket, NULL); pe && i < n;
             pe = part_next(&st->keys, &bucket, pe))
            live[i++] = pe;
        for (size_t j = 0; j < i; j++) {
            PartEntry *pe = live[j];
            if (pe->nfa) {
                e->cur_rule = ri;
                e->cur_entry = pe;
                nfa_key_advance(e->rs->rules[ri].nfa, &pe->nfa, INT64_MAX, &st->ctx);
            }
            settle(e, ri, pe, INT64_MAX);
        }
        free(live);
    }
    expr_scratch_reset(e->scratch);
    return e->failed ? -1 : 0;
}

int engine_finish(Engine *e)
{
    reorder_flush(&e->reorder);
    release_ready(e);
    return advance_all(e);
}

int engine_stop(Engine *e)
{
    reorder_flush(&e->reorder);
    release_ready(e);
    uint64_t pending = 0;
    for (size_t ri = 0; ri < e->rs->n_rules; ri++)
        pending += e->rules[ri].counters.partials_live;
    e->stats.pending_at_stop = pending;
    return e->failed ? -1 : 0;
}

/* ---- statistics ----------------------------------------------------------- */

void engine_stats(const Engine *e, EngineStats *out)
{
    *out = e->stats;
    out->buffered = reorder_size(&e->reorder);
}

void engine_rule_stats(const Engine *e, size_t rule, EngineRuleStats *out)
{
    const RuleState *st = &e->rules[rule];
    *out = st->stats;
    out->keys_live = st->keys.count;
    out->partials_live = st->counters.partials_live;
    out->partials_dropped = st->counters.partials_dropped;
}

void engine_stats_json(const Engine *e, Buf *out)
{
    EngineStats st;
    engine_stats(e, &st);
    const EngineStats *s = &st;
    buf_printf(out, "{\"lines\":%llu,\"events\":%llu,\"malformed\":%llu,\"late\":%llu,"
               "\"buffered\":%llu,\"pending_at_stop\":%llu,\"rules\":{",
               (unsigned long long)s->lines, (unsigned long long)s->events,
               (unsigned long long)s->malformed, (unsigned long long)s->late,
               (unsigned long long)s->buffered, (unsigned long long)s->pending_at_stop);
    uint64_t keys = 0;
    for (size_t i = 0; i < e->rs->n_rules; i++) {
        EngineRuleStats r;
        engine_rule_stats(e, i, &r);
        keys += r.keys_live;
        if (i)
            buf_putc(out, ',');
        buf_json_string(out, e->rs->rules[i].name, strlen(e->rs->rules[i].name));
        buf_printf(out, ":{\"matches\":%llu,\"timeouts\":%llu,\"alerts\":%llu,"
                   "\"suppressed\":%llu,\"missing_key\":%llu,\"keys_live\":%llu,"
                   "\"partials_live\":%llu,\"partials_dropped\":%llu}",
                   (unsigned long long)r.matches, (unsigned long long)r.timeouts,
                   (unsigned long long)r.alerts, (unsigned long long)r.suppressed,
                   (unsigned long long)r.missing_key, (unsigned long long)r.keys_live,
                   (unsigned long long)r.partials_live,
                   (unsigned long long)r.partials_dropped);
    }
    buf_printf(out, "},\"keys_live\":%llu}", (unsigned long long)keys);
}
