/* tests/test_partition.c — the partition table's slots and its entry pool: every live
 * key is found and no dead one, whatever the order of adds and removes (long probe
 * runs whose distances saturate, keys larger than a slab takes, removal from a known
 * or a wrong hash, tables shrinking), entries are reused at once, also across tables
 * sharing a pool, and a pool that no longer holds keys keeps at most one empty slab;
 * records of many slots (past 512 bytes) take the smallest big class that holds them,
 * side by side without overlap, and grow, move, are reused and go back as small ones do;
 * and partition key bytes read back into values (every kind of value and escape), with
 * bytes that are not what part_key_bytes writes refused; part_key_encode's one-pass
 * way for a plain string writes and hashes what the general way does. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/slab.h"
#include "runtime/partition.h"
#include "tests/checkmain.h"
#include "tests/oomwrap.h"

enum { MAX_KEYS = 3000 };

/* The object size of the slabs an entry of `bytes` should live in: its own up to 512
 * bytes, else the smallest big class at least as large; 0: a malloc of its own. */
static size_t class_holding(size_t bytes)
{
    if (bytes <= PART_SLAB_CLASSES * 8)
        return bytes;
    size_t best = 0;
    for (size_t i = PART_BIG_CLASSES; i-- > 0;)
        if (part_big_class_bytes(i) >= bytes)
            best = part_big_class_bytes(i);
    return best;
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The reference: which keys are live, each with its name and hash. */
typedef struct Model {
    char name[MAX_KEYS][24];
    size_t len[MAX_KEYS];
    uint64_t hash[MAX_KEYS];
    PartEntry *entry[MAX_KEYS];   /* NULL: not live */
} Model;

/* Keys whose hashes share their low ten bits (one home in any table of up to 1024
 * slots) when `crowded`, so that their probe run is longer than the 3-bit distance a
 * slot holds: found among "user-N" by trying N in turn (the table takes only the hash
 * of the key bytes). */
static void model_init(Model *m, size_t n, bool crowded)
{
    memset(m, 0, sizeof *m);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        do {
            m->len[i] = (size_t)snprintf(m->name[i], sizeof m->name[i], "\"user-%zu\"", j++);
            m->hash[i] = part_hash(m->name[i], m->len[i]);
        } while (crowded && (m->hash[i] & 0x3ff) != 5);
    }
}

/* Counts disagreements between table and model (one ck_assert at the end: Check's
 * assertions are slow). */
static size_t model_check(const PartTable *t, const Model *m, size_t n)
{
    size_t bad = 0, live = 0;
    for (size_t i = 0; i < n; i++) {
        PartEntry *e = part_lookup(t, m->name[i], m->len[i], m->hash[i]);
        bad += e != m->entry[i];
        live += m->entry[i] != NULL;
        if (m->entry[i]) {
            bad += !part_may_hold(t, m->hash[i]);
            bad += !part_entry_is(e, m->name[i], m->len[i]);
            bad += strcmp(e->tail, m->name[i]) != 0;
        }
    }
    bad += t->count != live;
    size_t pos = 0, seen = 0;
    for (PartEntry *e = part_next(t, &pos, NULL); e; e = part_next(t, &pos, e))
        seen++;
    bad += seen != live;
    return bad;
}

/* Removal from the entry alone, from its hash, or from a wrong hash (a stale one a
 * caller kept): each must unlink just that entry. */
static void remove_some_way(PartTable *t, PartEntry *e, uint64_t hash, uint64_t r)
{
    if (r % 3 == 0)
        part_remove(t, e);
    else if (r % 3 == 1)
        part_remove_hashed(t, e, hash);
    else
        part_remove_hashed(t, e, r);
}

static void random_ops(bool crowded, size_t n, uint64_t seed)
{
    static Model m;
    model_init(&m, n, crowded);
    PartTable t;
    part_table_init(&t);
    for (int step = 0; step < 20000; step++) {
        size_t i = next_rand(&seed) % n;
        if (m.entry[i] && step % 4 == 0) {   /* its slots outgrow it: it moves */
            PartEntry *moved = part_regrow(&t, m.entry[i], m.hash[i], m.entry[i]->room + 1u);
            ck_assert_ptr_nonnull(moved);
            m.entry[i] = moved;
        } else if (m.entry[i]) {
            remove_some_way(&t, m.entry[i], m.hash[i], next_rand(&seed));
            m.entry[i] = NULL;
        } else {
            m.entry[i] = part_add(&t, m.name[i], m.len[i], m.hash[i], i % 3);
            ck_assert_ptr_nonnull(m.entry[i]);
        }
        if (step % 997 == 0)
            ck_assert_uint_eq(model_check(&t, &m, n), 0);
    }
    ck_assert_uint_eq(model_check(&t, &m, n), 0);
    for (size_t i = 0; i < n; i++)
        if (m.entry[i]) {
            part_remove(&t, m.entry[i]);
            m.entry[i] = NULL;
        }
    ck_assert_uint_eq(model_check(&t, &m, n), 0);
    ck_assert_uint_le(t.n_slots, 16);   /* shrunk with the keys */
    part_table_free(&t, NULL, NULL);
}

START_TEST(random_adds_and_removes_agree_with_a_model)
{
    random_ops(false, MAX_KEYS, 88172645463325252u + (uint64_t)_i);
}
END_TEST

/* 60 keys with one home: distances up to 59, most saturated in their slot. */
START_TEST(one_home_many_keys)
{
    random_ops(true, 60, 1234567u + (uint64_t)_i);
}
END_TEST

/* A freed entry is the next one made, in the same table or another sharing its pool. */
START_TEST(freed_entry_is_reused_at_once)
{
    PartPool pool;
    part_pool_init(&pool);
    PartTable a, b;
    part_table_init_shared(&a, &pool);
    part_table_init_shared(&b, &pool);
    PartEntry *keep = part_add(&a, "\"k1\"", 4, part_hash("\"k1\"", 4), 1);
    PartEntry *gone = part_add(&a, "\"k2\"", 4, part_hash("\"k2\"", 4), 1);
    ck_assert(keep && gone);
    part_remove(&a, gone);
    PartEntry *again = part_add(&b, "\"k3\"", 4, part_hash("\"k3\"", 4), 1);
    ck_assert_ptr_eq(again, gone);
    ck_assert_ptr_eq(part_lookup(&b, "\"k3\"", 4, part_hash("\"k3\"", 4)), again);
    ck_assert_ptr_null(part_lookup(&a, "\"k2\"", 4, part_hash("\"k2\"", 4)));
    ck_assert_ptr_eq(part_lookup(&a, "\"k1\"", 4, part_hash("\"k1\"", 4)), keep);
    part_table_free(&a, NULL, NULL);
    part_table_free(&b, NULL, NULL);
    part_pool_free(&pool);
}
END_TEST

static size_t slabs_with_room(const PartPool *pool)
{
    size_t n = 0;
    for (size_t c = 0; pool->cls && c < PART_CLASSES; c++)
        n += pool->cls[c].avail.head != NULL || pool->cls[c].recent != NULL;
    return n;
}

/* Memory follows the live keys: once none is left the pool holds one empty slab and
 * no other, whatever the sizes the keys and their room for slots had. */
START_TEST(pool_keeps_one_empty_slab)
{
    PartPool pool;
    part_pool_init(&pool);
    PartTable t;
    part_table_init_shared(&t, &pool);
    static PartEntry *e[MAX_KEYS];
    char name[64];
    for (size_t i = 0; i < MAX_KEYS; i++) {
        int n = snprintf(name, sizeof name, "%0*zu", (int)(1 + i % 40), i);
        e[i] = part_add(&t, name, (size_t)n, part_hash(name, (size_t)n), i % 4);
        ck_assert_ptr_nonnull(e[i]);
    }
    ck_assert_uint_gt(slabs_with_room(&pool), 1);
    for (size_t i = 0; i < MAX_KEYS; i++)
        part_remove(&t, e[(i * 7) % MAX_KEYS]);
    ck_assert_uint_eq(t.count, 0);
    ck_assert_uint_eq(slabs_with_room(&pool), 0);
    ck_assert_ptr_nonnull(pool.src.spare);
    ck_assert_uint_eq(pool.src.slabs, 1);
    part_table_free(&t, NULL, NULL);
    part_pool_free(&pool);
}
END_TEST

/* A key too large for a slab gets an allocation of its own and behaves the same. */
START_TEST(large_keys)
{
    PartTable t;
    part_table_init(&t);
    static char big[3][5000];
    PartEntry *e[3];
    for (int i = 0; i < 3; i++) {
        memset(big[i], 'a' + i, sizeof big[i] - 1);
        e[i] = part_add(&t, big[i], sizeof big[i] - 1, part_hash(big[i], sizeof big[i] - 1), 1);
        ck_assert_ptr_nonnull(e[i]);
        ck_assert_uint_eq(e[i]->klen, sizeof big[i] - 1);
    }
    part_remove(&t, e[1]);
    ck_assert_ptr_eq(part_lookup(&t, big[0], sizeof big[0] - 1, part_entry_hash(e[0])), e[0]);
    ck_assert_ptr_null(part_lookup(&t, big[1], sizeof big[1] - 1,
                                   part_hash(big[1], sizeof big[1] - 1)));
    ck_assert_ptr_eq(part_lookup(&t, big[2], sizeof big[2] - 1, part_entry_hash(e[2])), e[2]);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* A record is a 20-byte header, the key bytes and their NUL, then from the next
 * multiple of 8 its slots, 48 bytes each, but 40 for the one slot of an entry with room
 * for one (it has no `due`); part_entry_bytes says so, and each entry
 * takes that much in its slab. An entry without slots and a key of up to 43 bytes is
 * 64: one cache line, which its slab places on a line boundary. */
START_TEST(entry_sizes_follow_the_record_layout)
{
    ck_assert_uint_eq(offsetof(PartEntry, tail), 20);
    ck_assert_uint_eq(sizeof(PartSlot), 48);
    ck_assert_uint_eq(part_slots_offset(3), 24);    /* 20 + 3 + NUL: 24 */
    ck_assert_uint_eq(part_slots_offset(4), 32);    /* 25, up to 32 */
    ck_assert_uint_eq(part_slots_offset(11), 32);
    ck_assert_uint_eq(part_slots_offset(12), 40);
    ck_assert_uint_eq(part_entry_bytes(43, 0, 0), 64);
    ck_assert_uint_eq(part_entry_bytes(44, 0, 0), 72);
    ck_assert_uint_eq(part_entry_bytes(35, sizeof(int64_t), 0), 64);
    ck_assert_uint_eq(part_slots_bytes(1), 40);
    ck_assert_uint_eq(part_slots_bytes(2), 96);
    ck_assert_uint_eq(part_entry_bytes(3, 0, 1), 64);
    ck_assert_uint_eq(part_entry_bytes(11, 0, 1), 72);   /* scenario 5's `"k123456"` */
    ck_assert_uint_eq(part_entry_bytes(11, 0, 2), 128);
    ck_assert_uint_eq(part_entry_bytes(11, sizeof(int64_t), 1), 80);
    PartTable t;
    part_table_init(&t);
    char name[64];
    size_t bad = 0, lines = 0;
    for (int i = 0; i < 600; i++) {
        size_t room = (size_t)i % 3;
        int n = snprintf(name, sizeof name, "\"%0*d\"", 1 + i % 48, i);
        PartEntry *e = part_add(&t, name, (size_t)n, part_hash(name, (size_t)n), room);
        ck_assert_ptr_nonnull(e);
        size_t bytes = part_entry_bytes((size_t)n, 0, room);
        bad += strcmp(e->tail, name) != 0 || e->n_slots != 0 || e->room != room;
        bad += e->heap_pos != PART_NOT_TIMED || e->deadline != INT64_MAX;
        bad += slab_of(e)->size != bytes;
        bad += (char *)part_slots(e) != (char *)e + part_slots_offset((size_t)n);
        bad += (uintptr_t)part_slots(e) % 8 != 0;
        if (bytes == 64) {
            bad += (uintptr_t)e % 64 != 0;
            lines++;
        }
    }
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_gt(lines, 0);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* A table with the suppression field keeps it before each entry, where nothing else
 * writes: set on every entry, it survives the adds, removals and reuse of the others,
 * and the entry's own header (its deadline, set to a mark) is not touched by it. The
 * entries have no slots, as the shard's suppression tables hold them. The fields are
 * chosen only while the table is empty. */
START_TEST(suppression_field_sits_before_each_entry)
{
    PartTable t;
    part_table_init(&t);
    part_table_set_extras(&t, PART_X_SUPPRESS);
    ck_assert_uint_eq(t.pre, sizeof(int64_t));
    static PartEntry *e[MAX_KEYS];
    char name[32];
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < MAX_KEYS; i++) {
            if (round && i % 3)
                continue;   /* the second round re-adds a third of them */
            int n = snprintf(name, sizeof name, "key-%zu", i);
            e[i] = part_add(&t, name, (size_t)n, part_hash(name, (size_t)n), 0);
            ck_assert_ptr_nonnull(e[i]);
            ck_assert_uint_eq((uintptr_t)e[i] % 8, 0);
            ck_assert(*part_suppress_until(e[i]) == INT64_MIN);
            *part_suppress_until(e[i]) = (int64_t)i;
            e[i]->deadline = (int64_t)i;
        }
        if (!round)
            for (size_t i = 0; i < MAX_KEYS; i += 3)
                part_remove(&t, e[i]);
    }
    part_table_set_extras(&t, 0);   /* not empty: ignored */
    ck_assert_uint_eq(t.pre, sizeof(int64_t));
    size_t bad = 0;
    for (size_t i = 0; i < MAX_KEYS; i++) {
        int n = snprintf(name, sizeof name, "key-%zu", i);
        PartEntry *found = part_lookup(&t, name, (size_t)n, part_hash(name, (size_t)n));
        bad += found != e[i] || *part_suppress_until(found) != (int64_t)i ||
               found->deadline != (int64_t)i;
    }
    ck_assert_uint_eq(bad, 0);
    part_table_free(&t, NULL, NULL);
    ck_assert_uint_eq(t.pre, sizeof(int64_t));   /* a freed table keeps its fields */
}
END_TEST

/* part_table_free hands every live entry to drop, once. */
static void count_drop(PartEntry *e, void *user)
{
    (void)e;
    (*(size_t *)user)++;
}

START_TEST(free_drops_every_entry)
{
    PartTable t;
    part_table_init(&t);
    char name[16];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(name, sizeof name, "k%d", i);
        ck_assert_ptr_nonnull(part_add(&t, name, (size_t)n, part_hash(name, (size_t)n), 1));
    }
    size_t dropped = 0;
    part_table_free(&t, count_drop, &dropped);
    ck_assert_uint_eq(dropped, 500);
    ck_assert_uint_eq(t.count, 0);
}
END_TEST

/* The candidate a probe names from the slots alone (what a caller fetches before
 * comparing key bytes) is the key's entry while it is there and none once it is gone,
 * through growth and shrinking; the occupancy bit says so too. */
START_TEST(probe_names_the_entry_through_growth_and_shrinking)
{
    PartTable t;
    part_table_init(&t);
    static PartEntry *e[MAX_KEYS];
    char name[16];
    size_t bad = 0;
    for (size_t round = 0; round < 2; round++) {
        for (size_t i = 0; i < MAX_KEYS; i++) {
            int n = snprintf(name, sizeof name, "k%zu", i);
            uint64_t h = part_hash(name, (size_t)n);
            if (round == 0)
                ck_assert_ptr_nonnull(e[i] = part_add(&t, name, (size_t)n, h, 1));
            else
                part_remove(&t, e[i]);
            PartProbe probe = part_probe_of(&t);
            for (size_t j = 0; j <= i; j += 97) {   /* the keys added or removed so far */
                n = snprintf(name, sizeof name, "k%zu", j);
                h = part_hash(name, (size_t)n);
                bad += part_probe_candidate(&probe, h) != (round == 0 ? e[j] : NULL);
                bad += round == 0 && !part_probe_may_hold(&probe, h);
            }
        }
    }
    ck_assert_uint_eq(bad, 0);
    part_table_free(&t, NULL, NULL);
    PartProbe gone = part_probe_of(&t);
    ck_assert(!part_probe_may_hold(&gone, 1));
    ck_assert_ptr_null(part_probe_candidate(&gone, 1));
}
END_TEST

/* ---- records that move: part_regrow ------------------------------------------- */

/* Slots that take an entry past half a slab's room, to a malloc of its own (slabs
 * come from aligned_alloc, which tests/oomwrap does not count). */
enum { MALLOC_ROOM = 200 };
_Static_assert(MALLOC_ROOM * sizeof(PartSlot) > SLAB_ROOM / 2, "past every class");

/* An entry's bytes as they were: its optional fields, header, key and slots in use. */
typedef struct Snapshot {
    _Alignas(8) unsigned char bytes[8192];
    size_t len, pre;
} Snapshot;

static void snapshot_take(Snapshot *s, const PartTable *t, const PartEntry *e)
{
    s->pre = t->pre;
    size_t used = e->n_slots * sizeof(PartSlot), had = part_slots_bytes(e->room);
    s->len = t->pre + part_slots_offset(e->klen) + (used < had ? used : had);
    ck_assert_uint_le(s->len, sizeof s->bytes);
    memcpy(s->bytes, (const char *)e - t->pre, s->len);
}

/* Whether e holds what the snapshot held, but with room for `room` slots. */
static bool snapshot_matches(const Snapshot *s, const PartEntry *e, size_t room)
{
    Snapshot want = *s;
    ((PartEntry *)(void *)(want.bytes + s->pre))->room = (uint16_t)room;
    return !memcmp(want.bytes, (const char *)e - s->pre, s->len);
}

/* Gives e n slots in use, each a pattern of its own (the table never reads them), a
 * deadline and a timer position (nor those), and its suppression field if any. */
static void record_fill(const PartTable *t, PartEntry *e, size_t n, int mark)
{
    PartSlot *sl = part_slots(e);
    size_t room_bytes = part_slots_bytes(e->room);   /* one slot alone has no `due` */
    for (size_t i = 0; i < n; i++)
        memset(&sl[i], mark + (int)i, sizeof sl[i] < room_bytes ? sizeof sl[i] : room_bytes);
    e->n_slots = (uint16_t)n;
    e->deadline = mark;
    e->heap_pos = (uint32_t)mark;
    if (t->extras & PART_X_SUPPRESS)
        *part_suppress_until(e) = -mark;
}

/* Counts the model's keys whose candidate, from the slots alone, is not their entry
 * (a moved entry must be named at its new address). */
static size_t probe_check(const PartTable *t, const Model *m, size_t n)
{
    PartProbe probe = part_probe_of(t);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += part_probe_candidate(&probe, m->hash[i]) != m->entry[i];
    return bad;
}

/* Moves m's key i to an entry with room for `room` slots, from `hash` (right or not);
 * asserts the move kept everything but the room and the address. */
static void regrow_key(PartTable *t, Model *m, size_t i, uint64_t hash, size_t room)
{
    Snapshot was;
    snapshot_take(&was, t, m->entry[i]);
    size_t count = t->count;
    PartEntry *moved = part_regrow(t, m->entry[i], hash, room);
    ck_assert_ptr_nonnull(moved);
    ck_assert_ptr_ne(moved, m->entry[i]);
    ck_assert_uint_eq(moved->room, room);
    ck_assert(snapshot_matches(&was, moved, room));
    ck_assert_uint_eq(t->count, count);
    size_t slab_bytes = class_holding(part_entry_bytes(moved->klen, t->pre, room));
    if (slab_bytes)
        ck_assert_uint_eq(slab_of((char *)moved - t->pre)->size, slab_bytes);
    m->entry[i] = moved;
}

/* Keys that share one home (a run longer than a slot's saturated distance): a key
 * from the middle of the run moves, with or without the suppression field, and stays
 * where it was in the run. Every key is then still found, by the table and by its
 * probe; the old entry is free (the next entry of its size is made there); after the
 * keys before it in the run go, the moved one shifts back and is found; and it moves
 * on, to a big class, to an entry of its own malloc and back to a slab of a small
 * class, keeping its slots. */
START_TEST(regrow_moves_the_record_within_its_slot)
{
    enum { RUN = 24, MID = 12 };
    static Model m;
    model_init(&m, RUN, true);
    PartTable t;
    part_table_init(&t);
    part_table_set_extras(&t, (unsigned)_i);
    for (size_t i = 0; i < RUN; i++) {
        ck_assert_ptr_nonnull(m.entry[i] = part_add(&t, m.name[i], m.len[i], m.hash[i], 1));
        record_fill(&t, m.entry[i], 1, 10 + (int)i);
    }
    ck_assert_uint_eq(model_check(&t, &m, RUN), 0);
    PartEntry *old = m.entry[MID];
    regrow_key(&t, &m, MID, m.hash[MID], 3);
    ck_assert_uint_eq(model_check(&t, &m, RUN), 0);
    ck_assert_uint_eq(probe_check(&t, &m, RUN), 0);
    ck_assert_ptr_eq(part_lookup(&t, m.name[MID], m.len[MID], m.hash[MID]), m.entry[MID]);
    /* the old entry was freed: a new one of its size takes its place at once */
    char other[24];
    memset(other, 'z', m.len[MID]);
    PartEntry *reuse = part_add(&t, other, m.len[MID], part_hash(other, m.len[MID]), 1);
    ck_assert_ptr_eq(reuse, old);
    part_remove(&t, reuse);
    /* slots filled up to the room, then moved from a wrong hash (the table finds the
     * entry from its own) */
    record_fill(&t, m.entry[MID], 3, 50);
    regrow_key(&t, &m, MID, m.hash[MID] ^ 1, 40);   /* a big class */
    ck_assert_uint_eq(model_check(&t, &m, RUN), 0);
    regrow_key(&t, &m, MID, m.hash[MID], MALLOC_ROOM);
    ck_assert_uint_eq(model_check(&t, &m, RUN), 0);
    for (size_t i = 0; i < MID; i++) {
        part_remove(&t, m.entry[i]);
        m.entry[i] = NULL;
    }
    ck_assert_uint_eq(model_check(&t, &m, RUN), 0);
    ck_assert_uint_eq(probe_check(&t, &m, RUN), 0);
    regrow_key(&t, &m, MID, m.hash[MID], 3);        /* back to a slab */
    ck_assert_uint_eq(model_check(&t, &m, RUN), 0);
    ck_assert_uint_eq(probe_check(&t, &m, RUN), 0);
    ck_assert_uint_eq(m.entry[MID]->n_slots, 3);
    ck_assert_uint_eq(part_slots(m.entry[MID])[2].held, 0x34343434u);   /* mark 52 */
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* A regrow that cannot be done returns NULL and leaves the entry as it was, in its
 * slot: less room than its slots in use, more than a record holds, or the allocation
 * failing. */
START_TEST(failed_regrow_leaves_the_entry_as_it_was)
{
    static Model m;
    model_init(&m, 40, false);
    PartTable t;
    part_table_init(&t);
    for (size_t i = 0; i < 40; i++)
        ck_assert_ptr_nonnull(m.entry[i] = part_add(&t, m.name[i], m.len[i], m.hash[i], 2));
    PartEntry *e = m.entry[7];
    record_fill(&t, e, 2, 70);
    Snapshot was;
    snapshot_take(&was, &t, e);
    ck_assert_ptr_null(part_regrow(&t, e, m.hash[7], 1));
    ck_assert_ptr_null(part_regrow(&t, e, m.hash[7], (size_t)PART_MAX_SLOTS + 1));
    oom_count_begin(1);
    PartEntry *moved = part_regrow(&t, e, m.hash[7], MALLOC_ROOM);
    size_t allocs = oom_count_end();
    ck_assert_ptr_null(moved);
    ck_assert_uint_eq(allocs, 1);
    ck_assert(snapshot_matches(&was, e, 2));
    ck_assert_uint_eq(t.count, 40);
    ck_assert_uint_eq(model_check(&t, &m, 40), 0);
    regrow_key(&t, &m, 7, m.hash[7], MALLOC_ROOM);   /* with memory, the move is made */
    ck_assert_uint_eq(model_check(&t, &m, 40), 0);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* ---- big classes: records of many slots ---------------------------------------- */

/* The big classes grow from past the small ones to half a slab, each a multiple of 8
 * that fills its slab but for less than one entry; a short key's record (slots from
 * byte 32) of 20, 40, 80 and 160 slots, as runtime/shard.c grows them, fits one whole. */
START_TEST(big_classes_fit_doubling_records)
{
    size_t prev = PART_SLAB_CLASSES * 8;
    for (size_t i = 0; i < PART_BIG_CLASSES; i++) {
        size_t b = part_big_class_bytes(i);
        ck_assert_uint_gt(b, prev);
        ck_assert_uint_eq(b % 8, 0);
        ck_assert_uint_lt(SLAB_ROOM - (SLAB_ROOM / b) * b, b);
        prev = b;
    }
    ck_assert_uint_eq(prev, SLAB_ROOM / 2);
    ck_assert_uint_eq(class_holding(part_entry_bytes(8, 0, 20)), 1016);
    ck_assert_uint_eq(class_holding(part_entry_bytes(8, 0, 40)), 2040);
    ck_assert_uint_eq(class_holding(part_entry_bytes(8, 0, 80)), 4080);
    ck_assert_uint_eq(class_holding(part_entry_bytes(8, 0, 160)), 8160);
}
END_TEST

enum { BIG_FIRST = 488, BIG_LAST = 8400, BIG_N = (BIG_LAST - BIG_FIRST) / 8 + 1 };

/* Key i of the entry of BIG_FIRST + 8 i bytes: a length that, with the most slots
 * that leave at least 24 bytes for the header and key, makes exactly that size. */
static size_t big_key(size_t i, char *name, size_t *room)
{
    size_t bytes = BIG_FIRST + 8 * i;
    *room = (bytes - 24) / sizeof(PartSlot);
    size_t klen = bytes - *room * sizeof(PartSlot) - offsetof(PartEntry, tail) - 1;
    snprintf(name, 64, "%0*zu", (int)klen, i);
    ck_assert_uint_eq(part_entry_bytes(klen, 0, *room), bytes);
    return klen;
}

static void big_fill(PartEntry *e, size_t i)
{
    memset(part_slots(e), (int)(i * 7 + 1), part_slots_bytes(e->room));
}

/* Entries whose slots are not all i's pattern, or whose key is not found as e[i]. */
static size_t big_check(const PartTable *t, PartEntry *const *e, size_t step)
{
    size_t bad = 0;
    char name[64];
    for (size_t i = 0; i < BIG_N; i += step) {
        size_t room, klen = big_key(i, name, &room);
        bad += part_lookup(t, name, klen, part_hash(name, klen)) != e[i];
        const unsigned char *p = (const unsigned char *)part_slots(e[i]);
        for (size_t j = 0; j < part_slots_bytes(room); j++)
            bad += p[j] != (unsigned char)(i * 7 + 1);
    }
    return bad;
}

/* Entries of every size from 488 to 8400 bytes, 8 apart (across every class boundary,
 * into malloc's), live side by side: each sits in a slab of the class that holds it,
 * its slots filled to the last byte do not reach another's, through the removal of
 * half of them and their re-adding; once all are gone the table's pool holds at most
 * one empty slab (these many slabs come from regions, which go back whole). */
START_TEST(big_entries_of_every_size)
{
    PartTable t;
    part_table_init(&t);
    static PartEntry *e[BIG_N];
    char name[64];
    size_t bad = 0;
    for (size_t round = 0; round < 2; round++) {
        for (size_t i = round; i < BIG_N; i += round + 1) {   /* then every other one */
            size_t room, klen = big_key(i, name, &room);
            e[i] = part_add(&t, name, klen, part_hash(name, klen), room);
            ck_assert_ptr_nonnull(e[i]);
            size_t in = class_holding(BIG_FIRST + 8 * i);
            bad += in && slab_of(e[i])->size != in;
            bad += (uintptr_t)e[i] % 8 != 0 || e[i]->room != room;
            big_fill(e[i], i);
        }
        bad += big_check(&t, e, 1);
        if (!round)
            for (size_t i = 1; i < BIG_N; i += 2)
                part_remove(&t, e[i]);
        bad += big_check(&t, e, 2);
    }
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_gt(t.own.src.slabs, SLAB_REGION_AFTER);
    for (size_t i = 0; i < BIG_N; i++)
        part_remove(&t, e[(i * 7) % BIG_N]);
    ck_assert_uint_eq(t.count, 0);
    ck_assert_uint_eq(slabs_with_room(&t.own), 0);
    ck_assert_uint_le(t.own.src.slabs, 1);
    ck_assert(!t.own.src.spare || !t.own.src.spare->next);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* A big entry freed is the next one its class hands out (LIFO: still in the cache),
 * whatever size within the class the new one asks for, from another table of the pool
 * and from another slab than the first one listed with room; a record that grows frees
 * its old entry for the next record of that size. */
START_TEST(big_entry_reused_at_once)
{
    PartPool pool;
    part_pool_init(&pool);
    PartTable a, b;
    part_table_init_shared(&a, &pool);
    part_table_init_shared(&b, &pool);
    static Model m;
    model_init(&m, 8, false);
    for (size_t i = 0; i < 3; i++) {
        m.entry[i] = part_add(&a, m.name[i], m.len[i], m.hash[i], 20);
        ck_assert_ptr_nonnull(m.entry[i]);
    }
    PartEntry *gone = m.entry[1];
    part_remove(&a, gone);
    m.entry[1] = NULL;
    PartEntry *again = part_add(&b, m.name[3], m.len[3], m.hash[3], 12);   /* 608 bytes */
    ck_assert_ptr_eq(again, gone);
    ck_assert_uint_eq(slab_of(again)->size, 1016);
    PartEntry *was = m.entry[0];
    regrow_key(&a, &m, 0, m.hash[0], 40);
    ck_assert_uint_eq(model_check(&a, &m, 3), 0);
    ck_assert_ptr_eq(part_add(&a, m.name[1], m.len[1], m.hash[1], 20), was);
    part_table_free(&a, NULL, NULL);
    /* two slabs of four (3872 bytes, class 4080), the first's entries freed last, but
     * listed after the second: its latest free room is the next handed out */
    PartEntry *four[8];
    for (size_t i = 0; i < 8; i++) {
        ck_assert_ptr_nonnull(four[i] = part_add(&b, m.name[i], m.len[i], m.hash[i], 80));
        ck_assert_ptr_eq(slab_of(four[i]), slab_of(four[i & 4]));
    }
    part_remove(&b, four[0]);
    part_remove(&b, four[4]);
    part_remove(&b, four[1]);
    ck_assert_ptr_eq(part_add(&b, m.name[1], m.len[1], m.hash[1], 79), four[1]);
    part_table_free(&b, NULL, NULL);
    ck_assert_uint_eq(pool.src.slabs, 1);
    part_pool_free(&pool);
}
END_TEST

/* A record that grows as runtime/shard.c grows it, one slot, four, ten, then doubling,
 * up to a malloc of its own, and back down: each move keeps its slots, and the old
 * entries went back (the pool ends with one empty slab). */
START_TEST(big_record_grows_through_every_class)
{
    static const size_t rooms[] = {1, 4, 10, 20, 40, 80, 160, MALLOC_ROOM, 40, 10};
    static Model m;
    model_init(&m, 2, false);
    PartTable t;
    part_table_init(&t);
    for (size_t i = 0; i < 2; i++)
        ck_assert_ptr_nonnull(m.entry[i] = part_add(&t, m.name[i], m.len[i], m.hash[i], 1));
    for (size_t s = 1; s < sizeof rooms / sizeof rooms[0]; s++) {
        size_t n = rooms[s - 1] < rooms[s] ? rooms[s - 1] : rooms[s];
        record_fill(&t, m.entry[0], n, (int)s);
        regrow_key(&t, &m, 0, m.hash[0], rooms[s]);
        ck_assert_uint_eq(m.entry[0]->n_slots, n);
        ck_assert_uint_eq(model_check(&t, &m, 2), 0);
    }
    part_remove(&t, m.entry[0]);
    part_remove(&t, m.entry[1]);
    ck_assert_uint_eq(slabs_with_room(&t.own), 0);
    ck_assert_uint_eq(t.own.src.slabs, 1);
    part_table_free(&t, NULL, NULL);
}
END_TEST

/* ---- key bytes read back into values -------------------------------------------- */

/* part_key_bytes then part_key_values: the values read back equal the originals, and
 * writing them again gives the same bytes. */
static void round_trip(const Value *vals, size_t n)
{
    Buf kb = BUF_INIT, text = BUF_INIT, again = BUF_INIT;
    ck_assert(part_key_bytes(vals, n, &kb));
    ck_assert(!kb.failed);
    Value back[8];
    ck_assert_uint_le(n, 8);
    ck_assert_msg(part_key_values(kb.data, kb.len, back, n, &text), "refused %.*s",
                  (int)kb.len, kb.data);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(back[i].type, vals[i].type);
        if (vals[i].type == V_NUM && isnan(vals[i].num))
            ck_assert(isnan(back[i].num));
        else
            ck_assert_msg(value_equal(&back[i], &vals[i]), "value %zu of %.*s differs", i,
                          (int)kb.len, kb.data);
    }
    ck_assert(part_key_bytes(back, n, &again));
    ck_assert_uint_eq(again.len, kb.len);
    ck_assert(!memcmp(again.data, kb.data, kb.len));
    buf_free(&kb);
    buf_free(&text);
    buf_free(&again);
}

START_TEST(strings_with_every_control_byte)
{
    for (int c = 1; c < 0x20; c++) {
        char s[8] = {'a', (char)c, 'b', '"', '\\', (char)c, 0};
        Value v = value_str(s, 6);
        round_trip(&v, 1);
        Value two[2] = {value_str(s, 6), value_str(s + 1, 1)};
        round_trip(two, 2);
    }
}
END_TEST

START_TEST(scalars_of_every_kind)
{
    Value vals[] = {value_bool(true), value_bool(false), value_num(NAN), value_num(-2.5),
                    value_time(1767225600123), value_dur(-300000), value_str("", 0)};
    size_t n = sizeof vals / sizeof *vals;
    for (size_t i = 0; i < n; i++)
        round_trip(&vals[i], 1);
    round_trip(vals, n);
}
END_TEST

/* The digits of a number are kept as they came, however long. */
START_TEST(long_number_text_kept)
{
    char digits[100];
    memset(digits, '7', 90);
    digits[90] = '\0';
    Value v = value_num(strtod(digits, NULL));
    v.raw = digits;
    v.raw_len = 90;
    Buf kb = BUF_INIT, text = BUF_INIT;
    ck_assert(part_key_bytes(&v, 1, &kb));
    ck_assert_uint_eq(kb.len, 90);
    Value back;
    ck_assert(part_key_values(kb.data, kb.len, &back, 1, &text));
    ck_assert_int_eq(back.type, V_NUM);
    ck_assert_uint_eq(back.raw_len, 90);
    ck_assert(!memcmp(back.raw, digits, 90));
    ck_assert(back.num == v.num);
    buf_free(&kb);
    buf_free(&text);
}
END_TEST

START_TEST(objects_and_arrays_kept_raw)
{
    static const char obj[] = "{\"a\":[1,\",\"],\"b\":{}}", arr[] = "[\"]\",[],{\"x\":\"}\"}]";
    Value vals[3] = {{0}, {0}, value_num(1)};
    vals[0].type = V_OBJ;
    vals[0].raw = obj;
    vals[0].raw_len = sizeof obj - 1;
    vals[1].type = V_ARR;
    vals[1].raw = arr;
    vals[1].raw_len = sizeof arr - 1;
    Buf kb = BUF_INIT, text = BUF_INIT;
    ck_assert(part_key_bytes(vals, 3, &kb));
    Value back[3];
    ck_assert(part_key_values(kb.data, kb.len, back, 3, &text));
    ck_assert_int_eq(back[0].type, V_OBJ);
    ck_assert_uint_eq(back[0].raw_len, sizeof obj - 1);
    ck_assert(!memcmp(back[0].raw, obj, sizeof obj - 1));
    ck_assert_int_eq(back[1].type, V_ARR);
    ck_assert_uint_eq(back[1].raw_len, sizeof arr - 1);
    ck_assert(!memcmp(back[1].raw, arr, sizeof arr - 1));
    ck_assert(back[2].num == 1);
    buf_free(&kb);
    buf_free(&text);
}
END_TEST

/* A missing or null value anywhere among the key's values gives no key. */
START_TEST(null_values_have_no_key)
{
    Buf kb = BUF_INIT;
    for (size_t at = 0; at < 3; at++)
        for (int missing = 0; missing < 2; missing++) {
            Value vals[3] = {value_str("u", 1), value_num(2), value_bool(true)};
            vals[at] = missing ? value_missing() : value_null();
            ck_assert_msg(!part_key_bytes(vals, 3, &kb), "key with value %zu %s", at,
                          missing ? "missing" : "null");
        }
    buf_free(&kb);
}
END_TEST

/* part_key_encode's bytes and hash against part_key_bytes and part_hash, the general
 * way, into a buffer left dirty by the key before (longer, or failed). */
static void encode_agrees(const Value *vals, size_t n, Buf *kb)
{
    Buf want = BUF_INIT;
    bool want_key = part_key_bytes(vals, n, &want);
    uint64_t hash = 0;
    ck_assert_int_eq(part_key_encode(vals, n, kb, &hash), want_key);
    if (want_key) {
        ck_assert(!kb->failed);
        ck_assert_msg(kb->len == want.len &&
                          (!want.len || (!memcmp(kb->data, want.data, want.len) &&
                                         kb->data[kb->len] == '\0')),
                      "encoded %.*s, want %.*s", (int)kb->len, kb->data, (int)want.len,
                      want.data);
        ck_assert_uint_eq(hash, part_hash(want.data, want.len));
    }
    buf_free(&want);
}

/* One string of 0-40 bytes: mostly plain ASCII (the one-pass way), at times a byte
 * it must leave to the general way (quote, backslash, control, DEL, UTF-8, invalid),
 * at any place, word boundaries included. */
static size_t random_key_text(uint64_t *seed, char *s)
{
    static const unsigned char odd[] = {'"', '\\', 0x01, 0x1f, 0x7f, 0xc3, 0xa9, 0xff, 0x80};
    size_t n = next_rand(seed) % 41;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = next_rand(seed);
        s[i] = r % 16 ? (char)(0x20 + r / 16 % 95) : (char)odd[r / 16 % sizeof odd];
    }
    return n;
}

START_TEST(encoded_keys_equal_the_general_way)
{
    uint64_t seed = 0x5eed1234abcdULL;
    Buf kb = BUF_INIT;
    char s[64], t[64];
    for (int i = 0; i < 20000; i++) {
        size_t n = random_key_text(&seed, s), m = random_key_text(&seed, t);
        Value one = value_str(s, n);
        encode_agrees(&one, 1, &kb);
        Value two[2] = {value_str(s, n), next_rand(&seed) % 2 ? value_str(t, m) : value_num(7)};
        encode_agrees(two, 2, &kb);
        if (i % 100 == 0)
            kb.failed = true;   /* a failure before is forgotten, as by buf_clear */
    }
    /* every plain byte, and the edges of the plain range, alone and at each place */
    for (int c = 0; c < 256; c++) {
        memset(s, 'x', 17);
        for (size_t at = 0; at < 17; at++) {
            s[at] = (char)c;
            Value v = value_str(s, 17 - at % 9);
            encode_agrees(&v, 1, &kb);
            s[at] = 'x';
        }
    }
    Value other[] = {value_num(2.5), value_bool(true), value_null(), value_missing(),
                     value_str("", 0)};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        encode_agrees(&other[i], 1, &kb);
    encode_agrees(other, 0, &kb);   /* the global partition: no values */
    buf_free(&kb);
}
END_TEST

typedef struct Bad {
    const char *bytes;
    size_t n;     /* values asked for */
} Bad;

/* Key bytes a checkpoint might carry after damage: each is refused. */
START_TEST(malformed_key_bytes_refused)
{
    static const Bad bad[] = {
        {"", 1},              /* no value */
        {"1,2", 1},           /* one too many */
        {"1", 2},             /* one too few */
        {"1;2", 2},           /* not a comma */
        {"1,", 2},            /* empty second */
        {"\"abc", 1},         /* unterminated string */
        {"\"a\\qb\"", 1},     /* unknown escape */
        {"\"a\\u0041\"", 1},  /* \u only for control bytes */
        {"\"a\\u00\"", 1},    /* short \u */
        {"\"a\\", 1},         /* escape at the end */
        {"t", 1},             /* time without digits */
        {"t12x", 1},          /* time with trailing text */
        {"d1.5", 1},          /* duration not an integer */
        {"1x", 1},            /* number with trailing text */
        {"{\"a\":1", 1},      /* unclosed object */
        {"[1,2", 1},          /* unclosed array */
        {"tru", 1},           /* not a boolean */
    };
    Buf text = BUF_INIT;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Value out[2];
        ck_assert_msg(!part_key_values(bad[i].bytes, strlen(bad[i].bytes), out, bad[i].n, &text),
                      "accepted '%s' as %zu values", bad[i].bytes, bad[i].n);
    }
    buf_free(&text);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
/* ASan's report ends the program with SIGABRT, which a Check test can expect (with
 * its default exit status 1 a failed assertion would look the same). Options from the
 * environment (.ci/run's ASAN_OPTIONS) still apply to every other key. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "abort_on_error=1";
}

/* A released entry stays in its slab, but the slab hides it from AddressSanitizer
 * (base/freeroom.h): reading it must end the (forked) test with ASan's report, as a
 * read of freed malloc memory would. */
START_TEST(released_entry_is_poisoned)
{
    PartTable t;
    part_table_init(&t);
    PartEntry *keep = part_add(&t, "a", 1, part_hash("a", 1), 1);
    PartEntry *gone = part_add(&t, "b", 1, part_hash("b", 1), 1);
    ck_assert_ptr_nonnull(keep);
    ck_assert_ptr_nonnull(gone);
    part_remove(&t, gone);
    volatile uint32_t klen = gone->klen;
    ck_abort_msg("read a released entry unnoticed (klen %u)", (unsigned)klen);
}
END_TEST
#endif

static Suite *partition_suite(void)
{
    Suite *s = suite_create("partition");
    TCase *tc = tcase_create("table");
    tcase_add_loop_test(tc, random_adds_and_removes_agree_with_a_model, 0, 3);
    tcase_add_loop_test(tc, one_home_many_keys, 0, 5);
    tcase_add_test(tc, freed_entry_is_reused_at_once);
    tcase_add_test(tc, pool_keeps_one_empty_slab);
    tcase_add_test(tc, large_keys);
    tcase_add_test(tc, entry_sizes_follow_the_record_layout);
    tcase_add_test(tc, suppression_field_sits_before_each_entry);
    tcase_add_test(tc, free_drops_every_entry);
    tcase_add_test(tc, probe_names_the_entry_through_growth_and_shrinking);
    tcase_add_loop_test(tc, regrow_moves_the_record_within_its_slot, 0, PART_X_SUPPRESS + 1);
    tcase_add_test(tc, failed_regrow_leaves_the_entry_as_it_was);
    tcase_add_test(tc, big_classes_fit_doubling_records);
    tcase_add_test(tc, big_entries_of_every_size);
    tcase_add_test(tc, big_entry_reused_at_once);
    tcase_add_test(tc, big_record_grows_through_every_class);
#if defined(__SANITIZE_ADDRESS__)
    tcase_add_test_raise_signal(tc, released_entry_is_poisoned, SIGABRT);
#endif
    suite_add_tcase(s, tc);
    tc = tcase_create("key bytes");
    tcase_add_test(tc, strings_with_every_control_byte);
    tcase_add_test(tc, scalars_of_every_kind);
    tcase_add_test(tc, long_number_text_kept);
    tcase_add_test(tc, objects_and_arrays_kept_raw);
    tcase_add_test(tc, null_values_have_no_key);
    tcase_add_test(tc, malformed_key_bytes_refused);
    tcase_add_test(tc, encoded_keys_equal_the_general_way);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(partition_suite());
}
