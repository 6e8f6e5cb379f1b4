/* dsl/fmt.c — placeholder; see its header. */
