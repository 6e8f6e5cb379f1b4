/* tests/limits/test_limits.c — resource limits below the CLI: the reorder buffer's
 * cap (oldest released early, nothing lost), the --max-memory budget (new keys
 * refused and counted, existing keys keep matching, the state's size estimated), and
 * input held back mid-read by a pause (backpressure) without losing or reordering a
 * line. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "dsl/diag.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "runtime/input.h"
#include "runtime/reorder.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

/* ---- fixtures --------------------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

typedef struct Alerts {
    pthread_mutex_t lock;      /* workers deliver from their threads */
    size_t n;
    bool early;                /* the key "early" alerted */
    int64_t last_time;         /* time of the latest alert (one worker: in order) */
    bool in_order;
} Alerts;

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)rule;
    (void)scratch;
    Alerts *a = user;
    pthread_mutex_lock(&a->lock);
    a->n++;
    if (n_key && key[0].type == V_STR && key[0].len == 5 && !memcmp(key[0].s, "early", 5))
        a->early = true;
    if (r->time_ms < a->last_time)
        a->in_order = false;
    a->last_time = r->time_ms;
    pthread_mutex_unlock(&a->lock);
}

static Engine *start(const CompiledRuleSet *rs, Alerts *a, size_t workers,
                     const EngineLimits *limits)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
    a->in_order = true;
    a->last_time = INT64_MIN;
    Engine *e = test_engine_new(rs, (EngineSink){on_alert, NULL, NULL, a}, 0, workers);
    if (limits)
        engine_set_limits(e, limits);
    return e;
}

/* Processing-time rules run on the wall clock (workers fire their timers by it). */
static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void feed(Engine *e, const char *line, uint64_t no)
{
    ck_assert_int_eq(engine_line(e, line, strlen(line), "-", no, wall_ms()), 0);
}

static uint64_t rule_stat_refused(Engine *e)
{
    EngineRuleStats r;
    ck_assert_int_eq(engine_all_rule_stats(e, &r), 0);
    return r.keys_refused;
}

/* ---- reorder buffer --------------------------------------------------------- */

START_TEST(pop_oldest_moves_the_watermark)
{
    Reorder r;
    reorder_init(&r, 60000);
    int items[3];
    ck_assert_int_eq(reorder_push(&r, 3000, &items[0]), REORDER_ACCEPTED);
    ck_assert_int_eq(reorder_push(&r, 1000, &items[1]), REORDER_ACCEPTED);
    ck_assert_int_eq(reorder_push(&r, 2000, &items[2]), REORDER_ACCEPTED);
    ck_assert_ptr_null(reorder_pop_ready(&r, NULL));   /* all within the lateness */
    int64_t t = 0;
    ck_assert_ptr_eq(reorder_pop_oldest(&r, &t), &items[1]);
    ck_assert_int_eq(t, 1000);
    ck_assert_int_eq(reorder_watermark(&r), 1000);
    /* older than what went out early: late, so releases stay in time order */
    ck_assert_int_eq(reorder_push(&r, 999, &items[0]), REORDER_LATE);
    ck_assert_int_eq(reorder_push(&r, 1000, &items[0]), REORDER_ACCEPTED);
    ck_assert_ptr_eq(reorder_pop_ready(&r, NULL), &items[0]);
    ck_assert_ptr_null(reorder_pop_ready(&r, NULL));
    ck_assert_uint_eq(reorder_size(&r), 2);
    reorder_free(&r, NULL);
    Reorder empty;
    reorder_init(&empty, 0);
    ck_assert_ptr_null(reorder_pop_oldest(&empty, NULL));
    reorder_free(&empty, NULL);
}
END_TEST

static const char *PAIRS =
    "time ts epoch_ms lateness 1h;\n"
    "rule pair {\n"
    "  key user;\n"
    "  begin a where type == \"a\";\n"
    "  followed_by b where type == \"b\";\n"
    "  within 1h;\n"
    "}\n";

/* A full reorder buffer releases its oldest events early: every pair still matches,
 * in time order, and nothing is late or dropped. */
static void check_buffer_cap(size_t workers)
{
    CompiledRuleSet *rs = test_rules_compile(PAIRS, NULL);
    Alerts a;
    EngineLimits lim = {.max_buffered = 10};
    Engine *e = start(rs, &a, workers, &lim);
    char line[128];
    uint64_t no = 0;
    for (int i = 0; i < 500; i++) {
        snprintf(line, sizeof line, "{\"ts\":%d,\"user\":\"u%d\",\"type\":\"a\"}", 1000 * i, i % 7);
        feed(e, line, ++no);
        snprintf(line, sizeof line, "{\"ts\":%d,\"user\":\"u%d\",\"type\":\"b\"}", 1000 * i + 1,
                 i % 7);
        feed(e, line, ++no);
    }
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_eq(st.buffered, 10);
    ck_assert_uint_eq(st.released_early, 1000 - 10);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_stats(e, &st);
    ck_assert_uint_eq(st.late, 0);
    ck_assert_uint_eq(st.events, 1000);
    ck_assert_uint_eq(a.n, 500);
    if (workers == 1)
        ck_assert(a.in_order);
    engine_free(e);
    ruleset_free(rs);
}

START_TEST(buffer_cap_releases_early_inline)
{
    check_buffer_cap(1);
}
END_TEST

START_TEST(buffer_cap_releases_early_workers)
{
    check_buffer_cap(3);
}
END_TEST

START_TEST(buffer_default_cap)
{
    CompiledRuleSet *rs = test_rules_compile(PAIRS, NULL);
    Alerts a;
    Engine *e = start(rs, &a, 1, NULL);
    char line[128];
    for (int i = 0; i < 300; i++) {
        snprintf(line, sizeof line, "{\"ts\":%d,\"user\":\"u\",\"type\":\"a\"}", i);
        feed(e, line, (uint64_t)i + 1);
    }
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_eq(st.buffered, 300);   /* far below ENGINE_DEFAULT_MAX_BUFFERED */
    ck_assert_uint_eq(st.released_early, 0);
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

/* ---- memory budget ------------------------------------------------------------ */

static const char *KEYS =
    "rule pair {\n"
    "  key user;\n"
    "  begin a where type == \"login\";\n"
    "  followed_by b where type == \"buy\";\n"
    "  within 1h;\n"
    "}\n";

/* One line of `type` for each of the users u0 .. u<n-1>, numbered from first_no. */
static void feed_users(Engine *e, int n, const char *type, uint64_t first_no)
{
    char line[96];
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof line, "{\"user\":\"u%d\",\"type\":\"%s\"}", i, type);
        feed(e, line, first_no + (uint64_t)i);
    }
}

/* 20,000 users each keep a partial match: a 1 MiB budget holds a few thousand. */
static void check_budget(size_t workers)
{
    CompiledRuleSet *rs = test_rules_compile(KEYS, NULL);
    Alerts a;
    EngineLimits lim = {.max_memory = 1 << 20};
    Engine *e = start(rs, &a, workers, &lim);
    feed(e, "{\"user\":\"early\",\"type\":\"login\"}", 1);
    feed_users(e, 20000, "login", 2);
    feed(e, "{\"user\":\"early\",\"type\":\"buy\"}", 20002);
    ck_assert_int_eq(engine_tick(e, wall_ms()), 0);
    EngineRuleStats r;
    ck_assert_int_eq(engine_all_rule_stats(e, &r), 0);
    uint64_t refused = r.keys_refused;
    ck_assert_uint_gt(refused, 10000);
    ck_assert_uint_lt(refused, 20000);
    ck_assert_uint_eq(refused + r.keys_live, 20000);   /* early's key went idle */
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_eq(st.max_memory, 1 << 20);
    ck_assert_int_eq(engine_finish(e), 0);
    ck_assert(a.early);
    engine_free(e);
    ruleset_free(rs);
}

START_TEST(budget_refuses_new_keys_inline)
{
    check_budget(1);
}
END_TEST

START_TEST(budget_refuses_new_keys_workers)
{
    check_budget(2);
}
END_TEST

/* Without a budget nothing is refused, and the estimate follows the live keys: up
 * while they hold partial matches, back down once they are gone. */
START_TEST(estimate_follows_the_state)
{
    CompiledRuleSet *rs = test_rules_compile(KEYS, NULL);
    Alerts a;
    Engine *e = start(rs, &a, 1, NULL);
    feed_users(e, 2000, "login", 1);
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_eq(st.max_memory, 0);
    /* at least each key's held event and entry (their sizes shrink as we slim them) */
    ck_assert_uint_gt(st.memory_bytes, 2000 * 160);
    ck_assert_uint_lt(st.memory_bytes, 2000 * 4000);
    feed_users(e, 2000, "buy", 2001);
    ck_assert_uint_eq(a.n, 2000);
    ck_assert_uint_eq(rule_stat_refused(e), 0);
    engine_stats(e, &st);
    ck_assert_uint_lt(st.memory_bytes, 64 * 1024);   /* at most one unpublished batch */
    engine_free(e);
    ruleset_free(rs);
}
END_TEST

/* The estimate of 2000 keys, each holding one partial match of every rule. */
static uint64_t estimate_with_rules(const char *rules)
{
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    Alerts a;
    Engine *e = start(rs, &a, 1, NULL);
    feed_users(e, 2000, "login", 1);
    EngineStats st;
    engine_stats(e, &st);
    engine_free(e);
    ruleset_free(rs);
    return st.memory_bytes;
}

/* Rules that start on the same event share its first node, but each rule's key still
 * holds the event for as long as its own partial match lives, whichever goes first:
 * every rule's slot is charged for it (the estimate errs on the safe side). The three
 * rules' slots share one record per key (its entry and overhead, about 40% of one
 * rule's estimate here), so three rules cost about 2.6 times one: above 2.4 (one
 * charge of the event per key would give under 2), and below 3. */
START_TEST(estimate_charges_every_key_holding_an_event)
{
    uint64_t one = estimate_with_rules(KEYS);
    char three[1024];
    snprintf(three, sizeof three, "%s%s%s", KEYS, KEYS, KEYS);
    for (char *p = three, n = '1'; (p = strstr(p, "rule pair ")); p += 10)
        p[9] = n++;   /* pair1, pair2, pair3 */
    uint64_t all = estimate_with_rules(three);
    ck_assert_uint_gt(all, one * 24 / 10);
    ck_assert_uint_lt(all, one * 3);
}
END_TEST

/* ---- input held back by a pause ----------------------------------------------- */

typedef struct Reader {
    InputSet *in;
    char lines[8][32];
    size_t n;
    size_t pause_after;        /* pause once this many lines came in; 0: never */
} Reader;

static void on_line(void *user, const InputLine *line)
{
    Reader *r = user;
    ck_assert_uint_lt(r->n, 8);
    snprintf(r->lines[r->n++], 32, "%.*s", (int)line->len, line->text);
    if (r->n == r->pause_after)
        input_pause(r->in, true);
}

static void record_position(void *user, const InputPosition *p)
{
    uint64_t *out = user;
    out[0] = p->offset;
    out[1] = p->line_no;
}

START_TEST(pause_holds_the_rest_of_a_read)
{
    char path[] = "/tmp/vigil-test-limits-in-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    write_file(path, "one\ntwo\nthree\nfour\nfive\n");
    Reader r = {.in = input_set_new(1024), .pause_after = 2};
    char *err = NULL;
    ck_assert_int_eq(input_add(r.in, path, &err), 0);
    InputHandler h = {on_line, NULL, &r};
    /* one read brings every line; the pause after the second holds the others */
    ck_assert_int_eq(input_poll(r.in, 1000, &h), 1);
    ck_assert_uint_eq(r.n, 2);
    uint64_t pos[2] = {0, 0};
    input_each_position(r.in, record_position, pos);
    ck_assert_uint_eq(pos[0], 8);      /* "three" is next */
    ck_assert_uint_eq(pos[1], 2);
    /* still paused: nothing more */
    ck_assert_int_eq(input_poll(r.in, 0, &h), 1);
    ck_assert_uint_eq(r.n, 2);
    /* resumed: the held lines first, in order, then the end */
    r.pause_after = 0;
    input_pause(r.in, false);
    int rc = 1;
    for (int i = 0; i < 10 && rc == 1; i++)
        rc = input_poll(r.in, 1000, &h);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(r.n, 5);
    const char *want[] = {"one", "two", "three", "four", "five"};
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(r.lines[i], want[i]);
    input_each_position(r.in, record_position, pos);
    ck_assert_uint_eq(pos[0], 24);
    ck_assert_uint_eq(pos[1], 5);
    input_set_free(r.in);
    unlink(path);
}
END_TEST

/* A pause on every line: each poll delivers one held line and no line is lost. */
START_TEST(pause_on_every_line)
{
    char path[] = "/tmp/vigil-test-limits-in-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    write_file(path, "a\nb\nc\nd");   /* the last line is unterminated: still a line */
    Reader r = {.in = input_set_new(1024)};
    char *err = NULL;
    ck_assert_int_eq(input_add(r.in, path, &err), 0);
    InputHandler h = {on_line, NULL, &r};
    int rc = 1;
    for (int i = 0; i < 20 && rc == 1; i++) {
        size_t before = r.n;
        r.pause_after = r.n + 1;
        input_pause(r.in, false);
        rc = input_poll(r.in, 1000, &h);
        ck_assert_uint_le(r.n, before + 1);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(r.n, 4);
    ck_assert_str_eq(r.lines[0], "a");
    ck_assert_str_eq(r.lines[3], "d");
    input_set_free(r.in);
    unlink(path);
}
END_TEST

static Suite *limits_suite(void)
{
    Suite *s = suite_create("limits");
    TCase *reorder = tcase_create("reorder");
    tcase_add_test(reorder, pop_oldest_moves_the_watermark);
    tcase_add_test(reorder, buffer_cap_releases_early_inline);
    tcase_add_test(reorder, buffer_cap_releases_early_workers);
    tcase_add_test(reorder, buffer_default_cap);
    suite_add_tcase(s, reorder);
    TCase *budget = tcase_create("budget");
    tcase_set_timeout(budget, 30);
    tcase_add_test(budget, budget_refuses_new_keys_inline);
    tcase_add_test(budget, budget_refuses_new_keys_workers);
    tcase_add_test(budget, estimate_follows_the_state);
    tcase_add_test(budget, estimate_charges_every_key_holding_an_event);
    suite_add_tcase(s, budget);
    TCase *input = tcase_create("input");
    tcase_add_test(input, pause_holds_the_rest_of_a_read);
    tcase_add_test(input, pause_on_every_line);
    suite_add_tcase(s, input);
    return s;
}

int main(void)
{
    return check_run_suite(limits_suite());
}
