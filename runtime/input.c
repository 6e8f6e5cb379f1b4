/* runtime/input.c — placeholder; see its header. */
