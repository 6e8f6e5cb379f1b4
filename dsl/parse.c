/* dsl/parse.c — drives the scanner and the parser over one file.
 *
 * Owns: the ParseCtx of each parse (a stack value), positions (offsets to line:col,
 * directly or through a template's position map), syntax-error messages, the arena
 * arrays the grammar grows, and the driver: one run per file, plus one per template
 * expression (dsl/build_expr.c). The source joins rs->sources and the file's
 * RuleFile joins rs->files. The scanner callbacks live in dsl/scan.c, the builders
 * of the grammar's actions in dsl/build_expr.c and dsl/build.c. */
#include "dsl/parse.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/parser.h"

/* Longest token text quoted in a syntax error. */
#define MAX_QUOTED 40

/* The scanner's entry points (generated from lexer.l; yyscan_t is void *). */
int yylex_init_extra(struct ParseCtx *extra, void **scanner);
void lex_scan_buffer(char *base, size_t size, void *scanner);
int yylex_destroy(void *scanner);

/* ---- positions ----------------------------------------------------------- */

SrcPos parse_locate(ParseCtx *pc, size_t off)
{
    if (pc->map)
        return pc->map[off];
    const SourceFile *src = pc->src;
    size_t line = pc->line_hint < src->n_lines ? pc->line_hint : 0;
    if (off < src->line_starts[line]) {
        /* An earlier position (a template re-read after the lookahead): search. */
        size_t lo = 0, hi = line;
        while (lo < hi) {
            size_t mid = lo + (hi - lo + 1) / 2;
            if (src->line_starts[mid] <= off)
                lo = mid;
            else
                hi = mid - 1;
        }
        line = lo;
    }
    while (line + 1 < src->n_lines && src->line_starts[line + 1] <= off)
        line++;
    pc->line_hint = line;
    return (SrcPos){(int)line + 1, (int)(off - src->line_starts[line]) + 1};
}

Span parse_span_at(ParseCtx *pc, size_t start, size_t end)
{
    SrcPos a = parse_locate(pc, start), b = parse_locate(pc, end);
    return (Span){pc->src, a.line, a.col, b.line, b.col};
}

static bool span_is_empty(Span s)
{
    return s.line == s.end_line && s.col == s.end_col;
}

Span parse_rhs_span(const Span *rhs, int n)
{
    if (n == 0) {
        /* An empty rule sits where the previous symbol ended. */
        Span s = rhs[0];
        s.line = s.end_line;
        s.col = s.end_col;
        return s;
    }
    int first = 1, last = n;
    while (first < last && span_is_empty(rhs[first]))
        first++;
    while (last > first && span_is_empty(rhs[last]))
        last--;
    return span_join(rhs[first], rhs[last]);
}

/* ---- diagnostics --------------------------------------------------------- */

void parse_error(ParseCtx *pc, Span span, const char *fmt, ...)
{
    if (pc->errors > 0 && span.line == pc->last_error.line && span.col == pc->last_error.col)
        return;   /* one message per spot: the first is the useful one */
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(pc->diags, DIAG_ERROR, span, fmt, ap);
    va_end(ap);
    pc->errors++;
    pc->last_error = span;
}

void parse_oom(ParseCtx *pc)
{
    if (pc->oom)
        return;
    pc->oom = true;
    pc->diags->oom = true;   /* part of the file is lost: the load must fail */
    Span here = parse_span_at(pc, pc->tok_off, pc->tok_off + pc->tok_len);
    parse_error(pc, here, "out of memory");
}

Span parse_token_span(ParseCtx *pc)
{
    return parse_span_at(pc, pc->tok_off, pc->tok_off + pc->tok_len);
}

static bool is_token_class(const char *name)
{
    return strcmp(name, "identifier") == 0 || strcmp(name, "number") == 0 ||
           strcmp(name, "string") == 0 || strcmp(name, "duration") == 0;
}

/* Keywords and punctuation are quoted; classes and "end of file" are not. */
static void put_symbol(Buf *b, const char *name)
{
    if (name[0] == '\'' || name[0] == '"' || is_token_class(name) ||
        strcmp(name, "end of file") == 0)
        buf_puts(b, name);
    else
        buf_printf(b, "'%s'", name);
}

static void put_token_text(Buf *b, ParseCtx *pc, bool quote)
{
    size_t n = pc->tok_len < MAX_QUOTED ? pc->tok_len : MAX_QUOTED;
    if (quote)
        buf_putc(b, '\'');
    buf_append(b, pc->input + pc->tok_off, n);
    if (n < pc->tok_len)
        buf_puts(b, "...");
    if (quote)
        buf_putc(b, '\'');
}

static bool is_comparison(const char *name)
{
    static const char *const OPS[] = {"==", "!=", "<", "<=", ">", ">=", "in", "=~", "!~",
                                      "'<'", "'>'"};
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (strcmp(name, OPS[i]) == 0)
            return true;
    return false;
}

static bool expects_expression(const char *const *expected, int n)
{
    int found = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(expected[i], "number") == 0 || strcmp(expected[i], "string") == 0 ||
            strcmp(expected[i], "identifier") == 0)
            found++;
    return found == 3;
}

/* A statement or declaration keyword (or a `}`) where a `;` would have been
 * accepted is most often a forgotten `;`. */
static void put_missing_semicolon_hint(Buf *b, const ParseCtx *pc, Span at, const char *got,
                                       const char *const *expected, int n)
{
    static const char *const STARTERS[] = {
        "'}'", "filter", "key", "begin", "next", "followed_by", "followed_by_any", "not_next",
        "not_followed_by", "skip", "suppress", "on", "rule", "time", "output",
    };
    bool semicolon_ok = false;
    for (int i = 0; i < n; i++)
        semicolon_ok = semicolon_ok || strcmp(expected[i], "';'") == 0;
    if (!semicolon_ok)
        return;
    if (pc->prev_line > 0 && at.line > pc->prev_line) {
        buf_printf(b, " (is a ';' missing at the end of line %d?)", pc->prev_line);
        return;
    }
    for (size_t i = 0; i < sizeof STARTERS / sizeof STARTERS[0]; i++)
        if (strcmp(got, STARTERS[i]) == 0) {
            buf_puts(b, " (is a ';' missing before it?)");
            return;
        }
}

/* A reserved word used as a field name (`where time > 5`, `filter key == "a"`) is
 * read as the keyword, so the operator after it is the unexpected token; saying that
 * comparisons do not chain would send the user the wrong way. True if the hint was
 * given. */
static bool put_reserved_field_hint(Buf *b, const ParseCtx *pc, size_t off, size_t len)
{
    const char *word = pc->input + off;
    int kw = lex_keyword(word, len);
    if (kw == 0 || kw == AND || kw == OR || kw == NOT || kw == IN || kw == TRUE ||
        kw == FALSE || kw == NULL_)
        return false;
    buf_printf(b, " ('%.*s' is a reserved word: write `%.*s` for a field of that name)",
               (int)len, word, (int)len, word);
    return true;
}

void parse_syntax_error(ParseCtx *pc, Span at, bool lexer_reported, const char *got,
                        const char *const *expected, int n_expected)
{
    if (lexer_reported)
        return;   /* the scanner has described the bad token already */
    Buf b = BUF_INIT;
    buf_puts(&b, "syntax error: unexpected ");
    if (pc->map && strcmp(got, "end of file") == 0)
        buf_puts(&b, "end of the template expression");
    else
        put_symbol(&b, got);
    if (is_token_class(got)) {
        buf_putc(&b, ' ');
        put_token_text(&b, pc, strcmp(got, "identifier") == 0);
    }
    /* A long list of alternatives helps nobody; a short one says what to write. */
    bool after_reserved = (is_comparison(got) || strcmp(got, "'.'") == 0) &&
                          put_reserved_field_hint(&b, pc, pc->prev_off, pc->prev_len);
    if (after_reserved) {
        /* `where time > 5`: said what to write */
    } else if (is_comparison(got)) {
        buf_puts(&b, " (comparisons do not chain: write 'a < b and b < c')");
    } else if (n_expected > 4 && expects_expression(expected, n_expected)) {
        buf_puts(&b, ", expected an expression");
        put_reserved_field_hint(&b, pc, pc->tok_off, pc->tok_len);   /* `where to == 1` */
    } else if (n_expected > 4) {
        put_missing_semicolon_hint(&b, pc, at, got, expected, n_expected);
    } else if (n_expected > 0) {
        buf_puts(&b, ", expected ");
        for (int i = 0; i < n_expected; i++) {
            if (i > 0)
                buf_puts(&b, i + 1 == n_expected ? " or " : ", ");
            put_symbol(&b, expected[i]);
        }
    }
    if (strcmp(got, "end of file") == 0 && !pc->map && pc->brace_depth > 0) {
        SrcPos open = parse_locate(pc, pc->open_brace_off);
        buf_printf(&b, " (the '{' at %d:%d is not closed)", open.line, open.col);
    }
    if (b.failed)
        parse_oom(pc);
    else
        parse_error(pc, at, "%s", b.data);
    buf_free(&b);
}

/* ---- arena arrays -------------------------------------------------------- */

/* Appends a zeroed slot of `size` bytes; NULL on allocation failure. */
void *parse_vec_push(ParseCtx *pc, Vec *v, size_t size)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        void *bigger = arena_grow(pc->arena, v->items, v->n * size, cap * size);
        if (!bigger)
            return NULL;
        v->items = bigger;
        v->cap = cap;
    }
    void *slot = (char *)v->items + v->n * size;
    memset(slot, 0, size);
    v->n++;
    return slot;
}

bool parse_push_ptr(ParseCtx *pc, Vec *v, void *p)
{
    void **slot = parse_vec_push(pc, v, sizeof *slot);
    if (!slot)
        return false;
    *slot = p;
    return true;
}

/* ---- driver -------------------------------------------------------------- */

/* A copy of pc->input that flex may scan in place (it ends in two NUL bytes), or
 * NULL (reported). Heap. Ours rather than yy_scan_bytes's, which lost its copy when
 * a later allocation of the scanner failed. */
static char *scan_copy(ParseCtx *pc)
{
    char *copy = malloc(pc->input_len + 2);
    if (copy == NULL) {
        parse_oom(pc);
        return NULL;
    }
    memcpy(copy, pc->input, pc->input_len);
    copy[pc->input_len] = copy[pc->input_len + 1] = '\0';
    return copy;
}

/* Runs scanner and parser over pc->input. */
static void run_parser(ParseCtx *pc)
{
    if (pc->input_len > INT_MAX - 2) {
        parse_error(pc, (Span){.src = pc->src, .line = 1, .col = 1, .end_line = 1, .end_col = 1},
                    "rule file too large");
        return;
    }
    char *text = scan_copy(pc);
    if (text == NULL)
        return;
    void *scanner = NULL;
    if (yylex_init_extra(pc, &scanner) != 0) {
        parse_oom(pc);
        free(text);
        return;
    }
    jmp_buf failed;
    pc->scanner_failed = &failed;
    if (setjmp(failed) == 0) {
        lex_scan_buffer(text, pc->input_len + 2, scanner);
        pc->scanner = scanner;
        yyparse(pc);
    }
    yylex_destroy(scanner);
    pc->scanner = NULL;
    pc->scanner_failed = NULL;   /* `failed` dies with this frame */
    free(text);   /* the scanner does not own it: it was handed over as a buffer */
}

static ParseCtx ctx_for(RuleSet *rs, SourceFile *src, Diags *diags, int start_token)
{
    return (ParseCtx){
        .rs = rs, .arena = &rs->arena, .diags = diags, .src = src,
        .input = src->text, .input_len = src->len, .record_comments = true,
        .start_token = start_token,
    };
}

/* Parses a template's expression: same grammar, positions through `map`. */
Expr *parse_sub_expr(ParseCtx *pc, const char *text, size_t len, const SrcPos *map)
{
    ParseCtx sub = ctx_for(pc->rs, pc->src, pc->diags, START_EXPR);
    sub.input = text;
    sub.input_len = len;
    sub.map = map;
    sub.record_comments = false;
    run_parser(&sub);
    pc->errors += sub.errors;
    if (sub.errors > 0) {
        pc->last_error = sub.last_error;
        if (sub.oom)
            pc->oom = true;
        return NULL;
    }
    return sub.result;
}

static bool add_source(RuleSet *rs, SourceFile *src)
{
    SourceFile **bigger = realloc(rs->sources, (rs->n_sources + 1) * sizeof *bigger);
    if (!bigger)
        return false;
    rs->sources = bigger;
    rs->sources[rs->n_sources++] = src;
    return true;
}

static bool add_file(RuleSet *rs, const ParseCtx *pc)
{
    RuleFile *bigger = realloc(rs->files, (rs->n_files + 1) * sizeof *bigger);
    if (!bigger)
        return false;
    rs->files = bigger;
    rs->files[rs->n_files++] = (RuleFile){
        .src = pc->src, .decls = pc->decls.items, .n_decls = pc->decls.n, .time = pc->time,
    };
    return true;
}

/* An allocation failure outside the parser: the file is lost, so the load fails. */
static void report_file_oom(Diags *diags, const char *path, const char *what)
{
    diag_report_file(diags, DIAG_ERROR, path, "out of memory%s", what);
    diags->oom = true;
}

/* Creates a source and hands it to the rule set; NULL (reported) on failure. */
static SourceFile *adopt_source(RuleSet *rs, const char *path, const char *text, size_t len,
                                Diags *diags)
{
    SourceFile *src = source_new(path, text, len);
    if (!src || !add_source(rs, src)) {
        source_free(src);
        report_file_oom(diags, path, "");
        return NULL;
    }
    return src;
}

/* Parses a source already in rs->sources and records its RuleFile. */
static int parse_source(RuleSet *rs, SourceFile *src, Diags *diags)
{
    ParseCtx pc = ctx_for(rs, src, diags, START_FILE);
    run_parser(&pc);
    if (!add_file(rs, &pc)) {
        report_file_oom(diags, src->path, "");
        return pc.errors + 1;
    }
    return pc.errors;
}

int dsl_parse_text(RuleSet *rs, const char *path, const char *text, size_t len, Diags *diags)
{
    SourceFile *src = adopt_source(rs, path, text, len, diags);
    return src ? parse_source(rs, src, diags) : 1;
}

int dsl_parse_file(RuleSet *rs, const char *path, Diags *diags)
{
    int err = 0;
    SourceFile *src = source_read(path, &err);
    if (!src && err == EFBIG)
        diag_report_file(diags, DIAG_ERROR, path, "cannot read: larger than %zu MiB (is it "
                         "a rule file?)", SOURCE_MAX_BYTES >> 20);
    else if (!src && err == ENOMEM)
        report_file_oom(diags, path, " while reading the file");
    else if (!src)
        diag_report_file(diags, DIAG_ERROR, path, "cannot read: %s", strerror(err));
    if (!src)
        return 1;
    if (!add_source(rs, src)) {
        source_free(src);
        report_file_oom(diags, path, "");
        return 1;
    }
    return parse_source(rs, src, diags);
}

Expr *dsl_parse_expr(RuleSet *rs, const char *text, Diags *diags)
{
    SourceFile *src = adopt_source(rs, "<expr>", text, strlen(text), diags);
    if (!src)
        return NULL;
    ParseCtx pc = ctx_for(rs, src, diags, START_EXPR);
    run_parser(&pc);
    return pc.errors > 0 ? NULL : pc.result;
}
