/* nfa/value.c — placeholder; see its header. */
