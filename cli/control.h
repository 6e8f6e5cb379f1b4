/* cli/control.h — `vigil run --control PATH`: the control socket for `vigil ctl`.
 *
 * Owns: a listening Unix socket (mode 0600, created with a restrictive umask so it is
 * never reachable by others, not even briefly) and its path, removed at close.
 * Protocol: a client connects, sends one command line (`stats`, `rules` or `reload`),
 * and reads one JSON line back; then the server closes the connection. Served from
 * the run loop between reads (control_poll never blocks for long: a client has
 * CONTROL_CLIENT_TIMEOUT_MS to send its command). */
#ifndef VIGIL_CLI_CONTROL_H
#define VIGIL_CLI_CONTROL_H

#include "base/buf.h"

#define CONTROL_CLIENT_TIMEOUT_MS 200
#define CONTROL_MAX_COMMAND 256

typedef struct Control Control;

typedef struct ControlHandler {
    /* Appends the JSON reply (one line, no newline) for cmd to reply. */
    void (*command)(void *user, const char *cmd, Buf *reply);
    void *user;
} ControlHandler;

/* Listens on path; a stale socket left by a dead vigil is replaced, a live one is an
 * error. NULL with *err (heap) on failure. */
Control *control_open(const char *path, char **err);
/* Serves every client waiting to connect. */
void control_poll(Control *c, const ControlHandler *h);
/* Stops listening and removes the socket file. */
void control_close(Control *c);

#endif
