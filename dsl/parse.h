/* dsl/parse.h — text to AST: drives the reentrant scanner (lexer.l) and the pure
 * parser (parser.y) over one file, appending its declarations to a RuleSet.
 *
 * Owns nothing after return: the source joins rs->sources, nodes live in rs->arena.
 * Syntax errors are reported to `diags` (several per file: the parser recovers at
 * `;` and `}`) and the file's well-formed parts are still added. */
#ifndef VIGIL_DSL_PARSE_H
#define VIGIL_DSL_PARSE_H

#include "dsl/ast.h"
#include "dsl/diag.h"

/* Parses `text` under the name `path`. Returns the number of errors it reported. */
int dsl_parse_text(RuleSet *rs, const char *path, const char *text, size_t len, Diags *diags);
/* Reads and parses a file; an unreadable file is reported as an error. */
int dsl_parse_file(RuleSet *rs, const char *path, Diags *diags);
/* Parses a lone expression (for tests and tools). NULL on error (reported). */
Expr *dsl_parse_expr(RuleSet *rs, const char *text, Diags *diags);

#endif
