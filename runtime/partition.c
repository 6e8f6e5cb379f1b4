/* runtime/partition.c — per-rule partition table: chained hash table of key entries
 * with stable entry addresses (the deadline heap points at entries), growing at load
 * 1 and shrinking at load 1/8. */
#include "runtime/partition.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

#define PART_MIN_BUCKETS 16

void part_table_init(PartTable *t)
{
    t->buckets = NULL;
    t->n_buckets = 0;
    t->count = 0;
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
    if (!t->n_buckets)
        return NULL;
    for (PartEntry *e = t->buckets[hash & (t->n_buckets - 1)]; e; e = e->next)
        if (e->hash == hash && e->klen == klen && !memcmp(e->kbytes, kbytes, klen))
            return e;
    return NULL;
}

/* Relinks every entry into a new bucket array; on allocation failure keeps the old one
 * (a table that cannot resize still works, only slower). */
static void rehash(PartTable *t, size_t n_buckets)
{
    PartEntry **nb = calloc(n_buckets, sizeof *nb);
    if (!nb)
        return;
    for (size_t b = 0; b < t->n_buckets; b++) {
        PartEntry *e = t->buckets[b];
        while (e) {
            PartEntry *next = e->next;
            size_t i = e->hash & (n_buckets - 1);
            e->next = nb[i];
            nb[i] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = nb;
    t->n_buckets = n_buckets;
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
    if (!t->n_buckets) {
        rehash(t, PART_MIN_BUCKETS);
        if (!t->n_buckets)
            return NULL;
    }
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
    size_t b = hash & (t->n_buckets - 1);
    e->next = t->buckets[b];
    t->buckets[b] = e;
    if (++t->count > t->n_buckets)
        rehash(t, t->n_buckets * 2);
    return e;
}

void part_remove(PartTable *t, PartEntry *e)
{
    PartEntry **link = &t->buckets[e->hash & (t->n_buckets - 1)];
    while (*link && *link != e)
        link = &(*link)->next;
    if (!*link)
        return;
    *link = e->next;
    free(e);
    t->count--;
    if (t->n_buckets > PART_MIN_BUCKETS && t->count < t->n_buckets / 8)
        rehash(t, t->n_buckets / 2);
}

PartEntry *part_next(const PartTable *t, size_t *bucket, PartEntry *e)
{
    if (e && e->next)
        return e->next;
    size_t b = e ? *bucket + 1 : *bucket;
    for (; b < t->n_buckets; b++)
        if (t->buckets[b]) {
            *bucket = b;
            return t->buckets[b];
        }
    *bucket = t->n_buckets;
    return NULL;
}

void part_table_free(PartTable *t, void (*drop)(PartEntry *e, void *user), void *user)
{
    for (size_t b = 0; b < t->n_buckets; b++) {
        PartEntry *e = t->buckets[b];
        while (e) {
            PartEntry *next = e->next;
            if (drop)
                drop(e, user);
            free(e);
            e = next;
        }
    }
    free(t->buckets);
    part_table_init(t);
}
