/* dsl/source.h — rule source files and positions in them.
 *
 * Owns: the text of every loaded rule file, kept for the life of the rule set so
 * diagnostics can quote source lines and `fmt` can re-emit comments.
 * A Span names a range in one source: lines and columns are 1-based, columns
 * count bytes, and end_col is exclusive (a one-character token at column 5 has
 * col 5, end_col 6). */
#ifndef VIGIL_DSL_SOURCE_H
#define VIGIL_DSL_SOURCE_H

#include <stddef.h>

typedef struct SourceComment {
    int line, col;          /* where the comment starts */
    int end_line;           /* line of its last character */
    char *text;             /* verbatim, with its `#`, `//` or slash-star markers */
    int own_line;           /* 1 if nothing but blanks precede it on its line */
} SourceComment;

typedef struct SourceFile {
    char *path;             /* as given on the command line; heap, owned */
    char *text;             /* whole file, NUL-terminated; heap, owned */
    size_t len;
    size_t *line_starts;    /* offset of each line's first byte; heap, owned */
    size_t n_lines;
    SourceComment *comments; /* recorded by the scanner in order; heap, owned */
    size_t n_comments;
    size_t cap_comments;
} SourceFile;

typedef struct Span {
    const SourceFile *src;  /* borrowed; NULL for synthesised nodes */
    int line, col;
    int end_line, end_col;
} Span;

/* Creates a source from text (copied, without a leading UTF-8 byte order mark).
 * Returns NULL on allocation failure. */
SourceFile *source_new(const char *path, const char *text, size_t len);
/* Rule files larger than this are refused (EFBIG): a device named by mistake, such as
 * /dev/zero, would otherwise be read until memory runs out. A generated rule set of
 * 60,000 rules is about 7 MB. */
#define SOURCE_MAX_BYTES ((size_t)64 << 20)
/* Reads a file of at most SOURCE_MAX_BYTES. On failure returns NULL and sets *err_no
 * to errno (EFBIG: too large). */
SourceFile *source_read(const char *path, int *err_no);
void source_free(SourceFile *src);
/* The text of line `line` (1-based) without its newline; *len receives its length. */
const char *source_line(const SourceFile *src, int line, size_t *len);
/* Records a comment; returns 0, or -1 on allocation failure. */
int source_add_comment(SourceFile *src, int line, int col, int end_line,
                       const char *text, size_t len, int own_line);
/* The span covering a..b. */
Span span_join(Span a, Span b);

#endif
