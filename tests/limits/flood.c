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

#include "base/fdio.h"
#include "tests/sockutil.h"

#define FLOOD_CONNECT_TRIES 400   /* 10 ms apart */
#define FLOOD_CHUNK (64 * 1024)

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
    int fd = sock_connect_retrying(argv[1], FLOOD_CONNECT_TRIES);
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
        if (fd_send_all(fd, chunk, n) < 0) {
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
