/* tests/test_ruleset.c — loading and compiling rule sets (rules/ruleset.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsl/parse.h"
#include "dsl/check.h"
#include "rules/ruleset.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

/* Writes text to a fresh temporary .cep file; returns its heap path. */
static char *write_rules(const char *text)
{
    char tmpl[] = "/tmp/vigil-ruleset-XXXXXX.cep";
    int fd = mkstemps(tmpl, 4);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return strdup(tmpl);
}

static CompiledRuleSet *load_text(const char *text, const CompiledRuleSet *prev, Diags *d)
{
    char *path = write_rules(text);
    const char *paths[] = {path};
    CompiledRuleSet *rs = ruleset_reload(paths, 1, prev, d);
    unlink(path);
    free(path);
    return rs;
}

static int slot_of(const CompiledRuleSet *rs, const char *text)
{
    for (size_t i = 0; i < rs->fields.n; i++)
        if (!strcmp(rs->fields.paths[i].text, text))
            return (int)i;
    return -1;
}

START_TEST(compiles_rules_keys_and_actions)
{
    Diags d;
    diags_init(&d);
    CompiledRuleSet *rs = load_text(
        "time ts lateness 5s;\n"
        "rule a { filter type == \"tx\"; key user, card; begin x where amount > 1;\n"
        "         next y; within 1m; suppress 10m;\n"
        "         on match alert high \"m {user}\" fields { n: count(x) };\n"
        "         on timeout alert \"t\"; on timeout alert low \"t2\"; }\n"
        "rule b { begin z; }\n",
        NULL, &d);
    ck_assert_ptr_nonnull(rs);
    ck_assert_int_eq(d.errors, 0);
    ck_assert_uint_eq(rs->n_rules, 2);
    ck_assert(rs->event_time);
    ck_assert_int_eq(rs->lateness_ms, 5000);
    ck_assert_int_eq(rs->time_slot, slot_of(rs, "ts"));
    const CompiledRule *a = &rs->rules[ruleset_find(rs, "a")];
    ck_assert_ptr_nonnull(a->filter);
    ck_assert_uint_eq(a->n_keys, 2);
    ck_assert_str_eq(a->key_names[0], "user");
    ck_assert_str_eq(a->key_names[1], "card");
    ck_assert_uint_eq(a->n_on_match, 1);
    ck_assert_uint_eq(a->n_on_timeout, 2);
    ck_assert_int_eq(a->on_match[0].severity, SEV_HIGH);
    ck_assert_uint_eq(a->on_match[0].n_fields, 1);
    ck_assert_str_eq(a->on_match[0].field_names[0], "n");
    ck_assert_int_eq(a->suppress_ms, 600000);
    const CompiledRule *b = &rs->rules[ruleset_find(rs, "b")];
    ck_assert_ptr_null(b->filter);
    ck_assert_uint_eq(b->n_keys, 0);
    ck_assert_int_eq(ruleset_find(rs, "nope"), -1);
    ck_assert_uint_ne(a->fingerprint, b->fingerprint);
    ruleset_free(rs);
    diags_free(&d);
}
END_TEST

START_TEST(errors_give_null_and_diagnostics)
{
    Diags d;
    diags_init(&d);
    CompiledRuleSet *rs = load_text("rule a { begin x where s =~ '(x'; }\n", NULL, &d);
    ck_assert_ptr_null(rs);
    ck_assert_int_ge(d.errors, 1);
    /* Printing after the rule set is gone must still quote the source line. */
    char *out = test_diags_text(&d);
    ck_assert_ptr_nonnull(strstr(out, "rule a { begin x where s =~ '(x'; }"));
    free(out);
    diags_free(&d);
}
END_TEST

START_TEST(reload_keeps_field_slots)
{
    Diags d;
    diags_init(&d);
    CompiledRuleSet *old = load_text(
        "rule a { begin x where amount > 1; next y where user == x.user; }\n", NULL, &d);
    ck_assert_ptr_nonnull(old);
    int amount = slot_of(old, "amount"), user = slot_of(old, "user");
    ck_assert_int_ge(amount, 0);
    ck_assert_int_ge(user, 0);
    /* The new set reads the fields in another order and adds one. */
    CompiledRuleSet *next = load_text(
        "rule c { begin q where country != null; }\n"
        "rule a { begin x where amount > 1; next y where user == x.user; }\n", old, &d);
    ck_assert_ptr_nonnull(next);
    ck_assert_int_eq(slot_of(next, "amount"), amount);
    ck_assert_int_eq(slot_of(next, "user"), user);
    ck_assert_int_ge(slot_of(next, "country"), (int)old->fields.n);
    ck_assert_uint_eq(next->rules[ruleset_find(next, "a")].fingerprint,
                      old->rules[ruleset_find(old, "a")].fingerprint);
    ruleset_free(old);
    ruleset_free(next);
    diags_free(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ruleset");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, compiles_rules_keys_and_actions);
    tcase_add_test(tc, errors_give_null_and_diagnostics);
    tcase_add_test(tc, reload_keeps_field_slots);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
