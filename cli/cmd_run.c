/* cli/cmd_run.c — `vigil run`. Placeholder until its issue lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "vigil run: not built yet\n");
    return EXIT_USAGE;
}
