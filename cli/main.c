/* cli/main.c — the `vigil` binary: dispatches to a subcommand (cli/commands.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"check", cmd_check, "compile rule files and report errors"},
    {"fmt", cmd_fmt, "print rule files in canonical form (-w rewrites them)"},
    {"run", cmd_run, "stream JSON events through the rules and write alerts"},
    {"test", cmd_test, "run rule test cases (DIR/cases/*.events.jsonl)"},
    {"explain", cmd_explain, "show the compiled NFA of each rule (--dot for Graphviz)"},
    {"ctl", cmd_ctl, "talk to a running `vigil run --control SOCKET`"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vigil COMMAND [ARGS...]\n\n"
                 "vigil runs complex event processing rules over JSON event streams.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'vigil COMMAND --help' describes a command; 'vigil --version' prints the version.\n");
}

/* A launcher that closes stdin, stdout or stderr (`vigil run >&-`) would let the
 * next file vigil opens take that number: alerts written to "stdout" then landed in
 * the --errors file, and diagnostics in an alert file. Each closed one is held by
 * /dev/null opened read-only, so writes to it fail (reported and counted as any
 * failing output) and reads see end of input. Returns -1 if that is not possible. */
static int hold_closed_std_fds(void)
{
    for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int held = open("/dev/null", O_RDONLY);   /* the lowest free number: fd */
        if (held != fd) {
            if (held >= 0)
                close(held);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (hold_closed_std_fds() < 0)
        return EXIT_IO;
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("vigil %s\n", PACKAGE_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vigil: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
