/* tests/rulesutil.c — see rulesutil.h. */
#include "tests/rulesutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsl/diag.h"

CompiledRuleSet *test_rules_compile(const char *text, const CompiledRuleSet *prev)
{
    return test_rules_compile_with(text, prev, NULL);
}

CompiledRuleSet *test_rules_compile_with(const char *text, const CompiledRuleSet *prev,
                                         const RuleSetOptions *opts)
{
    char path[] = "/tmp/vigil-test-rules-XXXXXX.cep";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    Diags d;
    diags_init(&d);
    const char *p = path;
    CompiledRuleSet *rs = ruleset_load_with(&p, 1, prev, opts, &d);
    if (!rs)
        diags_print(&d, stderr);
    diags_free(&d);
    unlink(path);
    ck_assert_ptr_nonnull(rs);
    return rs;
}

Engine *test_engine_new(const CompiledRuleSet *rs, EngineSink sink, size_t max_partials,
                        size_t workers)
{
    EngineOptions opts = {max_partials, workers};
    char *err = NULL;
    Engine *e = engine_new(rs, &opts, &sink, &err);
    ck_assert_msg(e != NULL, "engine_new: %s", err ? err : "?");
    return e;
}

TestRouters test_routers_new(const char *rules)
{
    TestRouters t = {test_rules_compile(rules, NULL), NULL, NULL, expr_scratch_new()};
    t.all = router_new(t.rs, true);
    t.one = router_new(t.rs, true);
    ck_assert_ptr_nonnull(t.all);
    ck_assert_ptr_nonnull(t.one);
    ck_assert_ptr_nonnull(t.scratch);
    return t;
}

void test_routers_free(TestRouters *t)
{
    expr_scratch_free(t->scratch);
    router_free(t->all);
    router_free(t->one);
    ruleset_free(t->rs);
}
