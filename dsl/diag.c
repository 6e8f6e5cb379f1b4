/* dsl/diag.c — compile diagnostics: collection, gcc-style printing, did-you-mean.
 *
 * Owns: the Diags list (heap array of Diagnostic, each with heap message and
 * file name). Errors past DIAG_MAX_PER_FILE for one file are only counted. */
#include "dsl/diag.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

void diags_init(Diags *d)
{
    memset(d, 0, sizeof *d);
}

void diags_free(Diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->items[i].message);
        free(d->items[i].file);
        free(d->items[i].line);
    }
    free(d->items);
    memset(d, 0, sizeof *d);
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

static bool same_file(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static size_t errors_kept_for(const Diags *d, const char *file)
{
    size_t kept = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->items[i].level == DIAG_ERROR && same_file(d->items[i].file, file))
            kept++;
    return kept;
}

static bool grow(Diags *d)
{
    if (d->n < d->cap)
        return true;
    size_t cap = d->cap ? d->cap * 2 : 16;
    Diagnostic *items = realloc(d->items, cap * sizeof *items);
    if (items == NULL)
        return false;
    d->items = items;
    d->cap = cap;
    return true;
}

/* A quoted line longer than this is cut to a window around the span. */
#define QUOTE_MAX 200
#define QUOTE_BEFORE 60   /* bytes kept before the span's start in a cut line */

static bool is_utf8_continuation(char c)
{
    return ((unsigned char)c & 0xC0) == 0x80;
}

/* A heap copy of the source line a span starts on (without its line end), or NULL
 * when the span has no source; *shift receives the columns cut from its start. A
 * line over QUOTE_MAX bytes (a generated rule file on one line) is cut to QUOTE_MAX
 * bytes around the span's start, "..." marking each cut, so that every diagnostic
 * does not print the whole line twice (the line and its caret line). Copied at report
 * time because diagnostics are often printed after the rule set that holds the
 * source text was freed. */
static char *quoted_line(const Span *sp, int *shift)
{
    *shift = 0;
    if (sp->src == NULL || sp->line <= 0 || (size_t)sp->line > sp->src->n_lines)
        return NULL;
    size_t len = 0;
    const char *line = source_line(sp->src, sp->line, &len);
    if (line == NULL)
        return NULL;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    size_t from = 0, to = len;
    if (len > QUOTE_MAX) {
        size_t at = sp->col > 0 ? (size_t)sp->col - 1 : 0;
        from = at > QUOTE_BEFORE ? at - QUOTE_BEFORE : 0;
        if (from > len - QUOTE_MAX)
            from = len - QUOTE_MAX;
        to = from + QUOTE_MAX;
        while (from > 0 && from < len && is_utf8_continuation(line[from]))
            from--;
        while (to < len && is_utf8_continuation(line[to]))
            to--;
    }
    const char *before = from > 0 ? "..." : "", *after = to < len ? "..." : "";
    char *copy = buf_format("%s%.*s%s", before, (int)(to - from), line + from, after);
    if (copy)
        *shift = (int)from - (int)strlen(before);
    return copy;
}

/* Stores one diagnostic; takes ownership of `message`. */
static void store(Diags *d, DiagLevel level, Span span, const char *file, char *message)
{
    if (level == DIAG_ERROR) {
        d->errors++;
        if (errors_kept_for(d, file) >= DIAG_MAX_PER_FILE) {
            d->dropped++;
            free(message);
            return;
        }
    } else if (level == DIAG_WARNING) {
        d->warnings++;
    }
    char *file_copy = file ? dup_string(file) : NULL;
    int shift = 0;
    char *line_copy = quoted_line(&span, &shift);
    bool line_lost = span.src && span.line > 0 && line_copy == NULL &&
                     (size_t)span.line <= span.src->n_lines;
    if (message == NULL || (file && file_copy == NULL) || line_lost || !grow(d)) {
        d->oom = true;
        free(message);
        free(file_copy);
        free(line_copy);
        return;
    }
    span.src = NULL; /* the source may be freed before printing: only the copy is used */
    d->items[d->n++] = (Diagnostic){level, span, message, file_copy, line_copy, shift};
}

void diag_vreport(Diags *d, DiagLevel level, Span span, const char *fmt, va_list ap)
{
    const char *file = span.src ? span.src->path : NULL;
    store(d, level, span, file, buf_vformat(fmt, ap));
}

void diag_report(Diags *d, DiagLevel level, Span span, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(d, level, span, fmt, ap);
    va_end(ap);
}

void diag_report_file(Diags *d, DiagLevel level, const char *file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = buf_vformat(fmt, ap);
    va_end(ap);
    Span none = {0};
    store(d, level, none, file, message);
}

static const char *level_name(DiagLevel level)
{
    switch (level) {
    case DIAG_ERROR: return "error";
    case DIAG_WARNING: return "warning";
    case DIAG_NOTE: return "note";
    }
    return "error";
}

/* Writes the indentation of the caret line: a tab where the source has a tab,
 * so the caret lands under the right character whatever the tab width. */
static void print_caret_line(FILE *out, const char *line, size_t len, const Span *sp,
                             int shift)
{
    size_t start = sp->col - shift > 0 ? (size_t)(sp->col - shift) - 1 : 0;
    if (start > len)
        start = len;
    size_t end = start + 1;
    if (sp->end_line == sp->line && sp->end_col > sp->col)
        end = (size_t)(sp->end_col - shift) - 1;
    else if (sp->end_line > sp->line)
        end = len > start ? len : start + 1;
    if (end > len && len > start)
        end = len;   /* a span running past a cut line stops at its "..." */
    if (end <= start)
        end = start + 1;
    /* one column per character, not per byte, so the caret stays under a span that
     * follows non-ASCII text */
    for (size_t i = 0; i < start; i++)
        if (!is_utf8_continuation(line[i]))
            fputc(line[i] == '\t' ? '\t' : ' ', out);
    fputc('^', out);
    for (size_t i = start + 1; i < end; i++)
        if (i >= len || !is_utf8_continuation(line[i]))
            fputc('~', out);
    fputc('\n', out);
}

static void print_quote(FILE *out, const Diagnostic *g)
{
    if (g->line == NULL)
        return;
    size_t len = strlen(g->line);
    fwrite(g->line, 1, len, out);
    fputc('\n', out);
    print_caret_line(out, g->line, len, &g->span, g->quote_shift);
}

static bool is_first_of_file(const Diags *d, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (same_file(d->items[j].file, d->items[i].file))
            return false;
    return true;
}

static void print_one(const Diagnostic *g, FILE *out)
{
    const char *file = g->file ? g->file : "<input>";
    if (g->span.line > 0)
        fprintf(out, "%s:%d:%d: %s: %s\n", file, g->span.line, g->span.col,
                level_name(g->level), g->message);
    else
        fprintf(out, "%s: %s: %s\n", file, level_name(g->level), g->message);
    print_quote(out, g);
}

/* Only the total of dropped errors is kept, so with several capped files the
 * count is shared; with one (the usual case) it is exact. */
static void print_dropped_summary(const Diags *d, FILE *out)
{
    if (d->dropped == 0)
        return;
    size_t capped = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < d->n; i++) {
            const char *file = d->items[i].file;
            if (!is_first_of_file(d, i) || errors_kept_for(d, file) < DIAG_MAX_PER_FILE)
                continue;
            if (pass == 0)
                capped++;
            else
                fprintf(out, "%s: too many errors, %zu more not shown%s\n",
                        file ? file : "<input>", d->dropped,
                        capped > 1 ? " (in all files)" : "");
        }
    }
}

/* Print order: files in the order they were first reported, and within a file
 * by position (checks run in a fixed order, not in source order). Report order
 * breaks ties, so a file-level message stays before positioned ones. */
typedef struct Ordered {
    const Diagnostic *diag;
    size_t file_rank, seq;
} Ordered;

static int compare_ordered(const void *pa, const void *pb)
{
    const Ordered *a = pa, *b = pb;
    if (a->file_rank != b->file_rank)
        return a->file_rank < b->file_rank ? -1 : 1;
    int la = a->diag->span.line, lb = b->diag->span.line;
    if (la != lb)
        return la < lb ? -1 : 1;
    int ca = a->diag->span.col, cb = b->diag->span.col;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Sorted view of the diagnostics; NULL on allocation failure. */
static Ordered *ordered_items(const Diags *d)
{
    Ordered *items = malloc((d->n + 1) * sizeof *items);
    const char **files = malloc((d->n + 1) * sizeof *files);
    if (items == NULL || files == NULL) {
        free(items);
        free(files);
        return NULL;
    }
    size_t n_files = 0;
    for (size_t i = 0; i < d->n; i++) {
        size_t rank = 0;
        while (rank < n_files && !same_file(files[rank], d->items[i].file))
            rank++;
        if (rank == n_files)
            files[n_files++] = d->items[i].file;
        items[i] = (Ordered){&d->items[i], rank, i};
    }
    free(files);
    qsort(items, d->n, sizeof *items, compare_ordered);
    return items;
}

void diags_print(const Diags *d, FILE *out)
{
    Ordered *sorted = ordered_items(d);
    for (size_t i = 0; i < d->n; i++)
        print_one(sorted ? sorted[i].diag : &d->items[i], out);
    free(sorted);
    print_dropped_summary(d, out);
    if (d->oom)
        fprintf(out, "vigil: out of memory (the diagnostics may be incomplete)\n");
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Edit distance counting an adjacent transposition as one edit (optimal string
 * alignment), so the common typo `frist` is one edit from `first`.
 * SIZE_MAX on allocation failure. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *rows = malloc(3 * (lb + 1) * sizeof *rows);
    if (rows == NULL)
        return (size_t)-1;
    size_t *before = rows, *prev = rows + lb + 1, *cur = rows + 2 * (lb + 1);
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                before[j - 2] + 1 < cur[j])
                cur[j] = before[j - 2] + 1;
        }
        size_t *t = before;
        before = prev;
        prev = cur;
        cur = t;
    }
    size_t dist = prev[lb];
    free(rows);
    return dist;
}

const char *diag_nearest(const char *name, const char *const *candidates, size_t n)
{
    bool oom = false;
    return diag_nearest_or_oom(name, candidates, n, &oom);
}

const char *diag_nearest_or_oom(const char *name, const char *const *candidates, size_t n,
                                bool *oom)
{
    size_t len = strlen(name);
    size_t limit = len / 3 > 1 ? len / 3 : 1;
    const char *best = NULL;
    size_t best_dist = limit + 1;
    for (size_t i = 0; i < n; i++) {
        if (candidates[i] == NULL || strcmp(candidates[i], name) == 0)
            continue;
        size_t dist = edit_distance(name, candidates[i]);
        if (dist == (size_t)-1)
            *oom = true;
        /* `lenght` for `len`: a name that extends a known one is a likely slip. */
        size_t cand_len = strlen(candidates[i]);
        if (dist > limit && cand_len >= 3 && cand_len < len &&
            strncmp(name, candidates[i], cand_len) == 0)
            dist = limit;
        if (dist < best_dist) {
            best = candidates[i];
            best_dist = dist;
        }
    }
    return best;
}
