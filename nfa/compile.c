/* nfa/compile.c — placeholder; see its header. */
