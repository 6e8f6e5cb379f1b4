/* runtime/keyhint.h — a shard's key hint: key hash -> the rules that may hold that key.
 *
 * Owns: one open-addressing table of records, each a 64-bit key hash (no key bytes)
 * and a bit set over the shard's rules, folded to one word: bit r % 64 is set while
 * rule r's partition table may hold an entry whose key has that hash. A record is 16
 * bytes, since every event reads one at random among all live keys: the smaller the
 * table, the more of it stays in cache (with more than 64 rules, rules r and r + 64
 * share a bit, which only costs a probe). With many rules an event's key has state
 * in only a few of them: one read of the hint replaces a probe of every rule's table,
 * each a cache miss in a different place. The owner keeps it exact: never a clear bit
 * for a rule that holds the hash (no false negatives); a set bit without an entry (two
 * keys under one hash, or a rule sharing the bit) only costs a probe. A record whose bits are all clear is
 * removed, so memory follows the live keys. Not thread-safe: one per shard. */
#ifndef VIGIL_RUNTIME_KEYHINT_H
#define VIGIL_RUNTIME_KEYHINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A record with no bit set is an empty slot (a live record always has one). */
typedef struct KeyHintRec {
    uint64_t hash;
    uint64_t rules;    /* bit r % 64: rule r may hold the hash */
} KeyHintRec;

typedef struct KeyHint {
    KeyHintRec *recs;  /* heap, owned; n_slots; NULL while no record is live */
    size_t n_slots;    /* a power of two, at most 3/4 full */
    size_t count;      /* live records */
} KeyHint;

void keyhint_init(KeyHint *h);
void keyhint_free(KeyHint *h);

/* Rules share a bit when they are 64 apart: the rules to check before clearing one are
 * bit, bit + 64, ... */
static inline size_t keyhint_bit(size_t rule)
{
    return rule % 64;
}

static inline size_t keyhint_home(const KeyHint *h, uint64_t hash)
{
    /* the top bits too: the partition tables index by the low ones, so keys crowded
     * in one of them spread here */
    return (size_t)(hash >> 32 ^ hash) & (h->n_slots - 1);
}

/* The rule bits of hash (read them with keyhint_has); 0: no rule holds it. */
static inline uint64_t keyhint_find(const KeyHint *h, uint64_t hash)
{
    if (!h->count)
        return 0;
    size_t mask = h->n_slots - 1;
    for (size_t i = keyhint_home(h, hash); h->recs[i].rules; i = (i + 1) & mask)
        if (h->recs[i].hash == hash)
            return h->recs[i].rules;
    return 0;
}

static inline bool keyhint_has(uint64_t bits, size_t rule)
{
    return (bits >> keyhint_bit(rule)) & 1;
}

/* Starts loading the record a lookup of hash reads first. */
static inline void keyhint_prefetch(const KeyHint *h, uint64_t hash)
{
    if (h->n_slots)
        __builtin_prefetch(&h->recs[keyhint_home(h, hash)]);
}

/* Sets rule's bit for hash (adding the record). -1 on allocation failure: the hint
 * is then incomplete and must not be trusted (the caller drops it). */
int keyhint_add(KeyHint *h, uint64_t hash, size_t rule);
/* Clears rule's bit for hash, removing the record once no bit is left. The caller
 * clears only when no rule sharing the bit (keyhint_bit) holds an entry with this
 * hash. */
void keyhint_clear(KeyHint *h, uint64_t hash, size_t rule);

#endif
