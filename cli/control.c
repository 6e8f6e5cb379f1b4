/* cli/control.c — the control socket of `vigil run` (see control.h). */
#define _GNU_SOURCE   /* accept4 */
#include "cli/control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/fdio.h"

struct Control {
    int fd;
    char *path;            /* heap, owned */
};

static char *error_text(const char *what, const char *path)
{
    Buf b = BUF_INIT;
    buf_printf(&b, "%s %s: %s", what, path, strerror(errno));
    return b.failed ? NULL : buf_steal(&b);
}

static bool fill_address(struct sockaddr_un *sa, const char *path)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa->sun_path)
        return false;
    strcpy(sa->sun_path, path);
    return true;
}

/* A socket file nobody listens on is a leftover of a dead process: remove it. */
static int clear_stale(const char *path, const struct sockaddr_un *sa, char **err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        errno = EEXIST;
        *err = error_text("not a socket, will not replace", path);
        return -1;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
        *err = error_text("cannot probe", path);
        return -1;
    }
    int live = connect(probe, (const struct sockaddr *)sa, sizeof *sa) == 0;
    close(probe);
    if (live) {
        errno = EADDRINUSE;
        *err = error_text("another process serves", path);
        return -1;
    }
    unlink(path);
    return 0;
}

Control *control_open(const char *path, char **err)
{
    *err = NULL;
    struct sockaddr_un sa;
    if (!fill_address(&sa, path)) {
        errno = ENAMETOOLONG;
        *err = error_text("socket path too long:", path);
        return NULL;
    }
    if (clear_stale(path, &sa, err) < 0)
        return NULL;
    Control *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        free(c);
        return NULL;
    }
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        *err = error_text("cannot create a socket for", path);
        free(c->path);
        free(c);
        return NULL;
    }
    mode_t old = umask(0177);   /* the socket is born 0600 */
    int bound = bind(c->fd, (const struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (bound < 0 || listen(c->fd, 16) < 0) {
        *err = error_text("cannot listen on", path);
        close(c->fd);
        if (bound == 0)
            unlink(path);
        free(c->path);
        free(c);
        return NULL;
    }
    return c;
}

/* Reads the command line (up to the first newline) within the client timeout. */
static bool read_command(int fd, char *cmd, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t got = read(fd, cmd + n, cap - 1 - n);
        if (got <= 0)
            break;
        n += (size_t)got;
        if (memchr(cmd, '\n', n))
            break;
    }
    cmd[n] = '\0';
    char *nl = strpbrk(cmd, "\r\n");
    if (nl)
        *nl = '\0';
    return n > 0;
}

static void serve_client(int fd, const ControlHandler *h)
{
    struct timeval tv = {0, CONTROL_CLIENT_TIMEOUT_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char cmd[CONTROL_MAX_COMMAND];
    if (!read_command(fd, cmd, sizeof cmd))
        return;
    Buf reply = BUF_INIT;
    h->command(h->user, cmd, &reply);
    if (reply.failed) {
        buf_clear(&reply);
        buf_puts(&reply, "{\"ok\":false,\"error\":\"out of memory\"}");
    }
    buf_putc(&reply, '\n');
    if (!reply.failed)
        (void)fd_send_all(fd, reply.data, reply.len);   /* a client gone away needs nothing */
    buf_free(&reply);
}

void control_poll(Control *c, const ControlHandler *h)
{
    for (;;) {
        /* accepted sockets are blocking (Linux does not inherit O_NONBLOCK) */
        /* close-on-exec from the start: an exec output's worker thread may spawn a
         * program at any moment, and it must not inherit a client's socket */
        int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            return;   /* EAGAIN: nobody waiting; anything else: try again next turn */
        serve_client(fd, h);
        close(fd);
    }
}

void control_close(Control *c)
{
    if (!c)
        return;
    close(c->fd);
    unlink(c->path);
    free(c->path);
    free(c);
}
