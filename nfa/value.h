/* nfa/value.h — runtime values of the rule language: JSON's types plus time and duration.
 *
 * A Value never owns memory: strings point into an event (decoded bytes and the
 * original JSON text) or into evaluation scratch. Numbers compare as doubles, but a
 * value read from an event keeps its original JSON text in `raw`, so keys and echoed
 * fields never lose digits (a 19-digit id stays exact).
 *
 * Comparisons involving null/missing or mismatched types are false (LANGUAGE.md 5). */
#ifndef VIGIL_NFA_VALUE_H
#define VIGIL_NFA_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/isotime.h"   /* time_format_iso: how times print */

typedef enum {
    V_MISSING = 0,   /* field absent from the event: behaves as null, but exists() is false */
    V_NULL,
    V_BOOL,
    V_NUM,
    V_STR,           /* s/len: decoded UTF-8 bytes (may contain NUL) */
    V_OBJ,           /* raw/raw_len: the object's JSON text */
    V_ARR,           /* raw/raw_len: the array's JSON text */
    V_TIME,          /* ms since the epoch, in i */
    V_DUR,           /* milliseconds, in i */
} ValueType;

/* Lengths are 32-bit so that a Value is 32 bytes (events hold one per field the rules
 * read): the decoder refuses longer lines and value_str turns a longer string into null. */
#define VALUE_MAX_LEN UINT32_MAX

/* The payload union holds what the type needs: num (V_NUM), i (V_TIME, V_DUR) or s
 * (V_STR); read only the member of v->type (an s of a number is its bits). `raw` is
 * separate, since numbers and strings from events carry both. */
typedef struct Value {
    ValueType type;
    bool b;              /* V_BOOL */
    uint32_t len;        /* V_STR: bytes at s */
    uint32_t raw_len;
    union {
        double num;
        int64_t i;
        const char *s;   /* V_STR */
    };
    const char *raw;     /* original JSON text when read from an event, else NULL */
} Value;

_Static_assert(sizeof(Value) <= 32, "a Value is at most 32 bytes");

static inline Value value_missing(void) { Value v = {0}; return v; }
static inline Value value_null(void) { Value v = {0}; v.type = V_NULL; return v; }
static inline Value value_bool(bool b) { Value v = {0}; v.type = V_BOOL; v.b = b; return v; }
static inline Value value_num(double d) { Value v = {0}; v.type = V_NUM; v.num = d; return v; }
/* Null when len exceeds VALUE_MAX_LEN. */
static inline Value value_str(const char *s, size_t len)
{
    Value v = {0};
    if (len > VALUE_MAX_LEN)
        return value_null();
    v.type = V_STR;
    v.s = s;
    v.len = (uint32_t)len;
    return v;
}
static inline Value value_time(int64_t ms) { Value v = {0}; v.type = V_TIME; v.i = ms; return v; }
static inline Value value_dur(int64_t ms) { Value v = {0}; v.type = V_DUR; v.i = ms; return v; }
static inline bool value_is_null(const Value *v) { return v->type == V_MISSING || v->type == V_NULL; }

/* Re-points v's text (raw, and s of a string) that lies in [from, from + len) to the
 * same offsets from `to`: for values whose event text was copied elsewhere. Other
 * pointers are left alone. */
void value_rebase(Value *v, const char *from, size_t len, const char *to);

/* `==` of the language: same type and equal (numbers as doubles, strings bytewise,
 * objects/arrays by JSON text). Null equals null; missing equals null. */
bool value_equal(const Value *a, const Value *b);
/* Ordering for < <= > >=: returns -1/0/1, or 2 when not comparable (then false). */
int value_compare(const Value *a, const Value *b);
/* Appends the value as JSON to a Buf (numbers from events keep their raw text; times
 * as ISO-8601 UTC strings with milliseconds; durations as numbers of ms). */
struct Buf;
void value_to_json(const Value *v, struct Buf *out);
/* Appends the value as template text: strings without quotes, numbers shortest,
 * times ISO-8601, null as "null". */
void value_to_text(const Value *v, struct Buf *out);

/* Writes a number the way value_to_json prints one without raw text: integers
 * without a fraction, others in the shortest form that reads back exactly; NaN and
 * infinities as "null". Returns the length (at most 24). */
size_t value_format_num(double d, char out[32]);


#endif
