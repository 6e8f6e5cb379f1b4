/* base/fdio.h — writing a whole buffer to a file descriptor.
 *
 * write(2) and send(2) may write less than asked, or be interrupted by a signal
 * before writing anything; every caller that must not lose bytes needs the same
 * loop, so it lives here once. Blocking descriptors only: on a non-blocking one an
 * EAGAIN is returned as a failure, and the caller that wants to wait must loop
 * itself (alerts/out_net.c does). */
#ifndef VIGIL_BASE_FDIO_H
#define VIGIL_BASE_FDIO_H

#include <stddef.h>

/* Writes all len bytes with write(2). 0, or -1 with errno set; a write that makes no
 * progress fails with EIO instead of spinning. */
int fd_write_all(int fd, const void *data, size_t len);

/* The same, and *written gets how many bytes went out, on failure too: a reader that
 * goes away part-way (EPIPE) has still received what came before, and a caller
 * counting lines must not call those lost. */
int fd_write_all_counted(int fd, const void *data, size_t len, size_t *written);

/* The same with send(2) and MSG_NOSIGNAL, for sockets whose peer may be gone:
 * EPIPE instead of a SIGPIPE that would kill the process. */
int fd_send_all(int fd, const void *data, size_t len);

#endif
