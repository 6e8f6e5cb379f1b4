/* dsl/parse.c — placeholder; see its header. */
