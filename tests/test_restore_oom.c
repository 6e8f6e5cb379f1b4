/* tests/test_restore_oom.c — restoring an engine from a checkpoint when an allocation
 * fails. Each allocation of engine_restore is made to fail in turn: the restore must
 * then fail with a message that says out of memory (or with no message at all, when
 * the message itself could not be allocated), and the engine must stay sound: it runs
 * the rest of the stream to the end without a crash, and once every key and buffered
 * event is gone its --max-memory estimate is back at zero (a failed restore gives back
 * what it charged), with nothing leaked (the sanitizer build checks that).
 * Allocations fail through tests/oomwrap.h. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "tests/checkmain.h"
#include "tests/oomwrap.h"
#include "tests/rulesutil.h"

/* Partial matches in several rules (one with suppression, one with a timeout), shared
 * events, and a lateness that keeps events in the reorder buffer at the cut. */
static const char RULES[] =
    "time ts epoch_ms lateness 3s;\n"
    "rule session { key user; begin a where type == \"login\";\n"
    "  followed_by b where type == \"logout\"; within 8s;\n"
    "  on match alert \"m\"; on timeout alert \"t\"; }\n"
    "rule big { key user; begin a where type == \"tx\" and amount > 300;\n"
    "  followed_by_any b where type == \"tx\"; followed_by c where type == \"tx\";\n"
    "  within 5s; on match alert \"big\"; }\n"
    "rule burst { key user; begin a where type == \"tx\"; next b where type == \"tx\";\n"
    "  suppress 20s; on match alert \"burst\"; }\n";

#define N_EVENTS 300
#define CUT 200

static void ignore_alert(void *user, size_t rule, const Value *key, size_t n_key,
                         const NfaResult *r, EvalScratch *scratch)
{
    (void)user, (void)rule, (void)key, (void)n_key, (void)r, (void)scratch;
}

/* Event i of a stream over 7 users, out of order now and then (within the lateness). */
static void feed_range(Engine *e, size_t from, size_t to)
{
    static const char *types[] = {"login", "tx", "tx", "logout", "tx", "ping"};
    for (size_t i = from; i < to; i++) {
        char line[160];
        long long ts = 1767225600000LL + (long long)i * 400 - (i % 4 == 1 ? 2500 : 0);
        int len = snprintf(line, sizeof line,
                           "{\"ts\":%lld,\"user\":\"u%zu\",\"type\":\"%s\",\"amount\":%zu}",
                           ts, i * 3 % 7, types[(i * 5 + i / 3) % 6], i * 37 % 500);
        ck_assert_int_eq(engine_line(e, line, (size_t)len, "events.jsonl", i + 1, 0), 0);
    }
}

static Engine *new_engine(const CompiledRuleSet *rs)
{
    Engine *e = test_engine_new(rs, (EngineSink){ignore_alert, NULL, NULL, NULL}, 0, 1);
    /* a budget, so that memory_bytes is kept (far above what the stream needs) */
    engine_set_limits(e, &(EngineLimits){.max_memory = 64u << 20});
    return e;
}

/* The checkpoint of the stream cut at CUT, with events still buffered there. */
static void checkpoint_at_cut(const CompiledRuleSet *rs, Buf *state)
{
    Engine *e = new_engine(rs);
    feed_range(e, 0, CUT);
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_gt(st.buffered, 0);
    ck_assert_int_eq(engine_checkpoint(e, state, NULL, NULL, NULL), 0);
    engine_free(e);
}

/* Restores `state` into a new engine with allocation `fail` failing (0: none), runs the
 * rest of the stream and ends it; *n_allocs says how many allocations the restore
 * made. Returns whether the restore succeeded, after checking the engine ended sound. */
static bool restore_failing(const CompiledRuleSet *rs, const Buf *state, size_t fail,
                            size_t *n_allocs)
{
    Engine *e = new_engine(rs);
    EngineRestoreSummary sum;
    char *err = NULL;
    oom_count_begin(fail);
    int rc = engine_restore(e, state->data, state->len, &sum, &err);
    *n_allocs = oom_count_end();
    if (rc < 0 && err)
        ck_assert_msg(strstr(err, "out of memory") != NULL, "allocation %zu: the error says "
                      "\"%s\"", fail, err);
    ck_assert_msg(rc == 0 || fail > 0, "the restore failed without a failed allocation: %s",
                  err ? err : "(no message)");
    free(err);
    feed_range(e, CUT, N_EVENTS);
    ck_assert_int_eq(engine_finish(e), 0);
    EngineStats st;
    engine_stats(e, &st);
    ck_assert_uint_eq(st.buffered, 0);
    ck_assert_msg(st.memory_bytes == 0, "allocation %zu (restore %s): %llu bytes still "
                  "charged after the end", fail, rc == 0 ? "done" : "failed",
                  (unsigned long long)st.memory_bytes);
    engine_free(e);
    return rc == 0;
}

START_TEST(each_failed_allocation_fails_the_restore_cleanly)
{
    CompiledRuleSet *rs = test_rules_compile(RULES, NULL);
    Buf state = BUF_INIT;
    checkpoint_at_cut(rs, &state);
    size_t total;
    ck_assert(restore_failing(rs, &state, 0, &total));
    ck_assert_uint_gt(total, 0);
    size_t failed = 0;
    for (size_t fail = 1; fail <= total; fail++) {
        size_t n;
        if (!restore_failing(rs, &state, fail, &n))
            failed++;
    }
    /* most allocations of a restore matter: were none to fail it, the wrappers missed */
    ck_assert_uint_gt(failed, total / 2);
    buf_free(&state);
    ruleset_free(rs);
}
END_TEST

static Suite *restore_oom_suite(void)
{
    Suite *s = suite_create("restore_oom");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, each_failed_allocation_fails_the_restore_cleanly);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(restore_oom_suite());
}
