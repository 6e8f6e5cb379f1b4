/* tests/reload/feed.c — streams a deterministic event-time workload into a `vigil run
 * -i unix:PATH` socket for the hot-reload tests.
 *
 * feed SOCKET N PARTS: connects (retrying while vigil starts), then sends N events in
 * PARTS parts; before each part it reads one line from stdin, so a test can interleave
 * reloads with the stream. At end of stdin the remaining parts go out at once. Prints
 * the number of events sent. Exit 1 on any error.
 *
 * Events: {"ts":T,"type":"tx"|"login","user":"uK","amount":A,"id":I}, one second
 * apart, 1,000 users, so that rules keyed by user keep partial matches across parts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/fdio.h"
#include "tests/sockutil.h"

#define FEED_CONNECT_TRIES 400   /* 10 ms apart: vigil has 4 s to start listening */
#define FEED_BATCH 65536

static int format_event(char *out, size_t cap, unsigned long i)
{
    unsigned long user = i * 7919 % 1000;
    unsigned long amount = (i * 37 + i / 1000 * 101) % 1000;   /* varies per user too */
    const char *type = i % 13 == 5 ? "login" : "tx";
    return snprintf(out, cap, "{\"ts\":%lu,\"type\":\"%s\",\"user\":\"u%lu\",\"amount\":%lu,"
                    "\"id\":%lu}\n", 1767225600UL + i, type, user, amount, i);
}

/* Sends events [from, to) in batches. */
static int send_range(int fd, unsigned long from, unsigned long to)
{
    static const size_t max_event = 128;
    char batch[FEED_BATCH];
    size_t used = 0;
    for (unsigned long i = from; i < to; i++) {
        if (used + max_event > sizeof batch) {
            if (fd_send_all(fd, batch, used) < 0)
                return -1;
            used = 0;
        }
        used += (size_t)format_event(batch + used, max_event, i);
    }
    return fd_send_all(fd, batch, used);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: feed SOCKET N PARTS\n");
        return 1;
    }
    unsigned long n = strtoul(argv[2], NULL, 10), parts = strtoul(argv[3], NULL, 10);
    if (parts == 0)
        parts = 1;
    int fd = sock_connect_retrying(argv[1], FEED_CONNECT_TRIES);
    if (fd < 0) {
        fprintf(stderr, "feed: cannot connect to %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    char go[64];
    int gated = 1;
    for (unsigned long p = 0; p < parts; p++) {
        if (gated && !fgets(go, sizeof go, stdin))
            gated = 0;
        if (send_range(fd, n * p / parts, n * (p + 1) / parts) < 0) {
            fprintf(stderr, "feed: send failed: %s\n", strerror(errno));
            close(fd);
            return 1;
        }
    }
    close(fd);
    printf("%lu\n", n);
    return 0;
}
