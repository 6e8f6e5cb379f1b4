/* runtime/partition.h — partition table: key -> every rule's matcher state for it.
 *
 * Owns: the hash table, its entries and the slabs they are carved from. An entry is
 * one key's record: the key bytes (the canonical text of the key values, the hash-table
 * key) and a slot per rule holding state for that key. The key values themselves are
 * not kept, since part_key_values derives them from the bytes where they are needed
 * (alerts, checkpoints), which is rare next to the keys that start and die between two
 * alerts. The slots hold each rule's NfaKey inline (one allocation and one cache miss
 * per key, not one per rule); the table does not know the NFA, so the caller clears
 * the slots (nfa_key_clear) before part_remove. Entries are removed when no rule
 * holds state for the key, and the slot array and the slabs shrink with them, so
 * memory follows the number of live keys (but for a table that empties for good:
 * part_table_keep_size). Not thread-safe: one table per worker. */
#ifndef VIGIL_RUNTIME_PARTITION_H
#define VIGIL_RUNTIME_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/slab.h"
#include "nfa/nfa.h"
#include "nfa/value.h"

/* One rule's state for the key of the entry that holds it (48 bytes): its matcher,
 * and what the shard needs of it without running the matcher. */
typedef struct PartSlot {
    NfaKey nfa;               /* this rule's partial matches for the key (nfa/nfa.h: 32
                                 bytes, the first partial match inline) */
    uint32_t rule : 31;       /* the rule's number in the shard's rule set */
    uint32_t waits : 1;       /* its next time may pass unattended (runtime/shard.c) */
    uint32_t held;            /* --max-memory's estimate (runtime/budget.h) of the bytes
                                 of the events and nodes its matches hold; saturates */
    int64_t due;              /* when the rule next needs to run for this key: the
                                 matcher's deadline, or the end of the key's suppression
                                 while the matcher is idle; INT64_MAX: never. Only in an
                                 entry with room for more than one slot: the one slot of
                                 an entry with room for one ends before it (scenario 5's
                                 million keys hold one partial match each, and the shard
                                 finds that slot's time from its matcher, which it has
                                 just run), so that such an entry is 72 bytes for a
                                 9-byte key, not 80. Never read or write it there. */
} PartSlot;

/* The bytes of an entry's `room` slots. */
static inline size_t part_slots_bytes(size_t room)
{
    return room == 1 ? offsetof(PartSlot, due) : room * sizeof(PartSlot);
}

/* Every byte is paid once per live key (scenario 5 holds a million), so each field
 * says what it is for. An entry is one key's record, shared by every rule whose key
 * has these bytes: a header of 20 bytes, the key bytes, then (8-aligned) the slots of
 * the rules holding state for the key, in increasing rule order. One lookup finds a
 * key's state in every rule, one timer serves them all, and the rules' states sit side
 * by side (scenario 4: a user's event touches one record, where it touched a table
 * slot, an entry and a timer per rule). What is not here, and why:
 *   - the key's hash: the caller has it on every lookup and add; the table
 *     recomputes it from the key bytes where it needs it without a caller (a growth:
 *     a shrink places entries from their slots' distances; a removal whose caller
 *     kept no hash, part_remove_hashed; a probe distance past PART_DIST_MAX, the
 *     timers' tie order and their look-ahead), a few nanoseconds for a short key;
 *   - a pointer to the key bytes or the slots: they follow the header;
 *   - what the key counts for in the --max-memory estimate: a function of the entry's
 *     size and its slots, recomputed to take it back (runtime/shard.c);
 *   - the end of suppression: only rules with suppression use it, so they keep it in
 *     a table of their own (runtime/shard.c), and the others pay nothing.
 * The entry lives in a slab of its size class (part_entry_bytes: 8-byte steps up to
 * 512 bytes, coarser ones up to half a slab, no allocator header); it moves when its
 * slots outgrow their room (part_regrow). */
typedef struct PartEntry {
    int64_t deadline;         /* the time the timers hold it under (runtime/deadline.h),
                                 INT64_MAX while they do not: they read it from here */
    uint32_t heap_pos;        /* where the timers hold it (runtime/deadline.c), or
                                 PART_NOT_TIMED */
    uint32_t klen;            /* length of the key bytes */
    uint16_t n_slots;         /* rules holding state for the key */
    uint16_t room;            /* slots the entry has room for */
    char tail[];              /* the key bytes (canonical, part_key_bytes), NUL-terminated;
                                 then, from the next multiple of 8, the slots */
} PartEntry;

/* Where an entry's slots start, from its start: past the key bytes and their NUL. */
static inline size_t part_slots_offset(size_t klen)
{
    return (offsetof(PartEntry, tail) + klen + 1 + 7) & ~(size_t)7;
}

static inline PartSlot *part_slots(PartEntry *e)
{
    return (PartSlot *)(void *)((char *)e + part_slots_offset(e->klen));
}

static inline const PartSlot *part_slots_c(const PartEntry *e)
{
    return (const PartSlot *)(const void *)((const char *)e + part_slots_offset(e->klen));
}

/* Most slots a record holds: rules with state for one key. */
#define PART_MAX_SLOTS UINT16_MAX

#define PART_NOT_TIMED UINT32_MAX

/* The optional fields of a table's entries (part_table_set_extras), each just before
 * the entry. */
enum {
    PART_X_SUPPRESS = 1u,     /* int64_t: alerts before this time are suppressed
                                 (INT64_MIN: none); part_suppress_until */
};

/* Only for entries of a table with PART_X_SUPPRESS. */
static inline int64_t *part_suppress_until(PartEntry *e)
{
    return (int64_t *)(void *)((char *)e - sizeof(int64_t));
}

/* A slot is one 64-bit word (0: empty): the entry's address, the top bits of the key's
 * hash as a tag, so that a probe touches an entry only on a tag match, and in the
 * three low bits (entries are 8-aligned) how far the slot is from its home, saturated
 * at 7, so that removal shifts entries back without reading them. */
#define PART_PTR_BITS (UINTPTR_MAX > UINT32_MAX ? 48 : 32)
#define PART_DIST_MAX 7u

/* Entry size classes: 8 .. 512 bytes, in steps of 8, each served by its own slabs
 * (base/slab.h: no allocator header per entry, and the churn of keys that start and die
 * reuses freed entries at once). */
#define PART_SLAB_CLASSES 64u
/* Then coarser classes for the records of many rules, up to half a slab's room: the
 * size that 16, 12, 8, 6, 4, 3 and 2 entries fill (part_big_class_bytes), since a
 * record's room doubles as it grows (runtime/shard.c: 10 slots and a short key are the
 * last fine class, 512 bytes; 20, 40, 80 and 160 slots then fit the 16, 8, 4 and 2 per
 * slab). Why not malloc: in scenario 4, whose records of 10 rules and more were half
 * of glibc's allocator's calls, that allocator took 6 % of the perf samples for under
 * 2 % of the instructions (cold chunk headers, coalescing). Larger entries are
 * malloc'd. */
#define PART_BIG_CLASSES 7u
#define PART_CLASSES (PART_SLAB_CLASSES + PART_BIG_CLASSES)

/* The bytes of the big class i (0 .. PART_BIG_CLASSES - 1), in increasing order. */
static inline size_t part_big_class_bytes(size_t i)
{
    static const unsigned char per_slab[PART_BIG_CLASSES] = {16, 12, 8, 6, 4, 3, 2};
    return (SLAB_ROOM / per_slab[i]) & ~(size_t)7;
}

/* Where entries come from: one per table, or one per thread shared by its tables (a
 * shard's table of keys and its rules' tables of suppressions), so that an entry one
 * table frees is the next one another makes, still in the cache. */
typedef struct PartSlabClass {
    SlabList avail;           /* the slabs of the class with room */
    Slab *recent;             /* the one an entry was last freed to, or NULL */
} PartSlabClass;

typedef struct PartPool {
    PartSlabClass *cls;       /* PART_CLASSES; heap, owned, made on the first entry */
    SlabSource src;           /* the slabs, and the one empty spare any class reuses */
} PartPool;

/* What a lookup reads before any entry: the table's slot array, bitmap and size
 * (part_probe_of, valid until the table next changes), so that a caller can test a
 * key or fetch its slot without reading the table itself. */
typedef struct PartProbe {
    const uint64_t *slots;
    const uint64_t *used;
    size_t n_slots;
} PartProbe;

typedef struct PartTable {
    uint64_t *slots;          /* heap, owned; n_slots is a power of two, at most half full */
    uint64_t *used;           /* one bit per slot: occupied; heap, owned (n_slots / 64
                                 words, at least one) */
    size_t n_slots;
    size_t count;
    PartPool own;             /* the entries' pool, unless shared is set */
    PartPool *shared;         /* borrowed; NULL: own */
    unsigned extras;          /* PART_X_* its entries have */
    bool keep_size;           /* removals do not shrink the slots (part_table_keep_size) */
    size_t pre;               /* the bytes they take before each entry */
} PartTable;

static inline uint64_t part_slot_tag(uint64_t hash)
{
    return hash >> PART_PTR_BITS;
}

static inline PartEntry *part_slot_entry(uint64_t slot)
{
    return (PartEntry *)(uintptr_t)(slot & ((UINT64_C(1) << PART_PTR_BITS) - 1 - PART_DIST_MAX));
}

static inline bool part_slot_tagged(uint64_t slot, uint64_t hash)
{
    return part_slot_tag(slot) == part_slot_tag(hash);
}

void part_table_init(PartTable *t);
/* A table whose entries come from pool, which must outlive it. */
void part_table_init_shared(PartTable *t, PartPool *pool);
/* The optional fields (PART_X_*) of the entries added from now on: only while the table
 * is empty. */
void part_table_set_extras(PartTable *t, unsigned extras);
/* With keep true, removals leave the slot array at its size: a table that empties for
 * good (the end of input) would otherwise shrink and rehash again and again on the way
 * down, for slots part_table_free then releases at once. Growth is unchanged. */
void part_table_keep_size(PartTable *t, bool keep);
void part_pool_init(PartPool *pool);
/* Frees the pool's own memory; every table using it must be freed first. */
void part_pool_free(PartPool *pool);
/* Appends the canonical bytes of a key (strings re-encoded as JSON, numbers with their
 * original text or else their shortest exact form) to out. False if a value is missing
 * or null: such an event has no key. */
bool part_key_bytes(const Value *vals, size_t n, Buf *out);
/* The n key values that part_key_bytes wrote as kbytes: strings, numbers and objects
 * point into kbytes (their raw text is the canonical one), strings with escapes into
 * text, which is cleared first. Both must outlive the values. False on malformed
 * bytes, the wrong number of values or allocation failure. */
bool part_key_values(const char *kbytes, size_t klen, Value *out, size_t n, Buf *text);
/* The hash of key bytes, the only one a table takes: the table recomputes it. */
uint64_t part_hash(const char *kbytes, size_t klen);
/* part_key_bytes into out, cleared first, and part_hash of what it wrote into *hash:
 * the same bytes and hash, in one pass for the usual key (one plain string). False if
 * a value is missing or null; out->failed on allocation failure (*hash then means
 * nothing). */
bool part_key_encode(const Value *vals, size_t n, Buf *out, uint64_t *hash);
/* part_hash of what part_key_bytes writes for vals, into *hash, false where it writes
 * nothing (a value missing or null, or no memory in tmp, scratch for the bytes). A
 * single string is hashed as it is, without the copy or the escape test: exact unless
 * it needs an escape, else some other hash. For guessing which record a key has
 * before it is looked up (runtime/shard.c), where a wrong guess costs only time. */
bool part_key_hash_guess(const Value *vals, size_t n, Buf *tmp, uint64_t *hash);
static inline uint64_t part_entry_hash(const PartEntry *e)
{
    return part_hash(e->tail, e->klen);
}
PartEntry *part_lookup(const PartTable *t, const char *kbytes, size_t klen, uint64_t hash);
/* False when no entry can have this hash: its home slot is empty, and with linear
 * probing and backward-shift removal every entry sits in an unbroken run from its
 * home. Reads a bitmap 64 times smaller than the slots, which stays in cache longer
 * than they do: a key with no entry is mostly answered without reading the slots. */
static inline bool part_probe_may_hold(const PartProbe *p, uint64_t hash)
{
    if (!p->n_slots)
        return false;
    size_t i = hash & (p->n_slots - 1);
    return (p->used[i / 64] >> (i % 64)) & 1;
}
/* Starts loading what a lookup of `hash` reads first, the bitmap word and the slot,
 * so that their cache misses overlap other work instead of waiting for it. */
static inline void part_probe_prefetch(const PartProbe *p, uint64_t hash)
{
    if (!p->n_slots)
        return;
    size_t i = hash & (p->n_slots - 1);
    __builtin_prefetch(&p->used[i / 64]);
    __builtin_prefetch(&p->slots[i]);
}
/* The entry a lookup of `hash` would compare first: the first one in its probe run
 * whose slot holds the same hash tag, found from the slots alone (NULL: the key has no
 * entry). Lets a caller start fetching the entry before comparing its bytes. */
static inline PartEntry *part_probe_candidate(const PartProbe *p, uint64_t hash)
{
    if (!p->n_slots)
        return NULL;
    size_t mask = p->n_slots - 1;
    for (size_t i = hash & mask; p->slots[i]; i = (i + 1) & mask)
        if (part_slot_tagged(p->slots[i], hash))
            return part_slot_entry(p->slots[i]);
    return NULL;
}
static inline PartProbe part_probe_of(const PartTable *t)
{
    return (PartProbe){t->slots, t->used, t->n_slots};
}
/* The same, from the table itself. */
static inline bool part_may_hold(const PartTable *t, uint64_t hash)
{
    PartProbe p = part_probe_of(t);
    return part_probe_may_hold(&p, hash);
}
static inline PartEntry *part_candidate(const PartTable *t, uint64_t hash)
{
    PartProbe p = part_probe_of(t);
    return part_probe_candidate(&p, hash);
}
/* Is e the entry of these key bytes? */
static inline bool part_entry_is(const PartEntry *e, const char *kbytes, size_t klen)
{
    return e->klen == klen && !memcmp(e->tail, kbytes, klen);
}
/* A new entry with a copy of the key bytes, room for `room` slots and none in use (no
 * suppression); hash is part_hash of the bytes. NULL on allocation failure (or a
 * key of 4 GiB or more, or an address beyond PART_PTR_BITS). */
PartEntry *part_add(PartTable *t, const char *kbytes, size_t klen, uint64_t hash,
                    size_t room);
/* Moves e (whose key hashes to hash) to a new entry with room for `room` slots (at
 * least its n_slots), with the same header, key and slots, in the same table slot;
 * frees e. The caller re-points what else holds e (the timers: deadline_moved). NULL
 * on allocation failure, e unchanged. */
PartEntry *part_regrow(PartTable *t, PartEntry *e, uint64_t hash, size_t room);
/* The bytes that the slab class (or the own malloc) of an entry with klen key bytes and
 * room for `room` slots must hold, its optional fields (pre bytes: PartTable.pre)
 * included; a big class rounds it up to the class's size. */
static inline size_t part_entry_bytes(size_t klen, size_t pre, size_t room)
{
    size_t n = pre + (room ? part_slots_offset(klen) + part_slots_bytes(room)
                           : offsetof(PartEntry, tail) + klen + 1);
    return (n + 7) & ~(size_t)7;                             /* entries are 8-aligned */
}
/* Starts loading what a lookup and the first slots read (the header, a short key's
 * bytes and the slot after them: two cache lines), from its address alone. */
static inline void part_entry_prefetch(const PartEntry *e)
{
    const char *p = (const char *)e;
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
}
/* Unlinks and frees an entry (its slots' NfaKeys must be idle: nfa_key_clear). */
void part_remove(PartTable *t, PartEntry *e);
/* The same, starting from hash, which should be part_entry_hash(e) (a caller may have
 * computed it already): a wrong one costs only time, since the entry is then looked
 * for from its own hash. */
void part_remove_hashed(PartTable *t, PartEntry *e, uint64_t hash);
/* Iteration: start with *pos = 0 and e = NULL; returns the entry after e, or NULL at
 * the end. The table must not change during an iteration (collect, then remove). */
PartEntry *part_next(const PartTable *t, size_t *pos, PartEntry *e);
/* Writes every entry to out (room for t->count) in the order of part_next; returns
 * how many. Walks the occupancy bitmap: cheap for a table with few entries in many
 * slots. */
size_t part_entries(const PartTable *t, PartEntry **out);
/* Frees every entry, calling drop(entry, user) first on each (may be NULL). */
void part_table_free(PartTable *t, void (*drop)(PartEntry *e, void *user), void *user);

#endif
