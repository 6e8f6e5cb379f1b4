/* base/buf.c — growable byte buffer; see buf.h. */
#include "base/buf.h"
#include "base/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool buf_reserve(Buf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void buf_append(Buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_puts(Buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_putc(Buf *b, char c)
{
    if (!buf_reserve(b, 1))
        return;
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !buf_reserve(b, (size_t)n)) {
        b->failed = true;
        return;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

static bool needs_escape(unsigned char c)
{
    return c == '"' || c == '\\' || c < 0x20;
}

size_t buf_json_verbatim_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    if (n < 8) {   /* short (names, keys): one word, padded with plain bytes */
        uint64_t w = SWAR_ONES * 'a';
        memcpy(&w, p, n);
        uint64_t flags = json_string_stops(w);
        if (!flags)
            return n;
        i = json_bytes_before_stop(flags);
    }
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, sizeof w);
            uint64_t flags = json_string_stops(w);
            if (!flags) {
                i += 8;
                continue;
            }
            i += json_bytes_before_stop(flags);
        } else if (JSON_STOPS_EXACT && n >= 8) {
            /* The last 8 bytes, of which the first `seen` passed already: they are
             * plain or UTF-8, neither of which borrows, so the flags above stay exact. */
            uint64_t w;
            memcpy(&w, p + n - 8, sizeof w);
            size_t seen = 8 - (n - i);
            uint64_t flags = json_string_stops(w) >> (8 * seen);
            if (!flags)
                return n;
            i += json_bytes_before_stop(flags);
        }
        unsigned char c = p[i];
        if (c < 0x80) {
            if (needs_escape(c))
                return i;
            i++;
        } else {
            size_t seq = utf8_valid_len(p + i, n - i);
            if (seq == 0)
                return i;
            i += seq;
        }
    }
    return n;
}

/* The escape of one byte where buf_json_verbatim_len stopped: a JSON escape for an
 * ASCII byte, U+FFFD for the first byte of an invalid UTF-8 sequence. */
static void put_escape(Buf *b, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    switch (c) {
    case '"':  buf_append(b, "\\\"", 2); return;
    case '\\': buf_append(b, "\\\\", 2); return;
    case '\n': buf_append(b, "\\n", 2); return;
    case '\r': buf_append(b, "\\r", 2); return;
    case '\t': buf_append(b, "\\t", 2); return;
    case '\b': buf_append(b, "\\b", 2); return;
    case '\f': buf_append(b, "\\f", 2); return;
    default: break;
    }
    if (c < 0x20) {
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        buf_append(b, u, sizeof u);
    } else {
        buf_append(b, "\xEF\xBF\xBD", 3);
    }
}

void buf_json_string(Buf *b, const char *s, size_t n)
{
    if (n > ((size_t)-1) / 2 || !buf_reserve(b, n + 2)) {
        b->failed = true;
        return;
    }
    size_t run = buf_json_verbatim_len(s, n);
    char *d = b->data + b->len;
    d[0] = '"';
    memcpy(d + 1, s, run);
    b->len += run + 1;
    if (run == n) {                /* the usual case: nothing to escape */
        d[n + 1] = '"';
        d[n + 2] = '\0';
        b->len++;
        return;
    }
    for (size_t i = run; i < n;) {
        put_escape(b, (unsigned char)s[i]);
        i++;
        run = buf_json_verbatim_len(s + i, n - i);
        buf_append(b, s + i, run);
        i += run;
    }
    buf_putc(b, '"');
}

void buf_truncate(Buf *b, size_t len)
{
    if (!b->data || len > b->len)
        return;
    b->len = len;
    b->data[len] = '\0';
}

char *buf_vformat(const char *fmt, va_list ap)
{
    Buf b = BUF_INIT;
    buf_vprintf(&b, fmt, ap);
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

char *buf_format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = buf_vformat(fmt, ap);
    va_end(ap);
    return s;
}

void buf_clear(Buf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->data)
        b->data[0] = '\0';
}

char *buf_steal(Buf *b)
{
    char *p = b->data;
    if (!p && !b->failed)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
    return p;
}

void buf_free(Buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}
