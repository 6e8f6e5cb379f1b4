/* tests/test_engine_run.c — the engine over real compiled rules: deadline order
 * across keys, suppression (down to a window of 1ms), missing keys, idle keys leaving
 * the table, late and malformed lines, stop versus end of input, processing-time
 * timers, workers. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "dsl/diag.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "runtime/input.h"
#include "runtime/partition.h"
#include "runtime/workers.h"
#include "tests/rulesutil.h"
#include "tests/checkmain.h"

/* ---- fixtures --------------------------------------------------------------- */

typedef struct Seen {
    pthread_mutex_t lock;      /* workers deliver from their threads */
    char lines[256][160];      /* "rule kind key time" per alert */
    size_t n;
    char dead[16][160];        /* "origin:line reason" */
    size_t n_dead;
    size_t n_late;
    uint64_t late_line;
} Seen;

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    (void)rule;
    Seen *s = user;
    char k[64] = "-";
    if (n_key && key[0].type == V_STR)
        snprintf(k, sizeof k, "%.*s", (int)key[0].len, key[0].s);
    pthread_mutex_lock(&s->lock);
    ck_assert_uint_lt(s->n, 256);
    snprintf(s->lines[s->n++], 160, "%zu %s %s %lld", rule,
             r->kind == NFA_MATCH ? "match" : "timeout", k, (long long)r->time_ms);
    pthread_mutex_unlock(&s->lock);
}

static void on_dead(void *user, const char *origin, uint64_t line_no, const char *reason,
                    const char *text, size_t len)
{
    (void)text;
    (void)len;
    Seen *s = user;
    ck_assert_uint_lt(s->n_dead, 16);
    snprintf(s->dead[s->n_dead++], 160, "%s:%llu %s", origin, (unsigned long long)line_no,
             reason);
}

static void on_late(void *user, const Event *ev, int64_t watermark)
{
    (void)watermark;
    Seen *s = user;
    s->n_late++;
    s->late_line = ev->origin_line;
}

static Engine *start_capped(const CompiledRuleSet *rs, Seen *seen, size_t workers,
                            size_t max_partials)
{
    memset(seen, 0, sizeof *seen);
    pthread_mutex_init(&seen->lock, NULL);
    return test_engine_new(rs, (EngineSink){on_alert, on_dead, on_late, seen}, max_partials,
                           workers);
}

static Engine *start(const CompiledRuleSet *rs, Seen *seen, size_t workers)
{
    return start_capped(rs, seen, workers, 0);
}

static void feed(Engine *e, const char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(engine_line(e, lines[i], strlen(lines[i]), "t", i + 1, 0), 0);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The alert lines seen are exactly want[0..n). */
static void expect_alerts(const Seen *s, const char *const *want, size_t n)
{
    ck_assert_uint_eq(s->n, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(s->lines[i], want[i]);
}

/* The rule's counters of alerts suppressed and alerts delivered. */
static void expect_suppressed(Engine *e, size_t rule, uint64_t suppressed, uint64_t alerts)
{
    EngineRuleStats st;
    engine_rule_stats(e, rule, &st);
    ck_assert_uint_eq(st.suppressed, suppressed);
    ck_assert_uint_eq(st.alerts, alerts);
}

static const char pair_rules[] =
    "time ts epoch_ms;\n"
    "rule pair { key user; begin a where type == \"start\"; followed_by b where type == \"end\";\n"
    "  within 10s; on match alert \"m\"; on timeout alert \"t\"; }\n"
    "rule ping { key user; begin p where type == \"ping\"; on match alert \"p\"; }\n";

/* ---- tests ------------------------------------------------------------------ */

START_TEST(deadlines_fire_before_later_events_of_other_keys)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    Seen s;
    Engine *e = start(rs, &s, 1);
    const char *ev[] = {
        "{\"ts\":0,\"type\":\"start\",\"user\":\"u1\"}",
        "{\"ts\":100000,\"type\":\"ping\",\"user\":\"u2\"}",
    };
    feed(e, ev, N(ev));
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.lines[0], "0 timeout u1 10000");
    ck_assert_str_eq(s.lines[1], "1 match u2 100000");
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_eq(s.n, 2);
    EngineRuleStats st;
    engine_rule_stats(e, 0, &st);
    ck_assert_uint_eq(st.timeouts, 1);
    ck_assert_uint_eq(st.keys_live, 0);   /* idle keys leave the table */
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

START_TEST(end_of_input_fires_timeouts_but_stop_does_not)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    const char *ev[] = {
        "{\"ts\":0,\"type\":\"start\",\"user\":\"u1\"}",
        "{\"ts\":1000,\"type\":\"start\",\"user\":\"u2\"}",
        "{\"ts\":2000,\"type\":\"end\",\"user\":\"u2\"}",
    };
    Seen s;
    Engine *e = start(rs, &s, 1);
    feed(e, ev, N(ev));
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.lines[0], "0 match u2 2000");
    ck_assert_str_eq(s.lines[1], "0 timeout u1 10000");
    engine_free(e);

    e = start(rs, &s, 1);
    feed(e, ev, N(ev));
    ck_assert_int_eq(engine_stop(e), 0);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_str_eq(s.lines[0], "0 match u2 2000");
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_eq(st.pending_at_stop, 1);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

START_TEST(suppress_drops_alerts_within_the_window_per_key)
{
    CompiledRuleSet *rs = test_rules_compile(
        "time ts epoch_ms;\n"
        "rule hit { key user; begin a where type == \"x\"; suppress 1m; on match alert \"h\"; }\n", NULL);
    Seen s;
    Engine *e = start(rs, &s, 1);
    const char *ev[] = {
        "{\"ts\":0,\"type\":\"x\",\"user\":\"u1\"}",
        "{\"ts\":10000,\"type\":\"x\",\"user\":\"u1\"}",
        "{\"ts\":20000,\"type\":\"x\",\"user\":\"u2\"}",
        "{\"ts\":59999,\"type\":\"x\",\"user\":\"u1\"}",
        "{\"ts\":60000,\"type\":\"x\",\"user\":\"u1\"}",
    };
    feed(e, ev, N(ev));
    EngineRuleStats st;
    engine_rule_stats(e, 0, &st);
    ck_assert_uint_eq(st.keys_live, 2);   /* idle, but still suppressing */
    ck_assert_int_eq(engine_finish(e), 0);
    static const char *const want[] = {"0 match u1 0", "0 match u2 20000", "0 match u1 60000"};
    expect_alerts(&s, want, N(want));
    expect_suppressed(e, 0, 2, 3);
    engine_rule_stats(e, 0, &st);
    ck_assert_uint_eq(st.matches, 5);
    ck_assert_uint_eq(st.keys_live, 0);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

/* Suppression at its smallest window: `suppress 1ms` drops a second alert of a key at
 * the same millisecond only (the window's end is open), next to a rule without
 * suppression that alerts on every event. (`suppress 0s` is refused by the checker, so
 * the shard's test for a window of 0 is never reached.) */
START_TEST(suppress_1ms_drops_only_alerts_at_the_same_millisecond)
{
    static const struct {
        const char *user;
        int at_ms;   /* after 2026-01-01 */
    } buys[] = {{"u1", 0}, {"u1", 0}, {"u2", 0}, {"u1", 1}, {"u1", 1}, {"u1", 2}};
    /* rule 0 alerts on every buy; rule 1 once per user and millisecond */
    static const char *const want[] = {
        "0 match u1 1767225600000", "1 match u1 1767225600000", "0 match u1 1767225600000",
        "0 match u2 1767225600000", "1 match u2 1767225600000", "0 match u1 1767225600001",
        "1 match u1 1767225600001", "0 match u1 1767225600001", "0 match u1 1767225600002",
        "1 match u1 1767225600002",
    };
    CompiledRuleSet *rs = test_rules_compile(
        "time ts epoch_ms lateness 0s;\n"
        "rule none { key user; begin a where type == \"buy\"; on match alert \"n\"; }\n"
        "rule some { key user; begin a where type == \"buy\"; suppress 1ms;\n"
        "  on match alert \"s\"; }\n", NULL);
    char lines[N(buys)][96];
    const char *ev[N(buys)];
    for (size_t i = 0; i < N(buys); i++) {
        snprintf(lines[i], sizeof lines[i], "{\"ts\":%lld,\"type\":\"buy\",\"user\":\"%s\"}",
                 1767225600000LL + buys[i].at_ms, buys[i].user);
        ev[i] = lines[i];
    }
    Seen s;
    Engine *e = start(rs, &s, 1);
    feed(e, ev, N(ev));
    ck_assert_int_eq(engine_finish(e), 0);
    expect_alerts(&s, want, N(want));
    expect_suppressed(e, 0, 0, 6);
    expect_suppressed(e, 1, 2, 4);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

START_TEST(missing_or_null_key_is_counted_and_skipped)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    Seen s;
    Engine *e = start(rs, &s, 1);
    const char *ev[] = {
        "{\"ts\":0,\"type\":\"ping\"}",
        "{\"ts\":1,\"type\":\"ping\",\"user\":null}",
        "{\"ts\":2,\"type\":\"ping\",\"user\":\"u\"}",
    };
    feed(e, ev, N(ev));
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_eq(s.n, 1);
    EngineRuleStats st;
    engine_rule_stats(e, 1, &st);
    ck_assert_uint_eq(st.missing_key, 2);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

START_TEST(malformed_and_late_lines_go_to_the_sink_with_positions)
{
    CompiledRuleSet *rs = test_rules_compile(
        "time ts epoch_ms lateness 5s;\n"
        "rule ping { key user; begin p where type == \"ping\"; on match alert \"p\"; }\n", NULL);
    Seen s;
    Engine *e = start(rs, &s, 1);
    const char *ev[] = {
        "{\"ts\":10000,\"type\":\"ping\",\"user\":\"a\"}",
        "{\"ts\":",
        "{\"type\":\"ping\",\"user\":\"a\"}",
        "{\"ts\":20000,\"type\":\"ping\",\"user\":\"b\"}",
        "{\"ts\":14999,\"type\":\"ping\",\"user\":\"c\"}",
        "{\"ts\":15000,\"type\":\"ping\",\"user\":\"d\"}",
    };
    feed(e, ev, N(ev));
    engine_reject(e, "xxxx", 4, "t", 7, "line too long");
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_eq(s.n_dead, 3);
    ck_assert(strncmp(s.dead[0], "t:2 ", 4) == 0);
    ck_assert_str_eq(s.dead[1], "t:3 missing or unparsable time field 'ts'");
    ck_assert_str_eq(s.dead[2], "t:7 line too long");
    ck_assert_uint_eq(s.n_late, 1);
    ck_assert_uint_eq(s.late_line, 5);
    ck_assert_uint_eq(s.n, 3);   /* a, d (at the watermark) and b, in time order */
    ck_assert_str_eq(s.lines[0], "0 match a 10000");
    ck_assert_str_eq(s.lines[1], "0 match d 15000");
    ck_assert_str_eq(s.lines[2], "0 match b 20000");
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_eq(st.lines, 7);
    ck_assert_uint_eq(st.events, 4);
    ck_assert_uint_eq(st.malformed, 3);
    ck_assert_uint_eq(st.late, 1);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

START_TEST(processing_time_timeouts_fire_on_tick)
{
    CompiledRuleSet *rs = test_rules_compile(
        "rule pair { key user; begin a where type == \"start\";\n"
        "  followed_by b where type == \"end\"; within 1s; on timeout alert \"t\"; }\n", NULL);
    Seen s;
    Engine *e = start(rs, &s, 1);
    const char *start_ev = "{\"type\":\"start\",\"user\":\"u\"}";
    ck_assert_int_eq(engine_line(e, start_ev, strlen(start_ev), "t", 1, 5000), 0);
    ck_assert_int_eq(engine_next_deadline(e), 6000);
    ck_assert_int_eq(engine_tick(e, 5999), 0);
    ck_assert_uint_eq(s.n, 0);
    ck_assert_int_eq(engine_tick(e, 6000), 0);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_str_eq(s.lines[0], "0 timeout u 6000");
    ck_assert_int_eq(engine_next_deadline(e), INT64_MAX);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

static int warnings_seen;
static char last_warning[256];
static void on_warn(void *user, const char *msg)
{
    (void)user;
    warnings_seen++;
    snprintf(last_warning, sizeof last_warning, "%s", msg);
}

START_TEST(max_partials_caps_each_key)
{
    CompiledRuleSet *rs = test_rules_compile(
        "time ts epoch_ms;\n"
        "rule any { key user; begin a where t == \"a\"; followed_by b where t == \"b\";\n"
        "  within 1h; on match alert \"m\"; }\n", NULL);
    Seen s;
    Engine *e = start_capped(rs, &s, 1, 3);
    warnings_seen = 0;
    engine_set_warn(e, on_warn, NULL);
    char line[96];
    for (int i = 0; i < 5; i++) {
        snprintf(line, sizeof line, "{\"ts\":%d,\"t\":\"a\",\"user\":\"u\"}", i);
        ck_assert_int_eq(engine_line(e, line, strlen(line), "t", (uint64_t)i + 1, 0), 0);
    }
    EngineRuleStats st;
    engine_rule_stats(e, 0, &st);
    ck_assert_uint_eq(st.partials_live, 3);
    ck_assert_uint_eq(st.partials_dropped, 2);
    ck_assert_uint_eq(st.cap_hits, 2);
    /* one warning for the burst, however many hits (rate-limited) */
    ck_assert_int_eq(warnings_seen, 1);
    ck_assert_ptr_nonnull(strstr(last_warning, "rule 'any'"));
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

static int cmp_lines(const void *a, const void *b);

static const char reload_v2[] =
    "time ts epoch_ms;\n"
    "rule pair { key user; begin a where type == \"start\"; followed_by b where type == \"end\";\n"
    "  within 10s; on match alert high \"new message\"; on timeout alert \"t\"; }\n"
    "rule ping { key user; begin p where type == \"ping\" and n > 0; on match alert \"p\"; }\n"
    "rule extra { key user; begin x where type == \"end\"; on match alert \"x\"; }\n";

static int swaps_seen;
static void count_swap(void *user)
{
    (void)user;
    swaps_seen++;
}

static void check_reload(size_t workers)
{
    CompiledRuleSet *v1 = test_rules_compile(pair_rules, NULL);
    Seen s;
    Engine *e = start(v1, &s, workers);
    const char *before[] = {"{\"ts\":0,\"type\":\"start\",\"user\":\"u1\"}"};
    feed(e, before, 1);
    CompiledRuleSet *v2 = test_rules_compile(reload_v2, v1);
    EngineReloadSummary sum;
    swaps_seen = 0;
    ck_assert_int_eq(engine_reload(e, v2, count_swap, NULL, &sum), 0);
    ck_assert_int_eq(swaps_seen, 1);
    ck_assert_uint_eq(sum.rules, 3);
    ck_assert_uint_eq(sum.kept, 1);
    ck_assert_uint_eq(sum.changed, 1);
    ck_assert_uint_eq(sum.added, 1);
    ck_assert_uint_eq(sum.removed, 0);
    ruleset_free(v1);   /* the engine no longer uses it */
    /* the partial match started before the reload completes after it */
    const char *after[] = {"{\"ts\":1000,\"type\":\"end\",\"user\":\"u1\"}"};
    feed(e, after, 1);
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_eq(s.n, 2);
    qsort(s.lines, s.n, sizeof s.lines[0], cmp_lines);
    ck_assert_str_eq(s.lines[0], "0 match u1 1000");   /* pair kept its state */
    ck_assert_str_eq(s.lines[1], "2 match u1 1000");   /* extra, new */
    EngineRuleStats st;
    engine_rule_stats(e, 0, &st);
    ck_assert_uint_eq(st.matches, 1);
    ck_assert_uint_eq(st.keys_live, 0);
    engine_free(e);

    /* a removed rule's state is freed; a changed rule starts empty */
    CompiledRuleSet *v3 = test_rules_compile(pair_rules, v2);
    e = start(v2, &s, workers);
    const char *open_all[] = {
        "{\"ts\":0,\"type\":\"start\",\"user\":\"u2\"}",
    };
    feed(e, open_all, 1);
    ck_assert_int_eq(engine_reload(e, v3, NULL, NULL, &sum), 0);
    ck_assert_uint_eq(sum.kept, 1);
    ck_assert_uint_eq(sum.changed, 1);
    ck_assert_uint_eq(sum.removed, 1);
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_str_eq(s.lines[0], "0 timeout u2 10000");
    engine_free(e);
    ruleset_free(v2);
    ruleset_free(v3);
}

START_TEST(reload_keeps_unchanged_rules_state_inline)
{
    check_reload(1);
}
END_TEST

START_TEST(reload_keeps_unchanged_rules_state_with_workers)
{
    check_reload(3);
}
END_TEST

START_TEST(reload_redecodes_buffered_events_for_new_fields)
{
    CompiledRuleSet *v1 = test_rules_compile(
        "time ts epoch_ms lateness 1m;\n"
        "rule a { key user; begin x where type == \"go\"; on match alert \"a\"; }\n", NULL);
    Seen s;
    Engine *e = start(v1, &s, 1);
    const char *ev[] = {"{\"ts\":5,\"type\":\"go\",\"user\":\"u\",\"level\":7}"};
    feed(e, ev, 1);   /* waits in the reorder buffer (lateness 1m) */
    CompiledRuleSet *v2 = test_rules_compile(
        "time ts epoch_ms lateness 1m;\n"
        "rule a { key user; begin x where type == \"go\" and level == 7; on match alert \"a\"; }\n",
        v1);
    EngineReloadSummary sum;
    ck_assert_int_eq(engine_reload(e, v2, NULL, NULL, &sum), 0);
    ck_assert_uint_eq(sum.changed, 1);
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_eq(s.n, 1);   /* `level` is read although v1 did not decode it */
    engine_free(e);
    ruleset_free(v1);
    ruleset_free(v2);
}
END_TEST

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(a, b);
}

START_TEST(workers_give_the_same_alerts_with_per_key_order)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    Buf text = BUF_INIT;
    char **lines = calloc(400, sizeof *lines);
    for (int i = 0; i < 400; i++) {
        static const char *types[] = {"start", "end", "ping", "end", "start"};
        buf_clear(&text);
        buf_printf(&text, "{\"ts\":%d,\"type\":\"%s\",\"user\":\"u%d\"}", i * 700,
                   types[i % 5], i % 7);
        lines[i] = strdup(text.data);
    }
    Seen one, four;
    Engine *e = start(rs, &one, 1);
    feed(e, (const char *const *)lines, 400);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
    e = start(rs, &four, 4);
    feed(e, (const char *const *)lines, 400);
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert_uint_gt(one.n, 20);
    ck_assert_uint_eq(one.n, four.n);
    /* per (rule, key) the order is the same */
    for (int r = 0; r < 2; r++)
        for (int u = 0; u < 7; u++) {
            char key[16];
            snprintf(key, sizeof key, " u%d ", u);
            size_t j = 0;
            for (size_t i = 0; i < one.n; i++) {
                if (one.lines[i][0] != '0' + r || !strstr(one.lines[i], key))
                    continue;
                while (j < four.n && (four.lines[j][0] != '0' + r || !strstr(four.lines[j], key)))
                    j++;
                ck_assert_uint_lt(j, four.n);
                ck_assert_str_eq(four.lines[j], one.lines[i]);
                j++;
            }
        }
    qsort(one.lines, one.n, sizeof one.lines[0], cmp_lines);
    qsort(four.lines, four.n, sizeof four.lines[0], cmp_lines);
    for (size_t i = 0; i < one.n; i++)
        ck_assert_str_eq(one.lines[i], four.lines[i]);
    EngineRuleStats st;
    engine_rule_stats(e, 0, &st);
    ck_assert_uint_eq(st.keys_live, 0);
    engine_free(e);
    for (int i = 0; i < 400; i++)
        free(lines[i]);
    free(lines);
    buf_free(&text);
    ruleset_free(rs);
}
END_TEST

/* ---- decoding on the workers ------------------------------------------------
 * With workers, lines are decoded in batches on the worker threads; everything must
 * come out as with one thread: dead letters and late events in input order with
 * their positions, the same counters and the same alerts. */

/* Everything a run reports: the engine-thread records in order, the alerts (from any
 * thread) to be sorted. */
typedef struct Trace {
    pthread_mutex_t lock;
    Buf order;                 /* "D line reason\n" and "L line watermark\n", in order */
    Buf alerts;                /* "rule kind key time\n" per alert */
} Trace;

static void trace_alert(void *user, size_t rule, const Value *key, size_t n_key,
                        const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Trace *t = user;
    pthread_mutex_lock(&t->lock);
    buf_printf(&t->alerts, "%zu %s %.*s %lld", rule, r->kind == NFA_MATCH ? "m" : "t",
               n_key && key[0].type == V_STR ? (int)key[0].len : 1,
               n_key && key[0].type == V_STR ? key[0].s : "-", (long long)r->time_ms);
    /* the events' ids and positions: the engine's thread gives them in input order */
    for (const MatchNode *m = r->last; m; m = m->prev)
        buf_printf(&t->alerts, " %llu@%s:%llu", (unsigned long long)m->event->id,
                   m->event->origin, (unsigned long long)m->event->origin_line);
    buf_putc(&t->alerts, '\n');
    pthread_mutex_unlock(&t->lock);
}

static void trace_dead(void *user, const char *origin, uint64_t line_no, const char *reason,
                       const char *text, size_t len)
{
    Trace *t = user;
    buf_printf(&t->order, "D %s:%llu %s [%.*s]\n", origin, (unsigned long long)line_no,
               reason, (int)len, text);
}

static void trace_late(void *user, const Event *ev, int64_t watermark)
{
    Trace *t = user;
    buf_printf(&t->order, "L %llu %lld %lld\n", (unsigned long long)ev->origin_line,
               (long long)ev->time_ms, (long long)watermark);
}

/* An engine of `workers` threads whose alerts, dead letters and late events go to t. */
static Engine *traced_engine(const CompiledRuleSet *rs, Trace *t, size_t workers)
{
    return test_engine_new(rs, (EngineSink){trace_alert, trace_dead, trace_late, t}, 0,
                           workers);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The alerts sorted, so that runs whose threads interleave differently compare. */
static void sort_lines(Buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->data[i] == '\n';
    char **v = calloc(n ? n : 1, sizeof *v);
    char *p = b->data;
    for (size_t i = 0; i < n; i++) {
        v[i] = p;
        p = strchr(p, '\n');
        *p++ = '\0';
    }
    qsort(v, n, sizeof *v, cmp_str_ptr);
    Buf out = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        buf_puts(&out, v[i]);
        buf_putc(&out, '\n');
    }
    free(v);
    buf_free(b);
    *b = out;
}

typedef struct Run {
    Trace trace;
    EngineStats stats;
    EngineRuleStats rule0;
} Run;

/* Where a line comes from and when it arrived, for runs not read from one input. */
typedef struct Placed {
    const char *origin;
    uint64_t line_no;
    int64_t now_ms;
} Placed;

/* Feeds lines (every refuse_every-th handed in as refused by the input layer, none if
 * 0; every 500th followed by a tick; waiting for backlogged workers as `vigil run`
 * does), then ends: engine_finish, or engine_stop. Line i is at[i], or line i + 1 of
 * "in" at time 0 if at is NULL. */
static void run_lines(const CompiledRuleSet *rs, char **lines, size_t n, const Placed *at,
                      size_t workers, size_t refuse_every, bool stop, Run *run)
{
    memset(run, 0, sizeof *run);
    pthread_mutex_init(&run->trace.lock, NULL);
    Engine *e = traced_engine(rs, &run->trace, workers);
    for (size_t i = 0; i < n; i++) {
        Placed p = at ? at[i] : (Placed){"in", i + 1, 0};
        if (refuse_every && i % refuse_every == refuse_every - 1)
            engine_reject(e, lines[i], strlen(lines[i]), p.origin, p.line_no, "refused");
        else
            ck_assert_int_eq(engine_line(e, lines[i], strlen(lines[i]), p.origin, p.line_no,
                                         p.now_ms), 0);
        if (i % 500 == 499)
            ck_assert_int_eq(engine_tick(e, 0), 0);
        while (engine_backlogged(e))
            engine_drain(e, 50);
    }
    ck_assert_int_eq(stop ? engine_stop(e) : engine_finish(e), 0);
    engine_stats(e, &run->stats);
    engine_rule_stats(e, 0, &run->rule0);
    engine_free(e);
    sort_lines(&run->trace.alerts);
}

static void run_free(Run *run)
{
    buf_free(&run->trace.order);
    buf_free(&run->trace.alerts);
    pthread_mutex_destroy(&run->trace.lock);
}

/* Texts of many lines: the first line that differs is what a failure shows. */
static void assert_same_text(const Buf *a, const Buf *b)
{
    const char *x = a->data ? a->data : "", *y = b->data ? b->data : "";
    size_t line = 1;
    while (*x && *x == *y) {
        line += *x == '\n';
        x++;
        y++;
    }
    while (*x && x > a->data && x[-1] != '\n')
        x--;
    while (*y && y > b->data && y[-1] != '\n')
        y--;
    ck_assert_msg(*x == '\0' && *y == '\0', "line %zu differs: '%.*s' vs '%.*s'", line,
                  (int)strcspn(x, "\n"), x, (int)strcspn(y, "\n"), y);
}

static void assert_same_run(const Run *a, const Run *b)
{
    assert_same_text(&a->trace.order, &b->trace.order);
    assert_same_text(&a->trace.alerts, &b->trace.alerts);
    ck_assert_uint_eq(a->stats.lines, b->stats.lines);
    ck_assert_uint_eq(a->stats.events, b->stats.events);
    ck_assert_uint_eq(a->stats.malformed, b->stats.malformed);
    ck_assert_uint_eq(a->stats.late, b->stats.late);
    ck_assert_uint_eq(a->stats.pending_at_stop, b->stats.pending_at_stop);
    ck_assert_uint_eq(a->rule0.matches, b->rule0.matches);
    ck_assert_uint_eq(a->rule0.timeouts, b->rule0.timeouts);
    ck_assert_uint_eq(a->rule0.missing_key, b->rule0.missing_key);
}

/* n lines over 23 users with times mostly rising: some bad JSON, some without a
 * time, some too old (late under `lateness`), some without a key; only lines in
 * [bad_from, bad_to) are ever bad. */
static char **some_bad_lines(size_t n, size_t bad_from, size_t bad_to)
{
    char **lines = calloc(n, sizeof *lines);
    Buf b = BUF_INIT;
    static const char *types[] = {"start", "end", "ping", "end", "start", "start", "end"};
    for (size_t i = 0; i < n; i++) {
        buf_clear(&b);
        long long ts = (long long)i * 300;
        if (i < bad_from || i >= bad_to)
            buf_printf(&b, "{\"ts\":%lld,\"type\":\"%s\",\"user\":\"u%zu\",\"n\":%zu}", ts,
                       types[i % 7], i % 23, i);
        else if (i % 41 == 40)
            buf_printf(&b, "{\"ts\":%lld,\"type\":\"start\",\"user\":", ts);
        else if (i % 53 == 52)
            buf_printf(&b, "{\"type\":\"start\",\"user\":\"u%zu\"}", i % 23);
        else if (i % 31 == 30)
            buf_printf(&b, "{\"ts\":%lld,\"type\":\"start\",\"user\":\"u%zu\"}", ts - 20000,
                       i % 23);
        else if (i % 37 == 36)
            buf_printf(&b, "{\"ts\":%lld,\"type\":\"start\"}", ts);
        else
            buf_printf(&b, "{\"ts\":%lld,\"type\":\"%s\",\"user\":\"u%zu\",\"n\":%zu}", ts,
                       types[i % 7], i % 23, i);
        lines[i] = strdup(b.data);
    }
    buf_free(&b);
    return lines;
}

static char **mixed_lines(size_t n)
{
    return some_bad_lines(n, 0, n);
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* Runs the lines with one worker into *one, then with 2 and 3 workers, each of which
 * must report exactly as one. */
static void run_as_one_thread(const CompiledRuleSet *rs, char **lines, size_t n,
                              const Placed *at, size_t refuse_every, bool stop, Run *one)
{
    run_lines(rs, lines, n, at, 1, refuse_every, stop, one);
    for (size_t workers = 2; workers <= 3; workers++) {
        Run more;
        run_lines(rs, lines, n, at, workers, refuse_every, stop, &more);
        assert_same_run(one, &more);
        run_free(&more);
    }
}

static void check_same_as_one_thread(const char *rules, bool stop)
{
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    size_t n = 5000;   /* many decoding batches, more than are ever out at once */
    char **lines = mixed_lines(n);
    Run one;
    run_as_one_thread(rs, lines, n, NULL, 97, stop, &one);
    ck_assert_uint_gt(one.stats.malformed, 200);
    ck_assert_uint_gt(one.rule0.matches + one.rule0.timeouts, 100);
    run_free(&one);
    free_lines(lines, n);
    ruleset_free(rs);
}

START_TEST(workers_decode_but_report_as_one_thread_lateness_0)
{
    check_same_as_one_thread(
        "time ts epoch_ms;\n"
        "rule pair { key user; filter type != \"ping\"; begin a where type == \"start\";\n"
        "  followed_by b where type == \"end\"; within 2s; on match alert \"m\";\n"
        "  on timeout alert \"t\"; }\n",
        false);
}
END_TEST

START_TEST(workers_decode_but_report_as_one_thread_lateness_5s)
{
    /* events wait in the reorder buffer: routed when released, not when decoded */
    check_same_as_one_thread(
        "time ts epoch_ms lateness 5s;\n"
        "rule pair { key user; begin a where type == \"start\";\n"
        "  followed_by b where type == \"end\" and time() - a.ts < 1500; within 2s;\n"
        "  on match alert \"m\"; on timeout alert \"t\"; }\n",
        true);
}
END_TEST

/* Batches of only good, ordered lines take the workers' fast path (split while
 * decoding); the others do not: a run mixing both, with two rules keyed apart (an
 * event goes to both workers: copies) and events no rule takes, gives the same ids,
 * positions, alerts and counters as one thread. */
START_TEST(workers_fast_and_slow_batches_report_as_one_thread)
{
    CompiledRuleSet *rs = test_rules_compile(
        "time ts epoch_ms;\n"
        "rule every { key n % 5; filter type != \"ping\"; begin a where n % 7 == 0;\n"
        "  followed_by b where n % 7 == 1; within 10s; on match alert \"e\"; }\n"
        "rule pair { key user; filter type != \"ping\"; begin a where type == \"start\";\n"
        "  followed_by b where type == \"end\"; within 10s; on match alert \"m\";\n"
        "  on timeout alert \"t\"; }\n", NULL);
    size_t n = 6000;
    char **lines = some_bad_lines(n, 2500, 3300);
    for (size_t i = 4000; i < 4600; i += 37) {   /* a key for the first rule only */
        free(lines[i]);
        char text[64];
        snprintf(text, sizeof text, "{\"ts\":%zu,\"type\":\"start\",\"n\":%zu}", i * 300, i);
        lines[i] = strdup(text);
    }
    Run one;
    run_as_one_thread(rs, lines, n, NULL, 0, false, &one);
    ck_assert_uint_gt(one.stats.malformed, 30);
    ck_assert_uint_gt(one.stats.late, 10);
    ck_assert_uint_gt(one.rule0.matches, 100);
    run_free(&one);
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

/* Strict rules with a relevance get blanks: a decoding job sends a blank's owner its
 * key and time, not the event, and frees an event that only blanks reach. Rules that
 * end (`next`), branch (`optional`) and loop (`consecutive`) on blanks, over fast and
 * slow batches: 1, 2 and 3 workers report as one thread, and as the same rules without
 * relevance (every event sent whole). */
START_TEST(workers_send_strict_rules_blanks_as_one_thread)
{
    const char *rules =
        "time ts epoch_ms;\n"
        "rule strict { key user; filter type != \"ping\"; begin a where type == \"start\" and n % 4 == 0;\n"
        "  next b where type == \"end\"; within 3s; on match alert \"m\";\n"
        "  on timeout alert \"t\"; }\n"
        "rule opt { key user; begin a where type == \"start\" and n % 3 == 0;\n"
        "  followed_by o where type == \"end\" and n % 5 == 0 optional;\n"
        "  followed_by b where type == \"start\" and n % 3 == 1; within 3s;\n"
        "  on match alert \"o\"; on timeout alert \"ot\"; }\n"
        "rule runs { key user; begin a where type == \"end\" and n % 2 == 0 times 2 consecutive;\n"
        "  within 4s; on match alert \"r\"; }\n";
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    RuleSetOptions off = {.all_relevant = true};
    CompiledRuleSet *whole = test_rules_compile_with(rules, NULL, &off);
    for (size_t i = 0; i < rs->n_rules; i++) {
        ck_assert(!rs->rules[i].relaxed);
        ck_assert_uint_ne(rs->rules[i].relevance_root, FILTER_NONE);
        ck_assert_uint_eq(whole->rules[i].relevance_root, FILTER_NONE);
    }
    size_t n = 6000;
    char **lines = some_bad_lines(n, 2500, 3300);
    for (size_t i = 0; i < n; i += 2) {   /* keys in runs: consecutive events of a key */
        free(lines[i]);
        char text[96];
        snprintf(text, sizeof text, "{\"ts\":%zu,\"type\":\"%s\",\"user\":\"u%zu\",\"n\":%zu}",
                 i * 300, i % 3 ? "end" : "start", i / 8 % 5, i);
        lines[i] = strdup(text);
    }
    Run one, plain;
    run_as_one_thread(rs, lines, n, NULL, 0, false, &one);
    run_lines(whole, lines, n, NULL, 2, 0, false, &plain);
    assert_same_run(&one, &plain);
    ck_assert_uint_gt(one.rule0.matches, 100);
    for (int rule = 1; rule <= 2; rule++) {   /* the other two alert too */
        char head[8];
        snprintf(head, sizeof head, "\n%d ", rule);
        ck_assert_msg(strstr(one.trace.alerts.data, head), "rule %d never alerted", rule);
    }
    run_free(&one);
    run_free(&plain);
    free_lines(lines, n);
    ruleset_free(rs);
    ruleset_free(whole);
}
END_TEST

/* A decoding job that finds every batch before its own out hands the parts to their
 * owners itself, past a queue's bound if need be (a worker that waited for room in
 * another's queue once hung with the engine's thread draining), while the engine's
 * thread waits for backlogged queues to drain: with many rules every batch's parts
 * are larger than a queue, and the ids, alerts and counters must still come out as
 * with one thread. */
START_TEST(workers_deliver_parts_larger_than_a_queue)
{
    Buf rules = BUF_INIT;
    buf_puts(&rules, "time ts epoch_ms;\n");
    for (int r = 0; r < 24; r++)
        buf_printf(&rules, "rule r%d { key user; begin a where n %% 24 == %d;\n"
                   "  followed_by b where n %% 24 == %d; within 10s; on match alert \"m\"; }\n",
                   r, r, (r + 23) % 24);   /* the key's next line */
    CompiledRuleSet *rs = test_rules_compile(rules.data, NULL);
    buf_free(&rules);
    size_t n = 6000;
    char **lines = some_bad_lines(n, n, n);   /* all good and ordered: the fast path */
    Run one;
    run_as_one_thread(rs, lines, n, NULL, 0, false, &one);
    ck_assert_uint_gt(one.rule0.matches, 100);
    run_free(&one);
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

/* Lines from two inputs in runs of any length, each numbered in its own input (with
 * gaps), and arriving at times that move every few lines (a decoding batch holds consecutive
 * lines of one input that arrived at one time): every event, dead letter and alert
 * keeps its own input, line and time, as with one thread, on event time and on
 * processing time (whose events take their time from the arrival). */
START_TEST(workers_keep_each_lines_input_position_and_arrival)
{
    static const char *const rules[] = {
        "time ts epoch_ms;\n"
        "rule pair { key user; filter type != \"ping\"; begin a where type == \"start\";\n"
        "  followed_by b where type == \"end\"; within 10s; on match alert \"m\";\n"
        "  on timeout alert \"t\"; }\n",
        "rule pair { key user; begin a where type == \"start\";\n"
        "  followed_by b where type == \"end\"; on match alert \"m\"; }\n",
    };
    size_t n = 5000;
    char **lines = some_bad_lines(n, 1000, 2000);
    Placed *at = calloc(n, sizeof *at);
    uint64_t line_of[2] = {0, 0};
    size_t input = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 13 == 0 || i % 101 == 0 || i % 700 < 3)
            input ^= 1;
        line_of[input] += i % 29 == 0 ? 2 : 1;   /* sometimes a number no line has */
        at[i] = (Placed){input ? "b" : "a", line_of[input], 1000 + (int64_t)(i / 7)};
    }
    for (size_t k = 0; k < N(rules); k++) {
        CompiledRuleSet *rs = test_rules_compile(rules[k], NULL);
        Run one;
        run_as_one_thread(rs, lines, n, at, 97, false, &one);
        ck_assert_uint_gt(one.stats.malformed, 50);
        ck_assert_msg(one.rule0.matches > 100, "rules %zu: %llu matches", k,
                      (unsigned long long)one.rule0.matches);
        ck_assert_ptr_nonnull(strstr(one.trace.order.data, "D b:"));
        ck_assert_ptr_nonnull(strstr(one.trace.alerts.data, "@a:"));
        ck_assert_ptr_nonnull(strstr(one.trace.alerts.data, "@b:"));
        run_free(&one);
        ruleset_free(rs);
    }
    free(at);
    free_lines(lines, n);
}
END_TEST

/* With workers a refused line's reason travels right after its text in the decoding
 * batch, and a bad line's error offset shares room with a good line's time: lines
 * and reasons of every length, mixed in the same batches, must each come out with
 * their own text, reason and byte offset, exactly as expected. */
START_TEST(workers_dead_letters_keep_each_lines_text_reason_and_offset)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    Trace t = {.lock = PTHREAD_MUTEX_INITIALIZER};
    Engine *e = traced_engine(rs, &t, 2);
    Buf want = BUF_INIT, line = BUF_INIT, reason = BUF_INIT;
    for (size_t i = 0; i < 3000; i++) {
        buf_clear(&line);
        buf_clear(&reason);
        if (i % 5 == 1) {
            buf_printf(&line, "refused line %zu %*s", i, (int)(i % 300), "");
            buf_printf(&reason, "too long #%zu%*s", i, (int)(i % 17), "!");
            engine_reject(e, line.data, line.len, "in", i + 1, reason.data);
        } else if (i % 7 == 3) {
            /* the bad byte moves with i: the offset must be this line's own */
            buf_printf(&line, "{\"ts\":%zu,\"user\":\"u\"%*s?}", i * 10, (int)(i % 13), "");
            buf_printf(&reason, "expected ',' or '}' after object member at byte %zu",
                       line.len - 1);
            ck_assert_int_eq(engine_line(e, line.data, line.len, "in", i + 1, 0), 0);
        } else {
            buf_printf(&line, "{\"ts\":%zu,\"type\":\"start\",\"user\":\"u%zu\"}", i * 10,
                       i % 7);
            ck_assert_int_eq(engine_line(e, line.data, line.len, "in", i + 1, 0), 0);
        }
        if (reason.len)
            buf_printf(&want, "D in:%zu %s [%s]\n", i + 1, reason.data, line.data);
        if (i % 400 == 399)
            ck_assert_int_eq(engine_tick(e, 0), 0);
    }
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
    assert_same_text(&t.order, &want);
    buf_free(&want);
    buf_free(&line);
    buf_free(&reason);
    buf_free(&t.order);
    buf_free(&t.alerts);
    ruleset_free(rs);
}
END_TEST

/* The owner of a (rule, key) comes from every bit of the key's hash: keys that differ
 * only in their last characters (FNV-1a mixes those into its high bits poorly) still
 * spread evenly over 2 and 3 workers, for each rule. */
START_TEST(workers_spread_keys_that_differ_only_at_the_end)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    NfaLimits limits = {0};
    EngineHooks hooks = {0};
    for (size_t n = 2; n <= 3; n++) {
        Workers *ws = workers_new(rs, n, &limits, &hooks, false);
        ck_assert_ptr_nonnull(ws);
        for (size_t rule = 0; rule < rs->n_rules; rule++) {
            size_t count[3] = {0};
            for (size_t k = 0; k < 3000; k++) {
                char key[16];
                int len = snprintf(key, sizeof key, "u%zu", k);
                size_t w = workers_pick(ws, rule, part_hash(key, (size_t)len));
                ck_assert_uint_lt(w, n);
                count[w]++;
            }
            for (size_t w = 0; w < n; w++)   /* within 10 % of an even share */
                ck_assert_msg(count[w] * n * 10 > 3000 * 9 && count[w] * n * 10 < 3000 * 11,
                              "rule %zu, %zu workers: worker %zu got %zu of 3000 keys", rule,
                              n, w, count[w]);
        }
        workers_free(ws);
    }
    ruleset_free(rs);
}
END_TEST

/* A key's rules share one worker, whose record for the key holds them all (and an
 * event goes to as many workers as it has keys); rules without a key, whose one
 * partition is the empty key, spread over the workers by rule. */
START_TEST(workers_keep_a_keys_rules_together_and_spread_keyless_rules)
{
    enum { KEYLESS = 16 };   /* all on one worker by chance: 2 in 65536 */
    Buf src = BUF_INIT;
    buf_printf(&src, "time ts epoch_ms;\n"
                     "rule k0 { key user; begin a where type == \"a\"; on match alert \"m\"; }\n"
                     "rule k1 { key payee; begin a where type == \"b\"; on match alert \"m\"; }\n");
    for (int i = 0; i < KEYLESS; i++)
        buf_printf(&src, "rule g%d { begin a where n == %d; on match alert \"m\"; }\n", i, i);
    ck_assert(!src.failed);
    CompiledRuleSet *rs = test_rules_compile(src.data, NULL);
    buf_free(&src);
    NfaLimits limits = {0};
    EngineHooks hooks = {0};
    Workers *ws = workers_new(rs, 2, &limits, &hooks, false);
    ck_assert_ptr_nonnull(ws);
    size_t on[2] = {0};
    for (size_t k = 0; k < 1000; k++) {
        char key[16];
        int len = snprintf(key, sizeof key, "u%zu", k);
        uint64_t h = part_hash(key, (size_t)len);
        ck_assert_uint_eq(workers_pick(ws, 0, h), workers_pick(ws, 1, h));
        on[workers_pick(ws, 0, h)]++;
    }
    ck_assert_uint_gt(on[0], 400);
    ck_assert_uint_gt(on[1], 400);
    size_t keyless[2] = {0};
    uint64_t empty = part_hash("", 0);
    for (size_t rule = 2; rule < rs->n_rules; rule++)
        keyless[workers_pick(ws, rule, empty)]++;
    ck_assert_uint_gt(keyless[0], 0);
    ck_assert_uint_gt(keyless[1], 0);
    workers_free(ws);
    ruleset_free(rs);
}
END_TEST

/* A rule without a key has an empty key, at the offset where the next rule's key
 * bytes go: each rule's alerts still carry its own key when the batches are split by
 * owner (event time, in order: the decoding workers' fast path). */
START_TEST(workers_keep_each_rules_key_beside_a_keyless_rule)
{
    static const char rules[] =
        "time ts epoch_ms;\n"
        "rule global { begin a where type == \"x\"; on match alert \"g\"; }\n"
        "rule by_user { key user; begin a where type == \"x\"; on match alert \"u\"; }\n"
        "rule by_pair { key user, country; begin a where type == \"x\"; on match alert \"p\"; }\n";
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    enum { EVENTS = 60 };
    Seen s;
    Engine *e = start(rs, &s, 2);
    char want[3 * EVENTS][160];
    for (int i = 0; i < EVENTS; i++) {
        char line[128];
        int len = snprintf(line, sizeof line,
                           "{\"ts\":%d,\"type\":\"x\",\"user\":\"user%d\",\"country\":\"NL\"}",
                           1000 + i, i % 13);
        ck_assert_int_eq(engine_line(e, line, (size_t)len, "t", (uint64_t)i + 1, 0), 0);
        snprintf(want[3 * i], 160, "0 match - %d", 1000 + i);
        snprintf(want[3 * i + 1], 160, "1 match user%d %d", i % 13, 1000 + i);
        snprintf(want[3 * i + 2], 160, "2 match user%d %d", i % 13, 1000 + i);
    }
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
    ck_assert_uint_eq(s.n, 3 * EVENTS);
    qsort(s.lines, s.n, sizeof s.lines[0], cmp_lines);
    qsort(want, 3 * EVENTS, sizeof want[0], cmp_lines);
    for (size_t i = 0; i < s.n; i++)
        ck_assert_str_eq(s.lines[i], want[i]);
    ruleset_free(rs);
}
END_TEST

START_TEST(workers_stats_count_every_line_handed_in)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    size_t n = 700;
    char **lines = mixed_lines(n);
    Trace t = {.lock = PTHREAD_MUTEX_INITIALIZER};
    Engine *e = traced_engine(rs, &t, 2);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(engine_line(e, lines[i], strlen(lines[i]), "t", i + 1, 0), 0);
    EngineStats st;
    engine_stats(e, &st);   /* no tick: lines out for decoding are counted too */
    ck_assert_uint_eq(st.lines, n);
    ck_assert_uint_eq(st.events + st.malformed, n);   /* late events are events too */
    ck_assert_uint_gt(st.events, 600);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
    buf_free(&t.order);
    buf_free(&t.alerts);
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

/* Lines read by an input (runtime/input.h) and decoded where the input read them
 * (engine_input_line, or engine_input_lines for runs of lines): with workers each
 * batch holds the input's buffer instead of a copy, while the input reads on.
 * Over-long lines (refused by the input, copied) and backpressure pauses come between;
 * 2 and 3 workers, line by line or in runs, and one worker in runs, report as one. */
typedef struct InputFeed {
    Engine *e;
    InputSet *in;
} InputFeed;

static void input_feed_line(void *user, const InputLine *l)
{
    InputFeed *f = user;
    ck_assert_int_eq(engine_input_line(f->e, l, 0), 0);
    if (engine_backlogged(f->e))
        input_pause(f->in, true);
}

static size_t input_feed_lines(void *user, const InputLines *l)
{
    InputFeed *f = user;
    bool failed = false;
    size_t took = engine_input_lines(f->e, l, 0, &failed);
    ck_assert(!failed);
    if (took < l->n)
        input_pause(f->in, true);
    return took;
}

static void input_feed_reject(void *user, const InputLine *l, const char *reason)
{
    InputFeed *f = user;
    engine_reject(f->e, l->text, l->len, l->origin, l->line_no, reason);
}

/* The file's lines through an input into the engine: line by line (engine_input_line)
 * or in runs (engine_input_lines). */
static void run_input(const CompiledRuleSet *rs, const char *path, size_t workers, bool runs,
                      Run *run)
{
    memset(run, 0, sizeof *run);
    pthread_mutex_init(&run->trace.lock, NULL);
    InputFeed f = {traced_engine(rs, &run->trace, workers), input_set_new(2000)};
    char *err = NULL;
    ck_assert_ptr_nonnull(f.in);
    ck_assert_int_eq(input_add(f.in, path, &err), 0);
    InputHandler h = {input_feed_line, input_feed_reject, &f};
    int rc = 1;
    for (int turns = 0; rc == 1 && turns < 100000; turns++) {
        bool behind = engine_backlogged(f.e) && !engine_drain(f.e, 50);
        input_pause(f.in, behind);
        rc = runs ? input_poll_runs(f.in, behind ? 0 : 100, &h, input_feed_lines)
                  : input_poll(f.in, behind ? 0 : 100, &h);
        ck_assert_int_eq(engine_tick(f.e, 0), 0);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(engine_finish(f.e), 0);
    engine_stats(f.e, &run->stats);
    engine_rule_stats(f.e, 0, &run->rule0);
    engine_free(f.e);
    input_set_free(f.in);   /* after the engine: events borrow its origin strings */
    sort_lines(&run->trace.alerts);
}

static const char input_rules[] =
    "time ts epoch_ms;\n"
    "rule pair { key user; begin a where type == \"start\";\n"
    "  followed_by b where type == \"end\"; within 2s; on match alert \"m\";\n"
    "  on timeout alert \"t\"; }\n";

/* What a run of input_rules over mixed lines with over-long ones must show. */
static void check_input_run(const Run *one)
{
    ck_assert_uint_gt(one->stats.malformed, 200);
    ck_assert_uint_gt(one->rule0.matches + one->rule0.timeouts, 100);
    ck_assert_ptr_nonnull(strstr(one->trace.order.data, "line longer than 2000 bytes"));
}

START_TEST(workers_decode_lines_where_the_input_read_them)
{
    CompiledRuleSet *rs = test_rules_compile(input_rules, NULL);
    size_t n = 30000;   /* about 2 MB: many input buffers */
    char **lines = mixed_lines(n);
    char path[] = "/tmp/vigil-engine-input-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *fp = fdopen(fd, "w");
    ck_assert_ptr_nonnull(fp);
    for (size_t i = 0; i < n; i++) {
        if (i % 4999 == 4998)   /* refused by the input: the line after is its own */
            fprintf(fp, "{\"pad\":\"%03000d\"}\n", 0);
        fprintf(fp, "%s\n", lines[i]);
    }
    ck_assert_int_eq(fclose(fp), 0);
    Run one;
    run_input(rs, path, 1, false, &one);
    ck_assert_uint_eq(one.stats.lines, n + 6);
    check_input_run(&one);
    for (size_t workers = 1; workers <= 3; workers++)
        for (int runs = workers == 1; runs <= 1; runs++) {
            Run more;
            run_input(rs, path, workers, runs, &more);
            assert_same_run(&one, &more);
            run_free(&more);
        }
    run_free(&one);
    unlink(path);
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

/* ---- the workers read the file themselves (engine_read_start) ----------------
 * Each must report exactly as the input layer's reading with one worker: dead
 * letters (over-long lines too) in order with their line numbers, texts and reasons,
 * the same alerts and counters. */

/* Called before each step of run_read; true stops the reading there. */
typedef bool (*StepHook)(Engine *e, size_t step, void *user);

/* The file read by `workers` workers (engine_read_start, lines over 2000 bytes
 * over-long), in steps of step_ms, hook (may be NULL) called before each step; then
 * engine_finish, or engine_stop if the hook stopped the reading. */
static void run_read(const CompiledRuleSet *rs, const char *path, size_t workers, int step_ms,
                     StepHook hook, void *user, Run *run)
{
    memset(run, 0, sizeof *run);
    pthread_mutex_init(&run->trace.lock, NULL);
    Engine *e = traced_engine(rs, &run->trace, workers);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(engine_read_start(e, fd, path, 2000), 0);
    int rc = 1;
    bool stopped = false;
    for (size_t step = 0; rc == 1 && !stopped && step < 10000000; step++) {
        stopped = hook && hook(e, step, user);
        if (!stopped)
            rc = engine_read_step(e, step_ms);
        ck_assert_int_eq(engine_tick(e, 0), 0);
    }
    ck_assert_int_eq(rc, (stopped ? 1 : 0));
    ck_assert_int_eq(stopped ? engine_stop(e) : engine_finish(e), 0);
    engine_stats(e, &run->stats);
    engine_rule_stats(e, 0, &run->rule0);
    engine_free(e);
    close(fd);
    sort_lines(&run->trace.alerts);
}

/* A temporary file holding text; its path in path (a mkstemp template). */
static void write_file(char *path, const char *text, size_t len)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    ck_assert_int_eq(close(fd), 0);
}

/* n mixed lines, one per line, and what the input layer rejects or frames oddly:
 * over-long lines (one of 100 KB, over several chunks; one of 2001 bytes at the end of
 * a chunk's worth), a line of exactly 2000 bytes, CRLF, a NUL byte, empty lines; the
 * last line without a newline. */
static void write_odd_file(char *path, char **lines, size_t n)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (i % 4999 == 4998)
            buf_printf(&b, "{\"pad\":\"%03000d\"}\n", 0);
        if (i == 7000) {
            buf_puts(&b, "{\"pad\":\"");
            for (size_t k = 0; k < 100000; k++)
                buf_putc(&b, 'x');
            buf_puts(&b, "\"}\n");
        }
        if (i == 9000)
            buf_printf(&b, "{\"ts\":1,\"pad\":\"%01983d\"}\n", 0);   /* 2000 bytes */
        if (i == 9001)
            buf_printf(&b, "{\"ts\":1,\"pad\":\"%01984d\"}\n", 0);   /* 2001 bytes */
        if (i % 997 == 5)
            buf_puts(&b, "\n");
        if (i == 12000)
            buf_append(&b, "{\"ts\":5,\0\"x\":1}\n", 17);
        buf_puts(&b, lines[i]);
        if (i + 1 < n)
            buf_puts(&b, i % 13 == 0 ? "\r\n" : "\n");
    }
    write_file(path, b.data, b.len);
    buf_free(&b);
}

static bool read_stats_each_step(Engine *e, size_t step, void *user)
{
    (void)step;
    EngineStats st;
    engine_stats(e, &st);   /* takes the batches read so far, mid-file */
    uint64_t *lines = user;
    ck_assert_uint_ge(st.lines, *lines);
    *lines = st.lines;
    return false;
}

START_TEST(workers_read_the_file_as_the_input_does)
{
    CompiledRuleSet *rs = test_rules_compile(input_rules, NULL);
    size_t n = 30000;
    char **lines = mixed_lines(n);
    char path[] = "/tmp/vigil-engine-read-XXXXXX";
    write_odd_file(path, lines, n);
    Run one;
    run_input(rs, path, 1, true, &one);
    ck_assert_uint_gt(one.stats.lines, n + 30);
    check_input_run(&one);
    for (size_t workers = 2; workers <= 3; workers++) {
        Run more;
        run_read(rs, path, workers, 100, NULL, NULL, &more);
        assert_same_run(&one, &more);
        run_free(&more);
    }
    uint64_t seen = 0;
    Run stepped;
    run_read(rs, path, 2, 0, read_stats_each_step, &seen, &stepped);
    assert_same_run(&one, &stepped);
    ck_assert_uint_eq(seen, one.stats.lines);
    run_free(&stepped);
    run_free(&one);
    unlink(path);
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

START_TEST(workers_read_an_empty_file_and_one_line_without_newline)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    const char *texts[] = {"", "{\"ts\":1,\"type\":\"ping\",\"user\":\"a\"}", "\n"};
    const uint64_t want[] = {0, 1, 1};
    for (size_t k = 0; k < 3; k++) {
        char path[] = "/tmp/vigil-engine-read-XXXXXX";
        write_file(path, texts[k], strlen(texts[k]));
        Run run;
        run_read(rs, path, 2, 100, NULL, NULL, &run);
        ck_assert_uint_eq(run.stats.lines, want[k]);
        ck_assert_uint_eq(run.stats.events, k == 1);
        ck_assert_uint_eq(run.stats.malformed, k == 2);
        ck_assert_int_eq(strstr(run.trace.alerts.data ? run.trace.alerts.data : "", "1 m a 1")
                         != NULL, k == 1);
        run_free(&run);
        unlink(path);
    }
    ruleset_free(rs);
}
END_TEST

/* Lines from lines[*next] on, then one filler line, so that b reaches `to` bytes;
 * the lines' times stay in order. */
static void pad_to(Buf *b, char **lines, size_t *next, size_t to)
{
    while (b->len + 1500 < to)
        buf_printf(b, "%s\n", lines[(*next)++]);
    size_t fill = to - b->len - 1;   /* the filler's bytes, its newline apart */
    int head = snprintf(NULL, 0, "{\"ts\":%zu,\"type\":\"ping\",\"user\":\"f\",\"pad\":\"\"}",
                        *next * 300);
    buf_printf(b, "{\"ts\":%zu,\"type\":\"ping\",\"user\":\"f\",\"pad\":\"%0*d\"}\n", *next * 300,
               (int)fill - head, 0);
}

/* One event line of exactly len bytes (more than 50), at the time of lines[next]. */
static void put_sized_line(Buf *b, size_t len, size_t next)
{
    int head = snprintf(NULL, 0, "{\"ts\":%zu,\"type\":\"ping\",\"user\":\"c\",\"pad\":\"\"}",
                        next * 300);
    buf_printf(b, "{\"ts\":%zu,\"type\":\"ping\",\"user\":\"c\",\"pad\":\"%0*d\"}", next * 300,
               (int)len - head, 0);
}

/* Where the two framers' reads end (each frames what its read brought): the workers
 * read 40 KiB chunks (FEED_READ_BYTES), the input layer 128 KiB first
 * (FILE_BUFFER_INITIAL). A line of max_line bytes (2000) or one more or one less whose
 * newline is the last byte of a read, the first of the next, or the second: kept
 * whole across the edge, rejected at its end or already at the edge (its newline
 * then ending the skipping): both must say the same. */
START_TEST(workers_read_lines_at_a_reads_edge_as_the_input_does)
{
    CompiledRuleSet *rs = test_rules_compile(input_rules, NULL);
    size_t n = 6000;
    char **lines = mixed_lines(n);
    const size_t edges[] = {40u << 10, 128u << 10};
    for (size_t len = 1999; len <= 2001; len++)
        for (int shift = -1; shift <= 1; shift++) {
            Buf b = BUF_INIT;
            size_t next = 0;
            for (size_t k = 0; k < 2; k++) {
                pad_to(&b, lines, &next, edges[k] + (size_t)(shift + 1) - len - 1);
                put_sized_line(&b, len, next);
                buf_putc(&b, '\n');
                ck_assert_uint_eq(b.len - 1, edges[k] + (size_t)(shift + 1) - 1);
            }
            while (next < n - 1)
                buf_printf(&b, "%s\n", lines[next++]);
            buf_puts(&b, lines[next]);
            char path[] = "/tmp/vigil-engine-edge-XXXXXX";
            write_file(path, b.data, b.len);
            Run one, two;
            run_input(rs, path, 1, true, &one);
            run_read(rs, path, 2, 100, NULL, NULL, &two);
            ck_assert_uint_eq(one.stats.lines, n + 2 + 2);
            ck_assert_int_eq(strstr(one.trace.order.data, "line longer than 2000 bytes") != NULL,
                             len > 2000);
            assert_same_run(&one, &two);
            run_free(&one);
            run_free(&two);
            unlink(path);
            buf_free(&b);
        }
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

/* The lines of `path` (written from lines[0..n)), placed there, for run_lines. */
static Placed *placed_in(const char *path, size_t n)
{
    Placed *at = calloc(n, sizeof *at);
    for (size_t i = 0; i < n; i++)
        at[i] = (Placed){path, i + 1, 0};
    return at;
}

static void write_lines(char *path, char **lines, size_t n)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        buf_puts(&b, lines[i]);
        buf_putc(&b, '\n');
    }
    write_file(path, b.data, b.len);
    buf_free(&b);
}

static bool stop_at_step_2(Engine *e, size_t step, void *user)
{
    (void)e;
    (void)user;
    return step == 2;
}

/* A stop mid-file processes every line the workers read (their batches out are
 * taken), fires no pending timeout: as one worker stopped after those lines. */
START_TEST(workers_read_then_stop_as_one_thread_after_those_lines)
{
    CompiledRuleSet *rs = test_rules_compile(pair_rules, NULL);
    size_t n = 60000;   /* about 4 MB: far more than 3 steps hand out (8 chunks each) */
    char **lines = mixed_lines(n);
    char path[] = "/tmp/vigil-engine-read-XXXXXX";
    write_lines(path, lines, n);
    Run stopped;
    run_read(rs, path, 2, 0, stop_at_step_2, NULL, &stopped);
    size_t taken = stopped.stats.lines;
    ck_assert_uint_gt(taken, 0);
    ck_assert_uint_lt(taken, n / 2);
    Placed *at = placed_in(path, taken);
    Run one;
    run_lines(rs, lines, taken, at, 1, 0, true, &one);
    ck_assert_uint_gt(one.stats.pending_at_stop, 0);
    assert_same_run(&one, &stopped);
    run_free(&one);
    run_free(&stopped);
    free(at);
    unlink(path);
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

typedef struct ReloadAt {
    const CompiledRuleSet *next;
    size_t step;
    uint64_t lines;            /* taken before the reload */
} ReloadAt;

static bool reload_at_step(Engine *e, size_t step, void *user)
{
    ReloadAt *r = user;
    if (step != r->step)
        return false;
    EngineStats st;
    engine_stats(e, &st);
    r->lines = st.lines;
    EngineReloadSummary sum;
    ck_assert_int_eq(engine_reload(e, r->next, NULL, NULL, &sum), 0);
    ck_assert_uint_eq(sum.changed, 1);
    return false;
}

/* Only with workers on event time: elsewhere the input layer reads. */
START_TEST(workers_read_only_with_workers_on_event_time)
{
    CompiledRuleSet *et = test_rules_compile(pair_rules, NULL);
    CompiledRuleSet *pt = test_rules_compile(
        "rule p { key user; begin a where type == \"ping\"; on match alert \"p\"; }\n", NULL);
    Trace t = {.lock = PTHREAD_MUTEX_INITIALIZER};
    Engine *one = traced_engine(et, &t, 1), *proc = traced_engine(pt, &t, 2);
    ck_assert_int_eq(engine_read_start(one, 0, "-", 2000), -2);
    ck_assert_int_eq(engine_read_start(proc, 0, "-", 2000), -2);
    engine_free(one);
    engine_free(proc);
    ruleset_free(et);
    ruleset_free(pt);
}
END_TEST

/* Every byte the budget counted is given back once every key and event is gone, on
 * each thread: many keys each hold a partial match (their charges pass the 64 KiB
 * publishing step several times, in amounts that are no multiple of it), then the end
 * of input times them all out. */
static void check_memory_given_back(size_t workers)
{
    CompiledRuleSet *rs = test_rules_compile(
        "time ts epoch_ms;\n"
        "rule open { key user; begin a where type == \"start\";\n"
        "  followed_by b where type == \"end\"; within 10s; on match alert \"m\"; }\n",
        NULL);
    Trace t = {.lock = PTHREAD_MUTEX_INITIALIZER};
    Engine *e = traced_engine(rs, &t, workers);
    Buf line = BUF_INIT;
    for (size_t i = 0; i < 5000; i++) {
        buf_clear(&line);
        buf_printf(&line, "{\"ts\":%zu,\"type\":\"start\",\"user\":\"u%zu\",\"pad\":\"%.*s\"}",
                   i, i, (int)(i % 37), "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
        ck_assert_int_eq(engine_line(e, line.data, line.len, "t", i + 1, 0), 0);
    }
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_gt(st.memory_bytes, 5 * 65536);   /* counted while the keys live */
    ck_assert_int_eq(engine_finish(e), 0);
    engine_stats(e, &st);
    EngineRuleStats rst;
    engine_rule_stats(e, 0, &rst);
    ck_assert_uint_eq(rst.timeouts, 5000);
    ck_assert_uint_eq(rst.keys_live, 0);
    ck_assert_uint_eq(st.buffered, 0);
    ck_assert_msg(st.memory_bytes == 0, "%zu workers: %llu bytes still counted", workers,
                  (unsigned long long)st.memory_bytes);
    engine_free(e);
    buf_free(&line);
    buf_free(&t.order);
    buf_free(&t.alerts);
    ruleset_free(rs);
}

START_TEST(memory_count_is_zero_once_every_key_is_gone)
{
    for (size_t workers = 1; workers <= 3; workers++)
        check_memory_given_back(workers);
}
END_TEST

/* Lines handed in before a reload are matched by the old rules, those after by the
 * new ones, whether decoded on the workers or not. */
static const char reload_r1[] =
    "time ts epoch_ms;\n"
    "rule r { key user; begin a where n % 2 == 0; on match alert \"a\"; }\n";
static const char reload_r2[] =
    "time ts epoch_ms;\n"
    "rule r { key user; begin a where n % 3 == 0 and type == \"end\";\n"
    "  on match alert \"b\"; }\n";

/* lines[0..n), line i + 1 of origin, with a reload from v1 to v2 (its rule changed)
 * before line reload_at + 1; the lines from there on arrive at now_after. */
static void run_reload_lines(const CompiledRuleSet *v1, const CompiledRuleSet *v2,
                             char **lines, size_t n, size_t reload_at, const char *origin,
                             size_t workers, int64_t now_after, Run *run)
{
    memset(run, 0, sizeof *run);
    pthread_mutex_init(&run->trace.lock, NULL);
    Engine *e = traced_engine(v1, &run->trace, workers);
    for (size_t i = 0; i < n; i++) {
        if (i == reload_at) {
            EngineReloadSummary sum;
            ck_assert_int_eq(engine_reload(e, v2, NULL, NULL, &sum), 0);
            ck_assert_uint_eq(sum.changed, 1);
        }
        ck_assert_int_eq(engine_line(e, lines[i], strlen(lines[i]), origin, i + 1,
                                     i < reload_at ? 0 : now_after), 0);
    }
    ck_assert_int_eq(engine_finish(e), 0);
    engine_stats(e, &run->stats);
    engine_rule_stats(e, 0, &run->rule0);
    engine_free(e);
    sort_lines(&run->trace.alerts);
}

static void run_reload(size_t workers, Run *run)
{
    CompiledRuleSet *v1 = test_rules_compile(reload_r1, NULL);
    CompiledRuleSet *v2 = test_rules_compile(reload_r2, v1);
    size_t n = 1500;
    char **lines = mixed_lines(n);
    run_reload_lines(v1, v2, lines, n, 777, "in", workers, 0, run);
    free_lines(lines, n);
    ruleset_free(v1);
    ruleset_free(v2);
}

START_TEST(workers_decode_lines_before_a_reload_for_the_old_rules)
{
    Run one, two;
    run_reload(1, &one);
    run_reload(2, &two);
    ck_assert_uint_gt(one.rule0.matches, 30);
    ck_assert_ptr_nonnull(strstr(one.trace.alerts.data, " m u"));
    assert_same_run(&one, &two);
    run_free(&one);
    run_free(&two);
}
END_TEST

static int64_t wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A reload mid-file, run both ways. */
typedef struct ReloadRead {
    Run one, two;              /* one worker given the lines; two workers reading them */
    size_t n, reload_at;       /* the lines, and those taken before the reload */
    int64_t start, end;        /* the wall clock around the reading run */
} ReloadRead;

/* A file of mixed lines read by 2 workers with a reload from the rules v1_text to
 * v2_text at the third step, and the same lines given to one worker reloading after
 * as many, those after arriving at the start of the reading run. */
static void read_across_reload(const char *v1_text, const char *v2_text, ReloadRead *rr)
{
    CompiledRuleSet *v1 = test_rules_compile(v1_text, NULL);
    CompiledRuleSet *v2 = test_rules_compile(v2_text, v1);
    size_t n = 60000;
    char **lines = mixed_lines(n);
    char path[] = "/tmp/vigil-engine-read-XXXXXX";
    write_lines(path, lines, n);
    ReloadAt at = {v2, 2, 0};
    rr->start = wall_now_ms();
    run_read(v1, path, 2, 0, reload_at_step, &at, &rr->two);
    rr->end = wall_now_ms();
    ck_assert_uint_gt(at.lines, 0);
    ck_assert_uint_lt(at.lines, n / 2);
    rr->n = n;
    rr->reload_at = at.lines;
    run_reload_lines(v1, v2, lines, n, at.lines, path, 1, rr->start, &rr->one);
    ck_assert_ptr_nonnull(strstr(rr->one.trace.alerts.data, "0 m "));
    unlink(path);
    free_lines(lines, n);
    ruleset_free(v1);
    ruleset_free(v2);
}

/* A reload mid-file: the lines read before it are matched by the old rules, the rest
 * by the new ones, as with one worker reloading after as many lines. */
START_TEST(workers_read_across_a_reload_as_one_thread)
{
    ReloadRead rr;
    read_across_reload(reload_r1, reload_r2, &rr);
    assert_same_run(&rr.one, &rr.two);
    run_free(&rr.one);
    run_free(&rr.two);
}
END_TEST

/* A read() that fails mid-file ends the reading with its errno: the lines read before
 * it are processed (the partial line after them is lost), as one worker given those
 * lines, and engine_finish then ends the run as `vigil run` does. The failing file:
 * /proc/self/mem read over a file mapped one page longer than it is, so that the read
 * after its last byte meets the page past its end (EIO). */
START_TEST(workers_read_error_ends_the_reading_after_the_lines_before)
{
    int mem = open("/proc/self/mem", O_RDONLY);
    if (mem < 0) {
        fprintf(stderr, "skipped: cannot open /proc/self/mem: %s\n", strerror(errno));
        return;
    }
    CompiledRuleSet *rs = test_rules_compile(input_rules, NULL);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 64 * page;   /* several chunks */
    size_t n = 6000, whole = 0;
    char **lines = mixed_lines(n);
    Buf b = BUF_INIT;
    while (b.len + strlen(lines[whole]) + 1 + 100 < size)
        buf_printf(&b, "%s\n", lines[whole++]);
    buf_puts(&b, "{\"ts\":1,\"pad\":\"");
    while (b.len < size)
        buf_putc(&b, 'x');   /* a partial line up to the failing read */
    char path[] = "/tmp/vigil-engine-eio-XXXXXX";
    write_file(path, b.data, b.len);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    char *map = mmap(NULL, size + page, PROT_READ, MAP_PRIVATE, fd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    close(fd);
    off_t at = (off_t)(uintptr_t)map;
    ck_assert_int_eq(lseek(mem, at, SEEK_SET), at);

    Run two;
    memset(&two, 0, sizeof two);
    pthread_mutex_init(&two.trace.lock, NULL);
    Engine *e = traced_engine(rs, &two.trace, 2);
    ck_assert_int_eq(engine_read_start(e, mem, path, 2000), 0);
    int rc = 1;
    for (size_t step = 0; rc == 1 && step < 1000000; step++) {
        rc = engine_read_step(e, 100);
        ck_assert_int_eq(engine_tick(e, 0), 0);
    }
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(engine_read_error(e), EIO);
    ck_assert_uint_eq(engine_read_bytes(e), size);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_stats(e, &two.stats);
    engine_rule_stats(e, 0, &two.rule0);
    engine_free(e);
    sort_lines(&two.trace.alerts);

    Placed *placed = placed_in(path, whole);
    Run one;
    run_lines(rs, lines, whole, placed, 1, 0, false, &one);
    ck_assert_uint_gt(one.rule0.matches + one.rule0.timeouts, 100);
    ck_assert_uint_eq(two.stats.lines, whole);
    assert_same_run(&one, &two);
    run_free(&one);
    run_free(&two);
    free(placed);
    munmap(map, size + page);
    close(mem);
    unlink(path);
    buf_free(&b);
    free_lines(lines, n);
    ruleset_free(rs);
}
END_TEST

/* The alerts, each time in [from, to] (a wall-clock stamp) written "W", sorted again;
 * how many were. */
static size_t wall_times_as_w(Buf *alerts, int64_t from, int64_t to)
{
    Buf out = BUF_INIT;
    size_t stamped = 0;
    for (const char *line = alerts->data; line && *line;) {
        const char *nl = strchr(line, '\n'), *time = line;
        for (int field = 0; field < 3; field++)   /* rule kind key time ... */
            time = strchr(time, ' ') + 1;
        char *after;
        long long t = strtoll(time, &after, 10);
        bool wall = t >= from && t <= to;
        buf_append(&out, line, (size_t)((wall ? time : nl + 1) - line));
        if (wall)
            buf_printf(&out, "W%.*s", (int)(nl + 1 - after), after);
        stamped += wall;
        line = nl + 1;
    }
    buf_free(alerts);
    *alerts = out;
    sort_lines(alerts);
    return stamped;
}

/* A reload mid-file to rules on processing time (no `time`): the reading jobs go on,
 * stamping each chunk's lines with the wall clock as they read it; the lines before
 * are matched by the old rules on event time, the rest by the new ones at their
 * arrival: as one worker reloading after as many lines, the lines after arriving at
 * the start of the run (the alerts' wall-clock times compared as "W"). */
static const char reload_to_processing_time[] =
    "rule r { key user; begin a where n % 3 == 0 and type == \"end\";\n"
    "  on match alert \"b\"; }\n";

START_TEST(workers_read_on_after_a_reload_to_processing_time)
{
    ReloadRead rr;
    read_across_reload(reload_r1, reload_to_processing_time, &rr);
    size_t stamped = wall_times_as_w(&rr.two.trace.alerts, rr.start, rr.end);
    /* the new rule's alerts (about a line in 7 after the reload) and only those */
    ck_assert_uint_gt(stamped, (rr.n - rr.reload_at) / 8);
    ck_assert_uint_eq(wall_times_as_w(&rr.one.trace.alerts, rr.start, rr.end), stamped);
    assert_same_run(&rr.one, &rr.two);
    run_free(&rr.one);
    run_free(&rr.two);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine_run");
    TCase *tc = tcase_create("engine");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, deadlines_fire_before_later_events_of_other_keys);
    tcase_add_test(tc, end_of_input_fires_timeouts_but_stop_does_not);
    tcase_add_test(tc, suppress_drops_alerts_within_the_window_per_key);
    tcase_add_test(tc, suppress_1ms_drops_only_alerts_at_the_same_millisecond);
    tcase_add_test(tc, missing_or_null_key_is_counted_and_skipped);
    tcase_add_test(tc, malformed_and_late_lines_go_to_the_sink_with_positions);
    tcase_add_test(tc, processing_time_timeouts_fire_on_tick);
    tcase_add_test(tc, max_partials_caps_each_key);
    tcase_add_test(tc, reload_keeps_unchanged_rules_state_inline);
    tcase_add_test(tc, reload_keeps_unchanged_rules_state_with_workers);
    tcase_add_test(tc, reload_redecodes_buffered_events_for_new_fields);
    tcase_add_test(tc, workers_give_the_same_alerts_with_per_key_order);
    tcase_add_test(tc, workers_decode_but_report_as_one_thread_lateness_0);
    tcase_add_test(tc, workers_decode_but_report_as_one_thread_lateness_5s);
    tcase_add_test(tc, workers_fast_and_slow_batches_report_as_one_thread);
    tcase_add_test(tc, workers_deliver_parts_larger_than_a_queue);
    tcase_add_test(tc, workers_send_strict_rules_blanks_as_one_thread);
    tcase_add_test(tc, workers_keep_each_lines_input_position_and_arrival);
    tcase_add_test(tc, workers_stats_count_every_line_handed_in);
    tcase_add_test(tc, workers_spread_keys_that_differ_only_at_the_end);
    tcase_add_test(tc, workers_keep_a_keys_rules_together_and_spread_keyless_rules);
    tcase_add_test(tc, workers_keep_each_rules_key_beside_a_keyless_rule);
    tcase_add_test(tc, workers_dead_letters_keep_each_lines_text_reason_and_offset);
    tcase_add_test(tc, workers_decode_lines_before_a_reload_for_the_old_rules);
    tcase_add_test(tc, memory_count_is_zero_once_every_key_is_gone);
    tcase_add_test(tc, workers_decode_lines_where_the_input_read_them);
    tcase_add_test(tc, workers_read_the_file_as_the_input_does);
    tcase_add_test(tc, workers_read_an_empty_file_and_one_line_without_newline);
    tcase_add_test(tc, workers_read_lines_at_a_reads_edge_as_the_input_does);
    tcase_add_test(tc, workers_read_then_stop_as_one_thread_after_those_lines);
    tcase_add_test(tc, workers_read_across_a_reload_as_one_thread);
    tcase_add_test(tc, workers_read_error_ends_the_reading_after_the_lines_before);
    tcase_add_test(tc, workers_read_on_after_a_reload_to_processing_time);
    tcase_add_test(tc, workers_read_only_with_workers_on_event_time);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
