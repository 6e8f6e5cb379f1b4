/* dsl/fmt.h — the canonical text of rule files, and rule fingerprints.
 *
 * fmt is idempotent and parse(fmt(x)) equals parse(x) structurally; comments are
 * kept in place. The fingerprint of a rule is a hash of the canonical text of its
 * matching part (filter, key, steps, within, skip): hot reload and checkpoints use
 * it to tell whether a rule still means the same thing. */
#ifndef VIGIL_DSL_FMT_H
#define VIGIL_DSL_FMT_H

#include <stdint.h>

#include "dsl/ast.h"

/* Canonical text of one parsed file (rs->files[i]). Heap string; NULL on OOM. */
char *dsl_fmt_file(const RuleSet *rs, size_t file_index);
/* Canonical text of an expression. Heap string; NULL on OOM. */
char *dsl_fmt_expr(const Expr *e);
/* Canonical text of a rule's matching part. Heap string; NULL on OOM. */
char *dsl_rule_matching_text(const Rule *rule);
/* Hash of dsl_rule_matching_text; 0 only on OOM. */
uint64_t dsl_rule_fingerprint(const Rule *rule);

#endif
