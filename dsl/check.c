/* dsl/check.c — placeholder; see its header. */
