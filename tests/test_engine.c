/* tests/test_engine.c — unit tests of the engine's building blocks: the reorder
 * buffer, the partition table and the deadline heap. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/slab.h"
#include "runtime/deadline.h"
#include "runtime/partition.h"
#include "runtime/reorder.h"
#include "tests/checkmain.h"

/* ---- reorder buffer ------------------------------------------------------- */

static int items[16];

static int *pop(Reorder *r)
{
    return reorder_pop_ready(r, NULL);
}

START_TEST(reorder_in_order_releases_at_once_with_zero_lateness)
{
    Reorder r;
    reorder_init(&r, 0);
    ck_assert_int_eq(reorder_push(&r, 100, &items[0]), REORDER_ACCEPTED);
    ck_assert_ptr_eq(pop(&r), &items[0]);
    ck_assert_ptr_null(pop(&r));
    ck_assert_int_eq(reorder_push(&r, 200, &items[1]), REORDER_ACCEPTED);
    ck_assert_ptr_eq(pop(&r), &items[1]);
    reorder_free(&r, NULL);
}
END_TEST

START_TEST(reorder_ties_keep_arrival_order)
{
    Reorder r;
    reorder_init(&r, 50);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(reorder_push(&r, 100, &items[i]), REORDER_ACCEPTED);
    ck_assert_ptr_null(pop(&r));   /* watermark 50 < 100 */
    reorder_flush(&r);
    for (int i = 0; i < 6; i++)
        ck_assert_ptr_eq(pop(&r), &items[i]);
    ck_assert_ptr_null(pop(&r));
    reorder_free(&r, NULL);
}
END_TEST

START_TEST(reorder_sorts_within_lateness_and_follows_watermark)
{
    Reorder r;
    reorder_init(&r, 10);
    ck_assert_int_eq(reorder_push(&r, 105, &items[0]), REORDER_ACCEPTED);
    ck_assert_int_eq(reorder_push(&r, 100, &items[1]), REORDER_ACCEPTED);
    ck_assert_int_eq(reorder_watermark(&r), 95);
    ck_assert_ptr_null(pop(&r));
    ck_assert_int_eq(reorder_push(&r, 112, &items[2]), REORDER_ACCEPTED);   /* wm 102 */
    int64_t t = 0;
    ck_assert_ptr_eq(reorder_pop_ready(&r, &t), &items[1]);
    ck_assert_int_eq(t, 100);
    ck_assert_ptr_null(pop(&r));
    ck_assert_int_eq(reorder_push(&r, 115, &items[3]), REORDER_ACCEPTED);   /* wm 105 */
    ck_assert_ptr_eq(pop(&r), &items[0]);
    ck_assert_ptr_null(pop(&r));
    ck_assert_uint_eq(reorder_size(&r), 2);
    reorder_free(&r, NULL);
}
END_TEST

START_TEST(reorder_refuses_late_but_accepts_at_watermark)
{
    Reorder r;
    reorder_init(&r, 10);
    ck_assert_int_eq(reorder_push(&r, 200, &items[0]), REORDER_ACCEPTED);
    ck_assert_int_eq(reorder_push(&r, 189, &items[1]), REORDER_LATE);
    ck_assert_int_eq(reorder_push(&r, 190, &items[2]), REORDER_ACCEPTED);
    ck_assert_ptr_eq(pop(&r), &items[2]);
    ck_assert_ptr_null(pop(&r));
    /* an old event never moves the watermark back */
    ck_assert_int_eq(reorder_watermark(&r), 190);
    reorder_free(&r, NULL);
}
END_TEST

static int dropped;
static void count_drop(void *item)
{
    (void)item;
    dropped++;
}

/* reorder_pass is push then pop, without the heap: driven side by side on the same
 * times (mostly rising, some out of order, some late, ties, lateness changes), one
 * buffer taking pass where it can and one always pushing release the same items in
 * the same order and keep the same watermark, highest time and arrival count. */
START_TEST(reorder_pass_is_push_then_pop)
{
    static int ids[4000];
    for (int lateness = 0; lateness <= 30; lateness += 15) {
        Reorder a, b;
        reorder_init(&a, lateness);
        reorder_init(&b, lateness);
        uint64_t seed = 12345;
        int64_t base = 1000;
        size_t passed = 0;
        for (int i = 0; i < 4000; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            int r = (int)(seed >> 33) % 100;
            int64_t t = r < 60 ? (base += r % 3) : r < 85 ? base - r % 20 : base + r % 40;
            if (i == 2000) {   /* a hot reload lowering the lateness */
                reorder_set_lateness(&a, 0);
                reorder_set_lateness(&b, 0);
            }
            ids[i] = i;
            bool pass = reorder_pass(&a, t);
            ReorderStatus sa = pass ? REORDER_ACCEPTED : reorder_push(&a, t, &ids[i]);
            ReorderStatus sb = reorder_push(&b, t, &ids[i]);
            ck_assert_int_eq(sa, sb);
            passed += pass;
            int *got_b = reorder_pop_ready(&b, NULL);
            if (pass) {   /* b releases exactly this one, and nothing after it */
                ck_assert_ptr_eq(got_b, &ids[i]);
                ck_assert_ptr_null(reorder_pop_ready(&b, NULL));
            } else {
                for (int *got_a = reorder_pop_ready(&a, NULL); got_a || got_b;
                     got_a = reorder_pop_ready(&a, NULL), got_b = reorder_pop_ready(&b, NULL))
                    ck_assert_ptr_eq(got_a, got_b);
            }
            ck_assert_int_eq(reorder_watermark(&a), reorder_watermark(&b));
            ck_assert_int_eq(a.max_seen, b.max_seen);
            ck_assert_uint_eq(a.next_seq, b.next_seq);
            ck_assert_uint_eq(reorder_size(&a), reorder_size(&b));
        }
        ck_assert_uint_gt(passed, 100);
        ck_assert_uint_lt(passed, 4000);
        reorder_free(&a, NULL);
        reorder_free(&b, NULL);
    }
}
END_TEST

/* reorder_pass_sorted on a run of nondecreasing times is exactly reorder_pass on each
 * in turn: true only if every one would pass, with the same state after; false with
 * nothing changed. Runs of random length and spread follow random pushes (a buffer
 * that is not always empty, late items), with lateness 0, 10 and a change to 0. */
START_TEST(reorder_pass_sorted_is_each_pass_in_turn)
{
    static int ids[3000];
    for (int lateness = 0; lateness <= 10; lateness += 10) {
        Reorder r;
        reorder_init(&r, lateness);
        uint64_t seed = 777;
        int64_t base = 5000;
        size_t wholes = 0, refusals = 0;
        for (int i = 0; i < 3000; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            int x = (int)(seed >> 33) % 100;
            if (i == 1500)
                reorder_set_lateness(&r, 0);
            if (x < 30) {   /* a single item, maybe out of order */
                ids[i] = i;
                int64_t t = base + x % 7 - 3;
                if (!reorder_pass(&r, t) && reorder_push(&r, t, &ids[i]) == REORDER_ACCEPTED)
                    while (reorder_pop_ready(&r, NULL))
                        ;
                continue;
            }
            size_t n = 1 + (size_t)x % 5;
            int64_t first = base - x % 4 + 1, step = x % 3 == 0 ? 0 : x % 2 + 1;
            int64_t last = first + step * (int64_t)(n - 1);
            Reorder each = r;
            bool all = true;
            for (size_t k = 0; k < n && all; k++)
                all = reorder_pass(&each, first + step * (int64_t)k);
            Reorder before = r;
            bool whole = reorder_pass_sorted(&r, first, last, n);
            ck_assert_int_eq(whole, all);
            const Reorder *want = whole ? &each : &before;
            ck_assert_int_eq(r.watermark, want->watermark);
            ck_assert_int_eq(r.max_seen, want->max_seen);
            ck_assert_uint_eq(r.next_seq, want->next_seq);
            wholes += whole;
            refusals += !whole;
            base = last + 1;
        }
        ck_assert_uint_gt(wholes, 100);
        ck_assert_uint_gt(refusals, 100);
        reorder_free(&r, NULL);
    }
}
END_TEST

START_TEST(reorder_flush_releases_everything_in_time_order)
{
    Reorder r;
    reorder_init(&r, 1000);
    int64_t times[] = {50, 10, 40, 10, 30, 20};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(reorder_push(&r, times[i], &items[i]), REORDER_ACCEPTED);
    ck_assert_ptr_null(pop(&r));
    reorder_flush(&r);
    int *want[] = {&items[1], &items[3], &items[5], &items[4], &items[2], &items[0]};
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_eq(pop(&r), want[i]);
    dropped = 0;
    reorder_free(&r, count_drop);
    ck_assert_int_eq(dropped, 3);
}
END_TEST

START_TEST(reorder_many_random_items_come_out_sorted)
{
    Reorder r;
    reorder_init(&r, INT64_MAX / 4);
    static int dummy[5000];
    srand(7);
    for (int i = 0; i < 5000; i++)
        ck_assert_int_eq(reorder_push(&r, rand() % 100, &dummy[i]), REORDER_ACCEPTED);
    reorder_flush(&r);
    int64_t prev = INT64_MIN, t;
    int *prev_item = NULL, *it;
    int n = 0;
    while ((it = reorder_pop_ready(&r, &t))) {
        ck_assert(t >= prev);
        if (t == prev)
            ck_assert(it > prev_item);   /* ties: arrival order = array order */
        prev = t;
        prev_item = it;
        n++;
    }
    ck_assert_int_eq(n, 5000);
    reorder_free(&r, NULL);
}
END_TEST

/* ---- partition table ------------------------------------------------------ */

static PartEntry *add_key(PartTable *t, const char *s)
{
    Value v = value_str(s, strlen(s));
    Buf kb = BUF_INIT;
    ck_assert(part_key_bytes(&v, 1, &kb));
    uint64_t h = part_hash(kb.data, kb.len);
    PartEntry *e = part_lookup(t, kb.data, kb.len, h);
    if (!e)
        e = part_add(t, kb.data, kb.len, h, 1);
    buf_free(&kb);
    return e;
}

static PartEntry *find_key(PartTable *t, const char *s)
{
    Value v = value_str(s, strlen(s));
    Buf kb = BUF_INIT;
    part_key_bytes(&v, 1, &kb);
    PartEntry *e = part_lookup(t, kb.data, kb.len, part_hash(kb.data, kb.len));
    buf_free(&kb);
    return e;
}

START_TEST(partition_key_bytes_are_canonical)
{
    Buf a = BUF_INIT, b = BUF_INIT;
    Value x[2] = {value_str("u7", 2), value_num(1)};
    x[1].raw = "12345678901234567890";
    x[1].raw_len = 20;
    ck_assert(part_key_bytes(x, 2, &a));
    ck_assert_str_eq(a.data, "\"u7\",12345678901234567890");
    /* the same string written with escapes is the same key */
    Value y = value_str("u7", 2);
    y.raw = "\"\\u0075\\u0037\"";
    y.raw_len = strlen(y.raw);
    ck_assert(part_key_bytes(&y, 1, &b));
    ck_assert_str_eq(b.data, "\"u7\"");
    buf_clear(&b);
    /* a string "1" and a number 1 are different keys */
    Value s1 = value_str("1", 1), n1 = value_num(1);
    part_key_bytes(&s1, 1, &a);
    part_key_bytes(&n1, 1, &b);
    ck_assert_str_ne(b.data, "\"1\"");
    buf_free(&a);
    buf_free(&b);
}
END_TEST

START_TEST(partition_null_or_missing_key_has_no_bytes)
{
    Buf kb = BUF_INIT;
    Value v[2] = {value_str("a", 1), value_null()};
    ck_assert(!part_key_bytes(v, 2, &kb));
    Value m = value_missing();
    ck_assert(!part_key_bytes(&m, 1, &kb));
    buf_free(&kb);
}
END_TEST

START_TEST(partition_grows_and_finds_every_key)
{
    PartTable t;
    part_table_init(&t);
    char name[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "user-%d", i);
        ck_assert_ptr_nonnull(add_key(&t, name));
    }
    ck_assert_uint_eq(t.count, 10000);
    ck_assert_uint_ge(t.n_slots, 8192);
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "user-%d", i);
        PartEntry *e = find_key(&t, name);
        ck_assert_ptr_nonnull(e);
        Value key;
        Buf text = BUF_INIT;
        ck_assert(part_key_values(e->tail, e->klen, &key, 1, &text));
        ck_assert_int_eq(key.type, V_STR);
        ck_assert_mem_eq(key.s, name, strlen(name));
        buf_free(&text);
    }
    ck_assert_ptr_null(find_key(&t, "user-10000"));
    /* adding an existing key finds the same entry */
    ck_assert_ptr_eq(add_key(&t, "user-5"), find_key(&t, "user-5"));
    ck_assert_uint_eq(t.count, 10000);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* Entries keep only the key bytes: the values an alert or a checkpoint needs are read
 * back from them, and must be the values the bytes were made from. */
START_TEST(partition_key_values_read_back_from_the_bytes)
{
    const char tricky[] = "q\"b\\n\nt\t\x01 caf\xc3\xa9, [x]";
    Value in[9] = {value_str(tricky, sizeof tricky - 1), value_num(12345678901234567890.0),
                   value_num(0.1), value_bool(false), value_time(1700000000123),
                   value_dur(-250), value_str("", 0), value_missing(), value_missing()};
    in[1].raw = "12345678901234567890";
    in[1].raw_len = 20;
    in[7].type = V_OBJ;
    in[7].raw = "{\"a\":[1,\",}\"],\"b\":{}}";
    in[7].raw_len = strlen(in[7].raw);
    in[8].type = V_ARR;
    in[8].raw = "[\"]\",2]";
    in[8].raw_len = strlen(in[8].raw);
    Buf kb = BUF_INIT, again = BUF_INIT, text = BUF_INIT;
    ck_assert(part_key_bytes(in, 9, &kb));
    Value out[9];
    ck_assert(part_key_values(kb.data, kb.len, out, 9, &text));
    for (int i = 0; i < 9; i++) {
        ck_assert_int_eq(out[i].type, in[i].type);
        ck_assert_msg(value_equal(&out[i], &in[i]), "value %d differs", i);
    }
    ck_assert_mem_eq(out[0].s, tricky, sizeof tricky - 1);
    ck_assert_mem_eq(out[1].raw, "12345678901234567890", 20);   /* no digit lost */
    ck_assert_uint_eq(out[2].raw_len, 3);                        /* 0.1, not 0.1000...01 */
    ck_assert_mem_eq(out[7].raw, in[7].raw, in[7].raw_len);
    ck_assert(part_key_bytes(out, 9, &again));                 /* the same key again */
    ck_assert_uint_eq(again.len, kb.len);
    ck_assert_mem_eq(again.data, kb.data, kb.len);
    ck_assert(!part_key_values(kb.data, kb.len, out, 8, &text));  /* wrong arity */
    ck_assert(!part_key_values(kb.data, kb.len - 1, out, 9, &text));
    ck_assert(part_key_values("", 0, out, 0, &text));           /* the global partition */
    buf_free(&kb);
    buf_free(&again);
    buf_free(&text);
}
END_TEST

START_TEST(partition_entry_owns_copies_of_the_key)
{
    PartTable t;
    part_table_init(&t);
    char src[] = "abc";
    Value v = value_str(src, 3);
    v.raw = "\"abc\"";
    v.raw_len = 5;
    Buf kb = BUF_INIT;
    part_key_bytes(&v, 1, &kb);
    PartEntry *e = part_add(&t, kb.data, kb.len, part_hash(kb.data, kb.len), 1);
    ck_assert_ptr_nonnull(e);
    src[0] = 'X';
    Value key;
    Buf text = BUF_INIT;
    ck_assert(part_key_values(e->tail, e->klen, &key, 1, &text));
    ck_assert_mem_eq(key.s, "abc", 3);
    ck_assert_ptr_ne(key.s, src);
    ck_assert_mem_eq(key.raw, "\"abc\"", 5);
    ck_assert_str_eq(e->tail, "\"abc\"");
    buf_free(&text);
    buf_free(&kb);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* An entry is one allocation, a key's record: its header, the key bytes and their
 * NUL, then from the next multiple of 8 the room asked for, none of it in use. A new
 * entry says so also in memory a previous entry left dirty (part_add sets every field
 * of the header), and takes the bytes part_entry_bytes says (its slab's object size). */
START_TEST(partition_new_entry_has_room_and_no_slots)
{
    static const char *const keys[] = {"\"k\"", "\"k1\"", "\"k1234\"", "\"k12345678\"",
                                       "\"k1234567890123456789012345678901234567\""};
    PartTable t;
    part_table_init(&t);
    PartEntry *dirtied = NULL;
    for (size_t room = 0; room <= 3; room++)
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
            for (int round = 0; round < 2; round++) {
                size_t klen = strlen(keys[k]);
                PartEntry *e = part_add(&t, keys[k], klen, part_hash(keys[k], klen), room);
                ck_assert_ptr_nonnull(e);
                ck_assert_uint_eq(e->n_slots, 0);
                ck_assert_uint_eq(e->room, room);
                ck_assert_uint_eq(e->klen, klen);
                ck_assert_str_eq(e->tail, keys[k]);
                ck_assert_int_eq(e->deadline, INT64_MAX);   /* no timer either */
                ck_assert_uint_eq(e->heap_pos, PART_NOT_TIMED);
                size_t bytes = part_entry_bytes(klen, 0, room);
                ck_assert_uint_eq(slab_of(e)->size, bytes);
                const char *slots = (const char *)part_slots(e);
                ck_assert_uint_eq((uintptr_t)slots % 8, 0);
                ck_assert(slots >= e->tail + klen + 1);     /* past the key and its NUL */
                ck_assert(slots < e->tail + klen + 1 + 8);  /* at the next multiple of 8 */
                ck_assert(slots + part_slots_bytes(room) <= (const char *)e + bytes);
                ck_assert(round == 0 || e == dirtied);   /* the same memory again */
                /* dirty what is not the key (the table reads only the key, klen and
                 * room): the next add of this size gets this entry back */
                e->deadline = 0;
                e->heap_pos = 0;
                e->n_slots = 0x5a5a;
                memset((char *)e + part_slots_offset(klen), 0x5a,
                       bytes - part_slots_offset(klen));
                dirtied = e;
                part_remove(&t, e);
            }
    ck_assert_uint_eq(t.count, 0);
    part_table_free(&t, NULL, NULL);
}
END_TEST

START_TEST(partition_removal_keeps_other_keys_reachable)
{
    PartTable t;
    part_table_init(&t);
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "key:%d", i);
        add_key(&t, name);
    }
    for (int i = 1; i < 2000; i += 2) {
        snprintf(name, sizeof name, "key:%d", i);
        part_remove(&t, find_key(&t, name));
    }
    ck_assert_uint_eq(t.count, 1000);
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "key:%d", i);
        if (i % 2)
            ck_assert_ptr_null(find_key(&t, name));
        else
            ck_assert_ptr_nonnull(find_key(&t, name));
    }
    part_table_free(&t, NULL, NULL);
}
END_TEST

static int drops_seen;
static void count_entry(PartEntry *e, void *user)
{
    (void)e;
    (void)user;
    drops_seen++;
}

START_TEST(partition_shrinks_to_zero_when_keys_go_idle)
{
    PartTable t;
    part_table_init(&t);
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "k%d", i);
        add_key(&t, name);
    }
    size_t big = t.n_slots;
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "k%d", i);
        PartEntry *e = find_key(&t, name);
        ck_assert_ptr_nonnull(e);
        part_remove(&t, e);
        ck_assert_ptr_null(find_key(&t, name));
    }
    ck_assert_uint_eq(t.count, 0);
    ck_assert_uint_lt(t.n_slots, big / 64);
    /* still usable after shrinking */
    add_key(&t, "again");
    add_key(&t, "other");
    ck_assert_ptr_nonnull(find_key(&t, "again"));
    drops_seen = 0;
    part_table_free(&t, count_entry, NULL);
    ck_assert_int_eq(drops_seen, 2);
}
END_TEST

START_TEST(partition_iteration_visits_every_entry_once)
{
    PartTable t;
    part_table_init(&t);
    char name[32];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "k%d", i);
        add_key(&t, name);
    }
    size_t bucket = 0, n = 0;
    for (PartEntry *e = part_next(&t, &bucket, NULL); e; e = part_next(&t, &bucket, e)) {
        ck_assert_ptr_eq(part_lookup(&t, e->tail, e->klen, part_hash(e->tail, e->klen)), e);
        n++;
    }
    ck_assert_uint_eq(n, 300);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* ---- deadline heap -------------------------------------------------------- */

START_TEST(deadline_heap_orders_updates_and_removes)
{
    PartTable t;
    part_table_init(&t);
    DeadlineHeap d;
    deadline_init(&d);
    PartEntry *e[5];
    const char *names[] = {"a", "b", "c", "d", "e"};
    int64_t due[] = {50, 10, 40, 30, 20};
    for (int i = 0; i < 5; i++) {
        e[i] = add_key(&t, names[i]);
        ck_assert_int_eq(deadline_set(&d, e[i], due[i]), 0);
    }
    ck_assert_ptr_eq(deadline_top(&d), e[1]);
    deadline_set(&d, e[1], 45);            /* later: c(40) ... */
    ck_assert_ptr_eq(deadline_top(&d), e[4]);
    deadline_set(&d, e[0], 5);             /* earlier */
    ck_assert_ptr_eq(deadline_top(&d), e[0]);
    deadline_remove(&d, e[4]);             /* from the middle */
    ck_assert_uint_eq(e[4]->heap_pos, PART_NOT_TIMED);
    int64_t expect[] = {5, 30, 40, 45};
    for (int i = 0; i < 4; i++) {
        PartEntry *top = deadline_top(&d);
        ck_assert_int_eq(top->deadline, expect[i]);
        deadline_remove(&d, top);
    }
    ck_assert_ptr_null(deadline_top(&d));
    ck_assert_int_eq(deadline_next(&d), INT64_MAX);
    deadline_free(&d);
    part_table_free(&t, NULL, NULL);
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tr = tcase_create("reorder");
    tcase_add_test(tr, reorder_in_order_releases_at_once_with_zero_lateness);
    tcase_add_test(tr, reorder_ties_keep_arrival_order);
    tcase_add_test(tr, reorder_sorts_within_lateness_and_follows_watermark);
    tcase_add_test(tr, reorder_refuses_late_but_accepts_at_watermark);
    tcase_add_test(tr, reorder_flush_releases_everything_in_time_order);
    tcase_add_test(tr, reorder_pass_is_push_then_pop);
    tcase_add_test(tr, reorder_pass_sorted_is_each_pass_in_turn);
    tcase_add_test(tr, reorder_many_random_items_come_out_sorted);
    suite_add_tcase(s, tr);
    TCase *tp = tcase_create("partition");
    tcase_add_test(tp, partition_key_bytes_are_canonical);
    tcase_add_test(tp, partition_null_or_missing_key_has_no_bytes);
    tcase_add_test(tp, partition_grows_and_finds_every_key);
    tcase_add_test(tp, partition_entry_owns_copies_of_the_key);
    tcase_add_test(tp, partition_new_entry_has_room_and_no_slots);
    tcase_add_test(tp, partition_key_values_read_back_from_the_bytes);
    tcase_add_test(tp, partition_removal_keeps_other_keys_reachable);
    tcase_add_test(tp, partition_shrinks_to_zero_when_keys_go_idle);
    tcase_add_test(tp, partition_iteration_visits_every_entry_once);
    suite_add_tcase(s, tp);
    TCase *td = tcase_create("deadline");
    tcase_add_test(td, deadline_heap_orders_updates_and_removes);
    suite_add_tcase(s, td);
    return s;
}

int main(void)
{
    return check_run_suite(engine_suite());
}
