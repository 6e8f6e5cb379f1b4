/* cli/cmd_fmt.c — `vigil fmt`. Placeholder until its issue lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_fmt(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "vigil fmt: not built yet\n");
    return EXIT_USAGE;
}
