/* runtime/partition.c — per-rule partition table: open addressing (linear probing,
 * backward-shift deletion, so no tombstones) over separately allocated entries with
 * stable addresses (the deadline heap points at them); grows past load 1/2 and
 * shrinks below 1/8. */
#include "runtime/partition.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

#define PART_MIN_SLOTS 16

void part_table_init(PartTable *t)
{
    t->slots = NULL;
    t->used = NULL;
    t->n_slots = 0;
    t->count = 0;
}

static void mark_used(uint64_t *used, size_t i, bool on)
{
    if (on)
        used[i / 64] |= (uint64_t)1 << (i % 64);
    else
        used[i / 64] &= ~((uint64_t)1 << (i % 64));
}

static size_t used_words(size_t n_slots)
{
    return n_slots / 64 ? n_slots / 64 : 1;
}

/* Key bytes only need to be canonical and unambiguous, not pretty: a type tag keeps
 * a time and a number with the same digits apart. */
static void append_key_value(const Value *v, Buf *out)
{
    switch (v->type) {
    case V_STR:
        buf_json_string(out, v->s, v->len);   /* one spelling per string, whatever the escapes */
        return;
    case V_BOOL:
        buf_puts(out, v->b ? "true" : "false");
        return;
    case V_TIME:
    case V_DUR:
        buf_printf(out, "%c%lld", v->type == V_TIME ? 't' : 'd', (long long)v->i);
        return;
    case V_NUM:
        if (v->raw)
            buf_append(out, v->raw, v->raw_len);  /* never round a long numeric id */
        else
            buf_printf(out, "%.17g", v->num);
        return;
    default:
        if (v->raw)
            buf_append(out, v->raw, v->raw_len);
        return;
    }
}

bool part_key_bytes(const Value *vals, size_t n, Buf *out)
{
    for (size_t i = 0; i < n; i++) {
        const Value *v = &vals[i];
        if (value_is_null(v))
            return false;
        if (i)
            buf_putc(out, ',');
        append_key_value(v, out);
    }
    return true;
}

uint64_t part_hash(const char *kbytes, size_t klen)
{
    return hash_bytes(HASH_SEED, kbytes, klen);
}

PartEntry *part_lookup(const PartTable *t, const char *kbytes, size_t klen, uint64_t hash)
{
    if (!t->n_slots)
        return NULL;
    size_t mask = t->n_slots - 1;
    for (size_t i = hash & mask; t->slots[i].entry; i = (i + 1) & mask) {
        const PartEntry *e = t->slots[i].entry;
        if (t->slots[i].hash == hash && e->klen == klen && !memcmp(e->kbytes, kbytes, klen))
            return t->slots[i].entry;
    }
    return NULL;
}

static void place_slot(PartSlot *slots, uint64_t *used, size_t n_slots, PartSlot s)
{
    size_t mask = n_slots - 1, i = s.hash & mask;
    while (slots[i].entry)
        i = (i + 1) & mask;
    slots[i] = s;
    mark_used(used, i, true);
}

/* Moves every entry into a new slot array; on allocation failure keeps the old one
 * (a table that cannot resize still works while it has room). */
static bool resize(PartTable *t, size_t n_slots)
{
    PartSlot *ns = calloc(n_slots, sizeof *ns);
    uint64_t *nu = calloc(used_words(n_slots), sizeof *nu);
    if (!ns || !nu) {
        free(ns);
        free(nu);
        return false;
    }
    for (size_t i = 0; i < t->n_slots; i++)
        if (t->slots[i].entry)
            place_slot(ns, nu, n_slots, t->slots[i]);
    free(t->slots);
    free(t->used);
    t->slots = ns;
    t->used = nu;
    t->n_slots = n_slots;
    return true;
}

static size_t value_bytes(const Value *v)
{
    size_t n = v->raw ? v->raw_len : 0;
    if (v->type == V_STR && v->s)
        n += v->len;
    return n;
}

/* Copies `len` bytes to *cursor and advances it; returns the copy. */
static const char *copy_bytes(char **cursor, const char *src, size_t len)
{
    char *dst = *cursor;
    if (len)
        memcpy(dst, src, len);
    *cursor += len;
    return dst;
}

PartEntry *part_insert(PartTable *t, const char *kbytes, size_t klen, uint64_t hash,
                       const Value *key, size_t n_key)
{
    /* keep at least one empty slot, whatever resize managed */
    if ((t->count + 1) * 2 > t->n_slots &&
        !resize(t, t->n_slots ? t->n_slots * 2 : PART_MIN_SLOTS) && t->count + 1 >= t->n_slots)
        return NULL;
    size_t extra = klen + 1;
    for (size_t i = 0; i < n_key; i++)
        extra += value_bytes(&key[i]);
    PartEntry *e = malloc(sizeof *e + n_key * sizeof(Value) + extra);
    if (!e)
        return NULL;
    e->hash = hash;
    e->nfa = NULL;
    e->suppress_until = INT64_MIN;
    e->deadline = INT64_MAX;
    e->heap_pos = SIZE_MAX;
    e->held = e->charged = 0;
    e->n_key = n_key;
    e->key = (Value *)(e + 1);
    char *cursor = (char *)(e->key + n_key);
    for (size_t i = 0; i < n_key; i++) {
        Value v = key[i];
        if (v.raw)
            v.raw = copy_bytes(&cursor, v.raw, v.raw_len);
        if (v.type == V_STR && v.s)
            v.s = copy_bytes(&cursor, v.s, v.len);
        e->key[i] = v;
    }
    e->kbytes = copy_bytes(&cursor, kbytes, klen);
    *cursor = '\0';
    e->klen = klen;
    place_slot(t->slots, t->used, t->n_slots, (PartSlot){hash, e});
    t->count++;
    return e;
}

/* Is slot `home` cyclically within (gap, at]? Then the entry at `at` may not move to gap. */
static bool home_between(size_t gap, size_t home, size_t at)
{
    return gap <= at ? (gap < home && home <= at) : (gap < home || home <= at);
}

void part_remove(PartTable *t, PartEntry *e)
{
    if (!t->n_slots)
        return;
    size_t mask = t->n_slots - 1, gap = e->hash & mask;
    while (t->slots[gap].entry && t->slots[gap].entry != e)
        gap = (gap + 1) & mask;
    if (!t->slots[gap].entry)
        return;
    free(e);
    t->count--;
    /* backward shift: pull later entries of the probe run into the gap */
    for (size_t at = (gap + 1) & mask; t->slots[at].entry; at = (at + 1) & mask) {
        if (home_between(gap, t->slots[at].hash & mask, at))
            continue;
        t->slots[gap] = t->slots[at];
        gap = at;
    }
    t->slots[gap].entry = NULL;
    mark_used(t->used, gap, false);
    if (t->n_slots > PART_MIN_SLOTS && t->count < t->n_slots / 8)
        resize(t, t->n_slots / 2);
}

PartEntry *part_next(const PartTable *t, size_t *pos, PartEntry *e)
{
    for (size_t i = e ? *pos + 1 : *pos; i < t->n_slots; i++)
        if (t->slots[i].entry) {
            *pos = i;
            return t->slots[i].entry;
        }
    *pos = t->n_slots;
    return NULL;
}

void part_table_free(PartTable *t, void (*drop)(PartEntry *e, void *user), void *user)
{
    for (size_t i = 0; i < t->n_slots; i++) {
        PartEntry *e = t->slots[i].entry;
        if (!e)
            continue;
        if (drop)
            drop(e, user);
        free(e);
    }
    free(t->slots);
    free(t->used);
    part_table_init(t);
}
