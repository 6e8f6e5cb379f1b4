/* cli/cmd_explain.c — `vigil explain`. Placeholder until its issue lands. */
#include <stdio.h>

#include "cli/commands.h"

int cmd_explain(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "vigil explain: not built yet\n");
    return EXIT_USAGE;
}
