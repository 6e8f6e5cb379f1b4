/* cli/cmd_fmt.c — `vigil fmt`: print rule files in canonical form, check that
 * they are, or rewrite them in place.
 *
 * Owns nothing beyond the call. -w writes a temporary file beside the original
 * and renames it over, so a crash never leaves a half-written rule file. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fdio.h"
#include "cli/commands.h"
#include "dsl/diag.h"
#include "dsl/fmt.h"
#include "dsl/load.h"
#include "dsl/parse.h"

typedef struct FmtOptions {
    bool write;     /* -w: rewrite files in place */
    bool check;     /* --check: list files that are not canonical, change nothing */
} FmtOptions;

static void fmt_usage(FILE *out)
{
    fprintf(out, "usage: vigil fmt [-w] [--check] FILE|DIR...\n\n"
                 "Prints rule files in canonical form (a directory: its *.cep files).\n"
                 "  -w       rewrite each file in place instead of printing it\n"
                 "  --check  print the names of files that are not in canonical form,\n"
                 "           exit 1 if there are any\n");
}

/* Replaces `path` with `text` atomically, keeping the file's permissions. */
static int rewrite_target(const char *path, const char *text)
{
    Buf tmp = BUF_INIT;
    buf_printf(&tmp, "%s.fmt-XXXXXX", path);
    if (tmp.failed) {
        fprintf(stderr, "vigil fmt: out of memory\n");
        return -1;
    }
    struct stat st;
    int have_mode = stat(path, &st) == 0;
    int fd = mkstemp(tmp.data);
    if (fd < 0) {
        fprintf(stderr, "vigil fmt: %s: cannot create temporary file: %s\n", path, strerror(errno));
        buf_free(&tmp);
        return -1;
    }
    int rc = fd_write_all(fd, text, strlen(text));
    if (rc == 0 && have_mode)
        rc = fchmod(fd, st.st_mode & 07777);
    if (rc == 0)
        rc = fsync(fd);
    if (close(fd) != 0)
        rc = -1;
    if (rc == 0)
        rc = rename(tmp.data, path);
    if (rc != 0) {
        fprintf(stderr, "vigil fmt: %s: cannot write: %s\n", path, strerror(errno));
        unlink(tmp.data);
    }
    buf_free(&tmp);
    return rc;
}

/* Replaces `path` with `text` atomically, keeping the file's permissions. A symbolic
 * link is followed: its target is rewritten and the link stays a link (renaming over
 * the link itself replaced it with a copy and left the target unformatted). */
static int rewrite_file(const char *link_path, const char *text)
{
    char *resolved = realpath(link_path, NULL);
    int rc = rewrite_target(resolved ? resolved : link_path, text);
    free(resolved);
    return rc;
}

/* Formats one file; returns an exit code. */
static int fmt_one(const char *path, const FmtOptions *opt)
{
    RuleSet *rs = ast_ruleset_new();
    if (rs == NULL) {
        fprintf(stderr, "vigil fmt: out of memory\n");
        return EXIT_IO;
    }
    Diags diags;
    diags_init(&diags);
    int rc = EXIT_OK;
    dsl_parse_file(rs, path, &diags);
    if (diags.errors > 0 || rs->n_files == 0) {
        diags_print(&diags, stderr);
        rc = EXIT_RULES;
        goto done;
    }
    char *text = dsl_fmt_file(rs, 0);
    if (text == NULL) {
        fprintf(stderr, "vigil fmt: out of memory\n");
        rc = EXIT_IO;
        goto done;
    }
    bool same = strcmp(text, rs->files[0].src->text) == 0;
    if (opt->check) {
        if (!same) {
            printf("%s\n", path);
            rc = EXIT_RULES;
        }
    } else if (opt->write) {
        if (!same && rewrite_file(path, text) != 0)
            rc = EXIT_IO;
    } else {
        fputs(text, stdout);
    }
    free(text);
done:
    ast_ruleset_free(rs);
    diags_free(&diags);
    return rc;
}

int cmd_fmt(int argc, char **argv)
{
    FmtOptions opt = {false, false};
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "-w")) {
            opt.write = true;
        } else if (!strcmp(argv[i], "--check")) {
            opt.check = true;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fmt_usage(stdout);
            return EXIT_OK;
        } else {
            fprintf(stderr, "vigil fmt: unknown option '%s'\n", argv[i]);
            fmt_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "vigil fmt: no rule files given\n");
        fmt_usage(stderr);
        return EXIT_USAGE;
    }
    if (opt.write && opt.check) {
        fprintf(stderr, "vigil fmt: -w and --check exclude each other\n");
        return EXIT_USAGE;
    }
    Diags diags;
    diags_init(&diags);
    char **files = NULL;
    size_t n_files = 0;
    int rc = EXIT_OK;
    if (dsl_expand_paths((const char *const *)argv + i, (size_t)(argc - i), &files, &n_files,
                         &diags) < 0) {
        fprintf(stderr, "vigil fmt: out of memory\n");
        rc = EXIT_IO;
    } else if (diags.errors > 0) {
        diags_print(&diags, stderr);
        rc = EXIT_RULES;
    }
    diags_free(&diags);
    for (size_t f = 0; f < n_files; f++) {
        int one = fmt_one(files[f], &opt);
        if (one > rc)
            rc = one;
    }
    dsl_free_paths(files, n_files);
    fflush(stdout);
    return rc;
}
