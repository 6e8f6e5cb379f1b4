/* tests/test_shard_cover.c — suppression at its smallest window: `suppress 1ms` drops
 * a second alert of a key at the same millisecond only (the window's end is open),
 * next to a rule without suppression that alerts on every event. (`suppress 0s` is
 * refused by the checker, so the shard's test for a window of 0 is never reached.) */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runtime/engine.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

#define T0 1767225600000LL

static const char rules_text[] =
    "time ts epoch_ms lateness 0s;\n"
    "rule none { key user; begin a where type == \"buy\";\n"
    "  on match alert \"n\"; }\n"
    "rule some { key user; begin a where type == \"buy\"; suppress 1ms;\n"
    "  on match alert \"s\"; }\n";

/* Alerts as "rule:user@ms" lines (one worker: in order, on the caller's thread). */
static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Buf *seen = user;
    ck_assert_uint_eq(n_key, 1);
    buf_printf(seen, "%zu:%.*s@%lld\n", rule, (int)key[0].len, key[0].s,
               (long long)(r->time_ms - T0));
}

START_TEST(smallest_window_is_one_millisecond)
{
    static const struct {
        const char *user;
        long long at;
    } buys[] = {{"u1", 0}, {"u1", 0}, {"u2", 0}, {"u1", 1}, {"u1", 1}, {"u1", 2}};
    CompiledRuleSet *rs = test_rules_compile(rules_text, NULL);
    Buf seen = BUF_INIT;
    Engine *e = test_engine_new(rs, (EngineSink){on_alert, NULL, NULL, &seen}, 0, 1);
    for (size_t i = 0; i < sizeof buys / sizeof buys[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "{\"ts\":%lld,\"type\":\"buy\",\"user\":\"%s\"}",
                 T0 + buys[i].at, buys[i].user);
        ck_assert_int_eq(engine_line(e, line, strlen(line), "buys.jsonl", i + 1, 0), 0);
    }
    ck_assert_int_eq(engine_finish(e), 0);
    EngineRuleStats none, some;
    engine_rule_stats(e, 0, &none);
    engine_rule_stats(e, 1, &some);
    engine_free(e);
    /* rule 0 alerts on every buy; rule 1 once per user and millisecond */
    ck_assert_str_eq(seen.data,
                     "0:u1@0\n1:u1@0\n0:u1@0\n0:u2@0\n1:u2@0\n0:u1@1\n1:u1@1\n0:u1@1\n"
                     "0:u1@2\n1:u1@2\n");
    ck_assert_uint_eq(none.suppressed, 0);
    ck_assert_uint_eq(none.alerts, 6);
    ck_assert_uint_eq(some.suppressed, 2);
    ck_assert_uint_eq(some.alerts, 4);
    buf_free(&seen);
    ruleset_free(rs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shard_cover");
    TCase *tc = tcase_create("suppress");
    tcase_add_test(tc, smallest_window_is_one_millisecond);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
