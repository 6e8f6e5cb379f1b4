/* tests/test_speed.c — the structures that make many rules cheap, checked against
 * plain references: the 4-ary timer heap against the earliest entry by (deadline,
 * key), the partition table's occupancy bitmap (never says "absent" for a present
 * key), and the router's all-rules pass against router_route rule by rule. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsl/diag.h"
#include "runtime/deadline.h"
#include "runtime/decode.h"
#include "runtime/partition.h"
#include "runtime/route.h"
#include "tests/checkmain.h"
#include "tests/partkeys.h"

/* A small deterministic generator (xorshift), so failures reproduce. */
static uint64_t next_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* ---- the timer heap ------------------------------------------------------------ */

static bool entry_before(const PartEntry *a, const PartEntry *b)
{
    if (a->deadline != b->deadline)
        return a->deadline < b->deadline;
    if (a->klen != b->klen)
        return a->klen < b->klen;
    return memcmp(a->tail, b->tail, a->klen) < 0;
}

START_TEST(heap_pops_in_deadline_then_key_order)
{
    enum { ENTRIES = 300, STEPS = 30000 };
    PartTable keys;
    part_table_init(&keys);
    PartEntry *e[ENTRIES];
    test_part_add_numbered(&keys, e, ENTRIES);
    DeadlineHeap d;
    deadline_init(&d);
    uint64_t seed = 1234567;
    for (int step = 0; step < STEPS; step++) {
        PartEntry *x = e[next_rand(&seed) % ENTRIES];
        int64_t t = next_rand(&seed) % 6 == 0 ? INT64_MAX : (int64_t)(next_rand(&seed) % 40);
        ck_assert_int_eq(deadline_set(&d, x, t), 0);
        /* Check's assertions are slow (each one reports to the runner): count the
         * bad positions with plain tests and assert once */
        const PartEntry *want = NULL;
        size_t armed = 0, misplaced = 0;
        for (size_t i = 0; i < ENTRIES; i++) {
            if (e[i]->deadline == INT64_MAX) {
                misplaced += e[i]->heap_pos != PART_NOT_TIMED;
                continue;
            }
            armed++;
            misplaced += !deadline_holds(&d, e[i]);
            if (!want || entry_before(e[i], want))
                want = e[i];
        }
        ck_assert_uint_eq(misplaced, 0);
        ck_assert_uint_eq(d.n, armed);
        ck_assert_ptr_eq(deadline_top(&d), want);
        ck_assert(deadline_next(&d) == (want ? want->deadline : INT64_MAX));
    }
    deadline_free(&d);
    for (size_t i = 0; i < ENTRIES; i++)
        ck_assert_uint_eq(e[i]->heap_pos, PART_NOT_TIMED);
    part_table_free(&keys, NULL, NULL);
}
END_TEST

/* ---- the partition table's occupancy bitmap ------------------------------------- */

START_TEST(bitmap_never_hides_a_present_key)
{
    enum { KEYS = 2000, STEPS = 40000 };
    PartTable t;
    part_table_init(&t);
    PartEntry *present[KEYS] = {0};
    uint64_t seed = 42;
    size_t skipped = 0, wrong = 0;
    for (int step = 0; step < STEPS; step++) {
        size_t k = next_rand(&seed) % KEYS;
        char key[16];
        int len = snprintf(key, sizeof key, "\"u%zu\"", k);
        uint64_t hash = part_hash(key, (size_t)len);
        if (present[k]) {
            part_remove(&t, present[k]);
            present[k] = NULL;
        } else {
            present[k] = part_add(&t, key, (size_t)len, hash, 1);
            ck_assert_ptr_nonnull(present[k]);
        }
        if (step % 97)
            continue;
        for (size_t j = 0; j < KEYS; j++) {
            len = snprintf(key, sizeof key, "\"u%zu\"", j);
            hash = part_hash(key, (size_t)len);
            bool may = part_may_hold(&t, hash);
            PartEntry *found = part_lookup(&t, key, (size_t)len, hash);
            wrong += found != present[j] || (present[j] && !may);
            skipped += !may;
        }
        ck_assert_uint_eq(wrong, 0);
    }
    ck_assert_uint_gt(skipped, 0);   /* the bitmap does answer "absent" sometimes */
    part_table_free(&t, NULL, NULL);
    ck_assert(!part_may_hold(&t, 1));
}
END_TEST

/* ---- the router ------------------------------------------------------------------- */

static const char ROUTE_RULES[] =
    "rule a { filter type == \"tx\"; key user; begin x; }\n"
    "rule b { filter type == \"login\"; key user; begin x; }\n"
    "rule c { filter type == \"tx\"; key user; begin x where amount > 10; }\n"
    "rule d { key id; begin x; }\n"
    "rule e { filter type == \"tx\" and amount > 5; key user, id; begin x; }\n"
    "rule f { filter type == \"login\"; key id; begin x; }\n"
    "rule g { filter type == \"tx\"; key id; begin x; }\n";

static const char *const ROUTE_EVENTS[] = {
    "{\"type\":\"tx\",\"user\":\"u1\",\"amount\":7,\"id\":1}",
    "{\"type\":\"tx\",\"user\":\"u2\",\"amount\":3}",
    "{\"type\":\"login\",\"user\":\"u1\",\"id\":\"s9\"}",
    "{\"type\":\"login\",\"id\":null}",
    "{\"type\":\"other\",\"user\":\"u3\",\"id\":[1,2]}",
    "{\"user\":\"u4\"}",
};

START_TEST(route_all_agrees_with_route)
{
    char path[] = "/tmp/vigil-speed-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, ROUTE_RULES, strlen(ROUTE_RULES)), (ssize_t)strlen(ROUTE_RULES));
    close(fd);
    Diags diags;
    diags_init(&diags);
    const char *paths[] = {path};
    CompiledRuleSet *rs = ruleset_load(paths, 1, &diags);
    unlink(path);
    if (!rs)
        diags_print(&diags, stderr);
    ck_assert_ptr_nonnull(rs);
    size_t n = rs->n_rules;
    Router *all = router_new(rs, true), *one = router_new(rs, true);
    Decoder *dec = decoder_new(&rs->fields, 64);
    EvalScratch *scratch = expr_scratch_new();
    ck_assert(all && one && dec && scratch);
    size_t order[7];
    RouteResult res[7];
    const RouteKey *keys[7];
    ck_assert_uint_eq(n, 7);
    for (size_t e = 0; e < sizeof ROUTE_EVENTS / sizeof *ROUTE_EVENTS; e++) {
        DecodeError err;
        Event *ev = decoder_decode(dec, ROUTE_EVENTS[e], strlen(ROUTE_EVENTS[e]), &err);
        ck_assert_ptr_nonnull(ev);
        size_t got = router_route_all(all, ev, scratch, order, res, keys);
        router_begin(one);
        size_t j = 0;
        for (size_t ri = 0; ri < n; ri++) {
            RouteKey want;
            RouteResult rr = router_route(one, ri, ev, scratch, &want);
            if (rr == ROUTE_FILTERED)
                continue;
            ck_assert_uint_lt(j, got);
            ck_assert_uint_eq(order[j], ri);   /* every admitted rule, in rule order */
            ck_assert_int_eq(res[ri], rr);
            if (rr == ROUTE_KEYED) {
                ck_assert_uint_eq(keys[ri]->len, want.len);
                ck_assert_int_eq(memcmp(keys[ri]->bytes, want.bytes, want.len), 0);
                ck_assert_uint_eq(keys[ri]->hash, want.hash);
            }
            j++;
        }
        ck_assert_uint_eq(j, got);
        event_release(ev);
        expr_scratch_reset(scratch);
    }
    expr_scratch_free(scratch);
    decoder_free(dec);
    router_free(all);
    router_free(one);
    ruleset_free(rs);
    diags_free(&diags);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("speed");
    TCase *tc = tcase_create("structures");
    tcase_add_test(tc, heap_pops_in_deadline_then_key_order);
    tcase_add_test(tc, bitmap_never_hides_a_present_key);
    tcase_add_test(tc, route_all_agrees_with_route);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
