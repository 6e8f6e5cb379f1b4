/* nfa/expr.c — placeholder; see its header. */
