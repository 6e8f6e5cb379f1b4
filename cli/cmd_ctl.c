/* cli/cmd_ctl.c — `vigil ctl`. Placeholder until its issue lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_ctl(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "vigil ctl: not built yet\n");
    return EXIT_USAGE;
}
