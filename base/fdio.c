/* base/fdio.c — whole-buffer writes (see fdio.h). */
#include "base/fdio.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

static int put_all(int fd, const char *p, size_t len, bool socket, size_t *written)
{
    *written = 0;
    while (len > 0) {
        ssize_t n = socket ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        *written += (size_t)n;
    }
    return 0;
}

int fd_write_all(int fd, const void *data, size_t len)
{
    size_t written;
    return put_all(fd, data, len, false, &written);
}

int fd_write_all_counted(int fd, const void *data, size_t len, size_t *written)
{
    return put_all(fd, data, len, false, written);
}

int fd_send_all(int fd, const void *data, size_t len)
{
    size_t written;
    return put_all(fd, data, len, true, &written);
}
