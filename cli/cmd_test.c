/* cli/cmd_test.c — `vigil test`. Placeholder until its issue lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_test(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "vigil test: not built yet\n");
    return EXIT_USAGE;
}
