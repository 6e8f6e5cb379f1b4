/* nfa/match.c — placeholder; see its header. */
