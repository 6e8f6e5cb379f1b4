/* dsl/scan.c — the scanner's callbacks (the patterns are in dsl/lexer.l).
 *
 * Owns: token positions, keyword lookup, number and duration values, string
 * decoding (JSON escapes with surrogate pairs, raw strings), comment recording and
 * lexical errors. Token texts are copied into the rule set's arena. */
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "dsl/parser.h"

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
    *lloc = parse_span_at(pc, pc->tok_off, pc->pos);
}

int parse_next_token(YYSTYPE *lval, YYLTYPE *lloc, ParseCtx *pc)
{
    if (pc->start_token) {
        int t = pc->start_token;
        pc->start_token = 0;
        *lloc = parse_span_at(pc, 0, 0);
        return t;
    }
    size_t prev_off = pc->tok_off, prev_len = pc->tok_len;
    int t = vigil_scan(lval, lloc, pc->scanner);
    pc->prev_off = prev_off;
    pc->prev_len = prev_len;
    if (t == '{' && pc->brace_depth++ == 0)
        pc->open_brace_off = pc->tok_off;
    else if (t == '}' && pc->brace_depth > 0)
        pc->brace_depth--;
    if (t == YYEOF) {
        /* flex runs no action at the end: place the end-of-file token ourselves. */
        pc->tok_off = pc->pos;
        pc->tok_len = 0;
        *lloc = parse_span_at(pc, pc->pos, pc->pos);
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
    parse_error(pc, parse_span_at(pc, at, at + 1), "NUL byte in rule file");
    return true;
}

/* Reports the first byte of a token's text that is not valid UTF-8; returns true if
 * there was one. Events are valid UTF-8, so such a literal could never be equal to
 * an event's text, and an alert message must not carry it. */
static bool report_bad_utf8(ParseCtx *pc, size_t off, size_t len)
{
    const unsigned char *p = (const unsigned char *)pc->input + off;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_valid_len(p + i, len - i);
        if (n == 0) {
            parse_error(pc, parse_span_at(pc, off + i, off + i + 1),
                        "invalid UTF-8 in a %s (byte 0x%02x); rule files are UTF-8",
                        pc->input[pc->tok_off] == '`' ? "name" : "string", p[i]);
            return true;
        }
        i += n;
    }
    return false;
}

int lex_keyword(const char *text, size_t len)
{
    for (size_t i = 0; i < sizeof KEYWORDS / sizeof KEYWORDS[0]; i++)
        if (strlen(KEYWORDS[i].word) == len && memcmp(KEYWORDS[i].word, text, len) == 0)
            return KEYWORDS[i].token;
    return 0;
}

int lex_word(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len)
{
    int keyword = lex_keyword(text, len);
    if (keyword)
        return keyword;
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
    if (report_nul(pc, pc->tok_off, len) || report_bad_utf8(pc, pc->tok_off + 1, len - 2))
        return YYUNDEF;
    if (len == 2) {
        parse_error(pc, parse_token_span(pc), "empty backtick name");
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
        parse_error(pc, parse_token_span(pc), "number out of range: %s", copy);
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
        parse_error(pc, parse_token_span(pc),
                    "invalid number or duration '%.*s' (a duration is a whole number and one of "
                    "ms, s, m, h, d)",
                    (int)len, text);
        return YYUNDEF;
    }
    int64_t count = 0;
    for (size_t i = 0; i < digits; i++) {
        int d = text[i] - '0';
        if (count > (INT64_MAX / unit - d) / 10) {
            parse_error(pc, parse_token_span(pc), "duration out of range: %.*s", (int)len, text);
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



#define REPLACEMENT_CHAR 0xFFFDUL

/* Decodes `\uXXXX` (and a following low surrogate) at in[i]; returns the source
 * bytes used and the code point in *cp (U+FFFD for a lone surrogate, 'u' for a bad
 * escape: the result is never longer than the escape). */
static size_t decode_u_escape(ParseCtx *pc, size_t base, const char *in, size_t len, size_t i,
                              bool report, unsigned long *cp)
{
    int hi = i + 6 <= len ? hex4_value(in + i + 2) : -1;
    *cp = REPLACEMENT_CHAR;
    if (hi < 0) {
        if (report)
            parse_error(pc, parse_span_at(pc, base + i, base + i + 2),
                        "invalid \\u escape: expected 4 hex digits");
        *cp = 'u';
        return 2;
    }
    if (hi >= 0xDC00 && hi <= 0xDFFF) {
        if (report)
            parse_error(pc, parse_span_at(pc, base + i, base + i + 6),
                        "unpaired low surrogate \\u%.4s", in + i + 2);
        return 6;
    }
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = (unsigned long)hi;
        return 6;
    }
    int lo = i + 12 <= len && in[i + 6] == '\\' && in[i + 7] == 'u' ? hex4_value(in + i + 8) : -1;
    if (lo < 0xDC00 || lo > 0xDFFF) {
        if (report)
            parse_error(pc, parse_span_at(pc, base + i, base + i + 6),
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
size_t parse_decode_string(ParseCtx *pc, size_t base, size_t len, bool raw, bool report,
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
                n += utf8_encode((uint32_t)cp, out + n);
                break;
            }
            default:
                if (report)
                    parse_error(pc, parse_span_at(pc, base + i, base + i + 2),
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
    if (report_nul(pc, body, body_len) || report_bad_utf8(pc, body, body_len))
        return YYUNDEF;
    char *out = arena_alloc(pc->arena, body_len + 1);
    if (!out) {
        parse_oom(pc);
        return YYUNDEF;
    }
    size_t n = parse_decode_string(pc, body, body_len, raw, true, out, NULL);
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
    SrcPos start = parse_locate(pc, pc->tok_off), last = parse_locate(pc, pc->tok_off + len - 1);
    if (source_add_comment(pc->src, start.line, start.col, last.line, text, len,
                           only_blanks_before(pc, pc->tok_off)) != 0)
        parse_oom(pc);
}

int lex_unterminated(ParseCtx *pc, const char *what)
{
    parse_error(pc, parse_span_at(pc, pc->tok_off, pc->tok_off + 1), "unterminated %s", what);
    return YYUNDEF;
}

int lex_bad_char(ParseCtx *pc, const char *text, size_t len)
{
    unsigned char c = (unsigned char)text[0];
    Span at = parse_token_span(pc);
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
    /* flex's messages for a failed allocation all say "out of dynamic memory" */
    if (strstr(msg, "memory") != NULL)
        parse_oom(pc);
    else
        parse_error(pc, parse_token_span(pc), "scanner failure: %s", msg);
    longjmp(*pc->scanner_failed, 1);
}

