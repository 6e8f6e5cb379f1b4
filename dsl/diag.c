/* dsl/diag.c — placeholder; see its header. */
