/* cli/cmd_ctl.c — `vigil ctl SOCKET stats|rules|reload`: the client of the control
 * socket that `vigil run --control SOCKET` serves (cli/control.h has the protocol).
 *
 * Owns: argument checking, one connection (command line out, one JSON line back) and
 * the mapping of the reply to an exit status: 0 ok, 1 a reload that failed (its
 * diagnostics go to stderr), 2 usage, 3 the socket cannot be reached or answers
 * nonsense. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fdio.h"
#include "cli/commands.h"
#include "cli/json_tree.h"

#define CTL_DEFAULT_TIMEOUT_S 30
#define CTL_MAX_TIMEOUT_S 3600

static const char *const ctl_commands[] = {"stats", "rules", "reload"};

static void usage(FILE *out)
{
    fputs("usage: vigil ctl [--timeout SECONDS] SOCKET stats|rules|reload\n"
          "\n"
          "Talks to a running `vigil run --control SOCKET` and prints its JSON reply\n"
          "(one line) on stdout.\n"
          "\n"
          "Commands:\n"
          "  stats    the --stats summary (engine and per-rule counters, per-output\n"
          "           health, reloads, peak RSS) plus uptime_s and pid\n"
          "  rules    every rule with its file and line, fingerprint, key fields, live\n"
          "           keys and live partial matches\n"
          "  reload   recompile the rule files now (as SIGHUP); the reply carries the\n"
          "           outcome line and, if any, the diagnostics, which are also printed\n"
          "           on stderr. A failed reload keeps the previous rules running.\n"
          "\n"
          "Options:\n"
          "      --timeout SECONDS  how long to wait for the reply (default 30)\n"
          "  -h, --help             show this help\n"
          "\n"
          "Exit status: 0 ok, 1 the reload failed, 2 usage error, 3 the socket cannot\n"
          "be reached or gave no valid reply.\n",
          out);
}

static bool known_command(const char *cmd)
{
    for (size_t i = 0; i < sizeof ctl_commands / sizeof ctl_commands[0]; i++)
        if (!strcmp(cmd, ctl_commands[i]))
            return true;
    return false;
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("vigil ctl: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nusage: vigil ctl [--timeout SECONDS] SOCKET stats|rules|reload"
          "   (see 'vigil ctl --help')\n", stderr);
    return EXIT_USAGE;
}

static const struct option ctl_long_options[] = {
    {"timeout", required_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Returns -1 to go on, or an exit code (help, usage error). */
static int parse_options(int argc, char **argv, long *timeout_s)
{
    *timeout_s = CTL_DEFAULT_TIMEOUT_S;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", ctl_long_options, NULL)) != -1) {
        char *end;
        switch (c) {
        case 't':
            errno = 0;
            *timeout_s = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || *timeout_s < 1 || *timeout_s > CTL_MAX_TIMEOUT_S)
                return usage_error("invalid value '%s' for --timeout (1..3600 seconds)", optarg);
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return usage_error("%s", argc - optind < 2 ? "want a SOCKET and a command"
                                                   : "too many arguments");
    if (!known_command(argv[optind + 1]))
        return usage_error("unknown command '%s' (stats, rules, reload)", argv[optind + 1]);
    return -1;
}

/* A connected socket with send and receive timeouts, or -1 (reported). */
static int connect_control(const char *path, long timeout_s)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "vigil ctl: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "vigil ctl: cannot create a socket: %s\n", strerror(errno));
        return -1;
    }
    /* before connect: a server that no longer accepts (stopped, wedged) fills its
     * backlog, and connect would then wait for good */
    struct timeval tv = {timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (const struct sockaddr *)&sa, sizeof sa) < 0) {
        int err = errno;
        struct stat st;
        if (err == EAGAIN || err == EINPROGRESS || err == EWOULDBLOCK)
            fprintf(stderr, "vigil ctl: %s did not accept the connection within %ld s "
                    "(is the vigil serving it stopped or stuck?)\n", path, timeout_s);
        else if (stat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
            fprintf(stderr, "vigil ctl: cannot reach %s: not a socket (give the path of "
                    "`vigil run --control PATH`)\n", path);
        else
            fprintf(stderr, "vigil ctl: cannot reach %s: %s (is `vigil run --control %s` "
                    "running?)\n", path, strerror(err), path);
        close(fd);
        return -1;
    }
    return fd;
}

static bool send_command(int fd, const char *cmd)
{
    Buf line = BUF_INIT;
    buf_printf(&line, "%s\n", cmd);
    bool ok = !line.failed && fd_send_all(fd, line.data, line.len) == 0;
    buf_free(&line);
    return ok;
}

/* Reads until the server closes (it does after its one line). False on a read error
 * or timeout, with errno set. */
static bool read_reply(int fd, Buf *reply)
{
    char chunk[8192];
    for (;;) {
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return false;
        if (got == 0)
            return true;
        buf_append(reply, chunk, (size_t)got);
        if (reply->failed) {
            errno = ENOMEM;
            return false;
        }
    }
}

/* The reply's single line, without its newline; NULL if there is no complete one. */
static const char *reply_line(Buf *reply, size_t *len)
{
    if (!reply->len || reply->data[reply->len - 1] != '\n')
        return NULL;
    *len = reply->len - 1;
    if (memchr(reply->data, '\n', *len))
        return NULL;
    return reply->data;
}

static bool is_false(const JsonNode *n)
{
    return n && n->type == JT_BOOL && !n->boolean;
}

/* Prints the reply and decides the exit status from it. */
static int report(const char *socket_path, const char *line, size_t len)
{
    JsonTree tree;
    const char *why;
    size_t at;
    if (!json_tree_parse(&tree, line, len, &why, &at) || tree.root->type != JT_OBJ) {
        json_tree_free(&tree);   /* the arena may hold a partial tree */
        fprintf(stderr, "vigil ctl: %s sent a reply that is not a JSON object\n", socket_path);
        return EXIT_IO;
    }
    fwrite(line, 1, len, stdout);
    putchar('\n');
    int code = EXIT_OK;
    const JsonNode *diags = json_tree_get(tree.root, "diagnostics");
    if (diags && diags->type == JT_STR)
        fwrite(diags->str, 1, diags->len, stderr);
    if (is_false(json_tree_get(tree.root, "ok"))) {
        const JsonNode *msg = json_tree_get(tree.root, "message");
        if (!msg)
            msg = json_tree_get(tree.root, "error");
        if (msg && msg->type == JT_STR)
            fprintf(stderr, "vigil ctl: %s\n", msg->str);
        code = EXIT_RULES;
    }
    json_tree_free(&tree);
    return code;
}

int cmd_ctl(int argc, char **argv)
{
    long timeout_s;
    int code = parse_options(argc, argv, &timeout_s);
    if (code >= 0)
        return code;
    const char *path = argv[optind], *cmd = argv[optind + 1];
    int fd = connect_control(path, timeout_s);
    if (fd < 0)
        return EXIT_IO;
    Buf reply = BUF_INIT;
    code = EXIT_IO;
    if (!send_command(fd, cmd)) {
        fprintf(stderr, "vigil ctl: cannot send to %s: %s\n", path, strerror(errno));
    } else if (!read_reply(fd, &reply)) {
        fprintf(stderr, "vigil ctl: no reply from %s: %s\n", path,
                errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : strerror(errno));
    } else {
        size_t len;
        const char *line = reply_line(&reply, &len);
        if (line)
            code = report(path, line, len);
        else
            fprintf(stderr, "vigil ctl: %s closed the connection without a complete reply\n",
                    path);
    }
    close(fd);
    buf_free(&reply);
    fflush(stdout);
    return code;
}
