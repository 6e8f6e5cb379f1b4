/* dsl/parse.c — drives the scanner and the parser over one file and builds the AST.
 *
 * Owns: the ParseCtx of each parse (a stack value), the token callbacks of the
 * scanner (positions, keywords, numbers, durations, string escapes, comments), the
 * builders the grammar's actions call, and template splitting: `{expr}` inside a
 * string is parsed again with the same grammar from the decoded bytes, with a
 * position map so that its spans point into the rule file.
 * Nodes go to rs->arena; the source joins rs->sources; the file's RuleFile joins
 * rs->files. Names are not resolved here (dsl/check.c does that). */
#include "dsl/parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/parser.h"

/* Deeper expression trees are rejected: every later pass walks them recursively. */
#define MAX_EXPR_DEPTH 256
/* Longest token text quoted in a syntax error. */
#define MAX_QUOTED 40

/* The scanner's entry points (generated from lexer.l; yyscan_t is void *). */
struct yy_buffer_state;
int yylex_init_extra(struct ParseCtx *extra, void **scanner);
struct yy_buffer_state *yy_scan_bytes(const char *bytes, int len, void *scanner);
int yylex_destroy(void *scanner);

/* ---- positions ----------------------------------------------------------- */

static SrcPos locate(ParseCtx *pc, size_t off)
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

static Span span_at(ParseCtx *pc, size_t start, size_t end)
{
    SrcPos a = locate(pc, start), b = locate(pc, end);
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
    Span here = span_at(pc, pc->tok_off, pc->tok_off + pc->tok_len);
    parse_error(pc, here, "out of memory");
}

static Span token_span(ParseCtx *pc)
{
    return span_at(pc, pc->tok_off, pc->tok_off + pc->tok_len);
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
    if (is_comparison(got)) {
        buf_puts(&b, " (comparisons do not chain: write 'a < b and b < c')");
    } else if (n_expected > 4 && expects_expression(expected, n_expected)) {
        buf_puts(&b, ", expected an expression");
    } else if (n_expected > 4) {
        for (int i = 0; i < n_expected; i++)
            if (strcmp(expected[i], "';'") == 0 && at.line > pc->prev_line && pc->prev_line > 0)
                buf_printf(&b, " (is a ';' missing at the end of line %d?)", pc->prev_line);
    } else if (n_expected > 0) {
        buf_puts(&b, ", expected ");
        for (int i = 0; i < n_expected; i++) {
            if (i > 0)
                buf_puts(&b, i + 1 == n_expected ? " or " : ", ");
            put_symbol(&b, expected[i]);
        }
    }
    if (b.failed)
        parse_oom(pc);
    else
        parse_error(pc, at, "%s", b.data);
    buf_free(&b);
}

/* ---- arena arrays -------------------------------------------------------- */

/* Appends a zeroed slot of `size` bytes; NULL on allocation failure. */
static void *vec_push(ParseCtx *pc, Vec *v, size_t size)
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
    void **slot = vec_push(pc, v, sizeof *slot);
    if (!slot)
        return false;
    *slot = p;
    return true;
}

/* ---- scanner callbacks --------------------------------------------------- */

static const struct { const char *word; int token; } KEYWORDS[] = {
    {"rule", RULE}, {"filter", FILTER}, {"key", KEY}, {"begin", BEGIN_}, {"next", NEXT},
    {"followed_by", FOLLOWED_BY}, {"followed_by_any", FOLLOWED_BY_ANY},
    {"not_next", NOT_NEXT}, {"not_followed_by", NOT_FOLLOWED_BY}, {"within", WITHIN},
    {"where", WHERE}, {"skip", SKIP}, {"suppress", SUPPRESS}, {"on", ON}, {"alert", ALERT},
    {"fields", FIELDS}, {"to", TO}, {"times", TIMES}, {"one_or_more", ONE_OR_MORE},
    {"optional", OPTIONAL}, {"greedy", GREEDY}, {"consecutive", CONSECUTIVE},
    {"allow_combinations", ALLOW_COMBINATIONS}, {"until", UNTIL}, {"and", AND}, {"or", OR},
    {"not", NOT}, {"in", IN}, {"true", TRUE}, {"false", FALSE}, {"null", NULL_},
    {"time", TIME}, {"output", OUTPUT},
};

void lex_advance(ParseCtx *pc, YYLTYPE *lloc, size_t len)
{
    pc->tok_off = pc->pos;
    pc->tok_len = len;
    pc->pos += len;
    *lloc = span_at(pc, pc->tok_off, pc->pos);
}

int parse_next_token(YYSTYPE *lval, YYLTYPE *lloc, ParseCtx *pc)
{
    if (pc->start_token) {
        int t = pc->start_token;
        pc->start_token = 0;
        *lloc = span_at(pc, 0, 0);
        return t;
    }
    int t = vigil_scan(lval, lloc, pc->scanner);
    if (t == YYEOF) {
        /* flex runs no action at the end: place the end-of-file token ourselves. */
        pc->tok_off = pc->pos;
        pc->tok_len = 0;
        *lloc = span_at(pc, pc->pos, pc->pos);
    }
    pc->prev_line = pc->tok_line;
    pc->tok_line = lloc->end_line;
    return t;
}

static Tok token_value(ParseCtx *pc, const char *text, size_t len)
{
    return (Tok){.text = text, .len = len, .off = pc->tok_off, .src_len = pc->tok_len};
}

/* Reports a NUL byte inside a token; returns true if there was one. */
static bool report_nul(ParseCtx *pc, size_t off, size_t len)
{
    const char *nul = memchr(pc->input + off, '\0', len);
    if (!nul)
        return false;
    size_t at = (size_t)(nul - pc->input);
    parse_error(pc, span_at(pc, at, at + 1), "NUL byte in rule file");
    return true;
}

int lex_word(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len)
{
    for (size_t i = 0; i < sizeof KEYWORDS / sizeof KEYWORDS[0]; i++)
        if (strlen(KEYWORDS[i].word) == len && memcmp(KEYWORDS[i].word, text, len) == 0)
            return KEYWORDS[i].token;
    char *name = arena_strndup(pc->arena, text, len);
    if (!name) {
        parse_oom(pc);
        return YYUNDEF;
    }
    lval->tok = token_value(pc, name, len);
    return IDENT;
}

int lex_backtick(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len)
{
    if (report_nul(pc, pc->tok_off, len))
        return YYUNDEF;
    if (len == 2) {
        parse_error(pc, token_span(pc), "empty backtick name");
        return YYUNDEF;
    }
    char *name = arena_strndup(pc->arena, text + 1, len - 2);
    if (!name) {
        parse_oom(pc);
        return YYUNDEF;
    }
    lval->tok = token_value(pc, name, len - 2);
    return IDENT;
}

int lex_number(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len)
{
    char *copy = arena_strndup(pc->arena, text, len);
    if (!copy) {
        parse_oom(pc);
        return YYUNDEF;
    }
    double value = strtod(copy, NULL);
    if (!isfinite(value)) {
        parse_error(pc, token_span(pc), "number out of range: %s", copy);
        return YYUNDEF;
    }
    lval->tok = token_value(pc, copy, len);
    lval->tok.num = value;
    return NUMBER;
}

static int64_t duration_unit_ms(const char *unit, size_t len)
{
    static const struct { const char *unit; int64_t ms; } UNITS[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000}, {"d", 86400 * 1000},
    };
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
        if (strlen(UNITS[i].unit) == len && memcmp(UNITS[i].unit, unit, len) == 0)
            return UNITS[i].ms;
    return 0;
}

/* `30s` is a duration; anything else glued to a number (`10min`, `1.5s`) is an error
 * rather than two tokens, which would parse as something the user did not mean. */
int lex_suffixed_number(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len)
{
    size_t digits = 0;
    while (digits < len && text[digits] >= '0' && text[digits] <= '9')
        digits++;
    int64_t unit = duration_unit_ms(text + digits, len - digits);
    if (unit == 0) {
        parse_error(pc, token_span(pc),
                    "invalid number or duration '%.*s' (a duration is a whole number and one of "
                    "ms, s, m, h, d)",
                    (int)len, text);
        return YYUNDEF;
    }
    int64_t count = 0;
    for (size_t i = 0; i < digits; i++) {
        int d = text[i] - '0';
        if (count > (INT64_MAX / unit - d) / 10) {
            parse_error(pc, token_span(pc), "duration out of range: %.*s", (int)len, text);
            return YYUNDEF;
        }
        count = count * 10 + d;
    }
    char *copy = arena_strndup(pc->arena, text, len);
    if (!copy) {
        parse_oom(pc);
        return YYUNDEF;
    }
    lval->tok = token_value(pc, copy, len);
    lval->tok.ms = count * unit;
    return DURATION;
}

static int hex_value(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(char *out, unsigned long cp)
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

#define REPLACEMENT_CHAR 0xFFFDUL

/* Decodes `\uXXXX` (and a following low surrogate) at in[i]; returns the source
 * bytes used and the code point in *cp (U+FFFD for a lone surrogate, 'u' for a bad
 * escape: the result is never longer than the escape). */
static size_t decode_u_escape(ParseCtx *pc, size_t base, const char *in, size_t len, size_t i,
                              bool report, unsigned long *cp)
{
    int hi = i + 6 <= len ? hex_value(in + i + 2) : -1;
    *cp = REPLACEMENT_CHAR;
    if (hi < 0) {
        if (report)
            parse_error(pc, span_at(pc, base + i, base + i + 2),
                        "invalid \\u escape: expected 4 hex digits");
        *cp = 'u';
        return 2;
    }
    if (hi >= 0xDC00 && hi <= 0xDFFF) {
        if (report)
            parse_error(pc, span_at(pc, base + i, base + i + 6),
                        "unpaired low surrogate \\u%.4s", in + i + 2);
        return 6;
    }
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = (unsigned long)hi;
        return 6;
    }
    int lo = i + 12 <= len && in[i + 6] == '\\' && in[i + 7] == 'u' ? hex_value(in + i + 8) : -1;
    if (lo < 0xDC00 || lo > 0xDFFF) {
        if (report)
            parse_error(pc, span_at(pc, base + i, base + i + 6),
                        "unpaired high surrogate \\u%.4s (a \\uDC00-\\uDFFF escape must follow)",
                        in + i + 2);
        return 6;
    }
    *cp = 0x10000UL + (((unsigned long)hi - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
    return 12;
}

/* Decodes a string body (between the quotes) that starts at input offset `base`.
 * `out` holds at least `len` bytes (decoding never grows the text). With a map,
 * map[k] receives the input offset each output byte came from, map[n] the end.
 * Returns the decoded length. */
static size_t decode_string(ParseCtx *pc, size_t base, size_t len, bool raw, bool report,
                            char *out, size_t *map)
{
    const char *in = pc->input + base;
    size_t n = 0, i = 0;
    while (i < len) {
        size_t used = 1, start = n;
        if (raw) {
            out[n++] = in[i];
            used = in[i] == '\'' ? 2 : 1;   /* '' is one quote */
        } else if (in[i] != '\\') {
            out[n++] = in[i];
        } else {
            char c = i + 1 < len ? in[i + 1] : '\0';
            used = 2;
            switch (c) {
            case '"': out[n++] = '"'; break;
            case '\\': out[n++] = '\\'; break;
            case '/': out[n++] = '/'; break;
            case 'b': out[n++] = '\b'; break;
            case 'f': out[n++] = '\f'; break;
            case 'n': out[n++] = '\n'; break;
            case 'r': out[n++] = '\r'; break;
            case 't': out[n++] = '\t'; break;
            case 'u': {
                unsigned long cp;
                used = decode_u_escape(pc, base, in, len, i, report, &cp);
                n += put_utf8(out + n, cp);
                break;
            }
            default:
                if (report)
                    parse_error(pc, span_at(pc, base + i, base + i + 2),
                                "invalid escape '\\%c' in string (valid: \\\" \\\\ \\/ "
                                "\\b \\f \\n \\r \\t \\uXXXX)",
                                c);
                out[n++] = c;
                break;
            }
        }
        if (map)
            for (size_t k = start; k < n; k++)
                map[k] = base + i;
        i += used;
    }
    if (map)
        map[n] = base + len;
    return n;
}

int lex_string(ParseCtx *pc, YYSTYPE *lval, size_t len, bool raw)
{
    size_t body = pc->tok_off + 1, body_len = len - 2;
    if (report_nul(pc, body, body_len))
        return YYUNDEF;
    char *out = arena_alloc(pc->arena, body_len + 1);
    if (!out) {
        parse_oom(pc);
        return YYUNDEF;
    }
    size_t n = decode_string(pc, body, body_len, raw, true, out, NULL);
    out[n] = '\0';
    lval->tok = token_value(pc, out, n);
    lval->tok.raw = raw;
    return STRING;
}

static bool only_blanks_before(ParseCtx *pc, size_t off)
{
    while (off > 0) {
        char c = pc->input[off - 1];
        if (c == '\n')
            return true;
        if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v')
            return false;
        off--;
    }
    return true;
}

void lex_comment(ParseCtx *pc, const char *text, size_t len)
{
    if (report_nul(pc, pc->tok_off, len) || !pc->record_comments)
        return;
    SrcPos start = locate(pc, pc->tok_off), last = locate(pc, pc->tok_off + len - 1);
    if (source_add_comment(pc->src, start.line, start.col, last.line, text, len,
                           only_blanks_before(pc, pc->tok_off)) != 0)
        parse_oom(pc);
}

int lex_unterminated(ParseCtx *pc, const char *what)
{
    parse_error(pc, span_at(pc, pc->tok_off, pc->tok_off + 1), "unterminated %s", what);
    return YYUNDEF;
}

int lex_bad_char(ParseCtx *pc, const char *text, size_t len)
{
    unsigned char c = (unsigned char)text[0];
    Span at = token_span(pc);
    if (c == '\0')
        parse_error(pc, at, "NUL byte in rule file");
    else if (c >= 0x80)
        parse_error(pc, at, "non-ASCII text outside a string or comment (%zu bytes)", len);
    else if (c >= 0x20 && c < 0x7f)
        parse_error(pc, at, "unexpected character '%c'", c);
    else
        parse_error(pc, at, "unexpected control character 0x%02x", c);
    return YYUNDEF;
}

_Noreturn void lex_fatal(ParseCtx *pc, const char *msg)
{
    parse_error(pc, token_span(pc), "scanner failure: %s", msg);
    longjmp(*pc->scanner_failed, 1);
}

/* ---- expressions --------------------------------------------------------- */

static Expr *new_expr(ParseCtx *pc, ExprKind kind, Span span)
{
    Expr *e = arena_zalloc(pc->arena, sizeof *e);
    if (e) {
        e->kind = kind;
        e->span = span;
    }
    return e;
}

/* Stores e, unless the tree got too deep: then reports it (once) and stores a null
 * literal in its place, so that no later pass ever walks a deep tree. */
static bool finish_expr(ParseCtx *pc, ExprV *out, Expr *e, int depth)
{
    if (!e)
        return false;
    if (depth > MAX_EXPR_DEPTH) {
        if (!pc->deep_reported)
            parse_error(pc, e->span, "expression nested too deeply (more than %d levels)",
                        MAX_EXPR_DEPTH);
        pc->deep_reported = true;
        e = new_expr(pc, EX_NULL, e->span);
        depth = 1;
        if (!e)
            return false;
    }
    out->e = e;
    out->depth = depth;
    return true;
}

bool parse_binary(ParseCtx *pc, ExprV *out, BinaryOp op, ExprV lhs, ExprV rhs, Span op_span)
{
    Expr *e = new_expr(pc, EX_BINARY, span_join(lhs.e->span, rhs.e->span));
    if (e) {
        e->u.binary.op = op;
        e->u.binary.lhs = lhs.e;
        e->u.binary.rhs = rhs.e;
        e->u.binary.op_span = op_span;
    }
    return finish_expr(pc, out, e, 1 + (lhs.depth > rhs.depth ? lhs.depth : rhs.depth));
}

bool parse_unary(ParseCtx *pc, ExprV *out, UnaryOp op, ExprV operand, Span span)
{
    Expr *o = operand.e;
    if (op == UN_NEG && o->kind == EX_NUMBER && o->u.number.text[0] != '-') {
        /* `-1.5` is a negative literal, as the language describes numbers. */
        size_t len = strlen(o->u.number.text);
        char *text = arena_alloc(pc->arena, len + 2);
        if (!text)
            return false;
        text[0] = '-';
        memcpy(text + 1, o->u.number.text, len + 1);
        o->u.number.text = text;
        o->u.number.value = -o->u.number.value;
        o->span = span;
        *out = operand;
        return true;
    }
    Expr *e = new_expr(pc, EX_UNARY, span);
    if (e) {
        e->u.unary.op = op;
        e->u.unary.operand = o;
    }
    return finish_expr(pc, out, e, operand.depth + 1);
}

bool parse_literal(ParseCtx *pc, ExprV *out, ExprKind kind, const Tok *t, Span span)
{
    Expr *e = new_expr(pc, kind, span);
    if (!e)
        return false;
    if (kind == EX_NUMBER) {
        e->u.number.value = t->num;
        e->u.number.text = t->text;
    } else if (kind == EX_STRING) {
        e->u.string.bytes = t->text;
        e->u.string.len = t->len;
        e->u.string.raw = t->raw;
    } else {
        e->u.duration.ms = t->ms;
        e->u.duration.text = t->text;
    }
    return finish_expr(pc, out, e, 1);
}

bool parse_constant(ParseCtx *pc, ExprV *out, ExprKind kind, bool value, Span span)
{
    Expr *e = new_expr(pc, kind, span);
    if (e)
        e->u.boolean = value;
    return finish_expr(pc, out, e, 1);
}

bool parse_push_seg(ParseCtx *pc, Vec *v, const char *name, long index, Span span)
{
    PathSeg *seg = vec_push(pc, v, sizeof *seg);
    if (!seg)
        return false;
    *seg = (PathSeg){.name = name, .index = index, .span = span};
    return true;
}

/* A whole number written in digits only (array indexes, repeat counts). */
static bool whole_number(ParseCtx *pc, const Tok *t, long max, Span span, const char *what,
                         long *out)
{
    long v = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->text[i];
        if (c < '0' || c > '9') {
            parse_error(pc, span, "%s must be a whole number, not %s", what, t->text);
            return false;
        }
        if (v > (max - (c - '0')) / 10) {
            parse_error(pc, span, "%s too large: %s", what, t->text);
            return false;
        }
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

bool parse_push_index(ParseCtx *pc, Vec *v, const Tok *number, Span span)
{
    long index = 0;
    whole_number(pc, number, INT_MAX, span, "an array index", &index);
    return parse_push_seg(pc, v, NULL, index, span);
}

bool parse_path_expr(ParseCtx *pc, ExprV *out, const Vec *segs, Span span)
{
    Expr *e = new_expr(pc, EX_PATH, span);
    if (e) {
        e->u.path.segs = segs->items;
        e->u.path.n_segs = segs->n;
        e->u.path.kind = PATH_UNRESOLVED;
        e->u.path.step = -1;
        e->u.path.key = -1;
    }
    return finish_expr(pc, out, e, 1);
}

bool parse_push_expr(ParseCtx *pc, Vec *v, ExprV e)
{
    ExprV *slot = vec_push(pc, v, sizeof *slot);
    if (!slot)
        return false;
    *slot = e;
    return true;
}

/* Turns a list of ExprV into an arena array of Expr *; *depth gets the deepest. */
static Expr **expr_array(ParseCtx *pc, const Vec *items, int *depth)
{
    const ExprV *v = items->items;
    *depth = 0;
    if (items->n == 0)
        return NULL;
    Expr **arr = arena_alloc(pc->arena, items->n * sizeof *arr);
    if (!arr)
        return NULL;
    for (size_t i = 0; i < items->n; i++) {
        arr[i] = v[i].e;
        if (v[i].depth > *depth)
            *depth = v[i].depth;
    }
    return arr;
}

bool parse_call(ParseCtx *pc, ExprV *out, const char *name, Span name_span, const Vec *args,
                Span span)
{
    int depth;
    Expr **arr = expr_array(pc, args, &depth);
    if (args->n > 0 && !arr)
        return false;
    Expr *e = new_expr(pc, EX_CALL, span);
    if (e) {
        e->u.call.name = name;
        e->u.call.name_span = name_span;
        e->u.call.args = arr;
        e->u.call.n_args = args->n;
        e->u.call.fn = FN_UNRESOLVED;
    }
    return finish_expr(pc, out, e, depth + 1);
}

bool parse_list(ParseCtx *pc, ExprV *out, const Vec *items, Span span)
{
    int depth;
    Expr **arr = expr_array(pc, items, &depth);
    if (items->n > 0 && !arr)
        return false;
    Expr *e = new_expr(pc, EX_LIST, span);
    if (e) {
        e->u.list.items = arr;
        e->u.list.n = items->n;
    }
    return finish_expr(pc, out, e, depth + 1);
}

/* ---- templates ----------------------------------------------------------- */

static Expr *parse_sub_expr(ParseCtx *pc, const char *text, size_t len, const SrcPos *map);

/* The index of the `}` closing the expression that starts at d[i], skipping string
 * literals inside it; n if there is none. */
static size_t find_closing_brace(const char *d, size_t n, size_t i)
{
    while (i < n && d[i] != '}') {
        char q = d[i];
        if (q == '"' || q == '\'') {
            for (i++; i < n && d[i] != q; i++)
                if (q == '"' && d[i] == '\\' && i + 1 < n)
                    i++;
        }
        if (i < n)
            i++;
    }
    return i;
}

static bool push_literal_part(ParseCtx *pc, Vec *parts, Buf *lit)
{
    if (lit->len == 0)
        return true;
    TemplatePart *p = vec_push(pc, parts, sizeof *p);
    char *text = p ? arena_strndup(pc->arena, lit->data, lit->len) : NULL;
    if (!text)
        return false;
    p->text = text;
    p->len = lit->len;
    buf_clear(lit);
    return true;
}

/* Parses d[a..b) (decoded template bytes) as an expression part. */
static bool push_expr_part(ParseCtx *pc, Vec *parts, const char *d, size_t a, size_t b,
                           const size_t *map)
{
    size_t k = a;
    while (k < b && (d[k] == ' ' || d[k] == '\t'))
        k++;
    if (k == b) {
        parse_error(pc, span_at(pc, map[a - 1], map[b] + 1),
                    "empty '{}' in template (write '{{' for a literal brace)");
        return true;
    }
    SrcPos *pos = malloc((b - a + 1) * sizeof *pos);
    if (!pos)
        return false;
    for (size_t i = a; i <= b; i++)
        pos[i - a] = locate(pc, map[i]);
    Expr *e = parse_sub_expr(pc, d + a, b - a, pos);
    free(pos);
    if (pc->oom)
        return false;
    if (!e)
        return true;   /* reported */
    TemplatePart *p = vec_push(pc, parts, sizeof *p);
    if (!p)
        return false;
    p->expr = e;
    return true;
}

/* Splits decoded bytes d[0..n) into parts; map gives each byte's input offset. */
static bool split_template(ParseCtx *pc, const char *d, size_t n, const size_t *map, Vec *parts)
{
    Buf lit = BUF_INIT;
    bool ok = true;
    size_t i = 0;
    while (ok && i < n) {
        char c = d[i];
        if ((c == '{' || c == '}') && i + 1 < n && d[i + 1] == c) {
            buf_putc(&lit, c);
            i += 2;
        } else if (c == '}') {
            parse_error(pc, span_at(pc, map[i], map[i] + 1),
                        "unmatched '}' in template (write '}}' for a literal brace)");
            i++;
        } else if (c == '{') {
            size_t close = find_closing_brace(d, n, i + 1);
            if (close == n) {
                parse_error(pc, span_at(pc, map[i], map[i] + 1),
                        "'{' without a matching '}' in template (write '{{' for a literal "
                        "brace)");
                break;
            }
            ok = push_literal_part(pc, parts, &lit) &&
                 push_expr_part(pc, parts, d, i + 1, close, map);
            i = close + 1;
        } else {
            buf_putc(&lit, c);
            i++;
        }
    }
    ok = ok && !lit.failed && push_literal_part(pc, parts, &lit);
    buf_free(&lit);
    return ok;
}

/* Builds a template from a string token: decodes it again with a position map. */
static bool make_template(ParseCtx *pc, const Tok *t, Span span, Template *out)
{
    *out = (Template){.span = span};
    char *source = arena_strndup(pc->arena, pc->input + t->off, t->src_len);
    if (!source)
        return false;
    out->source = source;
    size_t body = t->off + 1, body_len = t->src_len - 2;
    char *d = malloc(body_len + 1);
    size_t *map = malloc((body_len + 1) * sizeof *map);
    bool ok = d && map;
    if (ok) {
        size_t n = decode_string(pc, body, body_len, t->raw, false, d, map);
        Vec parts = {0};
        ok = split_template(pc, d, n, map, &parts);
        out->parts = parts.items;
        out->n_parts = parts.n;
    }
    free(d);
    free(map);
    return ok;
}

/* ---- file-level declarations --------------------------------------------- */

static bool add_decl(ParseCtx *pc, DeclKind kind, size_t index, Span span)
{
    Decl *d = vec_push(pc, &pc->decls, sizeof *d);
    if (!d)
        return false;
    *d = (Decl){kind, index, span};
    return true;
}

bool parse_push_option(ParseCtx *pc, Vec *v, const Tok *name, Span name_span,
                       const Tok *value, Span value_span)
{
    OptItem *o = vec_push(pc, v, sizeof *o);
    if (!o)
        return false;
    o->name = *name;
    o->name_span = name_span;
    if (value) {
        o->has_value = true;
        o->value = *value;
        o->value_span = value_span;
    }
    return true;
}

/* Looks a word up in a NULL-terminated list; reports and returns -1 if absent. */
static int lookup_word(ParseCtx *pc, const char *word, Span span, const char *const *words,
                       const char *what, const char *expected)
{
    size_t n = 0;
    for (; words[n]; n++)
        if (strcmp(words[n], word) == 0)
            return (int)n;
    const char *near = diag_nearest(word, words, n);
    if (near)
        parse_error(pc, span, "unknown %s '%s' (did you mean '%s'?)", what, word, near);
    else
        parse_error(pc, span, "unknown %s '%s' (expected %s)", what, word, expected);
    return -1;
}

bool parse_time_decl(ParseCtx *pc, const Vec *path, const Vec *opts, Span span)
{
    static const char *const FORMATS[] = {"iso8601", "epoch_s", "epoch_ms", NULL};
    static const TimeFormat FORMAT_IDS[] = {TIME_ISO8601, TIME_EPOCH_S, TIME_EPOCH_MS};
    TimeDecl *t = arena_zalloc(pc->arena, sizeof *t);
    if (!t)
        return false;
    t->field = path->items;
    t->n_field = path->n;
    t->format = TIME_AUTO;
    t->span = span;
    bool format_written = false;
    const OptItem *o = opts->items;
    for (size_t i = 0; i < opts->n; i++) {
        if (o[i].has_value) {
            if (strcmp(o[i].name.text, "lateness") != 0)
                parse_error(pc, o[i].name_span,
                            "unknown option '%s' in a time declaration (expected 'lateness DUR')",
                            o[i].name.text);
            else if (t->lateness_written)
                parse_error(pc, o[i].name_span, "'lateness' given twice");
            else {
                t->lateness_ms = o[i].value.ms;
                t->lateness_written = true;
            }
            continue;
        }
        int f = lookup_word(pc, o[i].name.text, o[i].name_span, FORMATS, "time format",
                            "iso8601, epoch_s or epoch_ms");
        if (f >= 0 && format_written)
            parse_error(pc, o[i].name_span, "the time format is given twice");
        else if (f >= 0) {
            t->format = FORMAT_IDS[f];
            format_written = true;
        }
    }
    if (!pc->time)
        pc->time = t;
    if (!pc->rs->time)
        pc->rs->time = t;
    return add_decl(pc, DECL_TIME, 0, span);
}

bool parse_push_stok(ParseCtx *pc, Vec *v, const Tok *t, Span span)
{
    SpannedTok *s = vec_push(pc, v, sizeof *s);
    if (!s)
        return false;
    *s = (SpannedTok){*t, span};
    return true;
}

/* Applies `rotate DUR` / `timeout DUR` to an output, reporting misplaced options. */
static void output_options(ParseCtx *pc, OutputDecl *o, const Vec *opts)
{
    static const char *const KIND_NAMES[] = {"file", "exec", "tcp", "unix"};
    const OptItem *opt = opts->items;
    for (size_t i = 0; i < opts->n; i++) {
        const char *name = opt[i].name.text;
        int64_t *slot = strcmp(name, "rotate") == 0 ? &o->rotate_ms
                      : strcmp(name, "timeout") == 0 ? &o->timeout_ms : NULL;
        bool applies = slot && (slot == &o->rotate_ms ? o->kind == OUT_FILE : o->kind == OUT_EXEC);
        if (!slot)
            parse_error(pc, opt[i].name_span,
                        "unknown output option '%s' (expected 'rotate DUR' for file outputs or "
                        "'timeout DUR' for exec outputs)",
                        name);
        else if (!applies)
            parse_error(pc, opt[i].name_span, "'%s' does not apply to %s outputs", name,
                        KIND_NAMES[o->kind]);
        else if (*slot != DURATION_NONE)
            parse_error(pc, opt[i].name_span, "'%s' given twice", name);
        else
            *slot = opt[i].value.ms;
    }
}

bool parse_output_decl(ParseCtx *pc, const Tok *name, Span name_span, const Tok *kind,
                       Span kind_span, const OutTarget *target, const Vec *opts, Span span)
{
    static const char *const KINDS[] = {"file", "exec", "tcp", "unix", NULL};
    static const OutputKind KIND_IDS[] = {OUT_FILE, OUT_EXEC, OUT_TCP, OUT_UNIX};
    int k = lookup_word(pc, kind->text, kind_span, KINDS, "output kind",
                        "file, exec, tcp or unix");
    if (k < 0)
        return true;
    OutputDecl o = {
        .name = name->text, .kind = KIND_IDS[k], .span = span, .name_span = name_span,
        .rotate_ms = DURATION_NONE, .timeout_ms = DURATION_NONE,
    };
    if (o.kind == OUT_EXEC && !target->list) {
        parse_error(pc, target->span,
                    "an exec output takes a list of arguments: [\"program\", \"arg\", ...]");
        return true;
    }
    if (o.kind != OUT_EXEC && target->list) {
        parse_error(pc, target->span, "a %s output takes one string, not a list", KINDS[k]);
        return true;
    }
    const SpannedTok *strings = target->strings.items;
    if (o.kind == OUT_EXEC) {
        o.n_argv = target->strings.n;
        o.argv = arena_zalloc(pc->arena, o.n_argv * sizeof *o.argv);
        if (!o.argv)
            return false;
        for (size_t i = 0; i < o.n_argv; i++)
            if (!make_template(pc, &strings[i].tok, strings[i].span, &o.argv[i]))
                return false;
    } else if (!make_template(pc, &strings[0].tok, strings[0].span, &o.path)) {
        return false;
    }
    output_options(pc, &o, opts);
    OutputDecl *slot = ast_add_output(pc->rs);
    if (!slot)
        return false;
    *slot = o;
    return add_decl(pc, DECL_OUTPUT, pc->rs->n_outputs - 1, span);
}

/* ---- rules --------------------------------------------------------------- */

void parse_rule_begin(ParseCtx *pc, const Tok *name, Span name_span)
{
    memset(&pc->rb, 0, sizeof pc->rb);
    Rule *r = &pc->rb.rule;
    r->name = name->text;
    r->name_span = name_span;
    r->within_ms = DURATION_NONE;
    r->suppress_ms = DURATION_NONE;
    r->skip.kind = SKIP_PAST_LAST_EVENT;
    r->skip.step_index = -1;
}

bool parse_rule_end(ParseCtx *pc, Span span)
{
    RuleBuild *rb = &pc->rb;
    Rule *r = &rb->rule;
    r->span = span;
    r->keys = rb->keys.items;
    r->n_keys = rb->keys.n;
    r->steps = rb->steps.items;
    r->n_steps = rb->steps.n;
    r->on = rb->on.items;
    r->n_on = rb->on.n;
    r->stmts = rb->stmts.items;
    r->n_stmts = rb->stmts.n;
    Rule *slot = ast_add_rule(pc->rs);
    if (!slot)
        return false;
    *slot = *r;
    return add_decl(pc, DECL_RULE, pc->rs->n_rules - 1, span);
}

static bool add_stmt(ParseCtx *pc, StmtKind kind, size_t index, Span span)
{
    Stmt *s = vec_push(pc, &pc->rb.stmts, sizeof *s);
    if (!s)
        return false;
    *s = (Stmt){kind, index, span};
    return true;
}

/* A statement that may appear once per rule: reports a repeat, returns false then. */
static bool first_of_kind(ParseCtx *pc, Span previous, Span span, const char *what)
{
    if (previous.line == 0)
        return true;
    parse_error(pc, span, "more than one '%s' in rule '%s' (the first is at line %d)", what,
                pc->rb.rule.name, previous.line);
    return false;
}

bool parse_filter(ParseCtx *pc, Expr *cond, Span span)
{
    Rule *r = &pc->rb.rule;
    if (!first_of_kind(pc, r->filter_span, span, "filter"))
        return true;
    r->filter = cond;
    r->filter_span = span;
    return add_stmt(pc, STMT_FILTER, 0, span);
}

/* The readable name of an unnamed key: a path's text, else the expression's source
 * with runs of blanks folded to one space. */
static const char *key_text(ParseCtx *pc, const Expr *e)
{
    Buf b = BUF_INIT;
    if (e->kind == EX_PATH) {
        for (size_t i = 0; i < e->u.path.n_segs; i++) {
            const PathSeg *s = &e->u.path.segs[i];
            if (s->name)
                buf_printf(&b, "%s%s", i ? "." : "", s->name);
            else
                buf_printf(&b, "[%ld]", s->index);
        }
    } else {
        const SourceFile *src = pc->src;
        size_t start = src->line_starts[e->span.line - 1] + (size_t)e->span.col - 1;
        size_t end = src->line_starts[e->span.end_line - 1] + (size_t)e->span.end_col - 1;
        bool blank = false;
        for (size_t i = start; i < end; i++) {
            char c = src->text[i];
            bool is_blank = c == ' ' || c == '\t' || c == '\n' || c == '\r';
            if (!is_blank && blank && b.len > 0)
                buf_putc(&b, ' ');
            if (!is_blank)
                buf_putc(&b, c);
            blank = is_blank;
        }
    }
    const char *text = b.failed ? NULL : arena_strndup(pc->arena, b.data ? b.data : "", b.len);
    buf_free(&b);
    return text;
}

bool parse_push_key(ParseCtx *pc, Vec *v, const Tok *name, Expr *e, Span span)
{
    KeyDecl *k = vec_push(pc, v, sizeof *k);
    if (!k)
        return false;
    k->named = name != NULL;
    k->name = name ? name->text : key_text(pc, e);
    k->expr = e;
    k->span = span;
    return k->name != NULL;
}

/* One Stmt per `key` statement; its index is the statement's first key. */
bool parse_keys(ParseCtx *pc, const Vec *keys, Span span)
{
    size_t first = pc->rb.keys.n;
    const KeyDecl *k = keys->items;
    for (size_t i = 0; i < keys->n; i++) {
        KeyDecl *slot = vec_push(pc, &pc->rb.keys, sizeof *slot);
        if (!slot)
            return false;
        *slot = k[i];
    }
    return add_stmt(pc, STMT_KEY, first, span);
}

Step *parse_step_new(ParseCtx *pc)
{
    Step *s = arena_zalloc(pc->arena, sizeof *s);
    if (s) {
        s->within_ms = DURATION_NONE;
        s->quant.min = s->quant.max = 1;
    }
    return s;
}

static bool first_clause(ParseCtx *pc, bool repeated, Span span, const char *what)
{
    if (repeated)
        parse_error(pc, span, "'%s' appears twice in this step", what);
    return !repeated;
}

void parse_step_within(ParseCtx *pc, Step *s, const Tok *dur, Span span)
{
    if (first_clause(pc, s->within_span.line != 0, span, "within")) {
        s->within_ms = dur->ms;
        s->within_span = span;
    }
}

void parse_step_where(ParseCtx *pc, Step *s, Expr *cond, Span where_span)
{
    if (first_clause(pc, s->where != NULL, where_span, "where"))
        s->where = cond;
}

static bool first_repetition(ParseCtx *pc, Step *s, Span span)
{
    if (s->quant.times_span.line == 0)
        return true;
    parse_error(pc, span,
                "a step takes one repetition ('times' or 'one_or_more'); this is a second one");
    return false;
}

void parse_times(ParseCtx *pc, Step *s, const Tok *n, const Tok *m, bool plus, Span span)
{
    long min = 0, max = 0;
    if (!first_repetition(pc, s, span) ||
        !whole_number(pc, n, INT_MAX, span, "a repeat count", &min))
        return;
    if (m && !whole_number(pc, m, INT_MAX, span, "a repeat count", &max))
        return;
    Quantifier *q = &s->quant;
    q->min = (int)min;
    q->max = m ? (int)max : plus ? QUANT_UNBOUNDED : (int)min;
    q->looping = true;
    q->times_span = span;
}

void parse_one_or_more(ParseCtx *pc, Step *s, Span span)
{
    if (!first_repetition(pc, s, span))
        return;
    s->quant.min = 1;
    s->quant.max = QUANT_UNBOUNDED;
    s->quant.looping = true;
    s->quant.times_span = span;
}

void parse_flag(ParseCtx *pc, Step *s, int token, Span span)
{
    Quantifier *q = &s->quant;
    bool *flag = token == OPTIONAL ? &q->optional
               : token == GREEDY ? &q->greedy
               : token == CONSECUTIVE ? &q->consecutive : &q->allow_combinations;
    Span *where = token == OPTIONAL ? &q->optional_span
                : token == GREEDY ? &q->greedy_span
                : token == CONSECUTIVE ? &q->consecutive_span : &q->combinations_span;
    const char *name = token == OPTIONAL ? "optional"
                     : token == GREEDY ? "greedy"
                     : token == CONSECUTIVE ? "consecutive" : "allow_combinations";
    if (first_clause(pc, *flag, span, name)) {
        *flag = true;
        *where = span;
    }
}

void parse_until(ParseCtx *pc, Step *s, Expr *cond, Span span)
{
    if (first_clause(pc, s->quant.until != NULL, span, "until")) {
        s->quant.until = cond;
        s->quant.until_span = span;
    }
}

bool parse_step(ParseCtx *pc, StepKind kind, const Tok *name, Span name_span, Step *s, Span span)
{
    s->kind = kind;
    s->name = name->text;
    s->name_span = name_span;
    s->span = span;
    Step *slot = vec_push(pc, &pc->rb.steps, sizeof *slot);
    if (!slot)
        return false;
    *slot = *s;
    return add_stmt(pc, STMT_STEP, pc->rb.steps.n - 1, span);
}

bool parse_rule_within(ParseCtx *pc, const Tok *dur, Span span)
{
    Rule *r = &pc->rb.rule;
    if (!first_of_kind(pc, r->within_span, span, "within"))
        return true;
    r->within_ms = dur->ms;
    r->within_span = span;
    return add_stmt(pc, STMT_WITHIN, 0, span);
}

bool parse_skip(ParseCtx *pc, const Tok *strategy, Span strategy_span, const Tok *step,
                Span step_span, Span span)
{
    static const char *const NAMES[] = {
        "past_last_event", "no_skip", "to_next", "to_first", "to_last", NULL,
    };
    static const SkipKind KINDS[] = {
        SKIP_PAST_LAST_EVENT, SKIP_NO_SKIP, SKIP_TO_NEXT, SKIP_TO_FIRST, SKIP_TO_LAST,
    };
    SkipDecl *sk = &pc->rb.rule.skip;
    if (!first_of_kind(pc, sk->written ? sk->span : (Span){0}, span, "skip"))
        return true;
    int k = lookup_word(pc, strategy->text, strategy_span, NAMES, "skip strategy",
                        "no_skip, to_next, past_last_event, to_first STEP or to_last STEP");
    if (k < 0)
        return true;
    bool wants_step = KINDS[k] == SKIP_TO_FIRST || KINDS[k] == SKIP_TO_LAST;
    if (wants_step && !step) {
        parse_error(pc, strategy_span, "'skip %s' needs a step: skip %s STEP", NAMES[k], NAMES[k]);
        return true;
    }
    if (!wants_step && step) {
        parse_error(pc, step_span, "'skip %s' takes no step name", NAMES[k]);
        return true;
    }
    sk->kind = KINDS[k];
    sk->written = true;
    sk->span = span;
    if (step) {
        sk->step = step->text;
        sk->step_span = step_span;
    }
    return add_stmt(pc, STMT_SKIP, 0, span);
}

bool parse_suppress(ParseCtx *pc, const Tok *dur, Span span)
{
    Rule *r = &pc->rb.rule;
    if (!first_of_kind(pc, r->suppress_span, span, "suppress"))
        return true;
    r->suppress_ms = dur->ms;
    r->suppress_span = span;
    return add_stmt(pc, STMT_SUPPRESS, 0, span);
}

bool parse_on(ParseCtx *pc, const Tok *trigger, Span trigger_span, const Vec *actions, Span span)
{
    ActionTrigger t;
    if (strcmp(trigger->text, "match") == 0) {
        t = ON_MATCH;
    } else if (strcmp(trigger->text, "timeout") == 0) {
        t = ON_TIMEOUT;
    } else {
        parse_error(pc, trigger_span, "expected 'match' or 'timeout' after 'on', not '%s'",
                    trigger->text);
        return true;
    }
    OnClause *on = vec_push(pc, &pc->rb.on, sizeof *on);
    if (!on)
        return false;
    on->trigger = t;
    on->span = span;
    on->trigger_span = trigger_span;
    on->n_actions = actions->n;
    on->actions = arena_alloc(pc->arena, actions->n * sizeof *on->actions);
    if (!on->actions)
        return false;
    Action *const *list = actions->items;
    for (size_t i = 0; i < actions->n; i++)
        on->actions[i] = *list[i];
    return add_stmt(pc, STMT_ON, pc->rb.on.n - 1, span);
}

Action *parse_action(ParseCtx *pc, const Tok *severity, Span severity_span, const Tok *msg,
                     Span msg_span, const Vec *fields, const Vec *to, Span span)
{
    static const char *const SEVERITIES[] = {"info", "low", "medium", "high", "critical", NULL};
    Action *a = arena_zalloc(pc->arena, sizeof *a);
    if (!a)
        return NULL;
    a->span = span;
    a->severity = SEV_MEDIUM;
    if (severity->text) {
        int s = lookup_word(pc, severity->text, severity_span, SEVERITIES, "severity",
                            "info, low, medium, high or critical");
        if (s >= 0) {
            a->severity = (Severity)s;
            a->severity_written = true;
            a->severity_span = severity_span;
        }
    }
    if (!make_template(pc, msg, msg_span, &a->message))
        return NULL;
    a->fields = fields->items;
    a->n_fields = fields->n;
    a->to = to->items;
    a->n_to = to->n;
    return a;
}

bool parse_push_field(ParseCtx *pc, Vec *v, const AlertField *f)
{
    AlertField *slot = vec_push(pc, v, sizeof *slot);
    if (!slot)
        return false;
    *slot = *f;
    return true;
}

bool parse_push_out_ref(ParseCtx *pc, Vec *v, const Tok *name, Span span)
{
    OutputRef *r = vec_push(pc, v, sizeof *r);
    if (!r)
        return false;
    *r = (OutputRef){.name = name->text, .span = span, .output = -1};
    return true;
}

/* ---- driver -------------------------------------------------------------- */

/* Runs scanner and parser over pc->input. */
static void run_parser(ParseCtx *pc)
{
    if (pc->input_len > INT_MAX - 2) {
        parse_error(pc, (Span){.src = pc->src, .line = 1, .col = 1, .end_line = 1, .end_col = 1},
                    "rule file too large");
        return;
    }
    void *scanner = NULL;
    if (yylex_init_extra(pc, &scanner) != 0) {
        parse_oom(pc);
        return;
    }
    jmp_buf failed;
    pc->scanner_failed = &failed;
    if (setjmp(failed) == 0) {
        yy_scan_bytes(pc->input, (int)pc->input_len, scanner);
        pc->scanner = scanner;
        yyparse(pc);
    }
    yylex_destroy(scanner);
    pc->scanner = NULL;
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
static Expr *parse_sub_expr(ParseCtx *pc, const char *text, size_t len, const SrcPos *map)
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

/* Creates a source and hands it to the rule set; NULL (reported) on failure. */
static SourceFile *adopt_source(RuleSet *rs, const char *path, const char *text, size_t len,
                                Diags *diags)
{
    SourceFile *src = source_new(path, text, len);
    if (!src || !add_source(rs, src)) {
        source_free(src);
        diag_report_file(diags, DIAG_ERROR, path, "out of memory");
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
        diag_report_file(diags, DIAG_ERROR, src->path, "out of memory");
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
    if (!src) {
        diag_report_file(diags, DIAG_ERROR, path, "cannot read: %s", strerror(err));
        return 1;
    }
    if (!add_source(rs, src)) {
        source_free(src);
        diag_report_file(diags, DIAG_ERROR, path, "out of memory");
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
