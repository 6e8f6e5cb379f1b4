/* dsl/ast.c — placeholder; see its header. */
