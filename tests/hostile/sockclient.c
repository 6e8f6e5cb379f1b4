/* tests/hostile/sockclient.c — Unix-socket clients for the hostile-input tests.
 *
 *   sockclient flood PATH BYTES
 *       connects, writes BYTES bytes of 'a' with no newline, prints "sent N" on
 *       stdout, then holds the connection open until its stdin reaches end of file
 *       (so the test decides when the flood ends), and closes it.
 *   sockclient send PATH FILE
 *       connects and writes FILE's bytes, then closes.
 *   sockclient many PATH CLIENTS EVENTS
 *       forks CLIENTS processes; each connects, waits until all are connected, then
 *       writes EVENTS lines {"user":"cI","n":J,"pad":"..."} (J = 0..EVENTS-1) and
 *       closes. Exits 0 only if every client delivered all of its bytes.
 *   sockclient fill PATH
 *       connects without waiting until the listener's backlog is full (a listener
 *       that does not accept any more), prints "full N" on stdout, then holds the
 *       connections until its stdin reaches end of file.
 *
 * Connecting retries for a few seconds: a listener that is briefly out of
 * descriptors or has a full backlog is still a listener. Exit status: 0 ok, 1 a
 * client failed, 2 usage. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CONNECT_TRIES 400          /* x 25 ms */
#define CHUNK (64 * 1024)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int connect_unix(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "sockclient: socket path too long: %s\n", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    for (int i = 0; i < CONNECT_TRIES; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            perror("sockclient: socket");
            return -1;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        int e = errno;
        close(fd);
        if (e != ECONNREFUSED && e != ENOENT && e != EAGAIN && e != EINTR) {
            fprintf(stderr, "sockclient: connect %s: %s\n", path, strerror(e));
            return -1;
        }
        sleep_ms(25);
    }
    fprintf(stderr, "sockclient: connect %s: gave up\n", path);
    return -1;
}

/* Writes all of buf; -1 on any error (the peer closing counts as one). */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int parse_size(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int cmd_flood(const char *path, unsigned long long bytes)
{
    int fd = connect_unix(path);
    if (fd < 0)
        return 1;
    char *chunk = malloc(CHUNK);
    if (chunk == NULL) {
        fprintf(stderr, "sockclient: out of memory\n");
        close(fd);
        return 1;
    }
    memset(chunk, 'a', CHUNK);
    unsigned long long sent = 0;
    while (sent < bytes) {
        size_t n = bytes - sent < CHUNK ? (size_t)(bytes - sent) : CHUNK;
        if (write_all(fd, chunk, n) < 0) {
            fprintf(stderr, "sockclient: flood cut after %llu bytes: %s\n", sent,
                    strerror(errno));
            break;
        }
        sent += n;
    }
    free(chunk);
    printf("sent %llu\n", sent);
    fflush(stdout);
    char c;
    while (read(STDIN_FILENO, &c, 1) > 0)
        ;
    close(fd);
    return 0;
}

#define FILL_MAX 4096

static int cmd_fill(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "sockclient: socket path too long: %s\n", path);
        return 1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    static int fds[FILL_MAX];
    int n = 0;
    for (; n < FILL_MAX; n++) {
        fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fds[n] < 0) {
            perror("sockclient: socket");
            return 1;
        }
        if (connect(fds[n], (struct sockaddr *)&sa, sizeof sa) < 0) {
            int e = errno;
            close(fds[n]);
            if (e != EAGAIN) {
                fprintf(stderr, "sockclient: connect %s: %s\n", path, strerror(e));
                return 1;
            }
            break;
        }
    }
    if (n == FILL_MAX) {
        fprintf(stderr, "sockclient: %s accepted %d connections\n", path, n);
        return 1;
    }
    printf("full %d\n", n);
    fflush(stdout);
    char c;
    while (read(STDIN_FILENO, &c, 1) > 0)
        ;
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return 0;
}

static int cmd_send(const char *path, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (f == NULL) {
        perror(file);
        return 1;
    }
    int fd = connect_unix(path);
    if (fd < 0) {
        fclose(f);
        return 1;
    }
    char buf[CHUNK];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (write_all(fd, buf, n) < 0) {
            perror("sockclient: send");
            rc = 1;
            break;
        }
    }
    fclose(f);
    close(fd);
    return rc;
}

/* One client of `many`: connect, report on ready_fd, wait for the start signal
 * (EOF on start_fd), send. */
static int run_client(const char *path, unsigned long long client, unsigned long long events,
                      int ready_fd, int start_fd)
{
    int fd = connect_unix(path);
    char c = fd < 0 ? 'x' : 'r';
    if (write(ready_fd, &c, 1) != 1)
        perror("sockclient: ready");
    close(ready_fd);
    while (read(start_fd, &c, 1) > 0)
        ;
    close(start_fd);
    if (fd < 0)
        return 1;
    char *buf = malloc(CHUNK);
    if (buf == NULL) {
        close(fd);
        return 1;
    }
    size_t len = 0;
    int rc = 0;
    for (unsigned long long j = 0; j < events && rc == 0; j++) {
        len += (size_t)snprintf(buf + len, CHUNK - len,
                                "{\"user\":\"c%llu\",\"n\":%llu,\"pad\":\"%016llx\"}\n",
                                client, j, client * 1000003ULL + j);
        if (len > CHUNK - 256 || j + 1 == events) {
            rc = write_all(fd, buf, len) < 0 ? 1 : 0;
            len = 0;
        }
    }
    if (rc != 0)
        fprintf(stderr, "sockclient: client %llu: %s\n", client, strerror(errno));
    free(buf);
    close(fd);
    return rc;
}

static int cmd_many(const char *path, unsigned long long clients, unsigned long long events)
{
    int start[2], ready[2];
    if (pipe(start) < 0 || pipe(ready) < 0) {
        perror("sockclient: pipe");
        return 1;
    }
    unsigned long long forked = 0;
    int rc = 0;
    for (; forked < clients; forked++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("sockclient: fork");
            rc = 1;
            break;
        }
        if (pid == 0) {
            close(start[1]);
            close(ready[0]);
            _exit(run_client(path, forked, events, ready[1], start[0]));
        }
    }
    close(start[0]);
    close(ready[1]);
    /* Every client reports once it is connected (or gave up); then closing the start
     * pipe releases them all at once, so the listener serves them concurrently. */
    unsigned long long reported = 0;
    char c;
    ssize_t n;
    while (reported < forked && (n = read(ready[0], &c, 1)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        reported++;
        if (c != 'r')
            rc = 1;
    }
    close(ready[0]);
    close(start[1]);
    for (unsigned long long i = 0; i < forked; i++) {
        int status;
        pid_t pid;
        while ((pid = wait(&status)) < 0 && errno == EINTR)
            ;
        if (pid < 0) {
            perror("sockclient: wait");
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = 1;
    }
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: sockclient flood PATH BYTES | send PATH FILE |"
                    " many PATH CLIENTS EVENTS | fill PATH\n");
    return 2;
}

int main(int argc, char **argv)
{
    unsigned long long a, b;
    if (argc == 4 && strcmp(argv[1], "flood") == 0 && parse_size(argv[3], &a) == 0)
        return cmd_flood(argv[2], a);
    if (argc == 4 && strcmp(argv[1], "send") == 0)
        return cmd_send(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "fill") == 0)
        return cmd_fill(argv[2]);
    if (argc == 5 && strcmp(argv[1], "many") == 0 && parse_size(argv[3], &a) == 0 &&
        parse_size(argv[4], &b) == 0 && a > 0)
        return cmd_many(argv[2], a, b);
    return usage();
}
