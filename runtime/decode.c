/* runtime/decode.c — placeholder; see its header. */
