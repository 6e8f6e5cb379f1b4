/* cli/commands.h — the subcommands of the `vigil` binary. Each returns the exit code:
 * 0 ok, 1 rule errors (or failing tests), 2 usage, 3 I/O or runtime failure. */
#ifndef VIGIL_CLI_COMMANDS_H
#define VIGIL_CLI_COMMANDS_H

enum { EXIT_OK = 0, EXIT_RULES = 1, EXIT_USAGE = 2, EXIT_IO = 3 };

int cmd_check(int argc, char **argv);
int cmd_fmt(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_test(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_ctl(int argc, char **argv);

#endif
