/* nfa/value.c — equality, ordering and text forms of runtime values; see value.h.
 *
 * Owns no memory: every function reads Values and writes into the caller's Buf or
 * character array. */
#include "nfa/value.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#define MS_PER_DAY INT64_C(86400000)

static bool bytes_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

bool value_equal(const Value *a, const Value *b)
{
    if (value_is_null(a) || value_is_null(b))
        return value_is_null(a) && value_is_null(b);
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case V_BOOL: return a->b == b->b;
    case V_NUM:  return a->num == b->num;
    case V_STR:  return bytes_equal(a->s, a->len, b->s, b->len);
    case V_OBJ:
    case V_ARR:  return bytes_equal(a->raw, a->raw_len, b->raw, b->raw_len);
    case V_TIME:
    case V_DUR:  return a->i == b->i;
    case V_MISSING:
    case V_NULL: break;
    }
    return false;
}

/* Integer arithmetic: p and from may belong to different objects. */
static const char *rebased(const char *p, const char *from, size_t len, const char *to)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)from;
    return off < len ? to + off : p;
}

void value_rebase(Value *v, const char *from, size_t len, const char *to)
{
    v->raw = rebased(v->raw, from, len, to);
    if (v->type == V_STR)
        v->s = rebased(v->s, from, len, to);
}

static int order_of(int cmp) { return (cmp > 0) - (cmp < 0); }

static int compare_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c != 0)
        return order_of(c);
    return (alen > blen) - (alen < blen);
}

int value_compare(const Value *a, const Value *b)
{
    if (value_is_null(a) || value_is_null(b) || a->type != b->type)
        return 2;
    switch (a->type) {
    case V_NUM:
        if (isnan(a->num) || isnan(b->num))
            return 2;
        return (a->num > b->num) - (a->num < b->num);
    case V_STR:
        return compare_bytes(a->s, a->len, b->s, b->len);
    case V_TIME:
    case V_DUR:
        return (a->i > b->i) - (a->i < b->i);
    default:
        /* Booleans, objects and arrays have no order in the language. */
        return 2;
    }
}

/* "1e-07" -> "1e-7": same value, the form JSON writers usually print. */
static size_t trim_exponent(char *s, size_t n)
{
    char *e = strchr(s, 'e');
    if (!e)
        return n;
    char *digits = e + 1;
    if (*digits == '+' || *digits == '-')
        digits++;
    char *first = digits;
    while (first[0] == '0' && first[1] != '\0')
        first++;
    if (first != digits)
        memmove(digits, first, strlen(first) + 1);
    return strlen(s);
}

size_t value_format_num(double d, char out[32])
{
    if (!isfinite(d)) {
        memcpy(out, "null", 5);
        return 4;
    }
    if (d == 0)
        d = 0; /* no "-0" */
    /* Integers print without a fraction or exponent while every digit is exact. */
    if (d == floor(d) && fabs(d) < 1e17)
        return (size_t)snprintf(out, 32, "%.0f", d);
    /* Shortest precision that reads back as the same double. */
    for (int prec = 1; prec <= 17; prec++) {
        int n = snprintf(out, 32, "%.*g", prec, d);
        if (prec == 17 || strtod(out, NULL) == d)
            return trim_exponent(out, (size_t)n);
    }
    return strlen(out);
}

static void put_num(const Value *v, Buf *out)
{
    if (v->raw) {
        buf_append(out, v->raw, v->raw_len);
        return;
    }
    char tmp[32];
    size_t n = value_format_num(v->num, tmp);
    buf_append(out, tmp, n);
}

static void put_raw_or_null(const Value *v, Buf *out)
{
    if (v->raw)
        buf_append(out, v->raw, v->raw_len);
    else
        buf_puts(out, "null");
}

/* The parts of the JSON and text forms that agree. Returns false for strings and
 * times, which differ (quoted or not). */
static bool put_common(const Value *v, Buf *out)
{
    switch (v->type) {
    case V_MISSING:
    case V_NULL: buf_puts(out, "null"); return true;
    case V_BOOL: buf_puts(out, v->b ? "true" : "false"); return true;
    case V_NUM:  put_num(v, out); return true;
    case V_OBJ:
    case V_ARR:  put_raw_or_null(v, out); return true;
    case V_DUR:  buf_printf(out, "%lld", (long long)v->i); return true;
    case V_STR:
    case V_TIME: break;
    }
    return false;
}

void value_to_json(const Value *v, Buf *out)
{
    if (put_common(v, out))
        return;
    if (v->type == V_STR) {
        buf_json_string(out, v->s, v->len);
    } else {
        char iso[32];
        time_format_iso(v->i, iso);
        buf_putc(out, '"');
        buf_puts(out, iso);
        buf_putc(out, '"');
    }
}

void value_to_text(const Value *v, Buf *out)
{
    if (put_common(v, out))
        return;
    if (v->type == V_STR) {
        buf_append(out, v->s, v->len);
    } else {
        char iso[32];
        time_format_iso(v->i, iso);
        buf_puts(out, iso);
    }
}
