/* tests/fuzz/fuzz_pipeline.c — libFuzzer target for the whole run-time path.
 *
 * The input is split into lines and fed to two engines built from fixed rules
 * (loops with until, negation in the middle and at the end, within and step within,
 * iterative aggregates, regexes incl. a catastrophic one, suppress, skip strategies):
 * one on event time (ended with engine_finish), one on processing time with a
 * synthetic clock (ticked after each line, ended with engine_stop). Every alert is
 * rendered to a Buf with each action that fits. Beyond "no crash" it checks that
 * every record is valid JSON, that the engine's alert counters equal the alerts the
 * sink saw, that every line is counted once, as an event or as a dead letter, and
 * that the event-time run gives the same multiset of records with two worker
 * threads as inline (RUNTIME.md: one key's results stay the same and in order). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerts/alerts.h"
#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/parse.h"
#include "rules/ruleset.h"
#include "runtime/decode.h"
#include "runtime/engine.h"
#include "tests/fuzz/fuzz_alerts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lines longer than this are refused the way the input layer refuses them. */
#define FUZZ_MAX_LINE 4096
#define PT_START_MS 1767225600000LL
#define PT_STEP_MS 150

static const char EVENT_TIME_RULES[] =
    "time ts lateness 2s;\n"
    "rule loop_until { key user;\n"
    "  begin a where n == \"a\" one_or_more until n == \"b\";\n"
    "  followed_by c where n == \"c\"; within 10s; skip no_skip;\n"
    "  on match alert \"loop {count(a)} sum {sum(a.amount)}\"\n"
    "    fields { total: sum(a.amount), first: first(a.id) };\n"
    "  on timeout alert low \"loop timeout {key.user}\"; }\n"
    "rule negation { key user;\n"
    "  begin a where n == \"a\"; not_next b where n == \"b\";\n"
    "  followed_by_any c where n == \"c\" times 1..3 allow_combinations;\n"
    "  not_followed_by d where n == \"d\"; followed_by e where n == \"e\";\n"
    "  within 5s; skip no_skip; on match alert \"neg {c.id} {count(c)}\"; }\n"
    "rule absent { key user; begin a where n == \"a\"; not_followed_by x where n == \"x\";\n"
    "  within 3s; on match alert info \"no x after {a.id}\"; }\n"
    "rule iterative {\n"
    "  begin a where (sum(a.amount) + amount) / (count(a) + 1) < 15 one_or_more greedy;\n"
    "  next b; skip past_last_event;\n"
    "  on match alert \"avg {avg(a.amount)}\"\n"
    "    fields { avg: avg(a.amount), n: count(a), mx: max(a.amount) }; }\n"
    "rule regex { key user; filter msg =~ '^(ERR|WARN)[0-9]+';\n"
    "  begin e where regex_extract(msg, '([0-9]+)', 1) != null times 2 consecutive;\n"
    "  next f where msg !~ '(a+)+$' and lower(msg) != \"errx\";\n"
    "  within 1m; suppress 1s; skip to_first e;\n"
    "  on match alert critical \"re {e.msg} {upper(f.msg)} {payload.card.bin}\"\n"
    "    fields { k: key.user, d: time(f) - time(e), item: items[0].sku }; }\n";

static const char PROCESSING_TIME_RULES[] =
    "rule pt_seq { key user; begin a where n == \"a\";\n"
    "  followed_by b where n == \"b\" optional;\n"
    "  followed_by c where n == \"c\" within 1s; within 2s;\n"
    "  on match alert \"pt {a.id} {c.id}\"; on timeout alert low \"pt timeout {a.id}\"; }\n"
    "rule pt_loop { begin a where amount > 10 times 2+ consecutive;\n"
    "  not_followed_by z where n == \"z\"; within 500ms; skip to_last a;\n"
    "  on match alert \"pt loop {count(a)}\"; }\n";

/* What the sink of one run collects. With workers, alerts arrive from their threads. */
typedef struct Collector {
    const CompiledRuleSet *rs;
    pthread_mutex_t lock;    /* guards everything below */
    Buf record;              /* the record being rendered; reused */
    uint64_t *alerts;        /* per rule: sink calls seen; heap, owned */
    uint64_t records;        /* records rendered */
    uint64_t digest;         /* sum of the records' hashes: independent of their order */
    const uint8_t *input;    /* for the crash message */
    size_t input_size;
} Collector;

/* The records of one run, as a multiset fingerprint. */
typedef struct RunSummary {
    bool complete;           /* the run ended normally (no allocation failure) */
    uint64_t records, digest;
} RunSummary;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void die(const Collector *c, const char *what)
{
    fprintf(stderr, "fuzz_pipeline: %s\ninput (%zu bytes): %.*s\n", what, c->input_size,
            (int)c->input_size, (const char *)c->input);
    abort();
}

static void count_record(void *user, const Buf *record)
{
    Collector *c = user;
    c->records++;
    c->digest += hash_bytes(record->data, record->len);
}

static void on_alert(void *user, size_t rule_index, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    Collector *c = user;
    pthread_mutex_lock(&c->lock);
    c->alerts[rule_index]++;
    if (!fuzz_render_alerts(&c->rs->rules[rule_index], key, n_key, r, scratch, &c->record,
                            count_record, c))
        die(c, "an alert record is not valid JSON");
    pthread_mutex_unlock(&c->lock);
}

static void on_dead_letter(void *user, const char *origin, uint64_t line_no, const char *reason,
                           const char *text, size_t len)
{
    Collector *c = user;
    (void)origin;
    (void)line_no;
    (void)text;
    (void)len;
    if (reason == NULL || reason[0] == '\0')
        die(c, "a dead letter without a reason");
}

static void on_late(void *user, const Event *ev, int64_t watermark_ms)
{
    Collector *c = user;
    if (ev->time_ms >= watermark_ms)
        die(c, "an event reported late that is not older than the watermark");
}

static CompiledRuleSet *compile_text(const char *name, const char *text)
{
    RuleSet *ast = ast_ruleset_new();
    if (ast == NULL)
        return NULL;
    Diags d;
    diags_init(&d);
    CompiledRuleSet *rs = NULL;
    if (dsl_parse_text(ast, name, text, strlen(text), &d) == 0 && dsl_check(ast, &d) == 0) {
        rs = ruleset_compile(ast, &d);
        ast = NULL;   /* ruleset_compile took it */
    }
    if (rs == NULL) {
        diags_print(&d, stderr);
        fprintf(stderr, "fuzz_pipeline: the fixed rules of %s do not compile\n", name);
        abort();
    }
    diags_free(&d);
    return rs;
}

static void feed_lines(Engine *e, const uint8_t *data, size_t size, bool processing_time)
{
    const char *text = (const char *)data;
    size_t start = 0;
    uint64_t line_no = 0;
    int64_t now = PT_START_MS;
    while (start < size) {
        const char *nl = memchr(text + start, '\n', size - start);
        size_t end = nl ? (size_t)(nl - text) : size;
        size_t len = end - start;
        line_no++;
        if (len > FUZZ_MAX_LINE)
            engine_reject(e, text + start, FUZZ_MAX_LINE, "fuzz", line_no, "line too long");
        else if (engine_line(e, text + start, len, "fuzz", line_no, now) < 0)
            return;
        if (processing_time) {
            now += PT_STEP_MS;
            if (engine_tick(e, now) < 0)
                return;
        }
        start = end + 1;
    }
}

static void check_counters(const Collector *c, const Engine *e)
{
    EngineStats st;
    engine_stats(e, &st);
    if (st.events + st.malformed != st.lines)
        die(c, "lines are not split exactly into events and dead letters");
    for (size_t i = 0; i < c->rs->n_rules; i++) {
        EngineRuleStats rst;
        engine_rule_stats(e, i, &rst);
        if (rst.alerts != c->alerts[i])
            die(c, "a rule's alert counter differs from the alerts delivered");
    }
    Buf json = BUF_INIT;
    engine_stats_json(e, &json);
    DecodeError err;
    if (!json.failed && !json_validate(json.data, json.len, DECODE_MAX_DEPTH, &err))
        die(c, "engine_stats_json is not valid JSON");
    buf_free(&json);
}

static RunSummary run_once(const CompiledRuleSet *rs, bool processing_time, size_t workers,
                           const uint8_t *data, size_t size)
{
    RunSummary sum = {false, 0, 0};
    Collector c = {.rs = rs, .record = BUF_INIT, .input = data, .input_size = size};
    c.alerts = calloc(rs->n_rules, sizeof(uint64_t));
    if (c.alerts == NULL)
        return sum;
    if (pthread_mutex_init(&c.lock, NULL) != 0) {
        free(c.alerts);
        return sum;
    }
    EngineSink sink = {on_alert, on_dead_letter, on_late, &c};
    EngineOptions opts = {.max_partials = 64, .workers = workers};
    char *err = NULL;
    Engine *e = engine_new(rs, &opts, &sink, &err);
    if (e == NULL) {
        fprintf(stderr, "engine_new: %s\n", err ? err : "?");
        free(err);
        abort();
    }
    feed_lines(e, data, size, processing_time);
    int rc = processing_time ? engine_stop(e) : engine_finish(e);
    if (rc == 0) {
        check_counters(&c, e);
        sum = (RunSummary){true, c.records, c.digest};
    }
    engine_free(e);
    buf_free(&c.record);
    free(c.alerts);
    pthread_mutex_destroy(&c.lock);
    return sum;
}

/* Compiled once per process: compiling per input would cost more than the run and
 * the rules never change. libFuzzer gives no other place to keep them. */
static const CompiledRuleSet *event_time_rules(void)
{
    static CompiledRuleSet *rs;
    if (rs == NULL)
        rs = compile_text("event_time.cep", EVENT_TIME_RULES);
    return rs;
}

static const CompiledRuleSet *processing_time_rules(void)
{
    static CompiledRuleSet *rs;
    if (rs == NULL)
        rs = compile_text("processing_time.cep", PROCESSING_TIME_RULES);
    return rs;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    RunSummary inline_run = run_once(event_time_rules(), false, 1, data, size);
    RunSummary threaded = run_once(event_time_rules(), false, 2, data, size);
    if (inline_run.complete && threaded.complete &&
        (inline_run.records != threaded.records || inline_run.digest != threaded.digest)) {
        fprintf(stderr, "fuzz_pipeline: %llu records inline, %llu with 2 workers\n",
                (unsigned long long)inline_run.records, (unsigned long long)threaded.records);
        Collector c = {.input = data, .input_size = size};
        die(&c, "alerts differ with 2 workers");
    }
    run_once(processing_time_rules(), true, 1, data, size);
    return 0;
}
