/* dsl/load.c — placeholder; see its header. */
