/* dsl/source.c — placeholder; see its header. */
