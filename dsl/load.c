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

void dsl_free_paths(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

typedef struct PathList {
    char **v;      /* heap strings, owned */
    size_t n, cap;
} PathList;

/* Takes ownership of `path` (freed on failure too); -1 on allocation failure. */
static int path_list_push(PathList *l, char *path)
{
    if (path == NULL)
        return -1;
    if (l->n == l->cap) {
        size_t new_cap = l->cap ? l->cap * 2 : 16;
        char **grown = realloc(l->v, new_cap * sizeof *grown);
        if (grown == NULL) {
            free(path);
            return -1;
        }
        l->v = grown;
        l->cap = new_cap;
    }
    l->v[l->n++] = path;
    return 0;
}

/* Appends the `*.cep` files directly in `dir` to out, sorted by name. -1 on allocation
 * failure; an unreadable directory, or one without rule files, is reported in diags. */
static int expand_dir(const char *dir, PathList *out, Diags *diags)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        diag_report_file(diags, DIAG_ERROR, dir, "cannot open directory: %s", strerror(errno));
        return 0;
    }
    size_t first = out->n;
    size_t dir_len = strlen(dir);
    bool has_slash = dir_len > 0 && dir[dir_len - 1] == '/';
    struct dirent *ent;
    int rc = 0;
    bool refused = false;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (!has_cep_suffix(ent->d_name))
            continue;
        char *path = buf_format("%s%s%s", dir, has_slash ? "" : "/", ent->d_name);
        struct stat st;
        /* A FIFO would block the load (and a --watch reload, the whole engine) for
         * good, a device could be read without end: a folder's files must be files. */
        if (path && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            diag_report_file(diags, DIAG_ERROR, path, "not a regular file (the *.cep of "
                             "a folder must be files)");
            free(path);
            refused = true;
            continue;
        }
        rc = path_list_push(out, path);
    }
    closedir(d);
    if (rc < 0)
        return -1;
    if (out->n == first && !refused)
        diag_report_file(diags, DIAG_ERROR, dir, "no .cep files in %s", dir);
    else if (out->n > first)   /* none added: out->v may still be NULL */
        qsort(out->v + first, out->n - first, sizeof *out->v, compare_names);
    return 0;
}

int dsl_expand_paths(const char *const *paths, size_t n_paths, char ***files, size_t *n_files,
                     Diags *diags)
{
    PathList out = {NULL, 0, 0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0)
            diag_report_file(diags, DIAG_ERROR, paths[i], "cannot read: %s", strerror(errno));
        else if (S_ISDIR(st.st_mode))
            rc = expand_dir(paths[i], &out, diags);
        else
            rc = path_list_push(&out, strdup(paths[i]));
    }
    if (rc < 0) {
        diags->oom = true;
        dsl_free_paths(out.v, out.n);
        return -1;
    }
    *files = out.v;
    *n_files = out.n;
    return 0;
}

RuleSet *dsl_load(const char *const *paths, size_t n_paths, Diags *diags)
{
    RuleSet *rs = ast_ruleset_new();
    if (rs == NULL)
        return NULL;
    bool oom_before = diags->oom;
    char **files = NULL;
    size_t n_files = 0;
    if (dsl_expand_paths(paths, n_paths, &files, &n_files, diags) == 0) {
        for (size_t i = 0; i < n_files && diags->oom == oom_before; i++)
            dsl_parse_file(rs, files[i], diags);
        dsl_free_paths(files, n_files);
        /* checking what is left of a file cut short would only add false errors */
        if (diags->oom == oom_before)
            dsl_check(rs, diags);
    }
    /* A file left out of the listing or cut short, or a diagnostic (an error, perhaps)
     * that could not be stored: what is left is not the rule set the user wrote. */
    if (diags->oom && !oom_before) {
        ast_ruleset_free(rs);
        return NULL;
    }
    return rs;
}
