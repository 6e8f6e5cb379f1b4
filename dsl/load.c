/* dsl/load.c — FILE|DIR arguments to one parsed and checked RuleSet.
 *
 * Owns nothing after return: the RuleSet goes to the caller. A directory stands
 * for the `*.cep` files directly in it, in byte order of their names, so a rule
 * set loads the same way on every machine. */
#include "dsl/load.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/parse.h"

static bool has_cep_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".cep") == 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The sorted `*.cep` entries of `dir` as heap strings; -1 on error (reported). */
static int list_cep_files(const char *dir, char ***out, size_t *n_out, Diags *diags)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        diag_report_file(diags, DIAG_ERROR, dir, "cannot open directory: %s", strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    int rc = 0;
    while ((ent = readdir(d)) != NULL) {
        if (!has_cep_suffix(ent->d_name))
            continue;
        if (n == cap) {
            size_t new_cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, new_cap * sizeof *grown);
            if (grown == NULL) {
                rc = -1;
                break;
            }
            names = grown;
            cap = new_cap;
        }
        names[n] = strdup(ent->d_name);
        if (names[n] == NULL) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc < 0) {
        diags->oom = true;
        free_names(names, n);
        return -1;
    }
    if (n > 1)
        qsort(names, n, sizeof *names, compare_names);
    *out = names;
    *n_out = n;
    return 0;
}

static void parse_dir(RuleSet *rs, const char *dir, Diags *diags)
{
    char **names = NULL;
    size_t n = 0;
    if (list_cep_files(dir, &names, &n, diags) < 0)
        return;
    if (n == 0)
        diag_report_file(diags, DIAG_ERROR, dir, "no .cep files in %s", dir);
    size_t dir_len = strlen(dir);
    bool has_slash = dir_len > 0 && dir[dir_len - 1] == '/';
    for (size_t i = 0; i < n; i++) {
        Buf path = BUF_INIT;
        buf_printf(&path, "%s%s%s", dir, has_slash ? "" : "/", names[i]);
        if (path.failed)
            diags->oom = true;
        else
            dsl_parse_file(rs, path.data, diags);
        buf_free(&path);
    }
    free_names(names, n);
}

static void parse_arg(RuleSet *rs, const char *path, Diags *diags)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        diag_report_file(diags, DIAG_ERROR, path, "cannot read: %s", strerror(errno));
        return;
    }
    if (S_ISDIR(st.st_mode))
        parse_dir(rs, path, diags);
    else
        dsl_parse_file(rs, path, diags);
}

RuleSet *dsl_load(const char *const *paths, size_t n_paths, Diags *diags)
{
    RuleSet *rs = ast_ruleset_new();
    if (rs == NULL)
        return NULL;
    for (size_t i = 0; i < n_paths; i++)
        parse_arg(rs, paths[i], diags);
    dsl_check(rs, diags);
    return rs;
}
