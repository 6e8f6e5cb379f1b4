/* nfa/event.c — placeholder; see its header. */
