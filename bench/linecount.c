/* bench/linecount.c — the I/O floor: counts the lines of stdin or a file.
 *
 * Owns only its read buffer. It reads in 1 MiB blocks and counts '\n' with memchr,
 * which is about the least work any line-oriented consumer of the input can do. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { BLOCK = 1 << 20 };

static long long count_lines(int fd, char *buf)
{
    long long lines = 0;
    for (;;) {
        ssize_t n = read(fd, buf, BLOCK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return lines;
        for (const char *p = buf, *end = buf + n; (p = memchr(p, '\n', (size_t)(end - p))); p++)
            lines++;
    }
}

int main(int argc, char **argv)
{
    int fd = argc > 1 ? open(argv[1], O_RDONLY) : 0;
    char *buf = malloc(BLOCK);
    if (fd < 0 || !buf) {
        fprintf(stderr, "linecount: %s: %s\n", argc > 1 ? argv[1] : "stdin", strerror(errno));
        return 1;
    }
    long long lines = count_lines(fd, buf);
    free(buf);
    if (lines < 0) {
        fprintf(stderr, "linecount: read: %s\n", strerror(errno));
        return 1;
    }
    printf("%lld\n", lines);
    return 0;
}
