/* base/utf8.h — the one place that knows UTF-8, JSON's \uXXXX escapes, and which
 * bytes end a run of plain JSON string text. Used by the rule scanner, the event
 * decoder, the JSON writer and the test runner's JSON reader, which must all agree on
 * what valid text is. */
#ifndef VIGIL_BASE_UTF8_H
#define VIGIL_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Bytes needed to encode code point cp (cp <= 0x10FFFF). */
static inline size_t utf8_encoded_len(uint32_t cp)
{
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Writes cp to out (room for 4 bytes); returns the number of bytes written. */
static inline size_t utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length (1..4) of the valid UTF-8 sequence at p with `avail` bytes readable, or 0
 * if it is not valid: overlong forms, UTF-16 surrogates and code points above
 * U+10FFFF are rejected, as RFC 3629 requires. */
static inline size_t utf8_valid_len(const unsigned char *p, size_t avail)
{
    unsigned c = p[0];
    unsigned lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;              /* below: overlong */
        else if (c == 0xED)
            hi = 0x9F;              /* above: surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;              /* below: overlong */
        else if (c == 0xF4)
            hi = 0x8F;              /* above: beyond U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* Value of one hex digit, or -1. */
static inline int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The four hex digits at p (the caller guarantees 4 readable bytes), or -1. */
static inline long hex4_value(const char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* ---- scanning JSON strings 8 bytes at a time ------------------------------- */

#define SWAR_ONES UINT64_C(0x0101010101010101)
#define SWAR_HIGHS UINT64_C(0x8080808080808080)

/* Nonzero if one of the 8 bytes of w is '"', '\\', below 0x20 or non-ASCII: a byte
 * that ends a run of string text needing neither escape nor UTF-8 validation. The
 * subtractions borrow only upward from a truly flagged byte, so the lowest flag is
 * always exact (higher ones may be false alarms). */
static inline uint64_t json_string_stops(uint64_t w)
{
    uint64_t quote = w ^ (SWAR_ONES * '"');
    uint64_t bslash = w ^ (SWAR_ONES * '\\');
    uint64_t is_quote = (quote - SWAR_ONES) & ~quote;
    uint64_t is_bslash = (bslash - SWAR_ONES) & ~bslash;
    uint64_t below_space = w - SWAR_ONES * 0x20;   /* also bytes >= 0xA0: flagged anyway */
    return (is_quote | is_bslash | below_space | w) & SWAR_HIGHS;
}

/* Bytes of a word (read in memory order) before its first flagged byte. Where the
 * byte order or the builtin is unknown it answers 0 and JSON_STOPS_EXACT is 0, so the
 * caller's byte loop finds the byte itself. */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JSON_STOPS_EXACT 1
static inline unsigned json_bytes_before_stop(uint64_t flags)
{
    return (unsigned)__builtin_ctzll(flags) / 8;
}
#else
#define JSON_STOPS_EXACT 0
static inline unsigned json_bytes_before_stop(uint64_t flags)
{
    (void)flags;
    return 0;
}
#endif

#endif
