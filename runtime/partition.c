/* runtime/partition.c — per-rule partition table: open addressing (linear probing,
 * backward-shift deletion, so no tombstones) over separately allocated entries with
 * stable addresses (the deadline heap points at them); grows past load 1/2 and
 * shrinks below 1/8. */
#include "runtime/partition.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/utf8.h"

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
        if (v->raw) {
            buf_append(out, v->raw, v->raw_len);  /* never round a long numeric id */
        } else {
            char tmp[32];   /* as value_to_json writes it, so the text reads back as is */
            buf_append(out, tmp, value_format_num(v->num, tmp));
        }
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

PartEntry *part_add(PartTable *t, const char *kbytes, size_t klen, uint64_t hash)
{
    if (klen >= UINT32_MAX)
        return NULL;
    /* keep at least one empty slot, whatever resize managed */
    if ((t->count + 1) * 2 > t->n_slots &&
        !resize(t, t->n_slots ? t->n_slots * 2 : PART_MIN_SLOTS) && t->count + 1 >= t->n_slots)
        return NULL;
    PartEntry *e = malloc(offsetof(PartEntry, tail) + klen + 1);   /* no tail padding */
    if (!e)
        return NULL;
    e->hash = hash;
    nfa_key_init(&e->nfa);
    e->suppress_until = INT64_MIN;
    e->deadline = INT64_MAX;
    e->heap_pos = SIZE_MAX;
    e->held = e->charged = 0;
    if (klen)
        memcpy(e->tail, kbytes, klen);
    e->tail[klen] = '\0';
    e->kbytes = e->tail;
    e->klen = (uint32_t)klen;
    place_slot(t->slots, t->used, t->n_slots, (PartSlot){hash, e});
    t->count++;
    return e;
}

/* ---- key values from key bytes ------------------------------------------------ */

/* The end of the JSON string that starts at p (its opening quote), or NULL. */
static const char *string_end(const char *p, const char *end, bool *escaped)
{
    *escaped = false;
    for (p++; p < end; p++) {
        if (*p == '\\') {
            *escaped = true;
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* The end of the object or array that starts at p, or NULL. */
static const char *nested_end(const char *p, const char *end)
{
    size_t depth = 0;
    bool escaped;
    while (p < end) {
        if (*p == '"') {
            if (!(p = string_end(p, end, &escaped)))
                return NULL;
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

/* Undoes buf_json_string's escapes (the only ones key bytes hold) into text, which has
 * room reserved; false on an escape it never writes. */
static bool unescape(const char *p, const char *end, Buf *text)
{
    while (p < end) {
        char c = *p++;
        if (c == '\\') {
            if (p == end)
                return false;
            switch (*p++) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                long cp = end - p >= 4 ? hex4_value(p) : -1;
                if (cp < 0 || cp >= 0x20)
                    return false;
                c = (char)cp;
                p += 4;
                break;
            }
            default:
                return false;
            }
        }
        buf_putc_inline(text, c);
    }
    return true;
}

static bool decode_string(const char *p, const char *e, bool escaped, Value *v, Buf *text)
{
    if (!escaped) {
        *v = value_str(p + 1, (size_t)(e - p) - 2);
    } else {
        size_t at = text->len;
        if (!unescape(p + 1, e - 1, text))
            return false;
        *v = value_str(text->data + at, text->len - at);
    }
    v->raw = p;
    v->raw_len = (size_t)(e - p);
    return true;
}

/* strtod/strtoll over [p, e), which is not NUL-terminated; false unless all of it is
 * the number. */
static bool parse_number(const char *p, const char *e, bool integer, double *d, long long *ll)
{
    size_t n = (size_t)(e - p);
    char small[64];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp)
        return false;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    char *stop;
    if (integer)
        *ll = strtoll(tmp, &stop, 10);
    else
        *d = strtod(tmp, &stop);
    bool ok = n > 0 && *stop == '\0';
    if (tmp != small)
        free(tmp);
    return ok;
}

/* The value whose text is [p, e): a number, time, duration or boolean. */
static bool decode_scalar(const char *p, const char *e, Value *v)
{
    size_t n = (size_t)(e - p);
    if (n == 4 && !memcmp(p, "true", 4)) {
        *v = value_bool(true);
        return true;
    }
    if (n == 5 && !memcmp(p, "false", 5)) {
        *v = value_bool(false);
        return true;
    }
    if (n == 4 && !memcmp(p, "null", 4)) {   /* a number that was not finite */
        *v = value_num(NAN);
        return true;
    }
    if (*p == 't' || *p == 'd') {
        long long ms;
        if (!parse_number(p + 1, e, true, NULL, &ms))
            return false;
        *v = *p == 't' ? value_time(ms) : value_dur(ms);
        return true;
    }
    double d;
    if (!parse_number(p, e, false, &d, NULL))
        return false;
    *v = value_num(d);
    v->raw = p;     /* the digits as they came, however many */
    v->raw_len = n;
    return true;
}

static bool decode_value(const char *p, const char *end, const char **next, Value *v, Buf *text)
{
    const char *e;
    bool escaped = false;
    if (*p == '"')
        e = string_end(p, end, &escaped);
    else if (*p == '{' || *p == '[')
        e = nested_end(p, end);
    else if (!(e = memchr(p, ',', (size_t)(end - p))))
        e = end;
    if (!e || e == p)
        return false;
    *next = e;
    if (*p == '"')
        return decode_string(p, e, escaped, v, text);
    if (*p == '{' || *p == '[') {
        *v = value_missing();
        v->type = *p == '{' ? V_OBJ : V_ARR;
        v->raw = p;
        v->raw_len = (size_t)(e - p);
        return true;
    }
    return decode_scalar(p, e, v);
}

bool part_key_values(const char *kbytes, size_t klen, Value *out, size_t n, Buf *text)
{
    buf_clear(text);
    if (!buf_reserve(text, klen + 1))   /* unescaping never lengthens: no realloc below */
        return false;
    const char *p = kbytes, *end = kbytes + klen;
    for (size_t i = 0; i < n; i++) {
        if (i && (p == end || *p++ != ','))
            return false;
        if (p == end || !decode_value(p, end, &p, &out[i], text))
            return false;
    }
    return p == end;
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
