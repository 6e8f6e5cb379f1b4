/* cli/cmd_explain.c — `vigil explain [--dot] FILE|DIR [RULE]`: print the compiled
 * NFA of each rule (or of RULE) as text or Graphviz dot; the text ends each rule with
 * its relevance (rules/relevance.h), what decides which events it costs anything.
 *
 * Owns nothing beyond the call: the compiled rule set is freed before return. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "dsl/diag.h"
#include "nfa/nfa.h"
#include "rules/ruleset.h"

static void explain_usage(FILE *out)
{
    fprintf(out, "usage: vigil explain [--dot] FILE|DIR [RULE]\n\n"
                 "Shows the automaton each rule compiles to: its states and their take,\n"
                 "ignore and proceed edges with conditions, then its relevance: the\n"
                 "condition an event its filter passes must meet to reach it (other\n"
                 "events skip it like filtered ones), or `none` and why (the step or\n"
                 "quantifier that makes it strict). With --dot, prints Graphviz\n"
                 "(render with `dot -Tsvg`). With RULE, only that rule.\n");
}

typedef struct ExplainArgs {
    bool dot, help;
    const char *path;
    const char *rule;
} ExplainArgs;

static bool parse_args(int argc, char **argv, ExplainArgs *a)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            a->help = true;
            return true;
        }
        if (!strcmp(argv[i], "--dot")) {
            a->dot = true;
            continue;
        }
        fprintf(stderr, "vigil explain: unknown option '%s'\n", argv[i]);
        return false;
    }
    if (i >= argc) {
        fprintf(stderr, "vigil explain: no rule file given\n");
        return false;
    }
    a->path = argv[i++];
    if (i < argc)
        a->rule = argv[i++];
    if (i < argc) {
        fprintf(stderr, "vigil explain: unexpected argument '%s'\n", argv[i]);
        return false;
    }
    return true;
}

/* The rule's last line: the events it skips, or why it skips none. */
static void relevance_line(const CompiledRule *cr, FILE *out)
{
    if (cr->relevance_text && cr->relevance_why)
        fprintf(out,
                "  relevance: %s; other events still reach the rule as blanks, their "
                "values unread, since %s\n",
                cr->relevance_text, cr->relevance_why);
    else if (cr->relevance_text)
        fprintf(out, "  relevance: %s\n", cr->relevance_text);
    else
        fprintf(out, "  relevance: none, %s\n", cr->relevance_why ? cr->relevance_why : "?");
}

/* 0, or -1 when out of memory (nothing of the rule printed). */
static int explain_rule(const CompiledRule *cr, FILE *out, bool dot)
{
    if (nfa_explain(cr->nfa, out, dot) < 0)
        return -1;
    if (!dot)
        relevance_line(cr, out);
    return 0;
}

static int explain_out_of_memory(void)
{
    fflush(stdout);   /* what was explained before goes out ahead of the message */
    fprintf(stderr, "vigil explain: out of memory\n");
    return EXIT_IO;
}

int cmd_explain(int argc, char **argv)
{
    ExplainArgs a = {0};
    if (!parse_args(argc, argv, &a)) {
        explain_usage(stderr);
        return EXIT_USAGE;
    }
    if (a.help) {
        explain_usage(stdout);
        return EXIT_OK;
    }
    Diags diags;
    diags_init(&diags);
    const char *paths[1] = {a.path};
    CompiledRuleSet *rs = ruleset_load(paths, 1, &diags);
    /* A load that ran out of memory listing the files can still return a rule set
     * (an empty one): explaining it would print nothing and exit 0. */
    bool lost = rs && diags.oom;
    if (!lost && (!rs || diags.errors))   /* warnings are `vigil check`'s business */
        diags_print(&diags, stderr);
    bool oom = diags.oom;
    diags_free(&diags);
    if (!rs)
        return oom ? explain_out_of_memory() : EXIT_RULES;
    if (lost) {
        ruleset_free(rs);
        return explain_out_of_memory();
    }
    int rc = EXIT_OK;
    if (a.rule) {
        int ri = ruleset_find(rs, a.rule);
        if (ri < 0) {
            fprintf(stderr, "vigil explain: no rule '%s' in %s\n", a.rule, a.path);
            rc = EXIT_USAGE;
        } else if (explain_rule(&rs->rules[ri], stdout, a.dot) < 0) {
            rc = explain_out_of_memory();
        }
    } else {
        for (size_t i = 0; i < rs->n_rules && rc == EXIT_OK; i++) {
            if (i > 0 && !a.dot)
                fputc('\n', stdout);
            if (explain_rule(&rs->rules[i], stdout, a.dot) < 0)
                rc = explain_out_of_memory();
        }
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "vigil explain: cannot write the output: %s\n", strerror(errno));
        rc = EXIT_IO;
    }
    ruleset_free(rs);
    return rc;
}
