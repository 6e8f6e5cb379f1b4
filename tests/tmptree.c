/* tests/tmptree.c — see tmptree.h. */
#include "tests/tmptree.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

void tmptree_make(char *dir, size_t size, const char *name)
{
    int n = snprintf(dir, size, "/tmp/vigil-%s-XXXXXX", name);
    ck_assert(n > 0 && (size_t)n < size);
    ck_assert_msg(mkdtemp(dir) != NULL, "cannot make the folder %s", dir);
}

char *tmptree_path(char *path, size_t size, const char *dir, const char *name)
{
    int n = snprintf(path, size, "%s/%s", dir, name);
    ck_assert_msg(n > 0 && (size_t)n < size, "the path %s/%s is too long", dir, name);
    return path;
}

void tmptree_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

void tmptree_write_in(const char *dir, const char *name, const char *text)
{
    char path[512];
    tmptree_write(tmptree_path(path, sizeof path, dir, name), text);
}

void tmptree_remove(const char *dir)
{
    char cmd[600];
    int n = snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(n > 0 && (size_t)n < sizeof cmd);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}
