/* tests/test_prefetch.c — the look-ahead helpers behind the shard's prefetching:
 * deadline_peek (the keys that come due after the top), part_candidate and
 * part_entry_is (an entry found from the slots alone, then confirmed). Prefetching
 * itself changes no result; these say that what it is pointed at is right, and that
 * a candidate never stands in for a different key. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/deadline.h"
#include "runtime/partition.h"
#include "tests/checkmain.h"
#include "tests/partkeys.h"

enum { N_KEYS = 40 };

/* Entries as the shard makes them, in a partition table. */
typedef struct Keys {
    PartTable t;
    PartEntry *e[N_KEYS];
} Keys;

static void keys_init(Keys *k)
{
    part_table_init(&k->t);
    test_part_add_numbered(&k->t, k->e, N_KEYS);
}

static void keys_free(Keys *k)
{
    part_table_free(&k->t, NULL, NULL);
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
        ck_assert_int_eq(deadline_set(&d, k.e[i], 1000 + 10 * (int64_t)i), 0);
    for (size_t fired = 0; fired < N_KEYS; fired++) {
        ck_assert_ptr_eq(deadline_top(&d), k.e[fired]);
        ck_assert_ptr_eq(deadline_peek(&d, 0), k.e[fired]);
        size_t aheads[9];
        PartEntry *many[9];
        for (size_t ahead = 1; ahead < 10; ahead++) {
            PartEntry *want = fired + ahead < N_KEYS ? k.e[fired + ahead] : NULL;
            ck_assert_ptr_eq(deadline_peek(&d, ahead), want);
            aheads[9 - ahead] = ahead;   /* in decreasing order, as the shard asks */
        }
        deadline_peek_many(&d, aheads, many, 9);
        for (size_t i = 0; i < 9; i++)
            ck_assert_ptr_eq(many[i], fired + aheads[i] < N_KEYS ? k.e[fired + aheads[i]] : NULL);
        deadline_remove(&d, k.e[fired]);
        ck_assert_ptr_null(deadline_verify(&d));
    }
    ck_assert_ptr_null(deadline_peek(&d, 1));
    deadline_free(&d);
    keys_free(&k);
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
        ck_assert_int_eq(deadline_set(&d, k.e[i], 100 + (int64_t)i), 0);
    deadline_remove(&d, k.e[3]);
    ck_assert_ptr_eq(deadline_peek(&d, 2), k.e[2]);
    ck_assert_ptr_null(deadline_peek(&d, 3));
    ck_assert_ptr_eq(deadline_peek(&d, 4), k.e[4]);
    deadline_free(&d);
    keys_free(&k);
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
        ck_assert_int_eq(deadline_set(&d, k.e[i], (int64_t)(x >> 40) % 500), 0);
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
    keys_free(&k);
}
END_TEST

/* A key name "<prefix>N" (into name, its length returned) whose hash has the home
 * `home` in a table of 16 slots and, unless any_tag, the slot tag `tag` (the hash's
 * top bits), or (with avoid_tag) any tag but that one: found by trying N in turn,
 * since the table takes only the hash of the key bytes. */
static size_t key_at(char name[24], const char *prefix, size_t home, uint64_t tag, int tag_rule)
{
    for (unsigned n = 0;; n++) {
        size_t len = (size_t)snprintf(name, 24, "%s%u", prefix, n);
        uint64_t h = part_hash(name, len);
        bool tag_ok = tag_rule == 0 || (tag_rule > 0) == (part_slot_tag(h) == tag);
        if ((h & 15) == home && tag_ok)
            return len;
    }
}

/* Keys of one home and one slot tag: the candidate is the first of them whatever key
 * is asked for, so it must be confirmed; the confirmation tells the keys apart and the
 * full lookup finds the second. A key of that home with another tag gets its own
 * candidate, and an absent one with a third tag none. */
START_TEST(candidate_needs_confirming)
{
    char a_name[24], b_name[24], c_name[24], other[24];
    size_t a_len = key_at(a_name, "alice", 7, 0, 0);
    uint64_t a_hash = part_hash(a_name, a_len), tag = part_slot_tag(a_hash);
    size_t b_len = key_at(b_name, "bob", 7, tag, 1);
    size_t c_len = key_at(c_name, "carol", 7, tag, -1);
    uint64_t b_hash = part_hash(b_name, b_len), c_hash = part_hash(c_name, c_len);
    uint64_t other_hash;
    size_t other_len;
    char prefix[] = "otherA";
    do {   /* absent, at the same home, with neither tag */
        other_len = key_at(other, prefix, 7, tag, -1);
        other_hash = part_hash(other, other_len);
        prefix[5]++;
    } while (part_slot_tag(other_hash) == part_slot_tag(c_hash));
    PartTable t;
    part_table_init(&t);
    ck_assert_ptr_null(part_candidate(&t, a_hash));
    PartEntry *a = part_add(&t, a_name, a_len, a_hash, 1);
    PartEntry *b = part_add(&t, b_name, b_len, b_hash, 1);
    PartEntry *c = part_add(&t, c_name, c_len, c_hash, 1);
    ck_assert(a && b && c);
    ck_assert_ptr_eq(part_candidate(&t, b_hash), a);
    ck_assert(part_entry_is(a, a_name, a_len));
    ck_assert(!part_entry_is(a, b_name, b_len));
    ck_assert(!part_entry_is(a, a_name, a_len - 1));
    ck_assert_ptr_eq(part_lookup(&t, b_name, b_len, b_hash), b);
    ck_assert_ptr_eq(part_candidate(&t, c_hash), c);
    ck_assert_ptr_null(part_candidate(&t, other_hash));
    part_remove(&t, a);
    ck_assert_ptr_eq(part_candidate(&t, b_hash), b);
    ck_assert_ptr_eq(part_lookup(&t, c_name, c_len, c_hash), c);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* A candidate is chosen by the tag alone: an entry of another key with the same home
 * and tag stands first, and only the lookup, which compares the bytes, tells them
 * apart. */
START_TEST(candidate_by_tag_is_confirmed_by_lookup)
{
    char a_name[24], b_name[24];
    size_t a_len = key_at(a_name, "alice", 7, 0, 0);
    uint64_t a_hash = part_hash(a_name, a_len);
    size_t b_len = key_at(b_name, "bob", 7, part_slot_tag(a_hash), 1);
    uint64_t b_hash = part_hash(b_name, b_len);
    PartTable t;
    part_table_init(&t);
    PartEntry *a = part_add(&t, a_name, a_len, a_hash, 1);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_eq(part_candidate(&t, b_hash), a);   /* same home and tag */
    ck_assert_ptr_null(part_lookup(&t, b_name, b_len, b_hash));
    ck_assert_ptr_eq(part_lookup(&t, a_name, a_len, a_hash), a);
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
        ck_assert_ptr_nonnull(part_add(&t, name, (size_t)n, part_hash(name, (size_t)n), 1));
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
    return check_run_suite(prefetch_suite());
}
