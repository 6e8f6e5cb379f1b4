/* tests/sockutil.h — the Unix-socket client side shared by the test feeders
 * (tests/limits/flood.c, tests/reload/feed.c): connect while vigil is still starting.
 * They write with base/fdio.h's fd_send_all. */
#ifndef VIGIL_TESTS_SOCKUTIL_H
#define VIGIL_TESTS_SOCKUTIL_H

#include <stddef.h>

/* Connects to the Unix socket at path, trying `tries` times 10 ms apart (vigil may
 * not listen yet). The descriptor, or -1. */
int sock_connect_retrying(const char *path, int tries);

#endif
