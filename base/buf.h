/* base/buf.h — growable byte buffer for building text (JSON, formatted rules).
 *
 * Owns: its heap storage (data), always NUL-terminated after any append.
 * An allocation failure sets `failed`; later appends are ignored, so a caller
 * may build a whole text and check once at the end. */
#ifndef VIGIL_BASE_BUF_H
#define VIGIL_BASE_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct Buf {
    char *data;
    size_t len;
    size_t cap;
    bool failed;
} Buf;

#define BUF_INIT {NULL, 0, 0, false}

bool buf_reserve(Buf *b, size_t extra);
void buf_append(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_putc(Buf *b, char c);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
/* buf_append and buf_putc for hot paths (alert records): inline while the room is
 * there, e.g. after one buf_reserve for the whole text. */
static inline void buf_append_inline(Buf *b, const char *s, size_t n)
{
    if (b->failed || n >= b->cap - b->len) {
        buf_append(b, s, n);
        return;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}
static inline void buf_putc_inline(Buf *b, char c)
{
    if (b->failed || b->cap - b->len < 2) {
        buf_putc(b, c);
        return;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}
/* Appends s as a JSON string literal (quotes included), escaping as RFC 8259 requires.
 * Invalid UTF-8 bytes are replaced by U+FFFD so the output is always valid. */
void buf_json_string(Buf *b, const char *s, size_t n);
/* Length of the longest prefix of s that buf_json_string copies unchanged: up to the
 * first '"', '\\', control byte or invalid UTF-8 sequence. n when all of s can go
 * between quotes as it is. Scans 8 bytes at a time while they are plain ASCII. */
size_t buf_json_verbatim_len(const char *s, size_t n);
/* Drops the bytes from len on (len <= b->len); keeps storage and `failed`. */
void buf_truncate(Buf *b, size_t len);
/* A heap copy of the formatted text (caller frees); NULL on allocation failure. */
char *buf_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *buf_vformat(const char *fmt, va_list ap);
void buf_clear(Buf *b);                 /* len = 0, keeps storage and clears `failed` */
char *buf_steal(Buf *b);                /* caller owns the result; b becomes empty */
void buf_free(Buf *b);

#endif
