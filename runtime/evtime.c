/* runtime/evtime.c — placeholder; see its header. */
