/* dsl/load.h — the front end's single entry point: FILE|DIR arguments to a checked RuleSet.
 * A directory means every `*.cep` file directly in it, in name order. */
#ifndef VIGIL_DSL_LOAD_H
#define VIGIL_DSL_LOAD_H

#include "dsl/ast.h"
#include "dsl/diag.h"

/* Parses and checks all files. Returns the RuleSet (caller frees with
 * ast_ruleset_free) even when errors were reported — check diags->errors —
 * or NULL on allocation failure, also one that left diags->oom set (a file left
 * out of the listing, a diagnostic lost). */
RuleSet *dsl_load(const char *const *paths, size_t n_paths, Diags *diags);

/* The rule files FILE|DIR arguments stand for, in load order, as heap strings (free
 * with dsl_free_paths). Unreadable paths and directories without `*.cep` files are
 * reported in diags and left out. -1 on allocation failure (diags->oom set). */
int dsl_expand_paths(const char *const *paths, size_t n_paths, char ***files, size_t *n_files,
                     Diags *diags);
void dsl_free_paths(char **files, size_t n);

#endif
