/* tests/test_lexer.c — the scanner (dsl/lexer.l with its callbacks in dsl/parse.c):
 * every token kind, values, positions, escapes, comments and lexical errors.
 * Drives the scanner directly through the parser's internal header. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/ast.h"
#include "dsl/diag.h"
#include "dsl/parser.h"
#include "tests/checkmain.h"

struct yy_buffer_state;
int yylex_init_extra(struct ParseCtx *extra, void **scanner);
struct yy_buffer_state *yy_scan_bytes(const char *bytes, int len, void *scanner);
int yylex_destroy(void *scanner);

#define MAX_TOKENS 64

typedef struct Lexed {
    RuleSet *rs;
    Diags diags;
    ParseCtx pc;
    int n;
    int kind[MAX_TOKENS];
    Tok tok[MAX_TOKENS];
    Span span[MAX_TOKENS];
} Lexed;

/* Scans `len` bytes of text to the end; the result owns a rule set and diagnostics. */
static Lexed *lex_n(const char *text, size_t len)
{
    Lexed *lx = calloc(1, sizeof *lx);
    ck_assert_ptr_nonnull(lx);
    lx->rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(lx->rs);
    diags_init(&lx->diags);
    SourceFile *src = source_new("t.cep", text, len);
    ck_assert_ptr_nonnull(src);
    lx->rs->sources = malloc(sizeof *lx->rs->sources);
    ck_assert_ptr_nonnull(lx->rs->sources);
    lx->rs->sources[lx->rs->n_sources++] = src;
    lx->pc = (ParseCtx){
        .rs = lx->rs, .arena = &lx->rs->arena, .diags = &lx->diags, .src = src,
        .input = src->text, .input_len = src->len, .record_comments = true,
    };
    void *scanner = NULL;
    ck_assert_int_eq(yylex_init_extra(&lx->pc, &scanner), 0);
    yy_scan_bytes(src->text, (int)src->len, scanner);
    lx->pc.scanner = scanner;
    for (;;) {
        YYSTYPE val;
        YYLTYPE loc;
        memset(&val, 0, sizeof val);
        int k = parse_next_token(&val, &loc, &lx->pc);
        if (k == YYEOF)
            break;
        ck_assert_int_lt(lx->n, MAX_TOKENS);
        lx->kind[lx->n] = k;
        lx->tok[lx->n] = val.tok;
        lx->span[lx->n] = loc;
        lx->n++;
    }
    yylex_destroy(scanner);
    return lx;
}

static Lexed *lex(const char *text)
{
    return lex_n(text, strlen(text));
}

static void lexed_free(Lexed *lx)
{
    diags_free(&lx->diags);
    ast_ruleset_free(lx->rs);
    free(lx);
}

static void assert_one_error(const Lexed *lx, int line, int col, const char *needle)
{
    ck_assert_uint_eq(lx->diags.errors, 1);
    const Diagnostic *d = &lx->diags.items[0];
    ck_assert_int_eq(d->span.line, line);
    ck_assert_int_eq(d->span.col, col);
    ck_assert_msg(strstr(d->message, needle), "message '%s' lacks '%s'", d->message, needle);
}

START_TEST(reserved_words_are_keywords)
{
    static const struct { const char *word; int token; } WORDS[] = {
        {"rule", RULE}, {"filter", FILTER}, {"key", KEY}, {"begin", BEGIN_}, {"next", NEXT},
        {"followed_by", FOLLOWED_BY}, {"followed_by_any", FOLLOWED_BY_ANY},
        {"not_next", NOT_NEXT}, {"not_followed_by", NOT_FOLLOWED_BY}, {"within", WITHIN},
        {"where", WHERE}, {"skip", SKIP}, {"suppress", SUPPRESS}, {"on", ON},
        {"alert", ALERT}, {"fields", FIELDS}, {"to", TO}, {"times", TIMES},
        {"one_or_more", ONE_OR_MORE}, {"optional", OPTIONAL}, {"greedy", GREEDY},
        {"consecutive", CONSECUTIVE}, {"allow_combinations", ALLOW_COMBINATIONS},
        {"until", UNTIL}, {"and", AND}, {"or", OR}, {"not", NOT}, {"in", IN},
        {"true", TRUE}, {"false", FALSE}, {"null", NULL_}, {"time", TIME}, {"output", OUTPUT},
    };
    for (size_t i = 0; i < sizeof WORDS / sizeof WORDS[0]; i++) {
        Lexed *lx = lex(WORDS[i].word);
        ck_assert_int_eq(lx->n, 1);
        ck_assert_msg(lx->kind[0] == WORDS[i].token, "%s", WORDS[i].word);
        lexed_free(lx);
    }
}
END_TEST

START_TEST(other_words_are_identifiers)
{
    Lexed *lx = lex("match timeout high first stdout iso8601 file exec lateness sum rules _x9 Key");
    ck_assert_int_eq(lx->n, 13);
    for (int i = 0; i < lx->n; i++)
        ck_assert_int_eq(lx->kind[i], IDENT);
    ck_assert_str_eq(lx->tok[0].text, "match");
    ck_assert_str_eq(lx->tok[10].text, "rules");
    ck_assert_str_eq(lx->tok[12].text, "Key");
    ck_assert_uint_eq(lx->diags.errors, 0);
    lexed_free(lx);
}
END_TEST

START_TEST(backtick_names)
{
    Lexed *lx = lex("`user-agent` `time`");
    ck_assert_int_eq(lx->n, 2);
    ck_assert_int_eq(lx->kind[0], IDENT);
    ck_assert_str_eq(lx->tok[0].text, "user-agent");
    ck_assert_int_eq(lx->kind[1], IDENT);
    ck_assert_str_eq(lx->tok[1].text, "time");
    ck_assert_int_eq(lx->span[0].col, 1);
    ck_assert_int_eq(lx->span[0].end_col, 13);
    lexed_free(lx);

    lx = lex("a ``");
    assert_one_error(lx, 1, 3, "empty backtick name");
    lexed_free(lx);
}
END_TEST

START_TEST(punctuation_and_operators)
{
    Lexed *lx = lex("== != <= >= =~ !~ .. < > = + - * / % . , ; : ( ) { } [ ]");
    static const int want[] = {EQ, NE, LE, GE, MATCH_OP, NMATCH_OP, DOTDOT, '<', '>', '=',
                               '+', '-', '*', '/', '%', '.', ',', ';', ':', '(', ')', '{',
                               '}', '[', ']'};
    ck_assert_int_eq(lx->n, (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < lx->n; i++)
        ck_assert_int_eq(lx->kind[i], want[i]);
    ck_assert_uint_eq(lx->diags.errors, 0);
    lexed_free(lx);
}
END_TEST

START_TEST(numbers_keep_their_text)
{
    Lexed *lx = lex("42 1.5 1e6 2.5E-3 0 12345678901234567890");
    ck_assert_int_eq(lx->n, 6);
    for (int i = 0; i < lx->n; i++)
        ck_assert_int_eq(lx->kind[i], NUMBER);
    ck_assert_str_eq(lx->tok[0].text, "42");
    ck_assert(lx->tok[0].num == 42);
    ck_assert(lx->tok[1].num == 1.5);
    ck_assert(lx->tok[2].num == 1e6);
    ck_assert_str_eq(lx->tok[3].text, "2.5E-3");
    ck_assert(fabs(lx->tok[3].num - 0.0025) < 1e-12);
    ck_assert_str_eq(lx->tok[5].text, "12345678901234567890");
    lexed_free(lx);
}
END_TEST

START_TEST(range_dots_are_not_a_decimal_point)
{
    Lexed *lx = lex("0..2");
    ck_assert_int_eq(lx->n, 3);
    ck_assert_int_eq(lx->kind[0], NUMBER);
    ck_assert_int_eq(lx->kind[1], DOTDOT);
    ck_assert_int_eq(lx->kind[2], NUMBER);
    lexed_free(lx);
}
END_TEST

START_TEST(number_out_of_range)
{
    Lexed *lx = lex("x 1e999");
    assert_one_error(lx, 1, 3, "number out of range");
    lexed_free(lx);
}
END_TEST

START_TEST(durations_of_every_unit)
{
    Lexed *lx = lex("500ms 30s 10m 2h 7d 0s");
    static const int64_t want[] = {500, 30000, 600000, 7200000, 604800000, 0};
    static const char *const text[] = {"500ms", "30s", "10m", "2h", "7d", "0s"};
    ck_assert_int_eq(lx->n, 6);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(lx->kind[i], DURATION);
        ck_assert_int_eq(lx->tok[i].ms, want[i]);
        ck_assert_str_eq(lx->tok[i].text, text[i]);
    }
    lexed_free(lx);
}
END_TEST

START_TEST(invalid_durations)
{
    Lexed *lx = lex("within 10min;");
    assert_one_error(lx, 1, 8, "invalid number or duration '10min'");
    lexed_free(lx);

    lx = lex("\n  1.5s");
    assert_one_error(lx, 2, 3, "invalid number or duration '1.5s'");
    lexed_free(lx);

    lx = lex("99999999999999999999d");
    assert_one_error(lx, 1, 1, "duration out of range");
    lexed_free(lx);
}
END_TEST

START_TEST(string_escapes)
{
    Lexed *lx = lex("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"");
    ck_assert_int_eq(lx->n, 1);
    ck_assert_int_eq(lx->kind[0], STRING);
    ck_assert_str_eq(lx->tok[0].text, "a\"b\\c/d\b\f\n\r\t");
    ck_assert(!lx->tok[0].raw);
    ck_assert_uint_eq(lx->diags.errors, 0);
    lexed_free(lx);
}
END_TEST

START_TEST(unicode_escapes_and_surrogates)
{
    Lexed *lx = lex("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"");
    ck_assert_int_eq(lx->kind[0], STRING);
    ck_assert_str_eq(lx->tok[0].text, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    ck_assert_uint_eq(lx->tok[0].len, 10);
    ck_assert_uint_eq(lx->diags.errors, 0);
    lexed_free(lx);

    lx = lex("\"a\\u0000b\"");
    ck_assert_uint_eq(lx->tok[0].len, 3);
    ck_assert(memcmp(lx->tok[0].text, "a\0b", 3) == 0);
    lexed_free(lx);
}
END_TEST

START_TEST(bad_escapes)
{
    Lexed *lx = lex("x = \"ab\\qc\"");
    assert_one_error(lx, 1, 8, "invalid escape '\\q'");
    ck_assert_int_eq(lx->kind[2], STRING);   /* the string still reaches the parser */
    lexed_free(lx);

    lx = lex("\"\\ud83d x\"");
    assert_one_error(lx, 1, 2, "unpaired high surrogate");
    lexed_free(lx);

    lx = lex("\"\\ude00\"");
    assert_one_error(lx, 1, 2, "unpaired low surrogate");
    lexed_free(lx);

    lx = lex("\"\\u12G4\"");
    assert_one_error(lx, 1, 2, "expected 4 hex digits");
    ck_assert_str_eq(lx->tok[0].text, "u12G4");
    lexed_free(lx);

    /* a cut-off escape never decodes to more bytes than it was written with */
    lx = lex("\"\\u\"");
    assert_one_error(lx, 1, 2, "expected 4 hex digits");
    ck_assert_str_eq(lx->tok[0].text, "u");
    lexed_free(lx);
}
END_TEST

START_TEST(raw_strings)
{
    Lexed *lx = lex("'\\d{3}-\\d{4}' 'it''s' ''");
    ck_assert_int_eq(lx->n, 3);
    ck_assert_int_eq(lx->kind[0], STRING);
    ck_assert(lx->tok[0].raw);
    ck_assert_str_eq(lx->tok[0].text, "\\d{3}-\\d{4}");
    ck_assert_str_eq(lx->tok[1].text, "it's");
    ck_assert_uint_eq(lx->tok[2].len, 0);
    ck_assert_uint_eq(lx->diags.errors, 0);
    lexed_free(lx);
}
END_TEST

START_TEST(unterminated_string)
{
    Lexed *lx = lex("rule a {\n  filter x == \"abc;\n}\n");
    assert_one_error(lx, 2, 15, "unterminated string");
    lexed_free(lx);

    lx = lex("\"abc\\");
    assert_one_error(lx, 1, 1, "unterminated string");
    lexed_free(lx);
}
END_TEST

START_TEST(unterminated_raw_string)
{
    Lexed *lx = lex("a =~\n   'x''y");
    assert_one_error(lx, 2, 4, "unterminated raw string");
    lexed_free(lx);
}
END_TEST

START_TEST(unterminated_comment)
{
    Lexed *lx = lex("rule a { }\n  /* open\n * still open\n");
    assert_one_error(lx, 2, 3, "unterminated comment");
    lexed_free(lx);
}
END_TEST

START_TEST(comments_are_recorded)
{
    Lexed *lx = lex("# head\nrule r { // tail\n  /* block\n     two */ begin a; }\n");
    const SourceFile *src = lx->rs->sources[0];
    ck_assert_uint_eq(src->n_comments, 3);
    ck_assert_str_eq(src->comments[0].text, "# head");
    ck_assert_int_eq(src->comments[0].line, 1);
    ck_assert_int_eq(src->comments[0].col, 1);
    ck_assert_int_eq(src->comments[0].own_line, 1);
    ck_assert_str_eq(src->comments[1].text, "// tail");
    ck_assert_int_eq(src->comments[1].line, 2);
    ck_assert_int_eq(src->comments[1].col, 10);
    ck_assert_int_eq(src->comments[1].own_line, 0);
    ck_assert_str_eq(src->comments[2].text, "/* block\n     two */");
    ck_assert_int_eq(src->comments[2].line, 3);
    ck_assert_int_eq(src->comments[2].col, 3);
    ck_assert_int_eq(src->comments[2].end_line, 4);
    ck_assert_int_eq(src->comments[2].own_line, 1);
    /* comments are not tokens */
    ck_assert_int_eq(lx->n, 7);
    lexed_free(lx);
}
END_TEST

START_TEST(token_positions)
{
    Lexed *lx = lex("rule r {\n\tbegin  first;\n}");
    ck_assert_int_eq(lx->n, 7);
    ck_assert_int_eq(lx->span[0].line, 1);
    ck_assert_int_eq(lx->span[0].col, 1);
    ck_assert_int_eq(lx->span[0].end_col, 5);
    ck_assert_int_eq(lx->span[3].line, 2);   /* begin */
    ck_assert_int_eq(lx->span[3].col, 2);
    ck_assert_int_eq(lx->span[4].col, 9);    /* first */
    ck_assert_int_eq(lx->span[4].end_col, 14);
    ck_assert_int_eq(lx->span[6].line, 3);
    ck_assert_ptr_eq(lx->span[0].src, lx->rs->sources[0]);
    lexed_free(lx);
}
END_TEST

START_TEST(nul_byte_and_stray_characters)
{
    Lexed *lx = lex_n("rule\n a\0b", 9);
    assert_one_error(lx, 2, 3, "NUL byte");
    lexed_free(lx);

    lx = lex_n("\"a\0\"", 4);
    assert_one_error(lx, 1, 3, "NUL byte");
    lexed_free(lx);

    lx = lex("a @ b");
    assert_one_error(lx, 1, 3, "unexpected character '@'");
    ck_assert_int_eq(lx->kind[1], YYUNDEF);
    lexed_free(lx);

    lx = lex("a \xc3\xa9 b");
    assert_one_error(lx, 1, 3, "non-ASCII");
    ck_assert_int_eq(lx->n, 3);
    lexed_free(lx);
}
END_TEST

/* A literal that is not UTF-8 could never equal an event's (valid) text; it is an
 * error at its first bad byte, in every kind of string and in backtick names. */
START_TEST(invalid_utf8_in_strings_and_names)
{
    Lexed *lx = lex("x == \"ok \xc3\xa9 \xff\"");
    assert_one_error(lx, 1, 13, "invalid UTF-8 in a string (byte 0xff)");   /* columns count bytes */
    lexed_free(lx);

    lx = lex("'\xe2\x82'");          /* cut short */
    assert_one_error(lx, 1, 2, "invalid UTF-8 in a string (byte 0xe2)");
    lexed_free(lx);

    lx = lex("\"\xc0\xaf\"");        /* overlong '/' */
    assert_one_error(lx, 1, 2, "invalid UTF-8");
    lexed_free(lx);

    lx = lex("\"\xed\xa0\x80\"");    /* a surrogate */
    assert_one_error(lx, 1, 2, "invalid UTF-8");
    lexed_free(lx);

    lx = lex("`caf\xe9`");
    assert_one_error(lx, 1, 5, "invalid UTF-8 in a name (byte 0xe9)");
    lexed_free(lx);

    lx = lex("\"\xf0\x9f\x98\x80 \xe2\x82\xac\" '\xc3\xa9' `\xc3\xa9`");
    ck_assert_uint_eq(lx->diags.errors, 0);
    ck_assert_int_eq(lx->n, 3);
    lexed_free(lx);
}
END_TEST

/* A file saved with a UTF-8 byte order mark (Windows editors) lexes as without it,
 * and positions on its first line are not shifted by it. */
START_TEST(byte_order_mark_is_skipped)
{
    Lexed *lx = lex("\xef\xbb\xbfrule r");
    ck_assert_uint_eq(lx->diags.errors, 0);
    ck_assert_int_eq(lx->n, 2);
    ck_assert_int_eq(lx->kind[0], RULE);
    ck_assert_int_eq(lx->span[1].col, 6);
    lexed_free(lx);

    lx = lex("a \xef\xbb\xbf");   /* elsewhere it is text outside a string */
    assert_one_error(lx, 1, 3, "non-ASCII");
    lexed_free(lx);
}
END_TEST

static Suite *lexer_suite(void)
{
    Suite *s = suite_create("lexer");
    TCase *tc = tcase_create("tokens");
    tcase_add_test(tc, reserved_words_are_keywords);
    tcase_add_test(tc, other_words_are_identifiers);
    tcase_add_test(tc, backtick_names);
    tcase_add_test(tc, punctuation_and_operators);
    tcase_add_test(tc, numbers_keep_their_text);
    tcase_add_test(tc, range_dots_are_not_a_decimal_point);
    tcase_add_test(tc, number_out_of_range);
    tcase_add_test(tc, durations_of_every_unit);
    tcase_add_test(tc, invalid_durations);
    tcase_add_test(tc, string_escapes);
    tcase_add_test(tc, unicode_escapes_and_surrogates);
    tcase_add_test(tc, invalid_utf8_in_strings_and_names);
    tcase_add_test(tc, byte_order_mark_is_skipped);
    tcase_add_test(tc, bad_escapes);
    tcase_add_test(tc, raw_strings);
    tcase_add_test(tc, unterminated_string);
    tcase_add_test(tc, unterminated_raw_string);
    tcase_add_test(tc, unterminated_comment);
    tcase_add_test(tc, comments_are_recorded);
    tcase_add_test(tc, token_positions);
    tcase_add_test(tc, nul_byte_and_stray_characters);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(lexer_suite());
}
