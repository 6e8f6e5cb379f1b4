/* runtime/decode.c — JSON lines to Events in one pass, without a DOM.
 *
 * Owns the field trie (built once from the FieldTable) and the strict RFC 8259 scanner.
 * The scanner is one goto-driven loop with an explicit container stack; it validates
 * every byte (structure, numbers, escapes, UTF-8) and, only while it is inside a path
 * the rules read, looks member names up in the trie and fills the event's slots.
 * Subtrees nobody reads are validated with no lookups at all.
 *
 * Decisions:
 * - Lone UTF-16 surrogates in \u escapes are rejected (they cannot be turned into
 *   valid UTF-8); a high surrogate followed by a low one is combined.
 * - A string without escapes points straight into the event's copy of the line. Strings
 *   with escapes are decoded into the decoder's scratch while scanning; only then, if
 *   any were, the event is made again with exactly that much string room (most lines
 *   have none, and the room would otherwise cost a line's length per held event).
 * - A duplicated member: the last one wins, also for nested paths: when a member is
 *   seen again, every slot below it is reset first, so "a.b" cannot survive from a
 *   first "a" when the last "a" has no "b".
 * - Leading and trailing JSON blanks (space, tab, CR, LF) around the object are
 *   accepted and not part of ev->line; a UTF-8 byte order mark is not accepted.
 * - Speed (every event pays for decoding): string bodies and digit runs are scanned
 *   8 bytes at a time, a number's value is built while it is validated, member names
 *   of up to 8 bytes are compared as one word, and blanks, rare in machine-written
 *   lines, cost one compare where JSON allows them. */
#include "runtime/decode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "base/utf8.h"
#include "runtime/digits.h"

/* json_validate keeps its container stack on the C stack; deeper limits are clamped. */
#define VALIDATE_STACK_CAP 512

/* ---- field trie ------------------------------------------------------------ */

typedef struct TrieNode TrieNode;

typedef struct NameEdge {
    uint64_t word;          /* name_word of a name of 1..8 bytes, else 0 */
    size_t len;
    const char *name;       /* borrowed from the FieldTable */
    TrieNode *child;        /* owned */
} NameEdge;

typedef struct IndexEdge {
    long index;
    TrieNode *child;        /* owned */
} IndexEdge;

struct TrieNode {
    int slot;               /* slot filled by the value at this path, or -1 */
    NameEdge *names;        /* heap, owned */
    size_t n_names;
    IndexEdge *indices;     /* heap, owned */
    size_t n_indices;
    int *below;             /* slots of strict descendants, reset on a duplicate; heap, owned */
    size_t n_below;
};

typedef struct Frame {
    const TrieNode *node;   /* trie node of this container, NULL if nobody reads inside it */
    const char *start;      /* its opening bracket, for the raw text */
    long index;             /* index of the current element (arrays) */
    bool is_array;
} Frame;

struct Decoder {
    const FieldTable *fields;   /* borrowed */
    TrieNode *root;             /* owned */
    Frame *stack;               /* max_depth frames, reused by every line; owned */
    size_t max_depth;
    char *scratch;              /* decoded escaped strings of the current line; owned */
    size_t scratch_cap;
    EventCache *cache;          /* where events come from and failed ones go; borrowed,
                                   or NULL (malloc) */
};

/* Member names of 1..8 bytes compare as one word: the 8 bytes read at the name, shifted
 * so that only the name's own bytes remain (which end of the word holds the first
 * byte depends on the byte order). Elsewhere every name is compared byte by byte. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NAME_WORDS 1
#define NAME_WORD_KEEP(w, len) ((w) << (64 - 8 * (len)))
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NAME_WORDS 1
#define NAME_WORD_KEEP(w, len) ((w) >> (64 - 8 * (len)))
#else
#define NAME_WORDS 0
#define NAME_WORD_KEEP(w, len) ((void)(len), (w))
#endif
#define NAME_WORD_MAX 8

static inline bool has_name_word(size_t len)
{
    return NAME_WORDS && len - 1 < NAME_WORD_MAX;
}

/* The word of a name of 1..8 bytes at p, of which 8 bytes are readable. */
static inline uint64_t name_word(const char *p, size_t len)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return NAME_WORD_KEEP(w, len);
}

static void trie_free(TrieNode *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->n_names; i++)
        trie_free(n->names[i].child);
    for (size_t i = 0; i < n->n_indices; i++)
        trie_free(n->indices[i].child);
    free(n->names);
    free(n->indices);
    free(n->below);
    free(n);
}

static TrieNode *trie_node_new(void)
{
    TrieNode *n = calloc(1, sizeof *n);
    if (n != NULL)
        n->slot = -1;
    return n;
}

/* The child of n for one path segment, created if absent; NULL on allocation failure. */
static TrieNode *trie_child(TrieNode *n, const PathSeg *seg)
{
    if (seg->name != NULL) {
        size_t len = strlen(seg->name);
        for (size_t i = 0; i < n->n_names; i++)
            if (n->names[i].len == len && memcmp(n->names[i].name, seg->name, len) == 0)
                return n->names[i].child;
        NameEdge *grown = realloc(n->names, (n->n_names + 1) * sizeof *grown);
        if (grown == NULL)
            return NULL;
        n->names = grown;
        TrieNode *child = trie_node_new();
        if (child == NULL)
            return NULL;
        uint64_t word = 0;
        if (has_name_word(len)) {
            char padded[NAME_WORD_MAX] = { 0 };
            memcpy(padded, seg->name, len);
            word = name_word(padded, len);
        }
        n->names[n->n_names++] = (NameEdge){ word, len, seg->name, child };
        return child;
    }
    for (size_t i = 0; i < n->n_indices; i++)
        if (n->indices[i].index == seg->index)
            return n->indices[i].child;
    IndexEdge *grown = realloc(n->indices, (n->n_indices + 1) * sizeof *grown);
    if (grown == NULL)
        return NULL;
    n->indices = grown;
    TrieNode *child = trie_node_new();
    if (child == NULL)
        return NULL;
    n->indices[n->n_indices++] = (IndexEdge){ seg->index, child };
    return child;
}

/* Appends every slot at or below n to *out (heap, grown); false on allocation failure. */
static bool collect_slots(const TrieNode *n, int **out, size_t *count)
{
    if (n->slot >= 0) {
        int *grown = realloc(*out, (*count + 1) * sizeof *grown);
        if (grown == NULL)
            return false;
        *out = grown;
        (*out)[(*count)++] = n->slot;
    }
    for (size_t i = 0; i < n->n_names; i++)
        if (!collect_slots(n->names[i].child, out, count))
            return false;
    for (size_t i = 0; i < n->n_indices; i++)
        if (!collect_slots(n->indices[i].child, out, count))
            return false;
    return true;
}

static bool fill_below(TrieNode *n)
{
    for (size_t i = 0; i < n->n_names; i++)
        if (!collect_slots(n->names[i].child, &n->below, &n->n_below)
            || !fill_below(n->names[i].child))
            return false;
    for (size_t i = 0; i < n->n_indices; i++)
        if (!collect_slots(n->indices[i].child, &n->below, &n->n_below)
            || !fill_below(n->indices[i].child))
            return false;
    return true;
}

static TrieNode *trie_build(const FieldTable *fields)
{
    TrieNode *root = trie_node_new();
    if (root == NULL)
        return NULL;
    for (size_t slot = 0; slot < fields->n; slot++) {
        const FieldPath *path = &fields->paths[slot];
        TrieNode *n = root;
        for (size_t i = 0; i < path->n_segs && n != NULL; i++)
            n = trie_child(n, &path->segs[i]);
        if (n == NULL) {
            trie_free(root);
            return NULL;
        }
        if (path->n_segs > 0)
            n->slot = (int)slot;
    }
    /* The root's own "below" would reset every slot at the start of each line: the
     * event already starts with all slots missing, so only the inner nodes need it. */
    for (size_t i = 0; i < root->n_names; i++)
        if (!fill_below(root->names[i].child)) {
            trie_free(root);
            return NULL;
        }
    return root;
}

Decoder *decoder_new(const FieldTable *fields, size_t max_depth)
{
    Decoder *d = lines_calloc(sizeof *d);   /* written for every line */
    if (d == NULL)
        return NULL;
    if (max_depth == 0)
        max_depth = DECODE_MAX_DEPTH;
    d->fields = fields;
    d->max_depth = max_depth;
    d->stack = lines_calloc_n(max_depth, sizeof *d->stack);
    d->root = trie_build(fields);
    if (d->stack == NULL || d->root == NULL) {
        decoder_free(d);
        return NULL;
    }
    return d;
}

void decoder_set_cache(Decoder *d, EventCache *cache)
{
    d->cache = cache;
}

void decoder_free(Decoder *d)
{
    if (d == NULL)
        return;
    trie_free(d->root);
    free(d->stack);
    free(d->scratch);
    free(d);
}

/* Member names are short: an inline byte loop beats a call to memcmp. */
static inline bool same_bytes(const char *a, const char *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* The child of n for the name of len (1..8) bytes whose name_word is word. */
static inline const TrieNode *lookup_word(const TrieNode *n, uint64_t word, size_t len)
{
    for (size_t i = 0; i < n->n_names; i++)
        if (n->names[i].word == word && n->names[i].len == len)
            return n->names[i].child;
    return NULL;
}

/* The child of n for the member name [name, name + len); `limit` bounds what may be
 * read there (at least the name). */
static inline const TrieNode *lookup_name(const TrieNode *n, const char *name, size_t len,
                                          const char *limit)
{
    if (has_name_word(len) && limit - name >= NAME_WORD_MAX)
        return lookup_word(n, name_word(name, len), len);
    for (size_t i = 0; i < n->n_names; i++) {
        const NameEdge *edge = &n->names[i];
        if (edge->len == len && same_bytes(edge->name, name, len))
            return edge->child;
    }
    return NULL;
}

static const TrieNode *lookup_index(const TrieNode *n, long index)
{
    if (n == NULL)
        return NULL;
    for (size_t i = 0; i < n->n_indices; i++)
        if (n->indices[i].index == index)
            return n->indices[i].child;
    return NULL;
}

/* ---- strings --------------------------------------------------------------- */

/* 1 for bytes that end the fast run inside a string: quote, backslash, control
 * characters (invalid) and the lead of any multi-byte UTF-8 sequence. */
static const uint8_t STR_STOP[256] = {
    [0x00] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1,
    [0x80] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};


typedef struct ScanError {
    const char *reason;
    const char *at;
} ScanError;

/* Validates a string body starting after its opening quote. Returns the position
 * after the closing quote, or NULL with *e set. *escaped tells whether decoding is
 * more than a copy. */
#if defined(__GNUC__)
#define HOT_INLINE inline __attribute__((always_inline))
#else
#define HOT_INLINE inline
#endif

static HOT_INLINE const char *scan_string(const char *p, const char *end, bool *escaped,
                                          ScanError *e)
{
    *escaped = false;
    for (;;) {
        if (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            uint64_t stops = json_string_stops(w);
            if (stops == 0) {
                p += 8;
                continue;
            }
            p += json_bytes_before_stop(stops);
#if !JSON_STOPS_EXACT
            while (!STR_STOP[(unsigned char)*p])
                p++;
#endif
        } else {
            while (p < end && !STR_STOP[(unsigned char)*p])
                p++;
            if (p == end)
                goto unterminated;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c == '\\') {
            *escaped = true;
            if (end - p < 2)
                goto unterminated;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            case 'u':
                break;
            default:
                e->reason = "invalid escape in string";
                e->at = p;
                return NULL;
            }
            long cp = end - p >= 6 ? hex4_value(p + 2) : -1;
            if (cp < 0) {
                e->reason = "invalid \\u escape in string";
                e->at = p;
                return NULL;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                e->reason = "lone surrogate in \\u escape";
                e->at = p;
                return NULL;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4_value(p + 8) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    e->reason = "lone surrogate in \\u escape";
                    e->at = p;
                    return NULL;
                }
                p += 12;
            } else {
                p += 6;
            }
            continue;
        }
        if (c < 0x20) {
            e->reason = "control character in string";
            e->at = p;
            return NULL;
        }
        size_t n = utf8_valid_len((const unsigned char *)p, (size_t)(end - p));
        if (n == 0) {
            e->reason = "invalid UTF-8";
            e->at = p;
            return NULL;
        }
        p += n;
    }
unterminated:
    e->reason = "unterminated string";
    e->at = p;
    return NULL;
}


/* Decodes an already validated string body [p, end) (without quotes) into out;
 * returns the end of the written bytes. The output is never longer than the input. */
static char *decode_string(const char *p, const char *end, char *out)
{
    while (p < end) {
        const char *run = p;
        while (p < end && *p != '\\')
            p++;
        memcpy(out, run, (size_t)(p - run));
        out += p - run;
        if (p == end)
            break;
        char c = p[1];
        p += 2;
        switch (c) {
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'u': {
            unsigned long cp = (unsigned long)hex4_value(p);
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned long lo = (unsigned long)hex4_value(p + 2);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            out += utf8_encode((uint32_t)cp, out);
            break;
        }
        default: *out++ = c; break;     /* '"', '\\', '/' */
        }
    }
    return out;
}

/* ---- numbers --------------------------------------------------------------- */

/* What scanning a number learnt on the way, so a wanted number's value needs no
 * second pass over its digits. */
typedef struct NumberScan {
    uint64_t mantissa;      /* all its digits as one integer (wraps when very long) */
    size_t digits;          /* digits in the mantissa, leading zeros included */
    size_t frac_digits;     /* of which after the decimal point */
    bool exponent;
} NumberScan;

static inline bool is_digit(const char *p, const char *end)
{
    return p < end && (unsigned)(unsigned char)*p - '0' <= 9;
}

/* Validates a number at p (first byte '-' or a digit). Returns its end, or NULL. */
static HOT_INLINE const char *scan_number(const char *p, const char *end, NumberScan *n,
                                          ScanError *e)
{
    *n = (NumberScan){ 0, 0, 0, false };
    if (*p == '-')
        p++;
    if (!is_digit(p, end)) {
        e->reason = "digit expected after '-'";
        e->at = p;
        return NULL;
    }
    const char *digits = p;
    if (*p == '0') {
        p++;
        if (is_digit(p, end)) {
            e->reason = "leading zero in number";
            e->at = p - 1;
            return NULL;
        }
    } else {
        p = digit_run(p, end, &n->mantissa);
    }
    n->digits = (size_t)(p - digits);
    if (p < end && *p == '.') {
        p++;
        if (!is_digit(p, end)) {
            e->reason = "digit expected after decimal point";
            e->at = p;
            return NULL;
        }
        const char *frac = p;
        p = digit_run(p, end, &n->mantissa);
        n->frac_digits = (size_t)(p - frac);
        n->digits += n->frac_digits;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        n->exponent = true;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(p, end)) {
            e->reason = "digit expected in exponent";
            e->at = p;
            return NULL;
        }
        uint64_t ignored = 0;
        p = digit_run(p, end, &ignored);
    }
    return p;
}

/* The value of the validated number [p, ...) that scanning described as n; `p` lies
 * in a NUL-terminated line. */
static double number_value(const char *p, const NumberScan *n)
{
    static const double POW10[16] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                       1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
    /* Up to 15 significant digits and no exponent: mantissa and power of ten are exact
     * doubles, so one division is correctly rounded, like strtod, and much cheaper. */
    if (n->exponent || n->digits > 15)
        return strtod(p, NULL);
    double v = (double)n->mantissa / POW10[n->frac_digits];
    return *p == '-' ? -v : v;
}

/* ---- the scanner ----------------------------------------------------------- */

typedef struct ScanTarget {
    Event *ev;                  /* NULL when only validating */
    Decoder *d;                 /* its scratch takes the decoded escaped strings */
    size_t str_used;            /* bytes of d->scratch claimed by slots */
    bool out_of_memory;
} ScanTarget;

/* Sets a slot to a value of `type` whose text is [start, end), payload zero; the caller
 * sets the payload. Field by field, straight into the slot: cheaper than building a
 * Value and copying it. Lengths fit: decoder_decode refuses lines over VALUE_MAX_LEN. */
static inline Value *put_raw(Value *v, ValueType type, const char *start, const char *end)
{
    v->type = type;
    v->b = false;
    v->len = 0;
    v->raw_len = (uint32_t)(end - start);
    v->i = 0;
    v->raw = start;
    return v;
}

/* The free scratch for decoding a string body; NULL on allocation failure. Decoding
 * never lengthens, and the bodies of one line are disjoint parts of it, so a scratch
 * of the line's length always has room: it grows (once, at a line's first escape)
 * before any slot points into it, never while slots do. */
static char *scratch_room(ScanTarget *t)
{
    Decoder *d = t->d;
    size_t need = t->ev->line_len;
    if (d->scratch_cap < need) {
        char *grown = realloc(d->scratch, need);
        if (grown == NULL)
            return NULL;
        d->scratch = grown;
        d->scratch_cap = need;
    }
    return d->scratch + t->str_used;
}

/* A string [start, end) (with its quotes) into a slot; false on allocation failure. */
static inline bool store_string(ScanTarget *t, int slot, const char *start, const char *end,
                                bool escaped)
{
    Value *v = put_raw(&t->ev->slots[slot], V_STR, start, end);
    if (!escaped) {
        v->s = start + 1;
        v->len = (uint32_t)(end - start - 2);
        return true;
    }
    char *out = scratch_room(t);
    if (out == NULL)
        return false;
    v->s = out;
    v->len = (uint32_t)(decode_string(start + 1, end - 1, out) - out);
    t->str_used += v->len;
    return true;
}

/* The trie child for an escaped member name [start, end) (without quotes), decoded
 * into the free scratch without claiming it. NULL if there is none or, with
 * t->out_of_memory set, on allocation failure. */
static const TrieNode *escaped_member_node(const TrieNode *parent, ScanTarget *t,
                                           const char *start, const char *end)
{
    char *out = scratch_room(t);
    if (out == NULL) {
        t->out_of_memory = true;
        return NULL;
    }
    char *out_end = decode_string(start, end, out);
    return lookup_name(parent, out, (size_t)(out_end - out), out_end);
}

static inline bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && is_blank(*p))
        p++;
    return p;
}

/* Machine-written lines rarely have blanks between tokens: one compare (nothing above
 * a space is blank) settles the usual case without the loop. */
#define SKIP_BLANKS() do { \
        if (p < end && (unsigned char)*p <= ' ') \
            p = skip_blanks(p, end); \
    } while (0)
#define FAIL(msg, pos) do { e->reason = (msg); e->at = (pos); return false; } while (0)

/* Scans one JSON text [p, end). root is the trie node of the top-level value (NULL
 * when only validating); stack has room for max_depth open containers. */
static bool scan_json(const char *p, const char *end, const TrieNode *root, Frame *stack,
                      size_t max_depth, ScanTarget *t, ScanError *e)
{
    size_t depth = 0;
    const TrieNode *node = root;      /* trie node of the value about to be scanned */
    const char *start;
    bool escaped;
    NumberScan number;

    SKIP_BLANKS();
value:
    if (p == end)
        FAIL("unexpected end of JSON text", p);
    if (node != NULL)
        for (size_t i = 0; i < node->n_below; i++)
            t->ev->slots[node->below[i]] = value_missing();
    start = p;
    switch (*p) {
    case '{':
        if (depth == max_depth)
            FAIL(max_depth == DECODE_MAX_DEPTH ? "nesting deeper than 64" : "nesting too deep", p);
        stack[depth++] = (Frame){ node, p, 0, false };
        p++;
        SKIP_BLANKS();
        if (p < end && *p == '}') {
            p++;
            goto close;
        }
        goto member;
    case '[':
        if (depth == max_depth)
            FAIL(max_depth == DECODE_MAX_DEPTH ? "nesting deeper than 64" : "nesting too deep", p);
        stack[depth++] = (Frame){ node, p, 0, true };
        p++;
        SKIP_BLANKS();
        if (p < end && *p == ']') {
            p++;
            goto close;
        }
        node = lookup_index(node, 0);
        goto value;
    case '"':
        p = scan_string(p + 1, end, &escaped, e);
        if (p == NULL)
            return false;
        if (node != NULL && node->slot >= 0 && !store_string(t, node->slot, start, p, escaped))
            FAIL("out of memory", start);
        break;
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        p = scan_number(p, end, &number, e);
        if (p == NULL)
            return false;
        if (node != NULL && node->slot >= 0)
            put_raw(&t->ev->slots[node->slot], V_NUM, start, p)->num = number_value(start, &number);
        break;
    case 't':
        if (end - p < 4 || memcmp(p, "true", 4) != 0)
            FAIL("invalid literal", p);
        p += 4;
        if (node != NULL && node->slot >= 0)
            put_raw(&t->ev->slots[node->slot], V_BOOL, start, p)->b = true;
        break;
    case 'f':
        if (end - p < 5 || memcmp(p, "false", 5) != 0)
            FAIL("invalid literal", p);
        p += 5;
        if (node != NULL && node->slot >= 0)
            put_raw(&t->ev->slots[node->slot], V_BOOL, start, p);
        break;
    case 'n':
        if (end - p < 4 || memcmp(p, "null", 4) != 0)
            FAIL("invalid literal", p);
        p += 4;
        if (node != NULL && node->slot >= 0)
            put_raw(&t->ev->slots[node->slot], V_NULL, start, p);
        break;
    case ' ': case '\t': case '\n': case '\r':
        p = skip_blanks(p, end);
        goto value;
    default:
        FAIL("expected a JSON value", p);
    }

after_value:
    if (depth == 0)
        goto done;
    SKIP_BLANKS();
    if (!stack[depth - 1].is_array) {
        if (p < end && *p == ',') {
            p++;
            SKIP_BLANKS();
            if (p < end && *p == '"')
                goto member_name;
            if (p < end && *p == '}')
                FAIL("trailing comma in object", p);
            goto member;
        }
        if (p < end && *p == '}') {
            p++;
            goto close;
        }
        FAIL(p == end ? "unterminated object" : "expected ',' or '}' after object member", p);
    } else {
        Frame *f = &stack[depth - 1];
        if (p < end && *p == ',') {
            p++;
            SKIP_BLANKS();
            if (p < end && *p == ']')
                FAIL("trailing comma in array", p);
            f->index++;
            node = lookup_index(f->node, f->index);
            goto value;
        }
        if (p < end && *p == ']') {
            p++;
            goto close;
        }
        FAIL(p == end ? "unterminated array" : "expected ',' or ']' after array element", p);
    }

member:
    /* p is at the member name of the innermost object (blanks skipped). */
    if (p == end)
        FAIL("unterminated object", p);
    if (*p != '"')
        FAIL("expected a member name (a string)", p);
member_name:
    start = p + 1;
    if (NAME_WORDS && end - start >= 8) {
        /* Most names are plain and shorter than a word: the word that finds the closing
         * quote is the name's word as well, so the name is scanned and looked up with
         * one load. Anything else (escapes, UTF-8, 8 bytes or more) goes the long way. */
        uint64_t w;
        memcpy(&w, start, sizeof w);
        /* The flag on the word's last byte keeps the count defined (at most 7) when
         * no byte stops the run; that byte is then not a quote. */
        unsigned len = json_bytes_before_stop(json_string_stops(w) | UINT64_C(1) << 63);
        if (len > 0 && start[len] == '"') {
            p = start + len + 1;
            node = stack[depth - 1].node == NULL
                   ? NULL : lookup_word(stack[depth - 1].node, NAME_WORD_KEEP(w, len), len);
            goto member_colon;
        }
    }
    p = scan_string(start, end, &escaped, e);
    if (p == NULL)
        return false;
    if (stack[depth - 1].node == NULL) {
        node = NULL;
    } else if (!escaped) {
        node = lookup_name(stack[depth - 1].node, start, (size_t)(p - 1 - start), end);
    } else {
        node = escaped_member_node(stack[depth - 1].node, t, start, p - 1);
        if (t->out_of_memory)
            FAIL("out of memory", start);
    }
member_colon:
    SKIP_BLANKS();
    if (p == end || *p != ':')
        FAIL("expected ':' after member name", p);
    p++;
    goto value;         /* which skips blanks before the value itself */

close: {
        /* p is just past the closing bracket of the innermost container. */
        const Frame *f = &stack[--depth];
        if (f->node != NULL && f->node->slot >= 0)
            put_raw(&t->ev->slots[f->node->slot], f->is_array ? V_ARR : V_OBJ, f->start, p);
        goto after_value;
    }

done:
    SKIP_BLANKS();
    if (p != end)
        FAIL("trailing characters after JSON value", p);
    return true;
}

/* Where p, in [from, from + len), lies in the copy at `to` (integer arithmetic: the
 * caller has already checked which object p points into). */
static inline const char *moved(const char *p, const char *from, const char *to)
{
    return to + ((uintptr_t)p - (uintptr_t)from);
}

/* The event again, with exactly the string room its escaped strings need, moved there
 * from the scratch; the old one is released. NULL on allocation failure. Decoded
 * values all have their raw text in the line, and strings their bytes in the line or
 * in the scratch, so one range check per string tells where each goes. */
static Event *with_string_room(EventCache *cache, Event *ev, const char *scratch, size_t used)
{
    Event *sized = event_cache_new_room(cache, ev->line, ev->line_len, ev->n_slots, used);
    if (sized != NULL) {
        char *room = event_room(sized);
        memcpy(room, scratch, used);
        for (size_t i = 0; i < ev->n_slots; i++) {
            Value v = ev->slots[i];
            if (v.raw != NULL)
                v.raw = moved(v.raw, ev->line, sized->line);
            if (v.type == V_STR)
                v.s = (uintptr_t)v.s - (uintptr_t)scratch < used ? moved(v.s, scratch, room)
                                                                 : moved(v.s, ev->line, sized->line);
            sized->slots[i] = v;
        }
    }
    event_cache_release(cache, ev);
    return sized;
}

Event *decoder_decode(Decoder *d, const char *line, size_t len, DecodeError *err)
{
    size_t lead = 0;
    while (lead < len && is_blank(line[lead]))
        lead++;
    while (len > lead && is_blank(line[len - 1]))
        len--;
    if (lead == len) {
        *err = (DecodeError){ "empty line", lead };
        return NULL;
    }
    if (line[lead] != '{') {
        *err = (DecodeError){ "line is not a JSON object", lead };
        return NULL;
    }
    if (len - lead > VALUE_MAX_LEN) {
        *err = (DecodeError){ "line longer than 4 GiB", lead };
        return NULL;
    }
    Event *ev = event_cache_new_room(d->cache, line + lead, len - lead, d->fields->n, 0);
    if (ev == NULL) {
        *err = (DecodeError){ "out of memory", 0 };
        return NULL;
    }
    ScanTarget target = { ev, d, 0, false };
    ScanError e = { NULL, NULL };
    if (!scan_json(ev->line, ev->line + ev->line_len, d->root, d->stack, d->max_depth,
                   &target, &e)) {
        *err = (DecodeError){ e.reason, lead + (size_t)(e.at - ev->line) };
        event_cache_release(d->cache, ev);
        return NULL;
    }
    if (target.str_used > 0 && (ev = with_string_room(d->cache, ev, d->scratch, target.str_used)) == NULL)
        *err = (DecodeError){ "out of memory", 0 };
    return ev;
}

bool json_validate(const char *text, size_t len, size_t max_depth, DecodeError *err)
{
    Frame stack[VALIDATE_STACK_CAP];
    if (max_depth == 0 || max_depth > VALIDATE_STACK_CAP)
        max_depth = max_depth == 0 ? DECODE_MAX_DEPTH : VALIDATE_STACK_CAP;
    ScanTarget target = { NULL, NULL, 0, false };
    ScanError e = { NULL, NULL };
    if (scan_json(text, text + len, NULL, stack, max_depth, &target, &e))
        return true;
    *err = (DecodeError){ e.reason, (size_t)(e.at - text) };
    return false;
}
