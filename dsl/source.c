/* dsl/source.c — rule source files: their text, line table and comments.
 *
 * Owns: every SourceFile it creates (text, path, line table and comments are heap
 * copies freed by source_free). Spans point into sources; they never own them. */
#include "dsl/source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int build_line_table(SourceFile *src)
{
    size_t n = 1;
    for (size_t i = 0; i < src->len; i++)
        if (src->text[i] == '\n')
            n++;
    src->line_starts = malloc(n * sizeof *src->line_starts);
    if (!src->line_starts)
        return -1;
    size_t line = 0;
    src->line_starts[line++] = 0;
    for (size_t i = 0; i < src->len; i++)
        if (src->text[i] == '\n')
            src->line_starts[line++] = i + 1;
    src->n_lines = n;
    return 0;
}

SourceFile *source_new(const char *path, const char *text, size_t len)
{
    /* Editors on Windows start UTF-8 files with a byte order mark; it is not text */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        text += 3;
        len -= 3;
    }
    SourceFile *src = calloc(1, sizeof *src);
    if (!src)
        return NULL;
    src->path = strdup(path ? path : "<input>");
    src->text = malloc(len + 1);
    if (!src->path || !src->text) {
        source_free(src);
        return NULL;
    }
    if (len)
        memcpy(src->text, text, len);
    src->text[len] = '\0';
    src->len = len;
    if (build_line_table(src) != 0) {
        source_free(src);
        return NULL;
    }
    return src;
}

/* Reads the whole stream, at most SOURCE_MAX_BYTES; returns a heap buffer or NULL
 * with errno set. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 8192, n = 0;
    char *data = malloc(cap);
    if (!data) {
        errno = ENOMEM;   /* a replaced allocator need not set it */
        return NULL;
    }
    for (;;) {
        if (n > SOURCE_MAX_BYTES) {
            free(data);
            errno = EFBIG;
            return NULL;
        }
        if (n == cap) {
            char *bigger = realloc(data, cap * 2);
            if (!bigger) {
                free(data);
                errno = ENOMEM;
                return NULL;
            }
            data = bigger;
            cap *= 2;
        }
        size_t got = fread(data + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                int saved = errno ? errno : EIO;
                free(data);
                errno = saved;
                return NULL;
            }
            break;
        }
    }
    *len = n;
    return data;
}

SourceFile *source_read(const char *path, int *err_no)
{
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *err_no = errno;
        return NULL;
    }
    size_t len = 0;
    char *data = read_all(f, &len);
    int saved = errno;
    fclose(f);
    if (!data) {
        *err_no = saved ? saved : EIO;
        return NULL;
    }
    SourceFile *src = source_new(path, data, len);
    free(data);
    if (!src)
        *err_no = ENOMEM;
    return src;
}

void source_free(SourceFile *src)
{
    if (!src)
        return;
    for (size_t i = 0; i < src->n_comments; i++)
        free(src->comments[i].text);
    free(src->comments);
    free(src->line_starts);
    free(src->text);
    free(src->path);
    free(src);
}

const char *source_line(const SourceFile *src, int line, size_t *len)
{
    if (!src || line < 1 || (size_t)line > src->n_lines) {
        *len = 0;
        return "";
    }
    size_t start = src->line_starts[line - 1];
    size_t end = (size_t)line < src->n_lines ? src->line_starts[line] - 1 : src->len;
    if (end > start && src->text[end - 1] == '\r')
        end--;
    *len = end - start;
    return src->text + start;
}

int source_add_comment(SourceFile *src, int line, int col, int end_line,
                       const char *text, size_t len, int own_line)
{
    if (src->n_comments == src->cap_comments) {
        size_t cap = src->cap_comments ? src->cap_comments * 2 : 8;
        SourceComment *bigger = realloc(src->comments, cap * sizeof *bigger);
        if (!bigger)
            return -1;
        src->comments = bigger;
        src->cap_comments = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, text, len);
    copy[len] = '\0';
    src->comments[src->n_comments++] = (SourceComment){
        .line = line, .col = col, .end_line = end_line, .text = copy, .own_line = own_line,
    };
    return 0;
}

static int pos_before(int line_a, int col_a, int line_b, int col_b)
{
    return line_a < line_b || (line_a == line_b && col_a < col_b);
}

Span span_join(Span a, Span b)
{
    /* A zero span (synthesised node) carries no position: the other side wins. */
    if (a.line == 0)
        return b;
    if (b.line == 0)
        return a;
    Span r = a;
    if (pos_before(b.line, b.col, a.line, a.col)) {
        r.line = b.line;
        r.col = b.col;
    }
    if (pos_before(a.end_line, a.end_col, b.end_line, b.end_col)) {
        r.end_line = b.end_line;
        r.end_col = b.end_col;
    }
    return r;
}
