/* runtime/keyhint.c — a shard's key hint (see keyhint.h): linear probing with
 * backward-shift removal, so that a lookup stops at the first empty slot and no
 * tombstones pile up as keys come and go. */
#include "runtime/keyhint.h"

#include <stdlib.h>
#include <string.h>

#define KEYHINT_MIN_SLOTS 16u

void keyhint_init(KeyHint *h)
{
    memset(h, 0, sizeof *h);
}

void keyhint_free(KeyHint *h)
{
    free(h->recs);
    keyhint_init(h);
}

/* The slot of hash's record, or the empty slot where it would go. */
static size_t slot_for(const KeyHint *h, uint64_t hash)
{
    size_t mask = h->n_slots - 1;
    size_t i = keyhint_home(h, hash);
    while (h->recs[i].rules && h->recs[i].hash != hash)
        i = (i + 1) & mask;
    return i;
}

/* Moves every record into a table of n_slots slots. -1 on allocation failure (the
 * hint is unchanged). */
static int rehash(KeyHint *h, size_t n_slots)
{
    KeyHintRec *recs = calloc(n_slots, sizeof *recs);
    if (!recs)
        return -1;
    KeyHint old = *h;
    h->recs = recs;
    h->n_slots = n_slots;
    for (size_t i = 0; i < old.n_slots; i++)
        if (old.recs[i].rules)
            h->recs[slot_for(h, old.recs[i].hash)] = old.recs[i];
    free(old.recs);
    return 0;
}

int keyhint_add(KeyHint *h, uint64_t hash, size_t rule)
{
    if ((h->count + 1) * 4 > h->n_slots * 3 &&
        rehash(h, h->n_slots ? h->n_slots * 2 : KEYHINT_MIN_SLOTS) < 0)
        return -1;
    KeyHintRec *rec = &h->recs[slot_for(h, hash)];
    if (!rec->rules) {
        rec->hash = hash;
        h->count++;
    }
    rec->rules |= UINT64_C(1) << keyhint_bit(rule);
    return 0;
}

/* Empties slot i, then moves back every record of the run after it that may sit
 * nearer its home. */
static void remove_at(KeyHint *h, size_t i)
{
    size_t mask = h->n_slots - 1;
    h->recs[i].rules = 0;
    for (size_t j = (i + 1) & mask; h->recs[j].rules; j = (j + 1) & mask) {
        size_t home = keyhint_home(h, h->recs[j].hash);
        if (((j - home) & mask) < ((j - i) & mask))
            continue;   /* its home lies after the hole: it stays */
        h->recs[i] = h->recs[j];
        h->recs[j].rules = 0;
        i = j;
    }
    h->count--;
}

void keyhint_clear(KeyHint *h, uint64_t hash, size_t rule)
{
    if (!h->count)
        return;
    size_t i = slot_for(h, hash);
    if (!h->recs[i].rules)
        return;
    h->recs[i].rules &= ~(UINT64_C(1) << keyhint_bit(rule));
    if (h->recs[i].rules)
        return;
    remove_at(h, i);
    /* memory follows the live keys; a failed shrink keeps the larger table */
    if (!h->count)
        keyhint_free(h);
    else if (h->n_slots > KEYHINT_MIN_SLOTS && h->count * 8 < h->n_slots)
        (void)rehash(h, h->n_slots / 2);
}
