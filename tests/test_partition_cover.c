/* tests/test_partition_cover.c — partition key bytes (runtime/partition.h) read back
 * into values, for the kinds of values and escapes the other tests leave out: every
 * control byte in a string, booleans, a number that was not finite, times and
 * durations, numbers whose text is longer than a small buffer, objects and arrays;
 * and key bytes that are not what part_key_bytes writes are refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runtime/partition.h"
#include "tests/checkmain.h"

/* part_key_bytes then part_key_values: the values read back equal the originals, and
 * writing them again gives the same bytes. */
static void round_trip(const Value *vals, size_t n)
{
    Buf kb = BUF_INIT, text = BUF_INIT, again = BUF_INIT;
    ck_assert(part_key_bytes(vals, n, &kb));
    ck_assert(!kb.failed);
    Value back[8];
    ck_assert_uint_le(n, 8);
    ck_assert_msg(part_key_values(kb.data, kb.len, back, n, &text), "refused %.*s",
                  (int)kb.len, kb.data);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(back[i].type, vals[i].type);
        if (vals[i].type == V_NUM && isnan(vals[i].num))
            ck_assert(isnan(back[i].num));
        else
            ck_assert_msg(value_equal(&back[i], &vals[i]), "value %zu of %.*s differs", i,
                          (int)kb.len, kb.data);
    }
    ck_assert(part_key_bytes(back, n, &again));
    ck_assert_uint_eq(again.len, kb.len);
    ck_assert(!memcmp(again.data, kb.data, kb.len));
    buf_free(&kb);
    buf_free(&text);
    buf_free(&again);
}

START_TEST(strings_with_every_control_byte)
{
    for (int c = 1; c < 0x20; c++) {
        char s[8] = {'a', (char)c, 'b', '"', '\\', (char)c, 0};
        Value v = value_str(s, 6);
        round_trip(&v, 1);
        Value two[2] = {value_str(s, 6), value_str(s + 1, 1)};
        round_trip(two, 2);
    }
}
END_TEST

START_TEST(scalars_of_every_kind)
{
    Value vals[] = {value_bool(true), value_bool(false), value_num(NAN), value_num(-2.5),
                    value_time(1767225600123), value_dur(-300000), value_str("", 0)};
    size_t n = sizeof vals / sizeof *vals;
    for (size_t i = 0; i < n; i++)
        round_trip(&vals[i], 1);
    round_trip(vals, n);
}
END_TEST

/* The digits of a number are kept as they came, however long. */
START_TEST(long_number_text_kept)
{
    char digits[100];
    memset(digits, '7', 90);
    digits[90] = '\0';
    Value v = value_num(strtod(digits, NULL));
    v.raw = digits;
    v.raw_len = 90;
    Buf kb = BUF_INIT, text = BUF_INIT;
    ck_assert(part_key_bytes(&v, 1, &kb));
    ck_assert_uint_eq(kb.len, 90);
    Value back;
    ck_assert(part_key_values(kb.data, kb.len, &back, 1, &text));
    ck_assert_int_eq(back.type, V_NUM);
    ck_assert_uint_eq(back.raw_len, 90);
    ck_assert(!memcmp(back.raw, digits, 90));
    ck_assert(back.num == v.num);
    buf_free(&kb);
    buf_free(&text);
}
END_TEST

START_TEST(objects_and_arrays_kept_raw)
{
    static const char obj[] = "{\"a\":[1,\",\"],\"b\":{}}", arr[] = "[\"]\",[],{\"x\":\"}\"}]";
    Value vals[3] = {{0}, {0}, value_num(1)};
    vals[0].type = V_OBJ;
    vals[0].raw = obj;
    vals[0].raw_len = sizeof obj - 1;
    vals[1].type = V_ARR;
    vals[1].raw = arr;
    vals[1].raw_len = sizeof arr - 1;
    Buf kb = BUF_INIT, text = BUF_INIT;
    ck_assert(part_key_bytes(vals, 3, &kb));
    Value back[3];
    ck_assert(part_key_values(kb.data, kb.len, back, 3, &text));
    ck_assert_int_eq(back[0].type, V_OBJ);
    ck_assert_uint_eq(back[0].raw_len, sizeof obj - 1);
    ck_assert(!memcmp(back[0].raw, obj, sizeof obj - 1));
    ck_assert_int_eq(back[1].type, V_ARR);
    ck_assert_uint_eq(back[1].raw_len, sizeof arr - 1);
    ck_assert(!memcmp(back[1].raw, arr, sizeof arr - 1));
    ck_assert(back[2].num == 1);
    buf_free(&kb);
    buf_free(&text);
}
END_TEST

/* A missing or null value gives no key. */
START_TEST(null_values_have_no_key)
{
    Buf kb = BUF_INIT;
    Value vals[2] = {value_str("u", 1), value_null()};
    ck_assert(!part_key_bytes(vals, 2, &kb));
    vals[1] = value_missing();
    ck_assert(!part_key_bytes(vals, 2, &kb));
    buf_free(&kb);
}
END_TEST

typedef struct Bad {
    const char *bytes;
    size_t n;     /* values asked for */
} Bad;

/* Key bytes a checkpoint might carry after damage: each is refused. */
START_TEST(malformed_key_bytes_refused)
{
    static const Bad bad[] = {
        {"", 1},              /* no value */
        {"1,2", 1},           /* one too many */
        {"1", 2},             /* one too few */
        {"1;2", 2},           /* not a comma */
        {"1,", 2},            /* empty second */
        {"\"abc", 1},         /* unterminated string */
        {"\"a\\qb\"", 1},     /* unknown escape */
        {"\"a\\u0041\"", 1},  /* \u only for control bytes */
        {"\"a\\u00\"", 1},    /* short \u */
        {"\"a\\", 1},         /* escape at the end */
        {"t", 1},             /* time without digits */
        {"t12x", 1},          /* time with trailing text */
        {"d1.5", 1},          /* duration not an integer */
        {"1x", 1},            /* number with trailing text */
        {"{\"a\":1", 1},      /* unclosed object */
        {"[1,2", 1},          /* unclosed array */
        {"tru", 1},           /* not a boolean */
    };
    Buf text = BUF_INIT;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Value out[2];
        ck_assert_msg(!part_key_values(bad[i].bytes, strlen(bad[i].bytes), out, bad[i].n, &text),
                      "accepted '%s' as %zu values", bad[i].bytes, bad[i].n);
    }
    buf_free(&text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("partition_cover");
    TCase *tc = tcase_create("key bytes");
    tcase_add_test(tc, strings_with_every_control_byte);
    tcase_add_test(tc, scalars_of_every_kind);
    tcase_add_test(tc, long_number_text_kept);
    tcase_add_test(tc, objects_and_arrays_kept_raw);
    tcase_add_test(tc, null_values_have_no_key);
    tcase_add_test(tc, malformed_key_bytes_refused);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
