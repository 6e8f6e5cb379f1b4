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
    char path[] = "/tmp/vigil-test-rules-XXXXXX.cep";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    Diags d;
    diags_init(&d);
    const char *p = path;
    CompiledRuleSet *rs = prev ? ruleset_reload(&p, 1, prev, &d) : ruleset_load(&p, 1, &d);
    if (!rs)
        diags_print(&d, stderr);
    diags_free(&d);
    unlink(path);
    ck_assert_ptr_nonnull(rs);
    return rs;
}
