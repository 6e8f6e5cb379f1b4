/* tests/sockutil.h — the Unix-socket client side shared by the test feeders
 * (tests/limits/flood.c, tests/reload/feed.c): connect while vigil is still starting,
 * and write a whole buffer. */
#ifndef VIGIL_TESTS_SOCKUTIL_H
#define VIGIL_TESTS_SOCKUTIL_H

#include <stddef.h>

/* Connects to the Unix socket at path, trying `tries` times 10 ms apart (vigil may
 * not listen yet). The descriptor, or -1. */
int sock_connect_retrying(const char *path, int tries);
/* Sends all len bytes (EINTR retried, no SIGPIPE). 0, or -1 on error. */
int sock_send_all(int fd, const char *p, size_t len);

#endif
