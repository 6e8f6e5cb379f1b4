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
/* Appends s as a JSON string literal (quotes included), escaping as RFC 8259 requires.
 * Invalid UTF-8 bytes are replaced by U+FFFD so the output is always valid. */
void buf_json_string(Buf *b, const char *s, size_t n);
void buf_clear(Buf *b);                 /* len = 0, keeps storage and clears `failed` */
char *buf_steal(Buf *b);                /* caller owns the result; b becomes empty */
void buf_free(Buf *b);

#endif
