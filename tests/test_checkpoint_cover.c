/* tests/test_checkpoint_cover.c — a checkpoint taken while keys hold nothing but
 * their suppression window (a one-step rule that just alerted): the restored engine
 * keeps suppressing each key until its own window ends (not at it: the end is open),
 * with the same alerts and counters as an uninterrupted run. A focused, by-hand
 * version of what test_checkpoint's cut-anywhere comparison covers in bulk. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runtime/engine.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

#define T0 1767225600000LL
#define MIN_MS 60000LL

static const char rules_text[] =
    "time ts epoch_ms lateness 0s;\n"
    "rule again { key user; begin a where type == \"buy\"; suppress 1h;\n"
    "  on match alert \"b\"; }\n";

/* Alerts as "user@ms" lines (one worker: delivered in order, on the caller's thread). */
static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)rule;
    (void)scratch;
    Buf *seen = user;
    ck_assert_uint_eq(n_key, 1);
    buf_printf(seen, "%.*s@%lld\n", (int)key[0].len, key[0].s, (long long)(r->time_ms - T0));
}

static Engine *start(const CompiledRuleSet *rs, Buf *seen)
{
    return test_engine_new(rs, (EngineSink){on_alert, NULL, NULL, seen}, 0, 1);
}

typedef struct Buy {
    const char *user;
    long long at_ms;   /* after T0 */
} Buy;

/* In event-time order (with lateness 0 an older event would be late). */
static const Buy buys[] = {
    {"u1", 0},                /* alert */
    {"u2", 5 * MIN_MS},       /* alert */
    /* the checkpoint goes here: both keys hold only their window */
    {"u1", 10 * MIN_MS},      /* suppressed */
    {"u1", 60 * MIN_MS + 1},  /* past u1's window: alert */
    {"u2", 64 * MIN_MS},      /* suppressed (u2's window ends at 65 min) */
    {"u2", 65 * MIN_MS},      /* at the end of u2's window: alert */
};
#define N_BUYS (sizeof buys / sizeof buys[0])
#define CUT 2

static void feed(Engine *e, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        char line[128];
        snprintf(line, sizeof line, "{\"ts\":%lld,\"type\":\"buy\",\"user\":\"%s\"}",
                 T0 + buys[i].at_ms, buys[i].user);
        ck_assert_int_eq(engine_line(e, line, strlen(line), "buys.jsonl", i + 1, 0), 0);
    }
}

START_TEST(suppression_window_survives_a_checkpoint)
{
    CompiledRuleSet *rs = test_rules_compile(rules_text, NULL);
    /* uninterrupted */
    Buf whole = BUF_INIT;
    Engine *e = start(rs, &whole);
    feed(e, 0, N_BUYS);
    ck_assert_int_eq(engine_finish(e), 0);
    EngineRuleStats st_whole;
    engine_rule_stats(e, 0, &st_whole);
    engine_free(e);
    ck_assert_str_eq(whole.data, "u1@0\nu2@300000\nu1@3600001\nu2@3900000\n");
    ck_assert_uint_eq(st_whole.suppressed, 2);

    /* cut after CUT buys */
    Buf cut = BUF_INIT;
    e = start(rs, &cut);
    feed(e, 0, CUT);
    Buf state = BUF_INIT;
    ck_assert_int_eq(engine_checkpoint(e, &state, NULL, NULL, NULL), 0);
    engine_free(e);
    e = start(rs, &cut);
    char *err = NULL;
    EngineRestoreSummary sum;
    int rc = engine_restore(e, state.data, state.len, &sum, &err);
    ck_assert_msg(rc == 0, "restore: %s", err ? err : "?");
    ck_assert_uint_eq(sum.rules_kept, 1);
    ck_assert_uint_eq(sum.keys, 2);
    ck_assert_uint_eq(sum.partials, 0);
    feed(e, CUT, N_BUYS);
    ck_assert_int_eq(engine_finish(e), 0);
    EngineRuleStats st_cut;
    engine_rule_stats(e, 0, &st_cut);
    engine_free(e);
    ck_assert_str_eq(cut.data, whole.data);
    ck_assert_uint_eq(st_cut.suppressed, st_whole.suppressed);
    ck_assert_uint_eq(st_cut.alerts, st_whole.alerts);
    buf_free(&state);
    buf_free(&whole);
    buf_free(&cut);
    ruleset_free(rs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("checkpoint_cover");
    TCase *tc = tcase_create("suppression");
    tcase_add_test(tc, suppression_window_survives_a_checkpoint);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
