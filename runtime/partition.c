/* runtime/partition.c — per-rule partition table: open addressing (linear probing,
 * backward-shift deletion, so no tombstones) over entries with stable addresses (the
 * deadline heap points at them), carved from the slabs of their size class; grows past
 * load 1/2 and shrinks below 1/8 (8-byte slots: 16 to 64 bytes per key). */
#include "runtime/partition.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/utf8.h"

#define PART_MIN_SLOTS 16

/* ---- slabs ----------------------------------------------------------------------
 * Each size class has its list of slabs with room (base/slab.h); one spare, shared by
 * all classes, is kept by the pool's SlabSource and an emptied slab goes there or back
 * to malloc, so memory follows the live keys and a key that dies and comes back costs
 * no allocation. The slab an entry was last freed to serves the next one of its class
 * (LIFO: the entry is still in the cache), without relinking lists, whose other slabs'
 * headers are cold. Entries of more than 512 bytes take the smallest big class that
 * holds them (partition.h), and those of more than half a slab's room a malloc of their
 * own. */
#define ENTRY_ALIGN 8u
#define SLAB_CLASSES PART_SLAB_CLASSES
#define ALL_CLASSES PART_CLASSES

_Static_assert(SLAB_CLASSES * ENTRY_ALIGN * 16 <= SLAB_ROOM,
               "a slab holds at least sixteen entries of its largest class");

_Static_assert(ENTRY_ALIGN == 8, "part_entry_bytes rounds to 8 bytes");

/* The class of an entry of `bytes`, or ALL_CLASSES when it gets its own malloc. */
static size_t slab_class(size_t bytes)
{
    if (bytes <= SLAB_CLASSES * ENTRY_ALIGN)
        return bytes / ENTRY_ALIGN - 1;
    size_t big = 0;
    while (big < PART_BIG_CLASSES && part_big_class_bytes(big) < bytes)
        big++;
    return SLAB_CLASSES + big;
}

/* The bytes of each entry of class cls's slabs. */
static size_t class_bytes(size_t cls)
{
    if (cls < SLAB_CLASSES)
        return (cls + 1) * ENTRY_ALIGN;
    return part_big_class_bytes(cls - SLAB_CLASSES);
}

/* A slab of class cls with room for an entry, on the class's list; NULL on allocation
 * failure. */
static Slab *slab_with_room(PartPool *pool, size_t cls)
{
    PartSlabClass *c = &pool->cls[cls];
    if (c->recent && !slab_full(c->recent))
        return c->recent;
    if (c->avail.head)
        return c->avail.head;
    Slab *sl = slab_obtain(&pool->src, class_bytes(cls));
    if (sl)
        slab_list_push(&c->avail, sl);
    return sl;
}

/* Room for an entry and the pre bytes before it; the start of that room. */
static void *entry_alloc(PartPool *pool, size_t bytes)
{
    size_t cls = slab_class(bytes);
    if (cls == ALL_CLASSES)
        return malloc(bytes);
    if (!pool->cls && !(pool->cls = calloc(ALL_CLASSES, sizeof *pool->cls)))
        return NULL;
    Slab *sl = slab_with_room(pool, cls);
    if (!sl)
        return NULL;
    void *e = slab_take(sl, pool->src.memcheck);
    if (slab_full(sl))
        slab_list_unlink(&pool->cls[cls].avail, sl);
    return e;
}

/* (This and place_from forced inline into their callers were measured on scenario 4's
 * 1M lines: 25M instructions fewer, -0.3%, but CPU time rose with them, 1.40 -> 1.47 s
 * median in 15 runs each in turns, with nfa_key_prefetch inline too; not kept.) */
static void entry_release(PartPool *pool, PartEntry *entry, size_t pre)
{
    size_t bytes = part_entry_bytes(entry->klen, pre, entry->room);
    size_t cls = slab_class(bytes);
    void *e = (char *)entry - pre;
    if (cls == ALL_CLASSES) {
        free(e);
        return;
    }
    PartSlabClass *c = &pool->cls[cls];
    Slab *sl = slab_of(e);
    bool was_full = slab_full(sl);
    slab_put(sl, e, pool->src.memcheck);
    if (was_full)
        slab_list_push(&c->avail, sl);
    if (sl->live) {
        c->recent = sl;
        return;
    }
    slab_list_unlink(&c->avail, sl);
    if (c->recent == sl)
        c->recent = NULL;
    slab_retire(&pool->src, sl);
}

void part_pool_init(PartPool *pool)
{
    pool->cls = NULL;
    slab_source_init(&pool->src);
}

void part_pool_free(PartPool *pool)
{
    free(pool->cls);
    slab_drop_spare(&pool->src);
    part_pool_init(pool);
}

/* ---- the table ------------------------------------------------------------------ */

void part_table_init(PartTable *t)
{
    *t = (PartTable){.slots = NULL, .shared = NULL, .extras = 0, .pre = 0, .keep_size = false};
    part_pool_init(&t->own);
}

void part_table_set_extras(PartTable *t, unsigned extras)
{
    if (t->count)
        return;
    t->extras = extras;
    t->pre = extras & PART_X_SUPPRESS ? sizeof(int64_t) : 0;
}

void part_table_keep_size(PartTable *t, bool keep)
{
    t->keep_size = keep;
}

void part_table_init_shared(PartTable *t, PartPool *pool)
{
    part_table_init(t);
    t->shared = pool;
}

static PartPool *pool_of(PartTable *t)
{
    return t->shared ? t->shared : &t->own;
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

/* part_hash of buf_json_string's spelling of a string it writes as it is: the text
 * between quotes, hashed in place without writing it. */
static uint64_t quoted_string_hash(const char *s, size_t n)
{
    uint64_t h = hash_bytes(HASH_SEED, "\"", 1);
    h = hash_bytes(h, s, n);
    return hash_bytes(h, "\"", 1);
}

/* The usual key is one string of plain characters (a user or an order id), which
 * buf_json_string writes as it is between quotes: here those bytes are copied into
 * the empty `out`, tested 8 at a time there as buf_json_verbatim_len tests them (the
 * copy padded with a word of plain bytes, so no test needs a tail) and hashed, where
 * part_key_bytes and part_hash would call out for the scan, the copy and the hash
 * (scenario 4: 238 -> 136 instructions per event's key). False at a byte that test
 * stops at (or without memory), and the caller takes the general way. */
static bool plain_string_key(const char *s, size_t n, Buf *out, uint64_t *hash)
{
    /* room for the copy, a word of plain padding after it, the quotes and the NUL */
    if (out->cap - out->len < n + 11 && !buf_reserve(out, n + 10))
        return false;
    char *d = out->data;
    memcpy(d + 1, s, n);
    memset(d + n + 1, 'a', 8);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w;
        memcpy(&w, d + i + 1, sizeof w);
        if (json_string_stops(w))
            return false;
    }
    d[0] = '"';
    d[n + 1] = '"';
    d[n + 2] = '\0';
    out->len = n + 2;
    *hash = quoted_string_hash(d + 1, n);
    return true;
}

bool part_key_encode(const Value *vals, size_t n, Buf *out, uint64_t *hash)
{
    buf_clear(out);
    if (n == 1 && vals[0].type == V_STR && plain_string_key(vals[0].s, vals[0].len, out, hash))
        return true;
    if (!part_key_bytes(vals, n, out))
        return false;
    *hash = part_hash(out->data, out->len);
    return true;
}

bool part_key_hash_guess(const Value *vals, size_t n, Buf *tmp, uint64_t *hash)
{
    if (n == 1 && vals[0].type == V_STR) {
        *hash = quoted_string_hash(vals[0].s, vals[0].len);
        return true;
    }
    buf_clear(tmp);
    if (!part_key_bytes(vals, n, tmp) || tmp->failed)
        return false;
    *hash = part_hash(tmp->data, tmp->len);
    return true;
}

PartEntry *part_lookup(const PartTable *t, const char *kbytes, size_t klen, uint64_t hash)
{
    if (!t->n_slots)
        return NULL;
    size_t mask = t->n_slots - 1;
    for (size_t i = hash & mask; t->slots[i]; i = (i + 1) & mask) {
        if (!part_slot_tagged(t->slots[i], hash))
            continue;
        PartEntry *e = part_slot_entry(t->slots[i]);
        if (part_entry_is(e, kbytes, klen))
            return e;
    }
    return NULL;
}

/* A slot's word without its distance: the hash's tag and the entry's address. */
static uint64_t slot_word(const PartEntry *e, uint64_t hash)
{
    return part_slot_tag(hash) << PART_PTR_BITS | (uint64_t)(uintptr_t)e;
}

/* How far the slot at i is from its home. */
static size_t slot_dist(const PartTable *t, size_t i)
{
    size_t d = t->slots[i] & PART_DIST_MAX;
    if (d < PART_DIST_MAX)
        return d;
    uint64_t hash = part_entry_hash(part_slot_entry(t->slots[i]));
    return (i - (hash & (t->n_slots - 1))) & (t->n_slots - 1);
}

/* Puts a slot word (tag and address, no distance) in the first free slot from home. */
static void place_from(uint64_t *slots, uint64_t *used, size_t n_slots, uint64_t word,
                       size_t home)
{
    size_t mask = n_slots - 1, i = home & mask, dist = 0;
    for (; slots[i]; dist++)
        i = (i + 1) & mask;
    slots[i] = word | (dist < PART_DIST_MAX ? dist : PART_DIST_MAX);
    mark_used(used, i, true);
}

static void place_slot(uint64_t *slots, uint64_t *used, size_t n_slots, PartEntry *e,
                       uint64_t hash)
{
    place_from(slots, used, n_slots, slot_word(e, hash), (size_t)hash);
}

/* The home, in a table of new_slots, of the entry in slot i. A smaller table's home is
 * the old home's low bits, which the slot's distance gives without the key's hash
 * (the churn of keys that come and go shrinks tables often); a larger one needs a bit
 * of the hash the slot does not keep. */
static size_t new_home(const PartTable *t, size_t i, size_t new_slots)
{
    size_t d = t->slots[i] & PART_DIST_MAX;
    if (new_slots < t->n_slots && d < PART_DIST_MAX)
        return (i - d) & (new_slots - 1);
    return part_entry_hash(part_slot_entry(t->slots[i])) & (new_slots - 1);
}

/* Moves every entry into a new slot array, in slot order (the order part_next
 * reports them in depends on it); on allocation failure keeps the old one (a table
 * that cannot resize still works while it has room). A growth reads every entry, each
 * a cache miss; prefetching them 8 slots ahead made scenario 4's first 100k lines
 * (mostly tables growing) 4% faster, 134.0 against 140.1 ms, but changed nothing
 * measurable on its 1M lines, so it is not done. */
static bool resize(PartTable *t, size_t n_slots)
{
    uint64_t *ns = calloc(n_slots, sizeof *ns);
    uint64_t *nu = calloc(used_words(n_slots), sizeof *nu);
    if (!ns || !nu) {
        free(ns);
        free(nu);
        return false;
    }
    for (size_t i = 0; i < t->n_slots; i++)
        if (t->slots[i])
            place_from(ns, nu, n_slots, t->slots[i] & ~(uint64_t)PART_DIST_MAX,
                       new_home(t, i, n_slots));
    free(t->slots);
    free(t->used);
    t->slots = ns;
    t->used = nu;
    t->n_slots = n_slots;
    return true;
}

/* Can the slot array take one more entry, resizing if it should? */
static bool room_for_one(PartTable *t)
{
    if ((t->count + 1) * 2 <= t->n_slots)
        return true;
    /* keep at least one empty slot, whatever resize managed */
    return resize(t, t->n_slots ? t->n_slots * 2 : PART_MIN_SLOTS) || t->count + 1 < t->n_slots;
}

static bool addressable(const PartEntry *e)
{
    return (uint64_t)(uintptr_t)e >> (PART_PTR_BITS - 1) >> 1 == 0;
}

/* Room for an entry of klen key bytes and `room` slots, its header's sizes set; NULL
 * on allocation failure or an address the slots cannot hold. */
static inline __attribute__((always_inline)) PartEntry *entry_new(PartTable *t, size_t klen,
                                                                  size_t room)
{
    char *at = entry_alloc(pool_of(t), part_entry_bytes(klen, t->pre, room));
    if (!at)
        return NULL;
    PartEntry *e = (PartEntry *)(void *)(at + t->pre);
    e->klen = (uint32_t)klen;
    e->room = (uint16_t)room;
    if (!addressable(e)) {
        entry_release(pool_of(t), e, t->pre);
        return NULL;
    }
    return e;
}

PartEntry *part_add(PartTable *t, const char *kbytes, size_t klen, uint64_t hash,
                    size_t room)
{
    if (klen >= UINT32_MAX || room > PART_MAX_SLOTS || !room_for_one(t))
        return NULL;
    PartEntry *e = entry_new(t, klen, room);
    if (!e)
        return NULL;
    if (t->extras & PART_X_SUPPRESS)
        *part_suppress_until(e) = INT64_MIN;
    e->n_slots = 0;
    e->deadline = INT64_MAX;
    e->heap_pos = PART_NOT_TIMED;
    if (klen)
        memcpy(e->tail, kbytes, klen);
    e->tail[klen] = '\0';
    place_slot(t->slots, t->used, t->n_slots, e, hash);
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

/* The slot that holds e, looking from hash's home; n_slots if none there. */
static size_t slot_of_entry(const PartTable *t, const PartEntry *e, uint64_t hash)
{
    size_t mask = t->n_slots - 1, i = hash & mask;
    while (t->slots[i] && part_slot_entry(t->slots[i]) != e)
        i = (i + 1) & mask;
    return t->slots[i] ? i : t->n_slots;
}

PartEntry *part_regrow(PartTable *t, PartEntry *e, uint64_t hash, size_t room)
{
    if (room < e->n_slots || room > PART_MAX_SLOTS)
        return NULL;
    size_t at = slot_of_entry(t, e, hash);
    if (at == t->n_slots && (at = slot_of_entry(t, e, part_entry_hash(e))) == t->n_slots)
        return NULL;
    PartEntry *moved = entry_new(t, e->klen, room);
    if (!moved)
        return NULL;
    uint16_t kept_room = moved->room;
    size_t used = e->n_slots * sizeof(PartSlot), had = part_slots_bytes(e->room);
    memcpy((char *)moved - t->pre, (char *)e - t->pre,
           t->pre + part_slots_offset(e->klen) + (used < had ? used : had));
    moved->room = kept_room;
    uint64_t word = t->slots[at];
    t->slots[at] = (word & ~(((UINT64_C(1) << PART_PTR_BITS) - 1) & ~(uint64_t)PART_DIST_MAX)) |
                   (uint64_t)(uintptr_t)moved;
    entry_release(pool_of(t), e, t->pre);
    return moved;
}

void part_remove(PartTable *t, PartEntry *e)
{
    part_remove_hashed(t, e, part_entry_hash(e));
}

void part_remove_hashed(PartTable *t, PartEntry *e, uint64_t hash)
{
    if (!t->n_slots)
        return;
    size_t mask = t->n_slots - 1, gap = slot_of_entry(t, e, hash);
    if (gap == t->n_slots && (gap = slot_of_entry(t, e, part_entry_hash(e))) == t->n_slots)
        return;
    entry_release(pool_of(t), e, t->pre);
    t->count--;
    /* backward shift: pull later entries of the probe run into the gap, unless their
     * home lies after the gap (closer than the gap to them) */
    for (size_t at = (gap + 1) & mask; t->slots[at]; at = (at + 1) & mask) {
        size_t dist = slot_dist(t, at), moved = (at - gap) & mask;
        if (dist < moved)
            continue;
        size_t left = dist - moved;
        t->slots[gap] = (t->slots[at] & ~(uint64_t)PART_DIST_MAX) |
                        (left < PART_DIST_MAX ? left : PART_DIST_MAX);
        gap = at;
    }
    t->slots[gap] = 0;
    mark_used(t->used, gap, false);
    if (!t->keep_size && t->n_slots > PART_MIN_SLOTS && t->count < t->n_slots / 8)
        resize(t, t->n_slots / 2);
}

PartEntry *part_next(const PartTable *t, size_t *pos, PartEntry *e)
{
    for (size_t i = e ? *pos + 1 : *pos; i < t->n_slots; i++)
        if (t->slots[i]) {
            *pos = i;
            return part_slot_entry(t->slots[i]);
        }
    *pos = t->n_slots;
    return NULL;
}

/* From the bitmap, 64 slots a word: a table the end of input empties keeps its slots
 * (part_table_keep_size), mostly empty ones. */
size_t part_entries(const PartTable *t, PartEntry **out)
{
    size_t n = 0;
    for (size_t w = 0; t->count && w < used_words(t->n_slots); w++)
        for (uint64_t bits = t->used[w]; bits; bits &= bits - 1)
            out[n++] = part_slot_entry(t->slots[w * 64 + (size_t)__builtin_ctzll(bits)]);
    return n;
}

void part_table_free(PartTable *t, void (*drop)(PartEntry *e, void *user), void *user)
{
    for (size_t w = 0; t->count && w < used_words(t->n_slots); w++) {
        for (uint64_t bits = t->used[w]; bits; bits &= bits - 1) {
            PartEntry *e = part_slot_entry(t->slots[w * 64 + (size_t)__builtin_ctzll(bits)]);
            if (drop)
                drop(e, user);
            entry_release(pool_of(t), e, t->pre);
        }
    }
    free(t->slots);
    free(t->used);
    part_pool_free(&t->own);
    PartPool *shared = t->shared;
    unsigned extras = t->extras;
    part_table_init_shared(t, shared);
    part_table_set_extras(t, extras);
}
