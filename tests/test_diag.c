/* tests/test_diag.c — diagnostics: gcc-style printing, carets, caps, did-you-mean. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

static Span span_at(const SourceFile *src, int line, int col, int end_col)
{
    Span s = {src, line, col, line, end_col};
    return s;
}

START_TEST(prints_gcc_style_with_caret)
{
    const char *text = "rule r {\n  followed_by third where frist.amount > 1000;\n}\n";
    SourceFile *src = source_new("rules/fraud.cep", text, strlen(text));
    ck_assert_ptr_nonnull(src);
    Diags d;
    diags_init(&d);
    diag_report(&d, DIAG_ERROR, span_at(src, 2, 27, 32),
                "unknown step '%s' (did you mean '%s'?)", "frist", "first");
    char *out = test_diags_text(&d);
    ck_assert_str_eq(out,
        "rules/fraud.cep:2:27: error: unknown step 'frist' (did you mean 'first'?)\n"
        "  followed_by third where frist.amount > 1000;\n"
        "                          ^~~~~\n");
    ck_assert_uint_eq(d.errors, 1);
    free(out);
    diags_free(&d);
    source_free(src);
}
END_TEST

START_TEST(caret_mirrors_tabs)
{
    const char *text = "\t\tx  = 1;\n";
    SourceFile *src = source_new("t.cep", text, strlen(text));
    ck_assert_ptr_nonnull(src);
    Diags d;
    diags_init(&d);
    diag_report(&d, DIAG_WARNING, span_at(src, 1, 3, 4), "odd");
    char *out = test_diags_text(&d);
    ck_assert_str_eq(out, "t.cep:1:3: warning: odd\n\t\tx  = 1;\n\t\t^\n");
    ck_assert_uint_eq(d.warnings, 1);
    ck_assert_uint_eq(d.errors, 0);
    free(out);
    diags_free(&d);
    source_free(src);
}
END_TEST

/* Each character is one column of the caret line, however many bytes it takes. */
START_TEST(caret_counts_characters_not_bytes)
{
    const char *text = "x == \"h\xc3\xa9llo w\xc3\xb6rld\" and y >>> 2;\n";
    SourceFile *src = source_new("u.cep", text, strlen(text));
    ck_assert_ptr_nonnull(src);
    Diags d;
    diags_init(&d);
    diag_report(&d, DIAG_ERROR, span_at(src, 1, 29, 31), "bad");   /* bytes 29-30: ">>" */
    char *out = test_diags_text(&d);
    ck_assert_str_eq(out, "u.cep:1:29: error: bad\n"
                          "x == \"h\xc3\xa9llo w\xc3\xb6rld\" and y >>> 2;\n"
                          "                          ^~\n");
    free(out);
    diags_free(&d);
    source_free(src);
}
END_TEST

/* A rule file on one huge line: each diagnostic quotes 200 bytes around its span,
 * not the line (20 errors quoted 20 MB from a 1 MB line, twice with the carets). */
START_TEST(long_line_quoted_around_the_span)
{
    size_t n = 100000;
    char *text = malloc(n + 2);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < n; i++)
        text[i] = (char)('a' + i % 26);
    text[n] = '\n';
    text[n + 1] = '\0';
    SourceFile *src = source_new("long.cep", text, n + 1);
    ck_assert_ptr_nonnull(src);
    Diags d;
    diags_init(&d);
    diag_report(&d, DIAG_ERROR, span_at(src, 1, 50001, 50004), "middle");
    diag_report(&d, DIAG_ERROR, span_at(src, 1, 3, 5), "start");
    diag_report(&d, DIAG_ERROR, span_at(src, 1, 99999, 100001), "end");
    char *out = test_diags_text(&d);
    /* start: the first 200 bytes, cut after */
    char want[1024];
    snprintf(want, sizeof want, "long.cep:1:3: error: start\n%.200s...\n  ^~\n", text);
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%.400s", out);
    /* middle: 60 bytes before the span, "..." at both cuts, the caret under it */
    snprintf(want, sizeof want, "long.cep:1:50001: error: middle\n...%.200s...\n%63s^~~\n",
             text + 50000 - 60, "");
    ck_assert_msg(strstr(out, want) != NULL, "%s", want);
    /* end: the last 200 bytes, the underline stops at the line's end */
    snprintf(want, sizeof want, "long.cep:1:99999: error: end\n...%s%201s^~\n",
             text + n - 200, "");   /* text + n - 200: the last 200 bytes and the \n */
    ck_assert_msg(strstr(out, want) != NULL, "%s", want);
    ck_assert_uint_lt(strlen(out), 1500);
    free(out);
    diags_free(&d);
    source_free(src);
    free(text);
}
END_TEST

START_TEST(multi_line_span_underlines_to_end_of_first_line)
{
    const char *text = "abc def\nghi\n";
    SourceFile *src = source_new("m.cep", text, strlen(text));
    ck_assert_ptr_nonnull(src);
    Diags d;
    diags_init(&d);
    Span s = {src, 1, 5, 2, 2};
    diag_report(&d, DIAG_ERROR, s, "spans lines");
    char *out = test_diags_text(&d);
    ck_assert_str_eq(out, "m.cep:1:5: error: spans lines\nabc def\n    ^~~\n");
    free(out);
    diags_free(&d);
    source_free(src);
}
END_TEST

START_TEST(file_level_diagnostic_has_no_position)
{
    Diags d;
    diags_init(&d);
    diag_report_file(&d, DIAG_ERROR, "missing.cep", "cannot read: %s", "No such file or directory");
    char *out = test_diags_text(&d);
    ck_assert_str_eq(out, "missing.cep: error: cannot read: No such file or directory\n");
    free(out);
    diags_free(&d);
}
END_TEST

START_TEST(caps_errors_per_file)
{
    const char *text = "x\n";
    SourceFile *a = source_new("a.cep", text, strlen(text));
    SourceFile *b = source_new("b.cep", text, strlen(text));
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    Diags d;
    diags_init(&d);
    for (int i = 0; i < DIAG_MAX_PER_FILE + 5; i++)
        diag_report(&d, DIAG_ERROR, span_at(a, 1, 1, 2), "error %d", i);
    diag_report(&d, DIAG_ERROR, span_at(b, 1, 1, 2), "other file");
    ck_assert_uint_eq(d.errors, DIAG_MAX_PER_FILE + 6);
    ck_assert_uint_eq(d.dropped, 5);
    ck_assert_uint_eq(d.n, DIAG_MAX_PER_FILE + 1);
    char *out = test_diags_text(&d);
    ck_assert_ptr_nonnull(strstr(out, "b.cep:1:1: error: other file\n"));
    ck_assert_ptr_nonnull(strstr(out, "a.cep: too many errors, 5 more not shown\n"));
    ck_assert_ptr_null(strstr(out, "error 20"));
    free(out);
    diags_free(&d);
    source_free(a);
    source_free(b);
}
END_TEST

START_TEST(nearest_suggests_close_names_only)
{
    const char *const steps[] = {"first", "second", "third"};
    ck_assert_str_eq(diag_nearest("frist", steps, 3), "first");
    ck_assert_str_eq(diag_nearest("secnd", steps, 3), "second");
    ck_assert_ptr_null(diag_nearest("zzzzz", steps, 3));
    const char *const fns[] = {"len", "lower", "upper"};
    ck_assert_str_eq(diag_nearest("lenght", fns, 3), "len");
    /* Short names allow one edit at most. */
    const char *const one[] = {"ab"};
    ck_assert_str_eq(diag_nearest("a", one, 1), "ab");
    ck_assert_ptr_null(diag_nearest("x", one, 1));
    /* An exact match is not a suggestion. */
    const char *const same[] = {"first"};
    ck_assert_ptr_null(diag_nearest("first", same, 1));
}
END_TEST

static Suite *diag_suite(void)
{
    Suite *s = suite_create("diag");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, prints_gcc_style_with_caret);
    tcase_add_test(tc, caret_mirrors_tabs);
    tcase_add_test(tc, caret_counts_characters_not_bytes);
    tcase_add_test(tc, long_line_quoted_around_the_span);
    tcase_add_test(tc, multi_line_span_underlines_to_end_of_first_line);
    tcase_add_test(tc, file_level_diagnostic_has_no_position);
    tcase_add_test(tc, caps_errors_per_file);
    tcase_add_test(tc, nearest_suggests_close_names_only);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(diag_suite());
}
