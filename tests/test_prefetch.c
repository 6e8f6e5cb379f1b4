/* tests/test_prefetch.c — the look-ahead helpers behind the shard's prefetching:
 * deadline_peek (the keys that come due after the top), part_candidate and
 * part_entry_is (an entry found from the slots alone, then confirmed). Prefetching
 * itself changes no result; these say that what it is pointed at is right, and that
 * a candidate never stands in for a different key. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/deadline.h"
#include "runtime/partition.h"

enum { N_KEYS = 40 };

typedef struct Keys {
    PartEntry e[N_KEYS];
    char name[N_KEYS][8];
} Keys;

static void keys_init(Keys *k)
{
    memset(k, 0, sizeof *k);
    for (size_t i = 0; i < N_KEYS; i++) {
        snprintf(k->name[i], sizeof k->name[i], "k%zu", i);
        k->e[i].kbytes = k->name[i];
        k->e[i].klen = (uint32_t)strlen(k->name[i]);
        k->e[i].hash = i * UINT64_C(0x9e3779b97f4a7c15);
        k->e[i].deadline = INT64_MAX;
        k->e[i].heap_pos = SIZE_MAX;
    }
}

/* One stream of increasing deadlines, as a rule arms its keys: peeking `ahead` names
 * the key that becomes the top after `ahead` pops, and nothing past the last; so does
 * peeking several distances at once. */
START_TEST(peek_follows_firing_order)
{
    static Keys k;
    keys_init(&k);
    DeadlineHeap d;
    deadline_init(&d);
    ck_assert_ptr_null(deadline_peek(&d, 1));
    for (size_t i = 0; i < N_KEYS; i++)
        ck_assert_int_eq(deadline_set(&d, &k.e[i], 1000 + 10 * (int64_t)i), 0);
    for (size_t fired = 0; fired < N_KEYS; fired++) {
        ck_assert_ptr_eq(deadline_top(&d), &k.e[fired]);
        ck_assert_ptr_eq(deadline_peek(&d, 0), &k.e[fired]);
        size_t aheads[9];
        PartEntry *many[9];
        for (size_t ahead = 1; ahead < 10; ahead++) {
            PartEntry *want = fired + ahead < N_KEYS ? &k.e[fired + ahead] : NULL;
            ck_assert_ptr_eq(deadline_peek(&d, ahead), want);
            aheads[9 - ahead] = ahead;   /* in decreasing order, as the shard asks */
        }
        deadline_peek_many(&d, aheads, many, 9);
        for (size_t i = 0; i < 9; i++)
            ck_assert_ptr_eq(many[i], fired + aheads[i] < N_KEYS ? &k.e[fired + aheads[i]] : NULL);
        deadline_remove(&d, &k.e[fired]);
        ck_assert_ptr_null(deadline_verify(&d));
    }
    ck_assert_ptr_null(deadline_peek(&d, 1));
    deadline_free(&d);
}
END_TEST

/* A key removed before it came due leaves a hole: peeking there finds no key (never a
 * stale one), and the keys beyond it are still found at their places. */
START_TEST(peek_skips_nothing_after_a_hole)
{
    static Keys k;
    keys_init(&k);
    DeadlineHeap d;
    deadline_init(&d);
    for (size_t i = 0; i < 8; i++)
        ck_assert_int_eq(deadline_set(&d, &k.e[i], 100 + (int64_t)i), 0);
    deadline_remove(&d, &k.e[3]);
    ck_assert_ptr_eq(deadline_peek(&d, 2), &k.e[2]);
    ck_assert_ptr_null(deadline_peek(&d, 3));
    ck_assert_ptr_eq(deadline_peek(&d, 4), &k.e[4]);
    deadline_free(&d);
}
END_TEST

/* Whatever the mix of streams and out-of-order deadlines, a peeked key is one the
 * timers hold, due no earlier than the top. */
START_TEST(peek_names_held_later_keys)
{
    static Keys k;
    keys_init(&k);
    DeadlineHeap d;
    deadline_init(&d);
    uint64_t x = 12345;
    for (size_t i = 0; i < N_KEYS; i++) {
        x = x * UINT64_C(6364136223846793005) + 1442695040888963407u;
        ck_assert_int_eq(deadline_set(&d, &k.e[i], (int64_t)(x >> 40) % 500), 0);
    }
    static const size_t aheads[] = {8, 4, 2, 1, 0, 40};
    enum { N_AHEADS = sizeof aheads / sizeof aheads[0] };
    while (deadline_top(&d)) {
        for (size_t ahead = 1; ahead < 6; ahead++) {
            const PartEntry *e = deadline_peek(&d, ahead);
            if (!e)
                continue;
            ck_assert(deadline_holds(&d, e));
            ck_assert_int_ge(e->deadline, deadline_next(&d));
        }
        /* several distances at once, as the shard asks, agree with one at a time */
        PartEntry *many[N_AHEADS];
        deadline_peek_many(&d, aheads, many, N_AHEADS);
        for (size_t i = 0; i < N_AHEADS; i++)
            ck_assert_ptr_eq(many[i], deadline_peek(&d, aheads[i]));
        deadline_remove(&d, deadline_top(&d));
    }
    deadline_free(&d);
}
END_TEST

/* Two keys under one hash: the candidate is the first of them whatever key is asked
 * for, so it must be confirmed; the confirmation tells the keys apart and the full
 * lookup finds the second. A hash no entry has gives no candidate. Slots keep only the
 * hash's top bits (a tag): HASH_C and HASH_OTHER differ from HASH_AB there. */
#define TAG_BIT (UINT64_C(1) << 60)
#define HASH_AB UINT64_C(7)
#define HASH_C (UINT64_C(8) | TAG_BIT)
#define HASH_OTHER (UINT64_C(9) | TAG_BIT << 1)

START_TEST(candidate_needs_confirming)
{
    PartTable t;
    part_table_init(&t);
    ck_assert_ptr_null(part_candidate(&t, HASH_AB));
    PartEntry *a = part_add(&t, "alice", 5, HASH_AB);
    PartEntry *b = part_add(&t, "bob", 3, HASH_AB);
    PartEntry *c = part_add(&t, "carol", 5, HASH_C);
    ck_assert(a && b && c);
    ck_assert_ptr_eq(part_candidate(&t, HASH_AB), a);
    ck_assert(part_entry_is(a, "alice", 5));
    ck_assert(!part_entry_is(a, "bob", 3));
    ck_assert(!part_entry_is(a, "alic", 4));
    ck_assert_ptr_eq(part_lookup(&t, "bob", 3, HASH_AB), b);
    ck_assert_ptr_eq(part_candidate(&t, HASH_C), c);
    ck_assert_ptr_null(part_candidate(&t, HASH_OTHER));
    part_remove(&t, a);
    ck_assert_ptr_eq(part_candidate(&t, HASH_AB), b);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* A candidate is chosen by the tag alone: an entry of another hash with the same top
 * bits may stand first, and only the full lookup, which compares whole hashes and
 * bytes, tells them apart. */
START_TEST(candidate_by_tag_is_confirmed_by_lookup)
{
    PartTable t;
    part_table_init(&t);
    PartEntry *a = part_add(&t, "alice", 5, 7);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_eq(part_candidate(&t, 7 + 16 * 64), a);   /* same home and tag */
    ck_assert_ptr_null(part_lookup(&t, "alice", 5, 7 + 16 * 64));
    ck_assert_ptr_eq(part_lookup(&t, "alice", 5, 7), a);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* With many keys, the candidate of every key's hash is its entry (distinct hashes),
 * and of an absent hash none, exactly as the full lookup says. */
START_TEST(candidate_agrees_with_lookup)
{
    PartTable t;
    part_table_init(&t);
    char name[16];
    for (unsigned i = 0; i < 2000; i += 2) {
        int n = snprintf(name, sizeof name, "u%u", i);
        ck_assert_ptr_nonnull(part_add(&t, name, (size_t)n, part_hash(name, (size_t)n)));
    }
    for (unsigned i = 0; i < 2000; i++) {
        int n = snprintf(name, sizeof name, "u%u", i);
        uint64_t h = part_hash(name, (size_t)n);
        PartEntry *want = part_lookup(&t, name, (size_t)n, h);
        ck_assert(i % 2 == 0 ? want != NULL : want == NULL);
        PartEntry *got = part_may_hold(&t, h) ? part_candidate(&t, h) : NULL;
        ck_assert_ptr_eq(got, want);
        ck_assert(!got || part_entry_is(got, name, (size_t)n));
    }
    part_table_free(&t, NULL, NULL);
}
END_TEST

static Suite *prefetch_suite(void)
{
    Suite *s = suite_create("prefetch");
    TCase *tc = tcase_create("lookahead");
    tcase_add_test(tc, peek_follows_firing_order);
    tcase_add_test(tc, peek_skips_nothing_after_a_hole);
    tcase_add_test(tc, peek_names_held_later_keys);
    tcase_add_test(tc, candidate_needs_confirming);
    tcase_add_test(tc, candidate_by_tag_is_confirmed_by_lookup);
    tcase_add_test(tc, candidate_agrees_with_lookup);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(prefetch_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
