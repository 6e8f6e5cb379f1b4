/* base/hostport.h — splitting "HOST:PORT" and "[V6]:PORT" addresses.
 *
 * The outputs (`tcp "HOST:PORT"`, checked by dsl/check.c, opened by alerts/out_net.c)
 * and the tcp:// inputs (runtime/input.c) take the same address form; they differ in
 * the ports they allow (an input may ask for port 0: any free one) and in how they
 * word a refusal, so this says what is wrong and each caller words it. A port is
 * checked here, not left to getaddrinfo, which takes it modulo 65536. */
#ifndef VIGIL_BASE_HOSTPORT_H
#define VIGIL_BASE_HOSTPORT_H

#include <stddef.h>

typedef enum HostPortError {
    HOSTPORT_OK,
    HOSTPORT_BRACKETS,     /* starts with '[' but no "]:" closes the address */
    HOSTPORT_NO_HOST,      /* no ':', or nothing before it */
    HOSTPORT_NO_PORT,      /* nothing after the ':' */
    HOSTPORT_BAD_PORT,     /* not only decimal digits, or out of [min_port, max_port] */
} HostPortError;

typedef struct HostPort {
    const char *host;      /* into the parsed text, without the brackets */
    size_t host_len;
    unsigned port;
} HostPort;

/* Splits text at its last ':' (after "]" for "[V6]:PORT"); max_port at most 65535.
 * out->host is set with HOSTPORT_NO_PORT and BAD_PORT too (a caller may judge the
 * host first), out->port only with HOSTPORT_OK. */
HostPortError hostport_parse(const char *text, unsigned min_port, unsigned max_port,
                             HostPort *out);

#endif
