/* nfa/explain.c — placeholder; see its header. */
