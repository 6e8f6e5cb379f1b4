/* dsl/load.h — the front end's single entry point: FILE|DIR arguments to a checked RuleSet.
 * A directory means every `*.cep` file directly in it, in name order. */
#ifndef VIGIL_DSL_LOAD_H
#define VIGIL_DSL_LOAD_H

#include "dsl/ast.h"
#include "dsl/diag.h"

/* Parses and checks all files. Returns the RuleSet (caller frees with
 * ast_ruleset_free) even when errors were reported — check diags->errors —
 * or NULL on allocation failure. */
RuleSet *dsl_load(const char *const *paths, size_t n_paths, Diags *diags);

#endif
