/* tests/limits/flood.c — a fast Unix-socket client for the backpressure test.
 *
 *   flood SOCKET FILE
 *       connects (retrying while vigil starts), writes FILE's bytes as fast as the
 *       socket takes them, closes, and prints the number of bytes written.
 *
 * Exit status: 0 ok, 1 an error, 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FLOOD_CONNECT_TRIES 400   /* 10 ms apart */
#define FLOOD_CHUNK (64 * 1024)

static int connect_retrying(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    for (int i = 0; i < FLOOD_CONNECT_TRIES; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        if (connect(fd, (const struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        close(fd);
        struct timespec ten_ms = {0, 10 * 1000 * 1000};
        nanosleep(&ten_ms, NULL);
    }
    return -1;
}

static int send_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t put = send(fd, p, len, MSG_NOSIGNAL);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return -1;
        p += put;
        len -= (size_t)put;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: flood SOCKET FILE\n");
        return 2;
    }
    FILE *in = fopen(argv[2], "rb");
    if (!in) {
        fprintf(stderr, "flood: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    int fd = connect_retrying(argv[1]);
    if (fd < 0) {
        fprintf(stderr, "flood: cannot connect to %s\n", argv[1]);
        fclose(in);
        return 1;
    }
    static char chunk[FLOOD_CHUNK];
    unsigned long long sent = 0;
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
        if (send_all(fd, chunk, n) < 0) {
            fprintf(stderr, "flood: send: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        sent += n;
    }
    if (ferror(in))
        rc = 1;
    fclose(in);
    close(fd);
    printf("%llu\n", sent);
    return rc;
}
