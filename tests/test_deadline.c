/* tests/test_deadline.c — the timers (runtime/deadline.h) against a reference model:
 * a sorted array of the armed entries, in (deadline, key length, key bytes) order.
 * Random operations from many seeds, engine-like traces (time moves on, due timers
 * are popped one by one and re-armed later), deadlines out of the rings' order (late
 * events), interleaved streams, holes left in a ring, the edges of the int64 range,
 * and entries that move (part_regrow, deadline_moved) while held in a ring or the
 * heap. After every operation the structure's own invariants and its top are
 * checked. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/deadline.h"
#include "tests/checkmain.h"
#include "tests/partkeys.h"

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Built with runtime/deadline.c and DEADLINE_SEQ_BITS (tests/speed.mk), rings hold at
 * most 2^(bits-1) slots and renumber them every 2^bits appends: the assertions on
 * where entries went, in tests large enough to reach those limits, hold only for the
 * usual ones. */
#ifdef DEADLINE_SEQ_BITS
#define SMALL_RINGS 1
#else
#define SMALL_RINGS 0
#endif

/* ---- the reference model --------------------------------------------------------- */

enum { MAX_KEYS = 600 };

/* Entries made as the shard makes them, in a partition table (they hold no hash: the
 * timers compute it from their key bytes). */
typedef struct Keys {
    PartTable t;
    PartEntry *e[MAX_KEYS];
    size_t n;
} Keys;

typedef struct Model {
    const PartEntry *armed[MAX_KEYS];   /* sorted, earliest first */
    int64_t at[MAX_KEYS];               /* parallel to armed */
    size_t n;
} Model;

/* Keys whose names are prefixes of each other ("k1", "k10"). */
static void keys_init(Keys *k, size_t n)
{
    memset(k, 0, sizeof *k);
    part_table_init(&k->t);
    k->n = n;
    test_part_add_numbered(&k->t, k->e, n);
}

static void keys_free(Keys *k)
{
    part_table_free(&k->t, NULL, NULL);
    k->n = 0;
}

/* A test's keys (n fresh ones), an empty model, and timers holding nothing. */
static void fixture_start(Keys *k, Model *m, DeadlineHeap *d, size_t n)
{
    keys_init(k, n);
    memset(m, 0, sizeof *m);
    deadline_init(d);
}

static bool model_before(int64_t ta, const PartEntry *a, int64_t tb, const PartEntry *b)
{
    if (ta != tb)
        return ta < tb;
    if (a->klen != b->klen)
        return a->klen < b->klen;
    return memcmp(a->tail, b->tail, a->klen) < 0;
}

static void model_set(Model *m, const PartEntry *e, int64_t t)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->armed[i] == e) {
            memmove(&m->armed[i], &m->armed[i + 1], (m->n - i - 1) * sizeof m->armed[0]);
            memmove(&m->at[i], &m->at[i + 1], (m->n - i - 1) * sizeof m->at[0]);
            m->n--;
            break;
        }
    if (t == INT64_MAX)
        return;
    size_t i = m->n;
    while (i > 0 && model_before(t, e, m->at[i - 1], m->armed[i - 1])) {
        m->armed[i] = m->armed[i - 1];
        m->at[i] = m->at[i - 1];
        i--;
    }
    m->armed[i] = e;
    m->at[i] = t;
    m->n++;
}

/* Sets the deadline in both and checks the timers against the model; returns the number
 * of disagreements (Check's assertions are slow, so callers assert once per run). */
static unsigned set_both(DeadlineHeap *d, Model *m, PartEntry *e, int64_t t)
{
    unsigned bad = 0;
    bad += deadline_set(d, e, t) != 0;
    model_set(m, e, t);
    const char *why = deadline_verify(d);
    if (why) {
        fprintf(stderr, "deadline_verify: %s\n", why);
        bad++;
    }
    bad += d->n != m->n;
    bad += deadline_top(d) != (m->n ? m->armed[0] : NULL);
    bad += deadline_next(d) != (m->n ? m->at[0] : INT64_MAX);
    bad += e->deadline != t;
    bad += (t == INT64_MAX) != (e->heap_pos == PART_NOT_TIMED);
    bad += t != INT64_MAX && !deadline_holds(d, e);
    return bad;
}

/* Pops everything left in deadline order (as the engine does, one top at a time),
 * frees, checks every entry is marked as not held, and frees the keys. */
static unsigned drain_and_free(DeadlineHeap *d, Model *m, Keys *k)
{
    unsigned bad = 0;
    while (m->n) {
        bad += deadline_top(d) != m->armed[0];
        bad += set_both(d, m, (PartEntry *)m->armed[0], INT64_MAX);
        if (bad)
            break;
    }
    bad += deadline_top(d) != NULL;
    deadline_free(d);
    for (size_t i = 0; i < k->n; i++)
        bad += k->e[i]->heap_pos != PART_NOT_TIMED || k->e[i]->deadline != INT64_MAX;
    keys_free(k);
    return bad;
}

/* ---- random operations ------------------------------------------------------------ */

/* Deadline distributions: narrow (many ties), wide, the int64 edges, and mixed. */
static int64_t pick_deadline(uint64_t *seed, int kind)
{
    uint64_t r = next_rand(seed);
    static const int64_t edges[] = {INT64_MIN, INT64_MIN + 1, INT64_MIN + 63, -1, 0, 1, 63,
                                    64, 4095, 4096, INT64_MAX - 64, INT64_MAX - 2,
                                    INT64_MAX - 1};
    switch (kind) {
    case 0:
        return (int64_t)(r % 50);
    case 1:
        return (int64_t)(r % 10000000) - 5000000;
    case 2:
        return edges[r % (sizeof edges / sizeof edges[0])];
    case 3:
        return (int64_t)r == INT64_MAX ? 0 : (int64_t)r;
    default:
        return pick_deadline(seed, (int)(r % 4));
    }
}

START_TEST(random_operations_match_the_model)
{
    static Keys k;
    static Model m;
    unsigned bad = 0;
    for (uint64_t seed0 = 1; seed0 <= 40 && !bad; seed0++) {
        uint64_t seed = seed0 * 7919;
        int kind = (int)(seed0 % 5);
        DeadlineHeap d;
        fixture_start(&k, &m, &d, 50 + seed0 * 13 % 250);
        for (int step = 0; step < 3000 && !bad; step++) {
            PartEntry *e = k.e[next_rand(&seed) % k.n];
            uint64_t op = next_rand(&seed) % 10;
            int64_t t;
            if (op == 0)
                t = INT64_MAX;                               /* remove (maybe not held) */
            else if (op == 1 && m.n)
                e = (PartEntry *)m.armed[0], t = INT64_MAX; /* remove the top */
            else if (op == 2 && m.n)
                e = (PartEntry *)m.armed[0], t = pick_deadline(&seed, kind);   /* re-arm top */
            else if (op == 3 && e->deadline != INT64_MAX)
                t = e->deadline - (int64_t)(next_rand(&seed) % 3) * (e->deadline > INT64_MIN + 3);
            else
                t = pick_deadline(&seed, kind);
            bad += set_both(&d, &m, e, t);
        }
        if (!bad) {
            bad += drain_and_free(&d, &m, &k);
        } else {
            deadline_free(&d);
            keys_free(&k);
        }
        if (bad)
            fprintf(stderr, "seed %llu failed\n", (unsigned long long)seed0);
    }
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* What the engine does: time moves on; each event re-arms its key some window ahead
 * (usually later than before); the due timers are popped in order and re-armed or
 * dropped. `late` is the share (in 1/16) of events whose time is behind the clock, as
 * after a checkpoint restore or with lateness: their deadlines break the rings' order. */
static unsigned engine_trace(uint64_t seed, size_t n_keys, int late)
{
    static Keys k;
    static Model m;
    static const int64_t windows[] = {1, 60, 1000, 300000, 3600000};
    DeadlineHeap d;
    fixture_start(&k, &m, &d, n_keys);
    int64_t now = 1700000000000;
    unsigned bad = 0;
    for (int step = 0; step < 20000 && !bad; step++) {
        now += (int64_t)(next_rand(&seed) % 40);
        while (!bad && m.n && deadline_next(&d) <= now) {
            PartEntry *top = deadline_top(&d);
            bad += top != m.armed[0];
            int64_t t = INT64_MAX;
            if (next_rand(&seed) % 3 == 0) {   /* re-armed after the handled time */
                t = top->deadline + windows[next_rand(&seed) % 5];
                t = t > now ? t : now + 1;
            }
            bad += set_both(&d, &m, top, t);
        }
        PartEntry *e = k.e[next_rand(&seed) % k.n];
        int64_t at = (int)(next_rand(&seed) % 16) < late
                         ? now - (int64_t)(next_rand(&seed) % 100000) : now;
        int64_t t = at + windows[next_rand(&seed) % 5];
        if (e->deadline != INT64_MAX && next_rand(&seed) % 2)
            t = e->deadline < t ? e->deadline : t;   /* an older partial match still runs */
        bad += set_both(&d, &m, e, t);
    }
    if (!bad) {
        bad += drain_and_free(&d, &m, &k);
    } else {
        deadline_free(&d);
        keys_free(&k);
    }
    return bad;
}

START_TEST(engine_traces_pop_in_order)
{
    unsigned bad = 0;
    for (uint64_t seed = 1; seed <= 6 && !bad; seed++)
        bad += engine_trace(seed, 100 + seed * 80, 0);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(late_deadlines_pop_in_order)
{
    unsigned bad = 0;
    for (uint64_t seed = 1; seed <= 6 && !bad; seed++)
        bad += engine_trace(seed * 31, 500, (int)seed * 2);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* ---- edge cases ------------------------------------------------------------------- */

START_TEST(extremes_of_the_range)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, 6);
    unsigned bad = 0;
    bad += set_both(&d, &m, k.e[0], INT64_MAX - 1);
    bad += set_both(&d, &m, k.e[1], INT64_MIN);          /* out of order: the heap */
    bad += set_both(&d, &m, k.e[2], 0);
    bad += set_both(&d, &m, k.e[3], INT64_MIN + 1);
    bad += set_both(&d, &m, k.e[4], INT64_MAX - 1);      /* a tie at the top end */
    bad += set_both(&d, &m, k.e[5], -1);
    ck_assert_uint_eq(bad, 0);
    ck_assert_ptr_eq(deadline_top(&d), k.e[1]);
    ck_assert(deadline_next(&d) == INT64_MIN);
    static const int order[] = {1, 3, 5, 2};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_ptr_eq(deadline_top(&d), k.e[order[i]]);
        bad += set_both(&d, &m, k.e[order[i]], INT64_MAX);
    }
    /* the two at INT64_MAX - 1 come out by key: "k0" before "k4" */
    ck_assert_ptr_eq(deadline_top(&d), k.e[0]);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(moving_earlier_removing_the_top_and_reinserting)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, 4);
    unsigned bad = 0;
    bad += set_both(&d, &m, k.e[0], 1000);
    bad += set_both(&d, &m, k.e[1], 5000000);   /* in order: the ring */
    bad += set_both(&d, &m, k.e[2], 5000001);
    ck_assert_uint_eq(bad, 0);
    bad += set_both(&d, &m, k.e[2], 5000002);   /* the last one moves later */
    bad += set_both(&d, &m, k.e[1], 999);       /* earlier than the top */
    ck_assert_ptr_eq(deadline_top(&d), k.e[1]);
    bad += set_both(&d, &m, k.e[1], INT64_MAX); /* remove the top */
    ck_assert_ptr_eq(deadline_top(&d), k.e[0]);
    bad += set_both(&d, &m, k.e[1], INT64_MAX); /* removing again changes nothing */
    bad += set_both(&d, &m, k.e[3], INT64_MAX); /* never held */
    bad += set_both(&d, &m, k.e[0], 1000);      /* same deadline */
    bad += set_both(&d, &m, k.e[0], 5000002);   /* the top moves behind a tie */
    bad += set_both(&d, &m, k.e[1], 1000);      /* reinsert */
    ck_assert_ptr_eq(deadline_top(&d), k.e[1]);
    bad += set_both(&d, &m, k.e[1], 5000002);   /* three-way tie, by key */
    ck_assert_uint_eq(bad, 0);
    for (int i = 0; i < 3; i++) {
        PartEntry *top = deadline_top(&d);
        ck_assert_ptr_nonnull(top);
        ck_assert_int_eq(top->deadline, 5000002);
        ck_assert_ptr_eq(top, m.armed[0]);
        bad += set_both(&d, &m, top, INT64_MAX);
    }
    ck_assert_ptr_null(deadline_top(&d));
    ck_assert(deadline_next(&d) == INT64_MAX);
    /* empty again: a deadline far below the old ones starts a fresh ring */
    bad += set_both(&d, &m, k.e[3], -5);
    ck_assert_ptr_eq(deadline_top(&d), k.e[3]);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* Equal deadlines: the keys decide, shorter first, then by their bytes ("k0" ..
 * "k9", "k10" .. "k99", "k100" ..), whatever order they were armed in (here the
 * reverse); the model checks each pop. */
START_TEST(ties_by_key)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, 120);
    unsigned bad = 0;
    for (size_t i = k.n; i-- > 0;)
        bad += set_both(&d, &m, k.e[i], 42);
    ck_assert_uint_eq(bad, 0);
    ck_assert_ptr_eq(deadline_top(&d), k.e[0]);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* Deadlines in random order: most go to the heap, and come out merged with the rings. */
START_TEST(random_order_merges_ring_and_heap)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, MAX_KEYS);
    unsigned bad = set_both(&d, &m, k.e[0], 0);
    uint64_t seed = 99;
    for (size_t i = 1; i < k.n; i++)
        bad += set_both(&d, &m, k.e[i], (int64_t)(1 << 20) + (int64_t)(next_rand(&seed) % 5000));
    ck_assert_uint_eq(bad, 0);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* Keys armed in order fill the ring; dropping most of them from the middle leaves
 * holes that must be squeezed out (renumbering the rest) without breaking the order,
 * and the ring gives its memory back as the keys go. */
START_TEST(holes_are_squeezed_out_and_memory_shrinks)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, MAX_KEYS);
    unsigned bad = 0;
    for (size_t i = 0; i < k.n; i++)
        bad += set_both(&d, &m, k.e[i], 1000 + (int64_t)i);
    ck_assert_uint_eq(bad, 0);
    if (!SMALL_RINGS) {
        ck_assert_uint_eq(d.core->hn, 0);   /* all in order: nothing in the heap */
        ck_assert_uint_eq(d.core->ring[0].live, k.n);
    }
    size_t full = d.core->ring[0].cap;
    for (size_t i = 1; i < k.n; i++)
        if (i % 8)
            bad += set_both(&d, &m, k.e[i], INT64_MAX);
    ck_assert_uint_eq(bad, 0);
    if (!SMALL_RINGS) {
        /* the holes are gone */
        ck_assert_uint_lt(d.core->ring[0].tail - d.core->ring[0].head, k.n / 2);
        ck_assert_uint_lt(d.core->ring[0].cap, full);
    }
    for (size_t i = 1; i < k.n; i++)
        if (i % 8)   /* back in, later than everything: appended again */
            bad += set_both(&d, &m, k.e[i], 5000 + (int64_t)i);
    bad += set_both(&d, &m, k.e[0], 4000);   /* the first moves behind the middle */
    ck_assert_uint_eq(bad, 0);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* Keys armed at (time + one of three durations), interleaved, as a rule with a step
 * window, a pattern window and a suppression does: the streams keep to the rings and
 * nothing goes to the heap; they come out merged in order. */
START_TEST(interleaved_streams_keep_to_rings)
{
    static Keys k;
    static Model m;
    static const int64_t durations[] = {1800000, 60000, 600000};
    DeadlineHeap d;
    fixture_start(&k, &m, &d, 540);
    unsigned bad = 0;
    int64_t now = 1700000000000;
    for (size_t i = 0; i < k.n; i++, now += 7)
        bad += set_both(&d, &m, k.e[i], now + durations[i % 3]);
    ck_assert_uint_eq(bad, 0);
    if (!SMALL_RINGS)
        ck_assert_uint_eq(d.core->hn, 0);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(free_marks_entries_not_held)
{
    static Keys k;
    keys_init(&k, 200);
    DeadlineHeap d;
    deadline_init(&d);
    for (size_t i = 0; i < k.n; i++)
        ck_assert_int_eq(deadline_set(&d, k.e[i], (int64_t)(i * 977 % 3000) - 1000), 0);
    ck_assert_ptr_null(deadline_verify(&d));
    deadline_free(&d);
    for (size_t i = 0; i < k.n; i++)
        ck_assert_uint_eq(k.e[i]->heap_pos, PART_NOT_TIMED);
    ck_assert_ptr_null(deadline_top(&d));
    ck_assert_uint_eq(d.n, 0);
    deadline_free(&d);   /* twice is harmless */
    keys_free(&k);
}
END_TEST

/* Rings whose heads hold the same deadline as each other and as the heap's top: each
 * removal of the top finds the next one among them by the keys. "k0" at 5000 takes
 * the first ring; then every other ring gets a stream of its own at 2000, 2001, ..:
 * at each deadline the streams arm keys in decreasing order, so that each key ties
 * with, and sorts before, the one just armed and extends only its own stream's ring
 * (the one, of those it can extend, whose end is latest). The last stream is "k1" ..
 * "k9", the one before it "k10", "k11", .., the others have keys of four characters
 * from "k100" up, TIE_STEPS apart, the first stream the highest. "k5" moved back to 2000 then fits no ring and goes to the heap, tying with
 * every ring's head but the first: it comes out after "k1" and before "k10". */
enum { TIE_STEPS = 20, TIE_STREAMS = DEADLINE_RINGS - 1 };
_Static_assert(DEADLINE_RINGS >= 3, "the blocker, \"k1\".. and \"k10\".. take three rings");
_Static_assert(100 + (TIE_STREAMS - 2) * TIE_STEPS <= MAX_KEYS, "enough keys");

/* The key (its index) that stream s (1 .. TIE_STREAMS) arms at 2000 + t; SIZE_MAX if
 * none (the short stream has nine keys). */
static size_t tie_key(size_t s, size_t t)
{
    if (s == TIE_STREAMS)
        return t < 9 ? 1 + t : SIZE_MAX;
    if (s == TIE_STREAMS - 1)
        return 10 + t;
    return 100 + (TIE_STREAMS - 2 - s) * TIE_STEPS + t;
}

START_TEST(ties_between_ring_heads_and_the_heap)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, 100 + (TIE_STREAMS - 2) * TIE_STEPS);
    unsigned bad = set_both(&d, &m, k.e[0], 5000);
    for (size_t t = 0; t < TIE_STEPS; t++)
        for (size_t s = 1; s <= TIE_STREAMS; s++)
            if (tie_key(s, t) != SIZE_MAX)
                bad += set_both(&d, &m, k.e[tie_key(s, t)], 2000 + (int64_t)t);
    bad += set_both(&d, &m, k.e[5], 2000);
    ck_assert_uint_eq(bad, 0);
    /* every ring holds one stream (a stream sharing a ring would leave one empty), and
     * only "k5" is in the heap */
    ck_assert_uint_eq(d.core->ring_mask, (1u << DEADLINE_RINGS) - 1);
    ck_assert_uint_eq(d.core->hn, 1);
    ck_assert_ptr_eq(d.core->h[0], k.e[5]);
    ck_assert_uint_eq(d.core->ring[0].live, 1);
    for (size_t s = 1; s < TIE_STREAMS; s++)
        ck_assert_uint_eq(d.core->ring[s].live, TIE_STEPS);
    ck_assert_uint_eq(d.core->ring[TIE_STREAMS].live, 8);
    /* the ties at 2000 (all the heads and the heap's top), then those at 2001 */
    size_t first[2 * DEADLINE_RINGS], n_first = 0;
    for (size_t t = 0; t < 2; t++)
        for (size_t s = TIE_STREAMS; s >= 1; s--) {
            first[n_first++] = tie_key(s, t);
            if (t == 0 && s == TIE_STREAMS)
                first[n_first++] = 5;
        }
    ck_assert_uint_eq(first[1], 5);
    ck_assert_uint_eq(first[2], 10);
    for (size_t i = 0; i < n_first; i++) {
        ck_assert_ptr_eq(deadline_top(&d), k.e[first[i]]);
        bad += set_both(&d, &m, k.e[first[i]], INT64_MAX);
    }
    ck_assert_uint_eq(bad, 0);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* ---- entries that move (part_regrow) ----------------------------------------- */

/* Whether the timers hold e in their heap (else in a ring, or not at all). */
static bool held_in_heap(const DeadlineHeap *d, const PartEntry *e)
{
    for (size_t i = 0; d->core && i < d->core->hn; i++)
        if (d->core->h[i] == e)
            return true;
    return false;
}

/* Moves key i to a bigger entry as the shard does when a record's slots outgrow it
 * (part_regrow, then deadline_moved), and the model with it; then checks the timers
 * against the model as set_both does. Returns the number of disagreements. */
static unsigned move_both(DeadlineHeap *d, Model *m, Keys *k, size_t i)
{
    PartEntry *was = k->e[i];
    int64_t at = was->deadline;
    uint32_t pos = was->heap_pos;
    bool was_top = deadline_top(d) == was;
    PartEntry *e = part_regrow(&k->t, was, part_entry_hash(was), (size_t)was->room + 1);
    if (!e)
        return 1;
    deadline_moved(d, was, e);
    k->e[i] = e;
    for (size_t j = 0; j < m->n; j++)
        if (m->armed[j] == was)
            m->armed[j] = e;
    unsigned bad = e == was;
    bad += e->deadline != at || e->heap_pos != pos;
    bad += was_top != (deadline_top(d) == e);
    const char *why = deadline_verify(d);
    if (why) {
        fprintf(stderr, "deadline_verify after a move: %s\n", why);
        bad++;
    }
    bad += d->n != m->n;
    bad += deadline_top(d) != (m->n ? m->armed[0] : NULL);
    bad += deadline_next(d) != (m->n ? m->at[0] : INT64_MAX);
    bad += at != INT64_MAX && !deadline_holds(d, e);
    return bad;
}

/* The key index of the i-th entry of the heap that is not the top, or SIZE_MAX. */
static size_t heap_key_not_top(const DeadlineHeap *d, const Keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->e[i] != deadline_top(d) && held_in_heap(d, k->e[i]))
            return i;
    return SIZE_MAX;
}

/* Keys armed in order sit in a ring: moving its head, the top, and one from its middle
 * keeps the ring's order and the cache of the top; a key not held moves too. The keys
 * then fire in the order they would have, moved or not (the model's), also after the
 * moved ones are re-armed. */
START_TEST(moved_entries_in_a_ring_fire_in_order)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, 12);
    unsigned bad = 0;
    for (size_t i = 0; i < 11; i++)
        bad += set_both(&d, &m, k.e[i], 1000 + (int64_t)i);
    ck_assert_uint_eq(bad, 0);
    if (!SMALL_RINGS)
        ck_assert_uint_eq(d.core->hn, 0);
    ck_assert_ptr_eq(deadline_top(&d), k.e[0]);
    bad += move_both(&d, &m, &k, 0);    /* the top */
    ck_assert_ptr_eq(deadline_top(&d), k.e[0]);
    bad += move_both(&d, &m, &k, 6);    /* the middle */
    bad += move_both(&d, &m, &k, 6);    /* again: its room grows on */
    bad += move_both(&d, &m, &k, 11);   /* not held */
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_eq(k.e[6]->room, 3);
    if (!SMALL_RINGS)
        ck_assert(!held_in_heap(&d, k.e[0]) && !held_in_heap(&d, k.e[6]));
    bad += set_both(&d, &m, k.e[6], 1000);       /* earlier: a tie with the top */
    bad += set_both(&d, &m, k.e[0], 1006);       /* the old top behind the middle */
    bad += set_both(&d, &m, k.e[11], 1003);
    ck_assert_uint_eq(bad, 0);
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* Every ring takes a stream of its own (at each step the streams arm decreasing
 * deadlines, so none extends another's ring), then HEAP_KEYS deadlines in random
 * order, each before every ring's end, fit no ring and go to the heap; one earlier
 * than all of them is the heap's top. Moving it, one from the middle of the heap and
 * one from a ring keeps the heap's order and positions: the keys fire in the model's
 * order. */
enum { HEAP_STEPS = 6, HEAP_KEYS = 20, HEAP_RING_KEYS = DEADLINE_RINGS * HEAP_STEPS };
_Static_assert(HEAP_RING_KEYS + HEAP_KEYS + 1 <= MAX_KEYS, "enough keys");

START_TEST(moved_entries_in_the_heap_fire_in_order)
{
    static Keys k;
    static Model m;
    DeadlineHeap d;
    fixture_start(&k, &m, &d, HEAP_RING_KEYS + HEAP_KEYS + 1);
    unsigned bad = 0;
    for (size_t t = 0; t < HEAP_STEPS; t++)
        for (size_t s = 0; s < DEADLINE_RINGS; s++)
            bad += set_both(&d, &m, k.e[t * DEADLINE_RINGS + s],
                            1000 + 100 * (int64_t)t + 10 * (int64_t)(DEADLINE_RINGS - 1 - s));
    /* the earliest end of a ring: the last stream's last deadline */
    int64_t ring_end = 1000 + 100 * (HEAP_STEPS - 1);
    uint64_t seed = 4242;
    for (size_t i = HEAP_RING_KEYS; i + 1 < k.n; i++)
        bad += set_both(&d, &m, k.e[i],
                        1000 + (int64_t)(next_rand(&seed) % (uint64_t)(ring_end - 1000)));
    bad += set_both(&d, &m, k.e[k.n - 1], 0);
    ck_assert_uint_eq(bad, 0);
    ck_assert_ptr_eq(deadline_top(&d), k.e[k.n - 1]);
    ck_assert_uint_eq(d.core->ring_mask, (1u << DEADLINE_RINGS) - 1);
    for (size_t s = 0; s < DEADLINE_RINGS; s++)
        ck_assert_uint_eq(d.core->ring[s].live, HEAP_STEPS);
    ck_assert_uint_eq(d.core->hn, HEAP_KEYS + 1);
    ck_assert(held_in_heap(&d, k.e[k.n - 1]));
    bad += move_both(&d, &m, &k, k.n - 1);   /* the top, in the heap */
    ck_assert_ptr_eq(deadline_top(&d), k.e[k.n - 1]);
    size_t mid = heap_key_not_top(&d, &k);
    ck_assert_uint_ne(mid, SIZE_MAX);
    bad += move_both(&d, &m, &k, mid);       /* the middle of the heap */
    size_t in_ring = 0;
    while (in_ring < k.n && (held_in_heap(&d, k.e[in_ring]) || k.e[in_ring]->deadline == INT64_MAX))
        in_ring++;
    ck_assert_uint_lt(in_ring, k.n);
    bad += move_both(&d, &m, &k, in_ring);   /* and one in a ring */
    ck_assert_uint_eq(bad, 0);
    ck_assert(held_in_heap(&d, k.e[k.n - 1]) && held_in_heap(&d, k.e[mid]));
    bad += set_both(&d, &m, k.e[mid], 1);    /* the moved ones still move in the heap */
    bad += set_both(&d, &m, k.e[k.n - 1], ring_end - 50);
    ck_assert_uint_eq(bad, 0);
    ck_assert(held_in_heap(&d, k.e[k.n - 1]) && held_in_heap(&d, k.e[mid]));
    bad += drain_and_free(&d, &m, &k);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

static Suite *deadline_suite(void)
{
    Suite *s = suite_create("deadline");
    TCase *tc = tcase_create("timers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, random_operations_match_the_model);
    tcase_add_test(tc, engine_traces_pop_in_order);
    tcase_add_test(tc, late_deadlines_pop_in_order);
    tcase_add_test(tc, extremes_of_the_range);
    tcase_add_test(tc, moving_earlier_removing_the_top_and_reinserting);
    tcase_add_test(tc, ties_by_key);
    tcase_add_test(tc, random_order_merges_ring_and_heap);
    tcase_add_test(tc, holes_are_squeezed_out_and_memory_shrinks);
    tcase_add_test(tc, interleaved_streams_keep_to_rings);
    tcase_add_test(tc, free_marks_entries_not_held);
    tcase_add_test(tc, ties_between_ring_heads_and_the_heap);
    tcase_add_test(tc, moved_entries_in_a_ring_fire_in_order);
    tcase_add_test(tc, moved_entries_in_the_heap_fire_in_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(deadline_suite());
}
