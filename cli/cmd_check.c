/* cli/cmd_check.c — `vigil check`: load rule files, report every diagnostic,
 * print a one-line summary when the rules are good.
 *
 * Owns nothing beyond the call: the RuleSet and Diags are freed before return. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "dsl/diag.h"
#include "dsl/load.h"

static void check_usage(FILE *out)
{
    fprintf(out, "usage: vigil check [--help] FILE|DIR...\n\n"
                 "Compiles rule files (a DIR means every *.cep directly in it) and reports\n"
                 "errors and warnings on stderr. Exits 0 if there are no errors, 1 otherwise\n"
                 "(3 when memory runs out).\n");
}

static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

/* Splits options from paths; returns the index of the first path or -1 on a
 * usage error, and 0 with *help set for --help. */
static int parse_options(int argc, char **argv, bool *help)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            *help = true;
            return 0;
        }
        fprintf(stderr, "vigil check: unknown option '%s'\n", argv[i]);
        return -1;
    }
    if (i >= argc) {
        fprintf(stderr, "vigil check: no rule files given\n");
        return -1;
    }
    return i;
}

int cmd_check(int argc, char **argv)
{
    bool help = false;
    int first = parse_options(argc, argv, &help);
    if (help) {
        check_usage(stdout);
        return EXIT_OK;
    }
    if (first < 0) {
        check_usage(stderr);
        return EXIT_USAGE;
    }
    Diags diags;
    diags_init(&diags);
    RuleSet *rs = dsl_load((const char *const *)argv + first, (size_t)(argc - first), &diags);
    if (rs == NULL) {
        diags_print(&diags, stderr);   /* which file ran out, when it could be noted */
        fprintf(stderr, "vigil check: out of memory\n");
        diags_free(&diags);
        return EXIT_IO;
    }
    diags_print(&diags, stderr);
    int rc = diags.errors > 0 || diags.oom ? EXIT_RULES : EXIT_OK;
    if (rc == EXIT_OK) {
        printf("%zu file%s, %zu rule%s, 0 errors", rs->n_files, plural(rs->n_files),
               rs->n_rules, plural(rs->n_rules));
        if (diags.warnings > 0)
            printf(", %zu warning%s", diags.warnings, plural(diags.warnings));
        printf("\n");
    }
    ast_ruleset_free(rs);
    diags_free(&diags);
    return rc;
}
