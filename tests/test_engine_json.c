/* tests/test_engine_json.c — the JSON tree of `vigil test`: parsing and subset
 * comparison (cli/json_tree.c). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_tree.h"
#include "tests/checkmain.h"

static bool parse(JsonTree *t, const char *s)
{
    const char *why;
    size_t at;
    return json_tree_parse(t, s, strlen(s), &why, &at);
}

/* Subset check of two documents. */
static bool subset(const char *want, const char *got)
{
    JsonTree w, g;
    ck_assert(parse(&w, want));
    ck_assert(parse(&g, got));
    bool r = json_tree_subset(w.root, g.root);
    json_tree_free(&w);
    json_tree_free(&g);
    return r;
}

START_TEST(parses_every_kind_of_value)
{
    JsonTree t;
    ck_assert(parse(&t, " {\"a\": [1, -2.5e1, true, false, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\"} "));
    const JsonNode *a = json_tree_get(t.root, "a");
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->type, JT_ARR);
    ck_assert_uint_eq(a->n, 5);
    ck_assert(a->items[1]->num == -25.0);
    ck_assert_int_eq(a->items[2]->type, JT_BOOL);
    ck_assert(a->items[2]->boolean);
    ck_assert_int_eq(a->items[4]->type, JT_NULL);
    const JsonNode *s = json_tree_get(t.root, "s");
    ck_assert_str_eq(s->str, "x\xc3\xa9\xf0\x9f\x98\x80\n");
    ck_assert_ptr_null(json_tree_get(t.root, "missing"));
    json_tree_free(&t);
}
END_TEST

START_TEST(rejects_bad_json_with_position)
{
    const char *bad[] = {"{\"a\" 1}", "[1,]", "{\"a\":1} x", "\"abc", "tru", "", "{\"a\":\"\t\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        JsonTree t;
        const char *why = NULL;
        size_t at = 0;
        ck_assert_msg(!json_tree_parse(&t, bad[i], strlen(bad[i]), &why, &at), "%s", bad[i]);
        ck_assert_ptr_nonnull(why);
        ck_assert_uint_le(at, strlen(bad[i]));
        json_tree_free(&t);
    }
    JsonTree t;
    const char *why;
    size_t at;
    ck_assert(!json_tree_parse(&t, "{\"a\" 1}", 7, &why, &at));
    ck_assert_uint_eq(at, 5);
    json_tree_free(&t);
}
END_TEST

START_TEST(repeated_member_last_wins)
{
    JsonTree t;
    ck_assert(parse(&t, "{\"a\":1,\"a\":2}"));
    ck_assert_uint_eq(t.root->n, 1);
    ck_assert(json_tree_get(t.root, "a")->num == 2);
    json_tree_free(&t);
}
END_TEST

START_TEST(objects_compare_as_recursive_subsets)
{
    ck_assert(subset("{}", "{\"a\":1}"));
    ck_assert(subset("{\"a\":1}", "{\"a\":1.0,\"b\":2}"));
    ck_assert(!subset("{\"a\":1,\"c\":3}", "{\"a\":1,\"b\":2}"));
    ck_assert(subset("{\"k\":{\"u\":\"x\"}}", "{\"k\":{\"u\":\"x\",\"v\":1}}"));
    ck_assert(!subset("{\"k\":{\"u\":\"y\"}}", "{\"k\":{\"u\":\"x\"}}"));
    ck_assert(!subset("{\"a\":\"1\"}", "{\"a\":1}"));
    ck_assert(!subset("{\"a\":null}", "{}"));
}
END_TEST

START_TEST(arrays_compare_element_wise_with_equal_length)
{
    ck_assert(subset("[{\"id\":1},{\"id\":2}]", "[{\"id\":1,\"x\":0},{\"id\":2}]"));
    ck_assert(!subset("[{\"id\":2},{\"id\":1}]", "[{\"id\":1},{\"id\":2}]"));
    ck_assert(!subset("[{\"id\":1}]", "[{\"id\":1},{\"id\":2}]"));
    ck_assert(!subset("[1,2,3]", "[1,2]"));
    ck_assert(subset("[]", "[]"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("json_tree");
    TCase *tc = tcase_create("json_tree");
    tcase_add_test(tc, parses_every_kind_of_value);
    tcase_add_test(tc, rejects_bad_json_with_position);
    tcase_add_test(tc, repeated_member_last_wins);
    tcase_add_test(tc, objects_compare_as_recursive_subsets);
    tcase_add_test(tc, arrays_compare_element_wise_with_equal_length);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
