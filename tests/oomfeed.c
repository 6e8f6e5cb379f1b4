/* tests/oomfeed.c — see oomfeed.h. */
#define _GNU_SOURCE   /* memmem */
#include "tests/oomfeed.h"

#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fdio.h"
#include "tests/sockutil.h"

/* ---- in the feeder: no Check (its failures would be the child's), no exit() ---- */

/* Whether the command has returned (the child closed `done`), waiting up to ms. */
static bool command_done(int done, int ms)
{
    struct pollfd p = {done, POLLIN, 0};
    return poll(&p, 1, ms) > 0;   /* readable only at its end: nothing is written */
}

/* Until the pipe behind `w` is empty (the command read it all): false if the command
 * returned first. */
static bool wait_read(int w, int done)
{
    for (;;) {
        int left = 0;
        if (ioctl(w, FIONREAD, &left) < 0)
            return false;
        if (left == 0)
            return true;
        if (command_done(done, 2))
            return false;
    }
}

/* The feeder's exit status when it could not do its part (0: it could, or the command
 * returned first). */
enum { FEED_NO_RULES = 1, FEED_NO_STDERR = 2 };

static void put_rules(const OomFeed *f)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s.new", f->rules_path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || fd_write_all(fd, f->new_rules, strlen(f->new_rules)) < 0 || close(fd) < 0 ||
        rename(tmp, f->rules_path) < 0)
        _exit(FEED_NO_RULES);
}

/* Asks for a reload and waits for the reply, or the connection's end. */
static void ask_reload(const OomFeed *f, int done)
{
    int sock = -1;
    while (sock < 0 && !command_done(done, 0))
        sock = sock_connect_retrying(f->control, 1);
    if (sock < 0)
        return;
    static const char cmd[] = "reload\n";
    if (fd_send_all(sock, cmd, sizeof cmd - 1) == 0) {
        char reply[4096];
        while (!command_done(done, 0)) {
            struct pollfd p = {sock, POLLIN, 0};
            if (poll(&p, 1, 5) > 0 && read(sock, reply, sizeof reply) <= 0)
                break;
        }
    }
    close(sock);
}

/* Whether the command's stderr holds "vigil run: reload" (a reload done or failed),
 * waiting until it does or the command returns. Its stderr is a file (tests/oomcmd.c
 * captures it), opened anew through /proc so that this reads it from its start. */
static bool wait_reload_logged(int done)
{
    static const char needle[] = "vigil run: reload";
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd/2", (long)getppid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        _exit(FEED_NO_STDERR);
    /* what was read, its last bytes kept so that a needle cut by a read is found */
    char seen[4096];
    size_t kept = 0;
    bool logged = false;
    while (!logged) {
        ssize_t got = read(fd, seen + kept, sizeof seen - kept);
        if (got < 0)
            _exit(FEED_NO_STDERR);
        if (got == 0 && command_done(done, 2))
            break;
        kept += (size_t)got;
        logged = memmem(seen, kept, needle, sizeof needle - 1) != NULL;
        if (kept >= sizeof needle - 1) {
            memmove(seen, seen + kept - (sizeof needle - 2), sizeof needle - 2);
            kept = sizeof needle - 2;
        }
    }
    close(fd);
    return logged;
}

/* SIGTERM, as an operator would stop it, once the command has read all it was given;
 * the input stays open until the command returns: a stop, not its end. */
_Noreturn static void stop_command(int w, int done)
{
    if (wait_read(w, done)) {
        kill(getppid(), SIGTERM);
        command_done(done, -1);
    }
    _exit(0);
}

/* Has the command reload the rules put in place, and waits until it has done so or
 * failed to (or returned). */
static void reload(const OomFeed *f, int done)
{
    put_rules(f);
    switch (f->action) {
    case OOMFEED_RELOAD:
        ask_reload(f, done);
        break;
    case OOMFEED_HUP:
        kill(getppid(), SIGHUP);
        wait_reload_logged(done);
        break;
    case OOMFEED_WATCH:
        wait_reload_logged(done);
        break;
    case OOMFEED_STOP:
        break;
    }
}

_Noreturn static void feed_input(const OomFeed *f, int w, int done)
{
    signal(SIGPIPE, SIG_IGN);   /* a command that returned early: EPIPE, nothing more */
    if (fd_write_all(w, f->first, strlen(f->first)) < 0)
        _exit(0);
    if (f->action == OOMFEED_STOP)
        stop_command(w, done);
    if (!wait_read(w, done))
        _exit(0);
    reload(f, done);
    if (fd_write_all(w, f->second, strlen(f->second)) < 0)
        _exit(0);
    if (f->stop_at_end)
        stop_command(w, done);
    _exit(0);
}

/* ---- in the child ---- */

typedef struct Feeder {
    const OomFeed *feed;
    pid_t pid;
    int done;   /* closed when the command returns */
} Feeder;

/* Standard input becomes a pipe the feeder writes to. */
static void start_feeder(void *user)
{
    Feeder *fe = user;
    const OomFeed *f = fe->feed;
    int in[2], done[2];
    oomcmd_big_pipe(in, strlen(f->first) + (f->second ? strlen(f->second) : 0));
    ck_assert_int_eq(pipe(done), 0);
    fe->pid = fork();
    ck_assert_int_ge(fe->pid, 0);
    if (fe->pid == 0) {
        close(in[0]);
        close(done[1]);
        feed_input(f, in[1], done[0]);
    }
    close(in[1]);
    close(done[0]);
    ck_assert_int_eq(dup2(in[0], STDIN_FILENO), STDIN_FILENO);
    close(in[0]);
    fe->done = done[1];
}

static void end_feeder(void *user)
{
    Feeder *fe = user;
    close(fe->done);
    int status;
    ck_assert_int_eq(waitpid(fe->pid, &status, 0), fe->pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the feeder %s",
                  !WIFEXITED(status) ? "was killed"
                  : WEXITSTATUS(status) == FEED_NO_RULES ? "could not put the new rules in place"
                  : "could not read the command's stderr");
}

OomCmdRun oomfeed_run(OomCommand cmd, char *const *argv, size_t fail, const OomFeed *feed)
{
    Feeder fe = {feed, -1, -1};
    OomCmdHooks hooks = {start_feeder, end_feeder, &fe};
    return oomcmd_run_hooked(cmd, argv, fail, &hooks);
}
