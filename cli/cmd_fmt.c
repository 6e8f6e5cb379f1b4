/* cli/cmd_fmt.c — `vigil fmt`: print rule files in canonical form, check that
 * they are, or rewrite them in place.
 *
 * Owns nothing beyond the call. -w writes a temporary file beside the original
 * and renames it over, so a crash never leaves a half-written rule file. Running out
 * of memory stops at the file it happened in (a file cut short is neither printed nor
 * written) with `vigil fmt: out of memory` and exit 3, not 1 as for a rule error. */
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

/* How a file's rewrite ended; a failed write has been reported, running out of memory
 * has not. */
typedef enum { WRITE_OK, WRITE_FAILED, WRITE_NO_MEMORY } WriteResult;

/* Replaces `path` with `text` atomically, keeping the file's permissions. */
static WriteResult rewrite_target(const char *path, const char *text)
{
    Buf tmp = BUF_INIT;
    buf_printf(&tmp, "%s.fmt-XXXXXX", path);
    if (tmp.failed) {
        buf_free(&tmp);
        return WRITE_NO_MEMORY;
    }
    struct stat st;
    int have_mode = stat(path, &st) == 0;
    int fd = mkstemp(tmp.data);
    if (fd < 0) {
        fprintf(stderr, "vigil fmt: %s: cannot create temporary file: %s\n", path, strerror(errno));
        buf_free(&tmp);
        return WRITE_FAILED;
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
    return rc == 0 ? WRITE_OK : WRITE_FAILED;
}

/* Replaces `path` with `text` atomically, keeping the file's permissions. A symbolic
 * link is followed: its target is rewritten and the link stays a link (renaming over
 * the link itself replaced it with a copy and left the target unformatted). */
static WriteResult rewrite_file(const char *link_path, const char *text)
{
    char *resolved = realpath(link_path, NULL);
    if (resolved == NULL && errno == ENOMEM)
        return WRITE_NO_MEMORY;   /* the link's own path would replace the link */
    WriteResult r = rewrite_target(resolved ? resolved : link_path, text);
    free(resolved);
    return r;
}

/* fmt_one's result when memory ran out: not an exit code, since the run stops there. */
enum { FMT_NO_MEMORY = -1 };

/* Prints, checks or rewrites one file given its canonical text; an exit code or
 * FMT_NO_MEMORY. */
static int fmt_output(const char *path, const char *text, const char *original,
                      const FmtOptions *opt)
{
    bool same = strcmp(text, original) == 0;
    if (opt->check) {
        if (same)
            return EXIT_OK;
        printf("%s\n", path);
        return EXIT_RULES;
    }
    if (opt->write) {
        WriteResult w = same ? WRITE_OK : rewrite_file(path, text);
        return w == WRITE_NO_MEMORY ? FMT_NO_MEMORY : w == WRITE_FAILED ? EXIT_IO : EXIT_OK;
    }
    fputs(text, stdout);
    return EXIT_OK;
}

/* Formats one file; returns an exit code, or FMT_NO_MEMORY (nothing said about it). A
 * parse that ran out of memory has lost part of the file: its diagnostics are printed,
 * but the file is neither printed nor written. */
static int fmt_one(const char *path, const FmtOptions *opt)
{
    RuleSet *rs = ast_ruleset_new();
    if (rs == NULL)
        return FMT_NO_MEMORY;
    Diags diags;
    diags_init(&diags);
    int rc;
    dsl_parse_file(rs, path, &diags);
    if (diags.oom || diags.errors > 0 || rs->n_files == 0) {
        diags_print(&diags, stderr);
        rc = diags.oom ? FMT_NO_MEMORY : EXIT_RULES;
    } else {
        char *text = dsl_fmt_file(rs, 0);
        rc = text ? fmt_output(path, text, rs->files[0].src->text, opt) : FMT_NO_MEMORY;
        free(text);
    }
    ast_ruleset_free(rs);
    diags_free(&diags);
    return rc;
}

/* Reports running out of memory, after what was printed before. */
static int fmt_out_of_memory(void)
{
    fflush(stdout);
    fprintf(stderr, "vigil fmt: out of memory\n");
    return EXIT_IO;
}

/* The files the arguments stand for, in *files; an exit code (EXIT_RULES: some were
 * left out, reported), or FMT_NO_MEMORY. */
static int expand_arguments(const char *const *args, size_t n_args, char ***files,
                            size_t *n_files)
{
    Diags diags;
    diags_init(&diags);
    int expanded = dsl_expand_paths(args, n_args, files, n_files, &diags);
    diags_print(&diags, stderr);
    int rc = expanded < 0 || diags.oom ? FMT_NO_MEMORY : diags.errors > 0 ? EXIT_RULES : EXIT_OK;
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
    char **files = NULL;
    size_t n_files = 0;
    int rc = expand_arguments((const char *const *)argv + i, (size_t)(argc - i), &files,
                              &n_files);
    for (size_t f = 0; f < n_files && rc != FMT_NO_MEMORY; f++) {
        int one = fmt_one(files[f], &opt);
        if (one > rc || one == FMT_NO_MEMORY)
            rc = one;
    }
    dsl_free_paths(files, n_files);
    if (rc == FMT_NO_MEMORY)
        return fmt_out_of_memory();
    if (fflush(stdout) != 0) {
        fprintf(stderr, "vigil fmt: cannot write the output: %s\n", strerror(errno));
        rc = EXIT_IO;
    }
    return rc;
}
