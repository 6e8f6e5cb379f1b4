/* runtime/digits.h — runs of ASCII decimal digits read 8 bytes at a time, for the
 * event decoder's numbers and the event time's integers. Little-endian GNU C only:
 * elsewhere DIGIT_WORDS is 0 and callers take their byte loops. */
#ifndef VIGIL_RUNTIME_DIGITS_H
#define VIGIL_RUNTIME_DIGITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DIGIT_WORDS 1
#else
#define DIGIT_WORDS 0
#endif

#define DIGIT_ONES UINT64_C(0x0101010101010101)
#define DIGIT_HIGHS UINT64_C(0x8080808080808080)

static inline uint64_t digit_word_load(const char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

#if DIGIT_WORDS
/* Digits at the start of the 8 bytes of w (0..8). A byte gets its high bit set by
 * subtracting '0' if it is below '0' (it wraps to 0xD0 or more) or 0xBA or above, and
 * by adding 0x46 if it is from ':' (0x3A) to 0xB9; digits get neither. Borrows and
 * carries only move upward from a flagged byte, so the lowest flag is exact. */
static inline unsigned digit_word_count(uint64_t w)
{
    uint64_t flags = ((w - DIGIT_ONES * '0') | (w + DIGIT_ONES * 0x46)) & DIGIT_HIGHS;
    return flags == 0 ? 8 : (unsigned)__builtin_ctzll(flags) / 8;
}

/* The value of the first n (1..8) bytes of w, all digits, the first the most
 * significant. The digits are moved to the top of the word, so the bytes below them
 * are zeros that lead; then neighbours merge pairwise: 2-digit, 4-digit, 8-digit. */
static inline uint64_t digit_word_value(uint64_t w, unsigned n)
{
    uint64_t d = (w - DIGIT_ONES * '0') << (64 - 8 * n);
    d = (d * 10 + (d >> 8)) & UINT64_C(0x00FF00FF00FF00FF);
    d = (d * 100 + (d >> 16)) & UINT64_C(0x0000FFFF0000FFFF);
    return (d * 10000 + (d >> 32)) & UINT64_C(0xFFFFFFFF);
}
#endif

/* Powers of ten that fit in 64 bits. */
static const uint64_t DIGIT_POW10[20] = {
    UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000),
    UINT64_C(100000), UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000),
    UINT64_C(1000000000), UINT64_C(10000000000), UINT64_C(100000000000),
    UINT64_C(1000000000000), UINT64_C(10000000000000), UINT64_C(100000000000000),
    UINT64_C(1000000000000000), UINT64_C(10000000000000000),
    UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
    UINT64_C(10000000000000000000),
};

/* Skips the digits at p, before end, appending their value to *acc (which wraps
 * modulo 2^64 when the run is long: callers use it only for short runs). */
static inline const char *digit_run(const char *p, const char *end, uint64_t *acc)
{
    uint64_t v = *acc;
#if DIGIT_WORDS
    while (end - p >= 8) {
        uint64_t w = digit_word_load(p);
        unsigned n = digit_word_count(w);
        if (n == 0)
            break;
        v = v * DIGIT_POW10[n] + digit_word_value(w, n);
        p += n;
        if (n < 8) {
            *acc = v;
            return p;
        }
    }
#endif
    while (p < end) {
        unsigned digit = (unsigned)(unsigned char)*p - '0';
        if (digit > 9)
            break;
        v = v * 10 + digit;
        p++;
    }
    *acc = v;
    return p;
}

/* Whether [p, end), of 1..19 bytes, is all digits; if so its value in *out. Reads only
 * inside [p, end): a tail shorter than a word is taken from the text's last 8 bytes. */
static inline bool digit_text_value(const char *p, const char *end, uint64_t *out)
{
#if DIGIT_WORDS
    if (end - p >= 8) {
        uint64_t v = 0;
        for (; end - p > 8; p += 8) {
            uint64_t w = digit_word_load(p);
            if (digit_word_count(w) != 8)
                return false;
            v = v * DIGIT_POW10[8] + digit_word_value(w, 8);
        }
        unsigned n = (unsigned)(end - p);
        uint64_t tail = digit_word_load(end - 8) >> (64 - 8 * n);
        if (digit_word_count(tail) != n)
            return false;
        *out = v * DIGIT_POW10[n] + digit_word_value(tail, n);
        return true;
    }
#endif
    uint64_t v = 0;
    if (digit_run(p, end, &v) != end)
        return false;
    *out = v;
    return true;
}

#endif
