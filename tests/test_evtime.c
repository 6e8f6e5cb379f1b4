/* tests/test_evtime.c — event time parsing: ISO-8601 forms, zone offsets, fractions,
 * leap years, epoch seconds and milliseconds, and what is rejected. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/evtime.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

#define T_2024_02_29_123456_789 INT64_C(1709210096789)

static const struct {
    const char *text;
    int64_t ms;
} GOOD_ISO[] = {
    { "1970-01-01T00:00:00Z", 0 },
    { "2024-02-29T12:34:56.789Z", T_2024_02_29_123456_789 },
    { "2024-02-29 12:34:56.789Z", T_2024_02_29_123456_789 },
    { "2024-02-29t12:34:56.789z", T_2024_02_29_123456_789 },
    { "2024-02-29T12:34:56,789Z", T_2024_02_29_123456_789 },
    { "2024-02-29T12:34:56.7899999Z", T_2024_02_29_123456_789 },   /* truncated */
    { "2024-02-29T12:34:56.78Z", T_2024_02_29_123456_789 - 9 },
    { "2024-02-29T12:34:56.7Z", T_2024_02_29_123456_789 - 89 },
    { "2024-02-29T12:34:56Z", T_2024_02_29_123456_789 - 789 },
    { "2024-02-29T14:34:56.789+02:00", T_2024_02_29_123456_789 },
    { "2024-02-29T14:34:56.789+0200", T_2024_02_29_123456_789 },
    { "2024-02-29T14:34:56.789+02", T_2024_02_29_123456_789 },
    { "2024-02-29T10:04:56.789-02:30", T_2024_02_29_123456_789 },
    { "2024-02-29T12:34:56.789-00:00", T_2024_02_29_123456_789 },
    { "2024-03-01T01:34:56.789+13:00", T_2024_02_29_123456_789 },
    { "2024-02-29T12:34Z", INT64_C(1709210040000) },
    { "2024-02-29T00:00Z", INT64_C(1709164800000) },
    { "2000-02-29T00:00Z", INT64_C(951782400000) },                   /* 400-year leap */
    { "1969-12-31T23:59:59.999Z", -1 },
    { "0001-01-01T00:00:00Z", INT64_C(-62135596800000) },
    { "1600-03-01T00:00Z", INT64_C(-11670912000000) },
    { "0000-01-01T00:00:00Z", INT64_C(-62167219200000) },             /* the range's ends */
    { "0000-01-01T01:00:00+01:00", INT64_C(-62167219200000) },
    { "9999-12-31T23:59:59.999Z", INT64_C(253402300799999) },
    { "2016-12-31T23:59:60Z", INT64_C(1483228800000) },               /* leap second */
};

START_TEST(iso_good)
{
    int64_t ms = 42;
    const char *s = GOOD_ISO[_i].text;
    ck_assert_msg(evtime_parse_iso(s, strlen(s), &ms), "rejected %s", s);
    ck_assert_msg(ms == GOOD_ISO[_i].ms, "%s: %lld, want %lld", s, (long long)ms,
                  (long long)GOOD_ISO[_i].ms);
}
END_TEST

static const char *const BAD_ISO[] = {
    "", "2024", "2024-02", "2024-1-01", "24-01-01", "2024/01/01", "abcd-01-01",
    "2023-02-29", "1900-02-29", "2024-04-31", "2024-13-01", "2024-00-10", "2024-01-00",
    "2024-01-32", "2024-01-01T", "2024-01-01T12", "2024-01-01T1:00:00Z",
    "2024-01-01T24:00:00Z", "2024-01-01T12:60:00Z", "2024-01-01T12:00:61Z",
    "2024-01-01T12:00:00.Z", "2024-01-01T12:00:00+2", "2024-01-01T12:00:00+24:00",
    "2024-01-01T12:00:00+02:60", "2024-01-01T12:00:00+02:0", "2024-01-01T12:00:00Zjunk",
    "2024-01-01X12:00:00Z", "2024-01-01T12:00:00 Z", " 2024-01-01", "2024-01-01 ",
    "2024-01-01T12:00:00Z\n", "+2024-01-01",
    /* no zone: could be local time (LANGUAGE.md: "with Z or an offset") */
    "2024-02-29T12:34:56", "2024-02-29T12:34", "2024-02-29 12:34:56.789", "2024-02-29",
    /* outside years 0000-9999 once the offset is applied */
    "0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
};

START_TEST(iso_bad)
{
    int64_t ms = 42;
    const char *s = BAD_ISO[_i];
    ck_assert_msg(!evtime_parse_iso(s, strlen(s), &ms), "accepted %s", s);
}
END_TEST

START_TEST(iso_respects_length)
{
    int64_t ms = 0;
    const char *s = "2024-02-29T12:34:56.789Zgarbage";
    ck_assert(evtime_parse_iso(s, 24, &ms));
    ck_assert(ms == T_2024_02_29_123456_789);
    ck_assert(!evtime_parse_iso(s, 19, &ms));   /* cut before its zone */
    ck_assert(!evtime_parse_iso(s, 25, &ms));
}
END_TEST

static void expect_ms(Value v, TimeFormat fmt, int64_t want)
{
    int64_t ms = 42;
    ck_assert(evtime_parse(&v, fmt, &ms));
    ck_assert_msg(ms == want, "got %lld, want %lld", (long long)ms, (long long)want);
}

static void expect_fail(Value v, TimeFormat fmt)
{
    int64_t ms = 42;
    ck_assert(!evtime_parse(&v, fmt, &ms));
}

START_TEST(auto_format)
{
    expect_ms(test_str("2024-02-29T12:34:56.789Z"), TIME_AUTO, T_2024_02_29_123456_789);
    expect_ms(test_raw_num(1709210096.789, "1709210096.789"), TIME_AUTO, T_2024_02_29_123456_789);
    expect_ms(test_raw_num(1709210096, "1709210096"), TIME_AUTO, INT64_C(1709210096000));
    expect_fail(test_str("1709210096"), TIME_AUTO);        /* a string is ISO-8601 */
    expect_fail(value_missing(), TIME_AUTO);
    expect_fail(value_null(), TIME_AUTO);
    expect_fail(value_bool(true), TIME_AUTO);
    expect_ms(value_time(12345), TIME_AUTO, 12345);
}
END_TEST

START_TEST(iso_format)
{
    expect_ms(test_str("2024-02-29T12:34:56.789Z"), TIME_ISO8601, T_2024_02_29_123456_789);
    expect_fail(test_raw_num(1709210096, "1709210096"), TIME_ISO8601);
    expect_fail(test_str("yesterday"), TIME_ISO8601);
}
END_TEST

START_TEST(epoch_seconds)
{
    expect_ms(test_raw_num(1.5, "1.5"), TIME_EPOCH_S, 1500);
    expect_ms(test_raw_num(-1.5, "-1.5"), TIME_EPOCH_S, -1500);
    expect_ms(test_raw_num(1.0005, "1.0005"), TIME_EPOCH_S, 1000);      /* sub-ms floored */
    expect_ms(test_raw_num(-0.0005, "-0.0005"), TIME_EPOCH_S, -1);
    expect_ms(test_raw_num(0.001, "0.001"), TIME_EPOCH_S, 1);            /* exact, no float error */
    expect_ms(test_raw_num(1.001, "1.001"), TIME_EPOCH_S, 1001);
    expect_ms(test_raw_num(1e3, "1e3"), TIME_EPOCH_S, 1000000);
    expect_ms(test_raw_num(17e-1, "17E-1"), TIME_EPOCH_S, 1700);
    expect_ms(test_raw_num(0, "0"), TIME_EPOCH_S, 0);
    expect_ms(test_raw_num(0, "-0.0"), TIME_EPOCH_S, 0);
    expect_ms(value_num(2.25), TIME_EPOCH_S, 2250);                 /* computed, no text */
    expect_ms(test_str("1709210096.789"), TIME_EPOCH_S, T_2024_02_29_123456_789);
    expect_fail(test_raw_num(1e20, "1e20"), TIME_EPOCH_S);
    expect_fail(value_num(1e300), TIME_EPOCH_S);
    expect_fail(test_str("12abc"), TIME_EPOCH_S);
    expect_fail(test_str(""), TIME_EPOCH_S);
    expect_fail(test_str("-"), TIME_EPOCH_S);
    expect_fail(test_str("1e"), TIME_EPOCH_S);
    expect_fail(test_str(" 12"), TIME_EPOCH_S);
    expect_fail(test_str("2024-02-29T12:34:56Z"), TIME_EPOCH_S);
    expect_fail(value_null(), TIME_EPOCH_S);
}
END_TEST

START_TEST(epoch_milliseconds)
{
    expect_ms(test_raw_num(1709210096789.0, "1709210096789"), TIME_EPOCH_MS, T_2024_02_29_123456_789);
    expect_ms(test_raw_num(1.9, "1.9"), TIME_EPOCH_MS, 1);
    expect_ms(test_raw_num(-1.9, "-1.9"), TIME_EPOCH_MS, -2);
    expect_ms(test_raw_num(1.7e12, "1.7e12"), TIME_EPOCH_MS, INT64_C(1700000000000));
    expect_ms(test_str("1709210096789"), TIME_EPOCH_MS, T_2024_02_29_123456_789);
    expect_ms(value_num(1500), TIME_EPOCH_MS, 1500);
    expect_fail(test_raw_num(1e17, "100000000000000000"), TIME_EPOCH_MS);
    expect_fail(value_bool(false), TIME_EPOCH_MS);
    /* years 0000-9999 exactly, whatever the format */
    expect_ms(test_raw_num(0, "253402300799999"), TIME_EPOCH_MS, INT64_C(253402300799999));
    expect_fail(test_raw_num(0, "253402300800000"), TIME_EPOCH_MS);
    expect_ms(test_raw_num(0, "-62167219200000"), TIME_EPOCH_MS, INT64_C(-62167219200000));
    expect_fail(test_raw_num(0, "-62167219200001"), TIME_EPOCH_MS);
    expect_fail(test_raw_num(0, "-253402300800"), TIME_EPOCH_S);
    expect_fail(value_num(-6.3e13), TIME_EPOCH_MS);
}
END_TEST

/* Integer texts the fast path reads: digit counts 1..19 (19 is beyond it), leading
 * zeros, signs, and the edges of the time range in milliseconds and in seconds. */
static const char *const PLAIN_INTEGERS[] = {
    "0", "-0", "7", "-7", "00", "007", "-007", "42", "999", "1000", "12345", "123456",
    "1234567", "12345678", "123456789", "1234567890", "12345678901", "123456789012",
    "1700000000000", "-1700000000000", "12345678901234", "123456789012345",
    "1234567890123456", "12345678901234567", "123456789012345678", "1234567890123456789",
    "9", "99", "9999999999", "99999999999999", "999999999999999", "9999999999999999",
    "99999999999999999", "999999999999999999", "-999999999999999999",
    "9999999999999999999", "000000000000000001", "0000000000000000001",
    "000000000000000000", "-000000000000000000",
    "253402300800000", "253402300800001", "-253402300800000", "-253402300800001",
    "253402300799999", "0253402300800000", "253402300800", "253402300801",
    "-253402300800", "-253402300801", "253402300799",
};

/* The same number as a text only the general path reads (a fraction of zero). */
static Value with_zero_fraction(const char *text, char *buf, size_t cap, bool as_string)
{
    snprintf(buf, cap, "%s.0", text);
    return as_string ? test_str(buf) : test_raw_num(0, buf);
}

START_TEST(fast_integer_path_matches_general)
{
    const char *text = PLAIN_INTEGERS[_i];
    char buf[64];
    static const TimeFormat FORMATS[] = { TIME_EPOCH_MS, TIME_EPOCH_S, TIME_AUTO };
    for (size_t f = 0; f < sizeof FORMATS / sizeof FORMATS[0]; f++) {
        for (int as_string = 0; as_string <= 1; as_string++) {
            if (as_string && FORMATS[f] == TIME_AUTO)
                continue;                        /* a string there is ISO-8601 */
            Value fast = as_string ? test_str(text) : test_raw_num(0, text);
            Value general = with_zero_fraction(text, buf, sizeof buf, as_string);
            int64_t fast_ms = 42, general_ms = 43;
            bool fast_ok = evtime_parse(&fast, FORMATS[f], &fast_ms);
            bool general_ok = evtime_parse(&general, FORMATS[f], &general_ms);
            ck_assert_msg(fast_ok == general_ok, "%s (format %d, string %d): %d vs %d",
                          text, (int)FORMATS[f], as_string, fast_ok, general_ok);
            if (fast_ok)
                ck_assert_msg(fast_ms == general_ms, "%s (format %d): %lld vs %lld", text,
                              (int)FORMATS[f], (long long)fast_ms, (long long)general_ms);
        }
    }
}
END_TEST

/* Not numbers: ':' is the byte after '9' and '/' the one before '0', alone, inside and
 * after whole words of digits. */
static const char *const NOT_EPOCH_MS[] = {
    "-", "1-", "--1", "+1", "1 ", "1:", "/1", "1234567:", "/1234567", "00000000000:1234",
    "12345678:1234", "1234567/12345", "123456789012345:", "12345678901234/",
    "1234\xb1" "12345678",
};

START_TEST(fast_integer_path_values)
{
    expect_ms(test_raw_num(0, "1700000000000"), TIME_EPOCH_MS, INT64_C(1700000000000));
    expect_ms(test_raw_num(0, "-1700000000000"), TIME_EPOCH_MS, INT64_C(-1700000000000));
    expect_ms(test_raw_num(0, "1700000000"), TIME_EPOCH_S, INT64_C(1700000000000));
    expect_ms(test_raw_num(0, "-0"), TIME_EPOCH_MS, 0);
    expect_ms(test_str("007"), TIME_EPOCH_S, 7000);
    /* the parsers' own bound (no overflow), then the range: years 0000-9999 */
    expect_fail(test_raw_num(0, "253402300800000"), TIME_EPOCH_MS);
    expect_fail(test_raw_num(0, "-253402300800000"), TIME_EPOCH_MS);
    expect_fail(test_raw_num(0, "253402300800001"), TIME_EPOCH_MS);
    expect_fail(test_raw_num(0, "-253402300800001"), TIME_EPOCH_MS);
    expect_ms(test_raw_num(0, "253402300799"), TIME_EPOCH_S, INT64_C(253402300799000));
    expect_ms(test_raw_num(0, "-62167219200"), TIME_EPOCH_S, INT64_C(-62167219200000));
    expect_fail(test_raw_num(0, "253402300800"), TIME_EPOCH_S);
    expect_fail(test_raw_num(0, "-62167219201"), TIME_EPOCH_S);
    expect_fail(test_raw_num(0, "253402300801"), TIME_EPOCH_S);
    expect_fail(test_raw_num(0, "-253402300801"), TIME_EPOCH_S);
    expect_fail(test_raw_num(0, "999999999999999999"), TIME_EPOCH_S);  /* x1000 would overflow */
    expect_ms(test_raw_num(0, "000000000000000001"), TIME_EPOCH_MS, 1);
    expect_ms(test_raw_num(0, "0000000000000000001"), TIME_EPOCH_MS, 1); /* 19: general */
    for (size_t i = 0; i < sizeof NOT_EPOCH_MS / sizeof NOT_EPOCH_MS[0]; i++)
        expect_fail(test_str(NOT_EPOCH_MS[i]), TIME_EPOCH_MS);
    expect_ms(test_str("1234567890123"), TIME_EPOCH_MS, INT64_C(1234567890123));
    expect_ms(test_str("-12345678"), TIME_EPOCH_MS, INT64_C(-12345678));
}
END_TEST

static Suite *evtime_suite(void)
{
    Suite *s = suite_create("evtime");
    TCase *tc = tcase_create("evtime");
    tcase_add_loop_test(tc, iso_good, 0, (int)(sizeof GOOD_ISO / sizeof GOOD_ISO[0]));
    tcase_add_loop_test(tc, iso_bad, 0, (int)(sizeof BAD_ISO / sizeof BAD_ISO[0]));
    tcase_add_test(tc, iso_respects_length);
    tcase_add_test(tc, auto_format);
    tcase_add_test(tc, iso_format);
    tcase_add_test(tc, epoch_seconds);
    tcase_add_test(tc, epoch_milliseconds);
    tcase_add_loop_test(tc, fast_integer_path_matches_general, 0,
                        (int)(sizeof PLAIN_INTEGERS / sizeof PLAIN_INTEGERS[0]));
    tcase_add_test(tc, fast_integer_path_values);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(evtime_suite());
}
