/* dsl/diag.h — compile diagnostics in gcc's form.
 *
 * Owns: the list of diagnostics of one compile (messages are heap copies).
 * Printing quotes the source line and underlines the span:
 *     rules/fraud.cep:12:21: error: unknown step 'frist' (did you mean 'first'?)
 *       followed_by third where frist.amount > 1000;
 *                               ^~~~~
 * A line longer than 200 bytes is quoted cut to 200 around the span.
 * At most DIAG_MAX_PER_FILE errors are kept per file; the rest are counted and
 * summarised in one line, so a broken file cannot flood the terminal. */
#ifndef VIGIL_DSL_DIAG_H
#define VIGIL_DSL_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "dsl/source.h"

#define DIAG_MAX_PER_FILE 20

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct Diagnostic {
    DiagLevel level;
    Span span;            /* positions only: span.src is cleared once the line is copied */
    char *message;        /* heap, owned */
    char *file;           /* heap copy of the file name */
    char *line;           /* heap copy of the quoted source line, or NULL */
    int quote_shift;      /* columns `line` starts after the line's start (a long line
                             is quoted cut around the span, "..." at each cut) */
} Diagnostic;

typedef struct Diags {
    Diagnostic *items;    /* heap, owned */
    size_t n, cap;
    size_t errors, warnings;
    size_t dropped;       /* errors past the per-file cap */
    bool oom;             /* memory ran out: a diagnostic could not be stored, or part of
                             the rules was lost (reported); the load must fail */
} Diags;

void diags_init(Diags *d);
void diags_free(Diags *d);
void diag_report(Diags *d, DiagLevel level, Span span, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_vreport(Diags *d, DiagLevel level, Span span, const char *fmt, va_list ap);
/* A diagnostic with no source position (a file that cannot be read). */
void diag_report_file(Diags *d, DiagLevel level, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prints all diagnostics in report order. */
void diags_print(const Diags *d, FILE *out);
/* The candidate closest to `name` by edit distance, if close enough to suggest
 * (distance <= max(1, strlen(name)/3)); NULL otherwise. */
const char *diag_nearest(const char *name, const char *const *candidates, size_t n);
/* diag_nearest that sets *oom when memory ran out comparing names (the closest may
 * then have been missed); *oom is left as it was otherwise. */
const char *diag_nearest_or_oom(const char *name, const char *const *candidates, size_t n,
                                bool *oom);

#endif
