/* cli/cmd_check.c — `vigil check`. Placeholder until its issue lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "vigil check: not built yet\n");
    return EXIT_USAGE;
}
