/* rules/ruleset.c — placeholder; see its header. */
