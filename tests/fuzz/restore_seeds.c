/* tests/fuzz/restore_seeds.c — the seed checkpoints of fuzz_restore reach what they
 * were made for: those of tests/fuzz/restore/make-seeds.sh are taken by ckpt_load and
 * restored with every rule kept (the examples' with rules dropped: card_two_countries
 * of examples/fraud is also one of the fixed rules, and kept), and between
 * them they hold keys, partial matches and buffered events of both clocks, and alert
 * after the restore. A change to the fixed rules that moves their fingerprints away
 * from the seeds fails here: regenerate the seeds then. */
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/checkmain.h"
#include "tests/fuzz/fuzz_restore.h"
#include "tests/testutil.h"

typedef struct Totals {
    size_t seeds;
    uint64_t keys[2], partials[2], buffered, alerts[2];   /* [event_time] */
} Totals;

static void check_seed(const char *path, Totals *t)
{
    size_t size = 0;
    char *data = test_read_file(path, &size);
    ck_assert_msg(data != NULL, "cannot read %s", path);
    FuzzRestoreOutcome out;
    fuzz_restore_run((const uint8_t *)data, size, &out);
    free(data);
    ck_assert_msg(out.framed, "%s: ckpt_load refuses it", path);
    ck_assert_msg(out.has_engine && out.restored, "%s: the engine state is refused", path);
    if (strstr(path, "/seed-example-")) {
        ck_assert_msg(out.sum.rules_dropped > 0, "%s: %zu rules kept, none dropped", path,
                      out.sum.rules_kept);
        return;
    }
    ck_assert_msg(out.sum.rules_kept == out.n_rules && out.sum.rules_dropped == 0,
                  "%s: %zu of %zu rules kept, %zu dropped (fingerprints changed? run "
                  "tests/fuzz/restore/make-seeds.sh)", path, out.sum.rules_kept, out.n_rules,
                  out.sum.rules_dropped);
    t->keys[out.event_time] += out.sum.keys;
    t->partials[out.event_time] += out.sum.partials;
    t->buffered += out.sum.buffered;
    t->alerts[out.event_time] += out.alerts;
}

START_TEST(test_seeds_restore)
{
    const char *top = getenv("top_srcdir");
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/tests/fuzz/corpus/restore/seed-*", top ? top : ".");
    glob_t g;
    ck_assert_msg(glob(pattern, 0, NULL, &g) == 0, "no seeds at %s", pattern);
    Totals t = {0};
    for (size_t i = 0; i < g.gl_pathc; i++)
        check_seed(g.gl_pathv[i], &t);
    size_t n = g.gl_pathc;
    globfree(&g);
    ck_assert_uint_ge(n, 10);
    for (int et = 0; et < 2; et++) {
        ck_assert_msg(t.keys[et] > 0 && t.partials[et] > 0 && t.alerts[et] > 0,
                      "the %s seeds hold %llu keys, %llu partial matches and alert %llu times",
                      et ? "event-time" : "processing-time", (unsigned long long)t.keys[et],
                      (unsigned long long)t.partials[et], (unsigned long long)t.alerts[et]);
    }
    ck_assert_uint_gt(t.buffered, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fuzz restore seeds");
    TCase *tc = tcase_create("seeds");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_seeds_restore);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
